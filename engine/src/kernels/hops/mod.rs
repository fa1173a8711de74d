//! Sparse topology-biased attention over a pattern of query–key pairs (the `hops:K` scope):
//! each query row attends only to its pairs — its K-hop neighbourhood and the global tokens —
//! with the per-head bias of each pair's bucket added to the score.
//!
//! [`HopsAttentionBackend`] is the extension trait, implemented like the dense attention's:
//! the wgpu backend runs `shaders/hops_*.wgsl` ([`wgpu`]), burn's CPU backend the plain-op
//! formulas of [`reference`], and `Autodiff<B>` registers the backward ([`autodiff`]).
//! [`reference::attention`] (gathers and segment sums, differentiated by burn itself) is the
//! oracle of both.

mod autodiff;
mod index;
pub mod reference;
mod wgpu;

pub use index::HopsIndex;

use burn::tensor::{Int, Tensor, TensorData, TensorPrimitive, backend::Backend, ops::FloatTensor};

use super::{AttentionGrads, AttentionSaved, pairs::pack_buckets};

/// A [`HopsIndex`] on a device: the pairs by query row (the forward and the query-side
/// backward) and by key (the key-side backward).
#[derive(Debug, Clone)]
pub struct HopsPattern<B: Backend> {
    /// Query rows.
    pub rows: usize,
    /// Keys.
    pub keys: usize,
    /// Pairs.
    pub pairs: usize,
    /// The largest bucket of any pair: the bias table must have more columns.
    pub max_bucket: u8,
    /// Pairs of row `r` are `row_offsets[r]..row_offsets[r + 1]`, `[rows + 1]`.
    pub row_offsets: Tensor<B, 1, Int>,
    /// Key of each pair, `[pairs]`.
    pub pair_keys: Tensor<B, 1, Int>,
    /// Query row of each pair, `[pairs]` (the reference's gathers).
    pub pair_rows: Tensor<B, 1, Int>,
    /// Bucket of each pair, packed four to a word, `[ceil(pairs / 4)]`.
    pub pair_buckets: Tensor<B, 1, Int>,
    /// Pairs of key `k` are `col_offsets[k]..col_offsets[k + 1]` of the key-ordered arrays.
    pub col_offsets: Tensor<B, 1, Int>,
    /// Query row of each pair, grouped by key, `[pairs]`.
    pub col_rows: Tensor<B, 1, Int>,
    /// Bucket of each pair, grouped by key, packed, `[ceil(pairs / 4)]`.
    pub col_buckets: Tensor<B, 1, Int>,
    /// The rows in the order the kernels take them, `[rows]` ([`HopsIndex::row_order`]).
    pub row_order: Tensor<B, 1, Int>,
    /// The keys in the order the key-side backward takes them, `[keys]`.
    pub key_order: Tensor<B, 1, Int>,
}

impl<B: Backend> HopsPattern<B> {
    /// Uploads `index` to `device`.
    pub fn new(index: &HopsIndex, device: &B::Device) -> Self {
        let int = |v: Vec<i32>| {
            let len = v.len();
            Tensor::from_data(TensorData::new(v, [len]), device)
        };
        Self {
            rows: index.rows(),
            keys: index.keys(),
            pairs: index.pairs(),
            max_bucket: index.max_bucket(),
            row_offsets: int(index.row_offsets().to_vec()),
            pair_keys: int(index.pair_keys().to_vec()),
            pair_rows: int(index.pair_rows().to_vec()),
            pair_buckets: int(pack_buckets(index.pair_buckets())),
            col_offsets: int(index.col_offsets().to_vec()),
            col_rows: int(index.col_rows().to_vec()),
            col_buckets: int(pack_buckets(index.col_buckets())),
            row_order: int(index.row_order().to_vec()),
            key_order: int(index.key_order().to_vec()),
        }
    }

    /// The same pattern with every tensor mapped by `f` (e.g. to another backend's).
    pub fn map<B2: Backend>(
        self,
        f: impl Fn(Tensor<B, 1, Int>) -> Tensor<B2, 1, Int>,
    ) -> HopsPattern<B2> {
        HopsPattern {
            rows: self.rows,
            keys: self.keys,
            pairs: self.pairs,
            max_bucket: self.max_bucket,
            row_offsets: f(self.row_offsets),
            pair_keys: f(self.pair_keys),
            pair_rows: f(self.pair_rows),
            pair_buckets: f(self.pair_buckets),
            col_offsets: f(self.col_offsets),
            col_rows: f(self.col_rows),
            col_buckets: f(self.col_buckets),
            row_order: f(self.row_order),
            key_order: f(self.key_order),
        }
    }
}

