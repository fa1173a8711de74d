//! Biased attention from plain burn tensor ops: the oracle of the fused kernels, and the
//! implementation on backends without one. It materialises S×S scores.
//!
//! [`attention`] also takes a block of query rows against all keys (`q` `[heads, R, d]`, `k`
//! and `v` `[heads, S, d]`, the R × S buckets of those rows): that is how the benchmark runs it
//! where one `[heads, S, S]` tensor exceeds the adapter's binding limit.

use burn::tensor::{
    ElementConversion, Int, Tensor, TensorData, TensorPrimitive, activation::softmax,
    backend::Backend,
};

use super::{
    AttentionBackwardBackend, AttentionGrads, AttentionInputs, AttentionSaved,
    BiasedAttentionBackend, PairBuckets, pairs::assert_in_table, safe_ops::contiguous,
};
use crate::device::CpuBackend;

/// Unpacks the blocks of packed pair buckets into one integer per pair, row-major,
/// `[rows · cols]`.
pub fn unpack_buckets<B: Backend>(pairs: PairBuckets<B>) -> Tensor<B, 1, Int> {
    let blocks = (0..pairs.blocks.len())
        .map(|b| {
            let count = pairs.block_range(b).len() * pairs.cols;
            unpack_words(pairs.blocks[b].clone(), count)
        })
        .collect();
    Tensor::cat(blocks, 0)
}

/// The first `count` one-byte buckets of packed `words`.
pub(crate) fn unpack_words<B: Backend>(
    pairs: Tensor<B, 1, Int>,
    count: usize,
) -> Tensor<B, 1, Int> {
    let [words] = pairs.dims();
    let shifts = Tensor::<B, 1, Int>::from_data(
        TensorData::new(vec![0i32, 8, 16, 24], [4]),
        &pairs.device(),
    )
    .reshape([1, 4])
    .expand([words, 4]);
    pairs
        .reshape([words, 1])
        .expand([words, 4])
        .bitwise_right_shift(shifts)
        .bitwise_and_scalar(255.elem())
        .reshape([words * 4])
        .slice(0..count)
}

/// The `[heads, rows, cols]` bias: each pair gets its bucket's scalar, per head.
///
/// Built bucket by bucket from `[1, S, S]` equality masks rather than by gathering from the
/// table: the gather's backward is a scatter-add of S² values into a handful of entries, which
/// serialises on atomics on a GPU. The masks keep the S×S axes separate so that the gradient's
/// reductions run along one S-long axis at a time (burn 0.21's wgpu reduction returns wrong
/// sums for a contiguous axis of more than 2^18 elements with few outputs).
pub fn bias_matrix<B: Backend>(
    table: Tensor<B, 2>,
    buckets: Tensor<B, 1, Int>,
    [rows, cols]: [usize; 2],
) -> Tensor<B, 3> {
    let [heads, count] = table.dims();
    let mut bias: Tensor<B, 3> = Tensor::zeros([heads, rows, cols], &table.device());
    for bucket in 0..count {
        let mask = bucket_mask(buckets.clone(), bucket, [rows, cols]);
        bias = bias
            + table
                .clone()
                .slice([0..heads, bucket..bucket + 1])
                .reshape([heads, 1, 1])
                * mask;
    }
    bias
}

/// `[1, rows, cols]`: 1.0 where the pair's bucket is `bucket`, else 0.0.
fn bucket_mask<B: Backend>(
    buckets: Tensor<B, 1, Int>,
    bucket: usize,
    [rows, cols]: [usize; 2],
) -> Tensor<B, 3> {
    buckets
        .equal_elem(bucket as i64)
        .float()
        .reshape([1, rows, cols])
}

/// Scaled scores plus bias, `[heads, R, S]` for R query rows and S keys.
fn scores<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pairs: PairBuckets<B>,
) -> Tensor<B, 3> {
    let [_, rows, head_dim] = q.dims();
    let [_, cols, _] = k.dims();
    assert_eq!(
        [pairs.rows, pairs.cols],
        [rows, cols],
        "one bucket per query-key pair"
    );
    assert_in_table(pairs.max_bucket, table.dims()[1]);
    let scale = (head_dim as f64).sqrt().recip();
    let buckets = unpack_buckets(pairs);
    contiguous(q).matmul(contiguous(k).swap_dims(1, 2)) * scale
        + bias_matrix(table, buckets, [rows, cols])
}

