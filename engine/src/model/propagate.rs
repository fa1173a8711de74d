//! Sparse message passing: `out[dst] += weight · h[src]` over a sequence's edges.

use burn::tensor::{IndexingUpdateOp, Tensor, backend::Backend};

use super::EdgeTensors;

/// Multiplies node states `h` (`[keys, C]`, the whole sequence) by the rows of the
/// normalised adjacency held in `edges`, giving `[rows, C]`.
pub fn propagate<B: Backend>(h: Tensor<B, 2>, edges: &EdgeTensors<B>, rows: usize) -> Tensor<B, 2> {
    let [_, width] = h.dims();
    let messages = h.select(0, edges.src.clone()) * edges.weight.clone();
    Tensor::zeros([rows, width], &messages.device()).select_assign(
        0,
        edges.dst.clone(),
        messages,
        IndexingUpdateOp::Add,
    )
}
