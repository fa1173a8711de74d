//! The sparse × dense products on the wgpu backend: `shaders/sparse_matmul.wgsl`, plain or
//! transposed.

use burn::{
    backend::wgpu::into_contiguous,
    tensor::{Int, Tensor, TensorPrimitive},
};

use super::{SparseMatmulBackend, SparseMatrix};
use crate::device::WgpuBackend;
use crate::kernels::{
    launch::{Cube, empty, launch},
    plan::SparseShape,
};

fn int(t: Tensor<WgpuBackend, 1, Int>) -> Cube {
    into_contiguous(t.into_primitive())
}

fn float<const D: usize>(t: Tensor<WgpuBackend, D>) -> Cube {
    into_contiguous(t.into_primitive().tensor())
}

/// Runs `sparse_matmul.wgsl` (`transposed` or not) into a new `[offsets.len() - 1, width]`
/// tensor: all zeros without launching when there are no entries.
fn run(
    transposed: bool,
    [offsets, entries, partner]: [Tensor<WgpuBackend, 1, Int>; 3],
    values: Tensor<WgpuBackend, 1>,
    dense: Tensor<WgpuBackend, 2>,
) -> Tensor<WgpuBackend, 2> {
    let out_rows = offsets.dims()[0] - 1;
    let [_, width] = dense.dims();
    if values.dims()[0] == 0 || out_rows * width == 0 {
        return Tensor::zeros([out_rows, width], &dense.device());
    }
    let plan = SparseShape {
        out_rows,
        width,
        nnz: values.dims()[0],
        inner: dense.dims()[0],
        transposed,
    }
    .launch();
    let dense = float(dense);
    let out = empty(&dense, vec![out_rows, width]);
    let buffers = vec![
        int(offsets).handle,
        int(entries).handle,
        int(partner).handle,
        float(values).handle,
        dense.handle.clone(),
        out.handle.clone(),
    ];
    launch(&dense, plan, buffers);
    Tensor::from_primitive(TensorPrimitive::Float(out))
}

impl SparseMatmulBackend for WgpuBackend {
    fn sparse_matmul(x: SparseMatrix<Self>, w: Tensor<Self, 2>) -> Tensor<Self, 2> {
        assert_eq!(w.dims()[0], x.cols, "w needs one row per column of x");
        // `entries` is not read unless transposed: bind the column indices in its place.
        let index = [x.row_offsets, x.entry_cols.clone(), x.entry_cols];
        run(false, index, x.values, w)
    }

    fn sparse_matmul_transposed(x: SparseMatrix<Self>, g: Tensor<Self, 2>) -> Tensor<Self, 2> {
        assert_eq!(g.dims()[0], x.rows, "g needs one row per row of x");
        let index = [x.col_offsets, x.col_entries, x.entry_rows];
        run(true, index, x.values, g)
    }
}
