//! Plain burn ops written around two defects of burn 0.21's wgpu backend that return wrong
//! numbers without an error (both measured on lavapipe, `tests/safe_ops.rs`), for the plain-op
//! references:
//!
//! - `select_assign` gets every index at position 65,535 or later along its axis wrong (of
//!   200,000 indices, 134,465 results differ; 65,535 indices are all right, 65,536 give one
//!   wrong result). burn's own backward of `select` is such a `select_assign`. [`select`] and
//!   [`select_add`] launch at most [`MAX_INDICES`] indices at a time.
//! - A batched `matmul` of two operands that both carry a batch stride smaller than their row
//!   stride (`[n, heads, d]` swapped to `[heads, n, d]`, as attention's heads are) returns
//!   wrong products at some shapes (`[2, 1500, 8] × [2, 8, 6000]`: errors as large as the
//!   values). [`contiguous`] lays an operand out row-major first.

use burn::tensor::{IndexingUpdateOp, Int, Tensor, backend::Backend};

/// The most indices one `select` or `select_assign` launch is given: half of the first position
/// burn 0.21's wgpu `select_assign` gets wrong.
pub const MAX_INDICES: usize = 32_768;

/// `x.select(axis, indices)` in chunks of [`MAX_INDICES`] indices, so that its backward (a
/// `select_assign` over the same indices) stays within them too.
pub fn select<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    axis: usize,
    indices: Tensor<B, 1, Int>,
) -> Tensor<B, D> {
    let [count] = indices.dims();
    if count <= MAX_INDICES {
        return x.select(axis, indices);
    }
    let parts = chunks(count)
        .map(|range| x.clone().select(axis, indices.clone().slice(range)))
        .collect();
    Tensor::cat(parts, axis)
}

/// `x.select_assign(axis, indices, values, Add)` in chunks of [`MAX_INDICES`] indices: adds
/// `values`' slice `i` along `axis` into `x`'s slice `indices[i]`.
pub fn select_add<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    axis: usize,
    indices: Tensor<B, 1, Int>,
    values: Tensor<B, D>,
) -> Tensor<B, D> {
    let [count] = indices.dims();
    if count <= MAX_INDICES {
        return x.select_assign(axis, indices, values, IndexingUpdateOp::Add);
    }
    chunks(count).fold(x, |sum, range| {
        let part = values.clone().narrow(axis, range.start, range.len());
        sum.select_assign(
            axis,
            indices.clone().slice(range),
            part,
            IndexingUpdateOp::Add,
        )
    })
}

/// `x` laid out row-major (a copy only when it is not already): flattening a strided tensor
/// makes burn copy it, and the reshape back only sets strides.
pub fn contiguous<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let dims = x.dims();
    x.reshape([dims.iter().product::<usize>()]).reshape(dims)
}

/// `0..count` in consecutive ranges of at most [`MAX_INDICES`].
fn chunks(count: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..count)
        .step_by(MAX_INDICES)
        .map(move |start| start..(start + MAX_INDICES).min(count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;
    use burn::tensor::TensorData;

    fn tensor_1d(values: Vec<i32>) -> Tensor<CpuBackend, 1, Int> {
        let n = values.len();
        Tensor::from_data(TensorData::new(values, [n]), &Default::default())
    }

    #[test]
    fn chunks_cover_the_range_once_in_order() {
        let ranges: Vec<_> = chunks(2 * MAX_INDICES + 5).collect();
        assert_eq!(
            ranges,
            vec![
                0..MAX_INDICES,
                MAX_INDICES..2 * MAX_INDICES,
                2 * MAX_INDICES..2 * MAX_INDICES + 5
            ]
        );
        assert_eq!(chunks(0).count(), 0);
    }

    #[test]
    fn chunked_ops_equal_the_single_launch_ones() {
        let count = MAX_INDICES + 1000;
        let device = Default::default();
        let idx: Vec<i32> = (0..count as i32).map(|i| (i * 7919) % 300).collect();
        let x = Tensor::<CpuBackend, 2>::from_data(
            TensorData::new((0..600).map(|v| v as f32).collect::<Vec<_>>(), [2, 300]),
            &device,
        );
        let want = x.clone().select(1, tensor_1d(idx.clone()));
        let got = select(x.clone(), 1, tensor_1d(idx.clone()));
        assert_eq!(got.to_data(), want.to_data());
        let values = want;
        let want = x.clone().select_assign(
            1,
            tensor_1d(idx.clone()),
            values.clone(),
            IndexingUpdateOp::Add,
        );
        let got = select_add(x, 1, tensor_1d(idx), values);
        got.to_data()
            .assert_approx_eq::<f32>(&want.to_data(), burn::tensor::Tolerance::default());
    }
}
