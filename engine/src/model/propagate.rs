//! Sparse message passing: `out[dst] += weight · h[src]` over a sequence's edges.

use burn::tensor::{IndexingUpdateOp, Tensor, backend::Backend};

use super::EdgeTensors;

/// Multiplies node states `h` (`[S, C]`) by the normalised adjacency of `edges`.
pub fn propagate<B: Backend>(h: Tensor<B, 2>, edges: &EdgeTensors<B>) -> Tensor<B, 2> {
    let [nodes, width] = h.dims();
    let messages = h.select(0, edges.src.clone()) * edges.weight.clone();
    Tensor::zeros([nodes, width], &messages.device()).select_assign(
        0,
        edges.dst.clone(),
        messages,
        IndexingUpdateOp::Add,
    )
}
