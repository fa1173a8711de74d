//! Multi-head self-attention over a sequence with an additive spatial bias.

use std::ops::Range;

use burn::{
    module::Module,
    nn::{Linear, LinearConfig},
    tensor::{Tensor, activation::softmax, backend::Backend},
};
use serde::{Deserialize, Serialize};

use super::{AttentionPairs, ModelBackend, SequenceTensors};
use crate::comm::{RowExchange, gather_rows};
use crate::kernels::{biased_attention, hops, hops_attention, hops_attention_with_lse, reference};

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

/// Multi-head attention whose scores get a per-head bias, looked up by each pair's distance
/// bucket, added before the softmax.
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

impl<B: Backend> BiasedAttention<B> {
    /// Which implementation computes the attention.
    pub fn kernel(&self) -> AttentionKernel {
        self.kernel
    }
}

/// The queries, keys and values of a shard's own rows, each row-major `[rows, hidden]`: what
/// a layer computes while its key exchange travels ([`BiasedAttention::project_own`]).
#[derive(Debug, Clone)]
pub struct OwnProjection<B: Backend> {
    queries: Tensor<B, 2>,
    keys: Tensor<B, 2>,
    values: Tensor<B, 2>,
}

impl<B: ModelBackend> BiasedAttention<B> {
    /// The input `input` (`[n, hidden]`) times the projection's `columns` (of the queries',
    /// keys' and values' side by side), plus their bias: `[n, columns]`.
    fn project(&self, input: Tensor<B, 2>, columns: Range<usize>) -> Tensor<B, 2> {
        let [_, hidden] = input.dims();
        let weight = self.qkv.weight.val().slice([0..hidden, columns.clone()]);
        let out = input.matmul(weight);
        match &self.qkv.bias {
            Some(bias) => out + bias.val().slice([columns]).unsqueeze_dim(0),
            None => out,
        }
    }

    /// `x` (`[n, hidden]`) split into heads: `[heads, n, head_dim]`.
    fn heads(&self, x: Tensor<B, 2>) -> Tensor<B, 3> {
        let [n, hidden] = x.dims();
        x.reshape([n, self.heads, hidden / self.heads])
            .swap_dims(0, 1)
    }

    /// The queries, keys and values of this shard's node rows `h` (`[rows, hidden]`); they
    /// need no other shard's rows.
    pub fn project_own(&self, h: Tensor<B, 2>) -> OwnProjection<B> {
        let [_, hidden] = h.dims();
        OwnProjection {
            queries: self.project(h.clone(), 0..hidden),
            keys: self.project(h.clone(), hidden..2 * hidden),
            values: self.project(h, 2 * hidden..3 * hidden),
        }
    }

