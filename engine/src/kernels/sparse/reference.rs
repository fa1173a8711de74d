//! Sparse × dense products from plain burn tensor ops (gather the dense rows of the entries,
//! scale, scatter-add into the output rows, both in chunks: see [`safe_ops`]): the oracle of the WGSL kernels, and the
//! implementation on backends without them. Differentiable through burn's own autodiff.

use burn::tensor::{Int, Tensor, backend::Backend};

use super::{SparseMatmulBackend, SparseMatrix};
use crate::device::CpuBackend;
use crate::kernels::safe_ops;

/// `x · w`.
pub fn sparse_matmul<B: Backend>(x: SparseMatrix<B>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    product(x.entry_cols, x.entry_rows, x.values, w, x.rows)
}

/// `xᵀ · g`.
pub fn sparse_matmul_transposed<B: Backend>(x: SparseMatrix<B>, g: Tensor<B, 2>) -> Tensor<B, 2> {
    product(x.entry_rows, x.entry_cols, x.values, g, x.cols)
}

/// `out[to[e]] += values[e] · dense[from[e]]` over the entries `e`, into `rows` zero rows.
fn product<B: Backend>(
    from: Tensor<B, 1, Int>,
    to: Tensor<B, 1, Int>,
    values: Tensor<B, 1>,
    dense: Tensor<B, 2>,
    rows: usize,
) -> Tensor<B, 2> {
    let [_, width] = dense.dims();
    let zeros = Tensor::zeros([rows, width], &dense.device());
    if values.dims()[0] == 0 {
        return zeros;
    }
    let contributions = safe_ops::select(dense, 0, from) * values.unsqueeze_dim(1);
    safe_ops::select_add(zeros, 0, to, contributions)
}

impl SparseMatmulBackend for CpuBackend {
    fn sparse_matmul(x: SparseMatrix<Self>, w: Tensor<Self, 2>) -> Tensor<Self, 2> {
        sparse_matmul(x, w)
    }

    fn sparse_matmul_transposed(x: SparseMatrix<Self>, g: Tensor<Self, 2>) -> Tensor<Self, 2> {
        sparse_matmul_transposed(x, g)
    }
}
