//! Custom kernels bound into burn as a backend extension.
//!
//! [`BiasedAttentionBackend`] is the extension trait; it is implemented by
//! - the wgpu backend, running the WGSL of `shaders/` ([`wgpu`]),
//! - burn's CPU backend, with the reference built from plain burn ops ([`reference`]),
//! - `Autodiff<B>` for any such `B`, with the fused backward ([`autodiff`]).
//!
//! The reference is the test oracle on every backend.

mod autodiff;
pub mod reference;
pub mod shaders;
mod wgpu;

use burn::tensor::{
    Int, Tensor, TensorData, TensorPrimitive,
    backend::Backend,
    ops::{FloatTensor, IntTensor},
};

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
    /// Distance buckets of all S² pairs, four one-byte buckets per 32-bit word
    /// (pair `i·S + j` in byte `(i·S + j) mod 4` of word `(i·S + j) / 4`), `[ceil(S²/4)]`.
    pub pairs: IntTensor<B>,
}

impl<B: Backend> AttentionInputs<B> {
    /// The inputs as backend primitives, from tensors.
    pub fn from_tensors(
        q: Tensor<B, 3>,
        k: Tensor<B, 3>,
        v: Tensor<B, 3>,
        table: Tensor<B, 2>,
        pairs: Tensor<B, 1, Int>,
    ) -> Self {
        Self {
            q: q.into_primitive().tensor(),
            k: k.into_primitive().tensor(),
            v: v.into_primitive().tensor(),
            table: table.into_primitive().tensor(),
            pairs: pairs.into_primitive(),
        }
    }
}

/// A backend that runs topology-biased attention:
/// `softmax(q·kᵀ/√d + table[h, bucket(i, j)]) · v` per head.
pub trait BiasedAttentionBackend: Backend {
    /// The forward pass; never materialises an S×S float matrix on backends with a fused kernel.
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self>;

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
    pairs: Tensor<B, 1, Int>,
) -> Tensor<B, 3> {
    let saved = B::biased_attention(AttentionInputs::from_tensors(q, k, v, table, pairs));
    Tensor::from_primitive(TensorPrimitive::Float(saved.output))
}

/// Packs one-byte buckets four to a 32-bit word, the layout the kernels read.
pub fn pack_buckets(buckets: &[u8]) -> Vec<i32> {
    buckets
        .chunks(4)
        .map(|chunk| {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            i32::from_le_bytes(word)
        })
        .collect()
}

/// The one-byte buckets of all S² pairs as the packed tensor the kernels read, on `device`.
pub fn pairs_tensor<B: Backend>(buckets: &[u8], device: &B::Device) -> Tensor<B, 1, Int> {
    let words = pack_buckets(buckets);
    let len = words.len();
    Tensor::from_data(TensorData::new(words, [len]), device)
}

#[cfg(test)]
mod tests {
    use super::pack_buckets;

    #[test]
    fn packs_little_endian_and_pads_the_last_word() {
        let packed = pack_buckets(&[1, 2, 3, 255, 7]);
        assert_eq!(packed, vec![i32::from_le_bytes([1, 2, 3, 255]), 7]);
    }
}