    /// Attends this shard's node rows, projected in `own` ([`Self::project_own`]), and the
    /// global tokens `tokens` (`[G, hidden]`, if the model has any) to their pairs, adding
    /// `table[head, bucket]` to each pair's score: under the full scope every row attends to
    /// every node of the key table `keys` (`[S, hidden]`); under the hops scope each row to its
    /// near pairs in the key table and to the tokens, and each token to this shard's rows (its
    /// partial attentions over the shards combined through their log-sum-exp). The keys and
    /// values of the table's own rows ([`SequenceTensors::own_keys`]) are `own`'s; only the
    /// other shards' rows are projected here. Returns `[rows + G, hidden]`, the tokens last.
    pub fn forward(
        &self,
        own: OwnProjection<B>,
        tokens: Option<Tensor<B, 2>>,
        keys: Tensor<B, 2>,
        table: Tensor<B, 2>,
        seq: &SequenceTensors<B>,
    ) -> Tensor<B, 2> {
        let [rows, hidden] = own.queries.dims();
        let heads = self.heads;
        let head_dim = hidden / heads;
        let [key_rows, _] = keys.dims();
        let mine = seq.own_keys();
        // The keys (or values) of the key table and the tokens, in table order: the other
        // shards' rows before this shard's, its own, the others' after, the tokens.
        let in_table_order = |own: Tensor<B, 2>, columns: Range<usize>| {
            let others = |range: Range<usize>| {
                (!range.is_empty())
                    .then(|| self.project(keys.clone().slice([range, 0..hidden]), columns.clone()))
            };
            let parts: Vec<Tensor<B, 2>> = [
                others(0..mine.start),
                Some(own),
                others(mine.end..key_rows),
                tokens.clone().map(|t| self.project(t, columns.clone())),
            ]
            .into_iter()
            .flatten()
            .collect();
            match <[Tensor<B, 2>; 1]>::try_from(parts) {
                Ok([only]) => only,
                Err(parts) => Tensor::cat(parts, 0),
            }
        };
        let q = self.heads(own.queries);
        let k = self.heads(in_table_order(own.keys, hidden..2 * hidden));
        let v = self.heads(in_table_order(own.values, 2 * hidden..3 * hidden));
        let context = match &seq.pairs {
            AttentionPairs::Dense(buckets) => match self.kernel {
                AttentionKernel::Fused => biased_attention(q, k, v, table, buckets.clone()),
                AttentionKernel::Reference => reference::attention(q, k, v, table, buckets.clone()),
            },
            AttentionPairs::Hops {
                nodes,
                tokens: token_pairs,
            } => {
                let nodes_context = match self.kernel {
                    AttentionKernel::Fused => {
                        hops_attention(q, k.clone(), v.clone(), table.clone(), nodes)
                    }
                    AttentionKernel::Reference => {
                        hops::reference::attention(q, k.clone(), v.clone(), table.clone(), nodes).0
                    }
                };
                match (tokens, token_pairs) {
                    (Some(t), Some(pairs)) => {
                        let own = [0..heads, 0..rows, 0..head_dim];
                        let (k, v) = (k.slice(own.clone()), v.slice(own));
                        let q = self.heads(self.project(t, 0..hidden));
                        let (partial, lse) = match self.kernel {
                            AttentionKernel::Fused => {
                                hops_attention_with_lse(q, k, v, table, pairs)
                            }
                            AttentionKernel::Reference => {
                                hops::reference::attention(q, k, v, table, pairs)
                            }
                        };
                        let token_context =
                            combine_shards(partial, lse, seq.token_exchange.as_ref());
                        Tensor::cat(vec![nodes_context, token_context], 1)
                    }
                    _ => nodes_context,
                }
            }
        };
        let [_, count, _] = context.dims();
        let context = context.swap_dims(0, 1).reshape([count, hidden]);
        self.output.forward(context)
    }
}

/// The global tokens' attention from each shard's partial attention over its own rows
/// (`[heads, G, head_dim]` with its log-sum-exp `[heads, G]`): the partials weighted by the
/// softmax of their log-sum-exps, the same bits on every shard.
fn combine_shards<B: ModelBackend>(
    partial: Tensor<B, 3>,
    lse: Tensor<B, 2>,
    exchange: Option<&RowExchange>,
) -> Tensor<B, 3> {
    let Some(exchange) = exchange else {
        return partial;
    };
    let [heads, tokens, head_dim] = partial.dims();
    let width = heads * tokens * head_dim;
    let packed = Tensor::cat(
        vec![
            partial.reshape([1, width]),
            lse.reshape([1, heads * tokens]),
        ],
        1,
    );
    let all = gather_rows(packed, exchange);
    let shards = exchange.rows.len();
    let partials = all
        .clone()
        .slice([0..shards, 0..width])
        .reshape([shards, heads, tokens, head_dim]);
    let lses = all
        .slice([0..shards, width..width + heads * tokens])
        .reshape([shards, heads, tokens]);
    let weights = softmax(lses, 0).unsqueeze_dim::<4>(3);
    (partials * weights)
        .sum_dim(0)
        .reshape([heads, tokens, head_dim])
}
