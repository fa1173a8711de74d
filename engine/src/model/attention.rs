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
    /// Attends the query rows `x` (`[rows, hidden]`) to the keys of `x_all` (`[keys, hidden]`,
    /// the whole sequence, of which `x` is a block), adding `table[head, bucket(i, j)]` to the
    /// score of each pair; `pairs` holds the packed one-byte buckets, `rows × keys`.
    pub fn forward(
        &self,
        x: Tensor<B, 2>,
        x_all: Tensor<B, 2>,
        table: Tensor<B, 2>,
        pairs: PairBuckets<B>,
    ) -> Tensor<B, 2> {
        let [rows, hidden] = x.dims();
        let [keys, _] = x_all.dims();
        let head_dim = hidden / self.heads;
        // The fused projection's weight is [hidden, 3·hidden]: queries, keys, values.
        let project = |input: Tensor<B, 2>, columns: std::ops::Range<usize>| {
            let weight = self.qkv.weight.val().slice([0..hidden, columns.clone()]);
            let out = input.matmul(weight);
            match &self.qkv.bias {
                Some(bias) => out + bias.val().slice([columns]).unsqueeze_dim(0),
                None => out,
            }
        };
        // [rows, hidden] → [heads, rows, head_dim]
        let q = project(x, 0..hidden)
            .reshape([rows, self.heads, head_dim])
            .swap_dims(0, 1);
        // [keys, 2·hidden] → [2, heads, keys, head_dim]
        let kv = project(x_all, hidden..3 * hidden)
            .reshape([keys, 2, self.heads, head_dim])
            .permute([1, 2, 0, 3]);
        let mut parts = kv.chunk(2, 0).into_iter();
        let mut next = || {
            parts
                .next()
                .expect("chunk(2) yields two parts")
                .reshape([self.heads, keys, head_dim])
        };
        let (k, v) = (next(), next());
        let context = match self.kernel {
            AttentionKernel::Fused => biased_attention(q, k, v, table, pairs),
            AttentionKernel::Reference => reference::attention(q, k, v, table, pairs),
        };
        let context = context.swap_dims(0, 1).reshape([rows, hidden]);
        self.output.forward(context)
    }
}
