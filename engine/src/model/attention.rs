//! Multi-head self-attention over a sequence with an additive spatial bias.

use burn::{
    module::Module,
    nn::{Linear, LinearConfig},
    tensor::{Tensor, backend::Backend},
};
use serde::{Deserialize, Serialize};

use crate::kernels::{BiasedAttentionBackend, PairBuckets, biased_attention, reference};

/// Which implementation computes the biased attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKernel {
    /// The fused WGSL kernels, for the embedding's sparse products too (reference ops on
    /// backends without them).
    #[default]
    Fused,
    /// Plain burn ops everywhere: the attention (materialising S×S scores) and the
    /// embedding's sparse products.
    Reference,
}

/// Multi-head attention whose scores get a per-head `[S, S]` bias added before the softmax.
#[derive(Module, Debug)]
pub struct BiasedAttention<B: Backend> {
    qkv: Linear<B>,
    output: Linear<B>,
    heads: usize,
    kernel: AttentionKernel,
}

impl<B: Backend> BiasedAttention<B> {
    /// A new attention block of width `hidden` with `heads` heads, computed by `kernel`.
    pub fn new(hidden: usize, heads: usize, kernel: AttentionKernel, device: &B::Device) -> Self {
        Self {
            qkv: LinearConfig::new(hidden, 3 * hidden).init(device),
            output: LinearConfig::new(hidden, hidden).init(device),
            heads,
            kernel,
        }
    }
}

impl<B: BiasedAttentionBackend> BiasedAttention<B> {
    /// Attends `x` (`[S, hidden]`) to itself, adding `table[head, bucket(i, j)]` to the score
    /// of each pair; `pairs` holds the packed one-byte buckets.
    pub fn forward(
        &self,
        x: Tensor<B, 2>,
        table: Tensor<B, 2>,
        pairs: PairBuckets<B>,
    ) -> Tensor<B, 2> {
        let [nodes, hidden] = x.dims();
        let head_dim = hidden / self.heads;
        // [S, 3·hidden] → [3, heads, S, head_dim]
        let qkv = self
            .qkv
            .forward(x)
            .reshape([nodes, 3, self.heads, head_dim])
            .permute([1, 2, 0, 3]);
        let mut parts = qkv.chunk(3, 0).into_iter();
        let mut next = || {
            parts
                .next()
                .expect("chunk(3) yields three parts")
                .reshape([self.heads, nodes, head_dim])
        };
        let (q, k, v) = (next(), next(), next());
        let context = match self.kernel {
            AttentionKernel::Fused => biased_attention(q, k, v, table, pairs),
            AttentionKernel::Reference => reference::attention(q, k, v, table, pairs),
        };
        let context = context.swap_dims(0, 1).reshape([nodes, hidden]);
        self.output.forward(context)
    }
}