/// The inputs of hops attention.
#[derive(Debug, Clone)]
pub struct HopsInputs<B: Backend> {
    /// Queries `[heads, rows, head_dim]`.
    pub q: FloatTensor<B>,
    /// Keys `[heads, keys, head_dim]`.
    pub k: FloatTensor<B>,
    /// Values `[heads, keys, head_dim]`.
    pub v: FloatTensor<B>,
    /// Spatial bias per head per bucket, `[heads, buckets]`.
    pub table: FloatTensor<B>,
    /// The pairs.
    pub pattern: HopsPattern<B>,
}

/// A backend that runs attention over a sparse pattern of pairs:
/// `softmax_j(q_i·k_j/√d + table[h, bucket(i, j)]) · v_j` over the pairs `(i, j)` of each row.
pub trait HopsAttentionBackend: Backend {
    /// The forward pass: the output and each row's log-sum-exp.
    fn hops_attention(inputs: HopsInputs<Self>) -> AttentionSaved<Self>;

    /// The forward's output and log-sum-exp packed as `[heads, rows, head_dim + 1]` (the
    /// log-sum-exp last): one tensor, so that one autodiff node carries the gradients of both.
    fn hops_attention_packed(inputs: HopsInputs<Self>) -> FloatTensor<Self> {
        pack::<Self>(Self::hops_attention(inputs))
    }
}

/// A backend with a kernel for the backward of hops attention (the backends `Autodiff` wraps).
pub trait HopsAttentionBackward: HopsAttentionBackend {
    /// The backward pass from the gradient of the output and, if the caller used it, of the
    /// log-sum-exp (`[heads, rows]`).
    fn hops_attention_backward(
        inputs: HopsInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
        grad_lse: Option<FloatTensor<Self>>,
    ) -> AttentionGrads<Self>;
}

/// `[heads, rows, head_dim]` output and `[heads, rows]` log-sum-exp as one
/// `[heads, rows, head_dim + 1]` tensor.
fn pack<B: Backend>(saved: AttentionSaved<B>) -> FloatTensor<B> {
    let output: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(saved.output));
    let [heads, rows, _] = output.dims();
    let lse: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(saved.lse));
    Tensor::cat(vec![output, lse.reshape([heads, rows, 1])], 2)
        .into_primitive()
        .tensor()
}

/// The gradients of [`pack`]'s two parts, from the gradient of the packed tensor.
fn unpack<B: Backend>(grad: FloatTensor<B>) -> (FloatTensor<B>, FloatTensor<B>) {
    let grad: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(grad));
    let [heads, rows, width] = grad.dims();
    let head_dim = width - 1;
    let output = grad.clone().slice([0..heads, 0..rows, 0..head_dim]);
    let lse = grad
        .slice([0..heads, 0..rows, head_dim..width])
        .reshape([heads, rows]);
    (
        output.into_primitive().tensor(),
        lse.into_primitive().tensor(),
    )
}

/// Hops attention of `q` (`[heads, rows, head_dim]`) over the keys and values `k`, `v`
/// (`[heads, keys, head_dim]`) of `pattern`'s pairs, biased by `table` (`[heads, buckets]`).
pub fn hops_attention<B: HopsAttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> Tensor<B, 3> {
    let saved = B::hops_attention(inputs(q, k, v, table, pattern));
    Tensor::from_primitive(TensorPrimitive::Float(saved.output))
}

/// Like [`hops_attention`], also returning each row's log-sum-exp (`[heads, rows]`),
/// differentiable too: partial attentions over disjoint key sets combine through it (a global
/// token's attention over the shards of a sequence).
pub fn hops_attention_with_lse<B: HopsAttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> (Tensor<B, 3>, Tensor<B, 2>) {
    let [heads, rows, head_dim] = q.dims();
    let packed = B::hops_attention_packed(inputs(q, k, v, table, pattern));
    let packed: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(packed));
    let output = packed.clone().slice([0..heads, 0..rows, 0..head_dim]);
    let lse = packed
        .slice([0..heads, 0..rows, head_dim..head_dim + 1])
        .reshape([heads, rows]);
    (output, lse)
}

fn inputs<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> HopsInputs<B> {
    HopsInputs {
        q: q.into_primitive().tensor(),
        k: k.into_primitive().tensor(),
        v: v.into_primitive().tensor(),
        table: table.into_primitive().tensor(),
        pattern: pattern.clone(),
    }
}
