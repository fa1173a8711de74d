//! Sparse message passing: the normalised adjacency of a shard's rows times the node states of
//! its key table, `out[i] = Σ_j A[i, j] · h[j]`.

use burn::tensor::Tensor;

use super::{AttentionKernel, ModelBackend};
use crate::kernels::{SparseMatrix, sparse};

/// Multiplies node states `h` (`[keys, C]`, the key table) by the `[rows, keys]` normalised
/// adjacency, giving `[rows, C]`: the CSR × dense kernel, or the plain-op reference.
pub fn propagate<B: ModelBackend>(
    h: Tensor<B, 2>,
    adjacency: &SparseMatrix<B>,
    kernel: AttentionKernel,
) -> Tensor<B, 2> {
    match kernel {
        AttentionKernel::Fused => B::sparse_matmul(adjacency.clone(), h),
        AttentionKernel::Reference => sparse::reference::sparse_matmul(adjacency.clone(), h),
    }
}
