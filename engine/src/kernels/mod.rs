//! Custom kernels bound into burn as backend extensions.
//!
//! [`BiasedAttentionBackend`] and [`AttentionBackwardBackend`] (attention) and
//! [`SparseMatmulBackend`] (sparse-feature
//! projection and embedding gather, in [`sparse`]) are the extension traits; each is
//! implemented by
//! - the wgpu backend, running the WGSL of `shaders/` ([`wgpu`]),
//! - burn's CPU backend, with the reference built from plain burn ops ([`reference`]),
//! - `Autodiff<B>` for any such `B`, with the backward ([`autodiff`]).
//!
//! The reference is the test oracle on every backend.

mod autodiff;
pub mod dropout;
mod gradients;
pub mod hops;
mod launch;
mod pairs;
pub mod plan;
pub mod reference;
pub mod safe_ops;
pub mod shaders;
pub mod sparse;
pub mod tuning;
mod wgpu;

pub use dropout::{
    CounterDropoutBackend, DropoutMask, DropoutStreams, RowNumbering, counter_dropout,
};
pub use hops::{
    HopsAttentionBackend, HopsAttentionBackward, HopsIndex, HopsPattern, hops_attention,
    hops_attention_with_lse,
};
pub use pairs::{MAX_BLOCK_BYTES, PairBuckets};
pub use sparse::{CsrIndex, SparseMatmulBackend, SparseMatrix, sparse_matmul};

use burn::tensor::{Tensor, TensorPrimitive, backend::Backend, ops::FloatTensor};

/// What the attention forward keeps for the backward: the output and the per-row
/// log-sum-exp of the scores.
#[derive(Debug, Clone)]
pub struct AttentionSaved<B: Backend> {
    /// Attention output `[heads, S, head_dim]`.
    pub output: FloatTensor<B>,
    /// Log-sum-exp of each score row, `[heads, S]`.
    pub lse: FloatTensor<B>,
}

/// Gradients of the attention inputs.
#[derive(Debug, Clone)]
pub struct AttentionGrads<B: Backend> {
    /// Gradient of the queries, `[heads, S, head_dim]`.
    pub q: FloatTensor<B>,
    /// Gradient of the keys, `[heads, S, head_dim]`.
    pub k: FloatTensor<B>,
    /// Gradient of the values, `[heads, S, head_dim]`.
    pub v: FloatTensor<B>,
    /// Gradient of the bias table, `[heads, buckets]`.
    pub table: FloatTensor<B>,
}

/// The inputs of biased attention.
#[derive(Debug, Clone)]
pub struct AttentionInputs<B: Backend> {
    /// Queries `[heads, S, head_dim]`.
    pub q: FloatTensor<B>,
    /// Keys `[heads, S, head_dim]`.
    pub k: FloatTensor<B>,
    /// Values `[heads, S, head_dim]`.
    pub v: FloatTensor<B>,
    /// Spatial bias per head per distance bucket, `[heads, buckets]`.
    pub table: FloatTensor<B>,
    /// Distance buckets of all S² pairs, packed, in blocks of query rows.
    pub pairs: PairBuckets<B>,
}

impl<B: Backend> AttentionInputs<B> {
    /// The inputs as backend primitives, from tensors.
    pub fn from_tensors(
        q: Tensor<B, 3>,
        k: Tensor<B, 3>,
        v: Tensor<B, 3>,
        table: Tensor<B, 2>,
        pairs: PairBuckets<B>,
    ) -> Self {
        Self {
            q: q.into_primitive().tensor(),
            k: k.into_primitive().tensor(),
            v: v.into_primitive().tensor(),
            table: table.into_primitive().tensor(),
            pairs,
        }
    }
}

/// A backend that runs topology-biased attention:
/// `softmax(q·kᵀ/√d + table[h, bucket(i, j)]) · v` per head.
///
/// It also has the model's other kernels (the sparse products of the input embedding), so that
/// this one bound is all the model and the training loop ask of a backend.
pub trait BiasedAttentionBackend: SparseMatmulBackend {
    /// The forward pass; never materialises an S×S float matrix on backends with a fused kernel.
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self>;
}

/// A backend that computes the backward of biased attention itself (the wgpu and CPU
/// backends); `Autodiff<B>` over such a `B` registers it on its graph, and has no backward
/// method of its own (second-order gradients are not supported).
pub trait AttentionBackwardBackend: BiasedAttentionBackend {
    /// The backward pass from the gradient of the output.
    fn biased_attention_backward(
        inputs: AttentionInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
    ) -> AttentionGrads<Self>;
}

/// Biased attention of `q`, `k`, `v` (`[heads, S, head_dim]`) with the per-head bias
/// `table` (`[heads, buckets]`) looked up by the packed pair buckets `pairs`.
pub fn biased_attention<B: BiasedAttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pairs: PairBuckets<B>,
) -> Tensor<B, 3> {
    let saved = B::biased_attention(AttentionInputs::from_tensors(q, k, v, table, pairs));
    Tensor::from_primitive(TensorPrimitive::Float(saved.output))
}
