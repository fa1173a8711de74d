//! Sparse × dense products: the sparse-feature projection `X · W` (X in CSR) and, with a one-hot
//! X, the embedding gather `table[indices]`. The backward is the transposed product
//! `Xᵀ · dY`, read through a column index the host builds once, so that the WGSL needs no
//! atomics (a scatter-add of an embedding gather is this product too).
//!
//! [`SparseMatmulBackend`] is the extension trait, implemented like the attention's: the wgpu
//! backend runs `shaders/sparse_matmul.wgsl` ([`wgpu`]), burn's CPU backend the plain-op
//! [`reference`], and `Autodiff<B>` adds the backward ([`autodiff`]).

mod autodiff;
mod index;
pub mod reference;
mod wgpu;

use burn::tensor::{Int, Tensor, TensorData, backend::Backend};

pub use index::CsrIndex;

/// A sparse `[rows, cols]` matrix on a device: its CSR, the column index of the transposed
/// product, and the values.
#[derive(Debug, Clone)]
pub struct SparseMatrix<B: Backend> {
    /// Rows of the matrix.
    pub rows: usize,
    /// Columns of the matrix.
    pub cols: usize,
    /// Entries of row `r` are `row_offsets[r]..row_offsets[r + 1]`, `[rows + 1]`.
    pub row_offsets: Tensor<B, 1, Int>,
    /// Row of each entry, `[nnz]`.
    pub entry_rows: Tensor<B, 1, Int>,
    /// Column of each entry, `[nnz]`.
    pub entry_cols: Tensor<B, 1, Int>,
    /// Entries of column `c` are `col_entries[col_offsets[c]..col_offsets[c + 1]]`, `[cols + 1]`.
    pub col_offsets: Tensor<B, 1, Int>,
    /// Entry numbers grouped by column, ascending within a column, `[nnz]`.
    pub col_entries: Tensor<B, 1, Int>,
    /// Value of each entry, `[nnz]`. Treated as data: no gradient flows into it.
    pub values: Tensor<B, 1>,
}

impl<B: Backend> SparseMatrix<B> {
    /// Uploads `index` with `values` (one per entry) to `device`.
    pub fn new(index: &CsrIndex, values: Vec<f32>, device: &B::Device) -> Self {
        assert_eq!(values.len(), index.nnz(), "one value per entry");
        let int = |v: &[i32]| Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), device);
        let nnz = values.len();
        Self {
            rows: index.rows(),
            cols: index.cols(),
            row_offsets: int(index.row_offsets()),
            entry_rows: int(index.entry_rows()),
            entry_cols: int(index.entry_cols()),
            col_offsets: int(index.col_offsets()),
            col_entries: int(index.col_entries()),
            values: Tensor::from_data(TensorData::new(values, [nnz]), device),
        }
    }

    /// The one-hot `[indices.len(), cols]` matrix whose row `i` selects column `indices[i]`:
    /// `X · T` gathers rows of a table `T`, `Xᵀ · G` scatter-adds rows of `G` into it.
    pub fn one_hot(indices: &[u32], cols: usize, device: &B::Device) -> Self {
        let offsets: Vec<usize> = (0..=indices.len()).collect();
        Self::new(
            &CsrIndex::new(cols, &offsets, indices),
            vec![1.0; indices.len()],
            device,
        )
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.dims()[0]
    }

    /// The same pattern with `values` changed by `f` (e.g. dropout).
    pub fn map_values(self, f: impl FnOnce(Tensor<B, 1>) -> Tensor<B, 1>) -> Self {
        Self {
            values: f(self.values),
            ..self
        }
    }
}

/// A backend that multiplies a [`SparseMatrix`] by a dense matrix.
pub trait SparseMatmulBackend: Backend {
    /// `x · w` for `w` of shape `[x.cols, width]`: `[x.rows, width]`.
    fn sparse_matmul(x: SparseMatrix<Self>, w: Tensor<Self, 2>) -> Tensor<Self, 2>;

    /// `xᵀ · g` for `g` of shape `[x.rows, width]`: `[x.cols, width]`.
    fn sparse_matmul_transposed(x: SparseMatrix<Self>, g: Tensor<Self, 2>) -> Tensor<Self, 2>;
}

/// `x · w`, differentiable in `w` (not in the values of `x`).
pub fn sparse_matmul<B: SparseMatmulBackend>(x: &SparseMatrix<B>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    B::sparse_matmul(x.clone(), w)
}