/// The attention output, differentiable through burn's own autodiff.
pub fn attention<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pairs: PairBuckets<B>,
) -> Tensor<B, 3> {
    softmax(scores(q, k, table, pairs), 2).matmul(contiguous(v))
}

fn float<B: Backend, const D: usize>(t: burn::tensor::ops::FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn primitive<B: Backend, const D: usize>(t: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Forward: output and per-row log-sum-exp, from plain ops.
pub fn forward<B: Backend>(inputs: AttentionInputs<B>) -> AttentionSaved<B> {
    let v: Tensor<B, 3> = contiguous(float(inputs.v));
    let s = scores(
        float(inputs.q),
        float(inputs.k),
        float(inputs.table),
        inputs.pairs,
    );
    let max = s.clone().max_dim(2);
    let lse = (s.clone() - max.clone()).exp().sum_dim(2).log() + max;
    let p = (s - lse.clone()).exp();
    let [heads, rows, _] = lse.dims();
    AttentionSaved {
        output: primitive(p.matmul(v)),
        lse: primitive(lse.reshape([heads, rows])),
    }
}

/// Backward from plain ops: recomputes the probabilities and applies the softmax and matmul
/// derivatives; the bias-table gradient sums `dS` over the pairs of each bucket.
pub fn backward<B: Backend>(
    inputs: AttentionInputs<B>,
    saved: AttentionSaved<B>,
    grad_output: burn::tensor::ops::FloatTensor<B>,
) -> AttentionGrads<B> {
    let q: Tensor<B, 3> = contiguous(float(inputs.q));
    let k: Tensor<B, 3> = contiguous(float(inputs.k));
    let v: Tensor<B, 3> = contiguous(float(inputs.v));
    let table: Tensor<B, 2> = float(inputs.table);
    let pairs = inputs.pairs;
    let output: Tensor<B, 3> = float(saved.output);
    let d_out: Tensor<B, 3> = contiguous(float(grad_output));
    let [heads, rows, head_dim] = q.dims();
    let [_, keys, _] = k.dims();
    let [_, buckets] = table.dims();
    let scale = (head_dim as f64).sqrt().recip();
    let lse: Tensor<B, 3> = float::<B, 2>(saved.lse).reshape([heads, rows, 1]);

    let p = (scores(q.clone(), k.clone(), table, pairs.clone()) - lse).exp();
    let d_v = p.clone().swap_dims(1, 2).matmul(d_out.clone());
    let d_p = d_out.clone().matmul(v.swap_dims(1, 2));
    let delta = (d_out * output).sum_dim(2);
    let d_s = p * (d_p - delta);
    let d_q = d_s.clone().matmul(k) * scale;
    let d_k = d_s.clone().swap_dims(1, 2).matmul(q) * scale;
    let unpacked = unpack_buckets(pairs);
    let columns: Vec<Tensor<B, 2>> = (0..buckets)
        .map(|bucket| {
            let masked = d_s.clone() * bucket_mask(unpacked.clone(), bucket, [rows, keys]);
            masked.sum_dim(1).sum_dim(2).reshape([heads, 1])
        })
        .collect();
    AttentionGrads {
        q: primitive(d_q),
        k: primitive(d_k),
        v: primitive(d_v),
        table: primitive(Tensor::cat(columns, 1)),
    }
}

impl BiasedAttentionBackend for CpuBackend {
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self> {
        forward(inputs)
    }
}

impl AttentionBackwardBackend for CpuBackend {
    fn biased_attention_backward(
        inputs: AttentionInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: burn::tensor::ops::FloatTensor<Self>,
    ) -> AttentionGrads<Self> {
        backward(inputs, saved, grad_output)
    }
}
