//! Hops attention from plain burn tensor ops: gathers of the paired rows, per-pair scores,
//! segment sums over each row's pairs (scatter-adds). [`attention`] is differentiated by burn
//! itself and is the oracle of the WGSL kernels; [`forward`] and [`backward`] are the same
//! formulas written out, the implementation on burn's CPU backend.

use burn::tensor::{Int, Tensor, TensorPrimitive, backend::Backend, ops::FloatTensor};

use super::{HopsAttentionBackend, HopsAttentionBackward, HopsInputs, HopsPattern};
use crate::device::CpuBackend;
use crate::kernels::{
    AttentionGrads, AttentionSaved,
    reference::unpack_words,
    safe_ops::{select, select_add},
};

/// Below any score: the starting value of a row maximum.
const NEG: f32 = -1.0e30;

/// The bucket of every pair, `[pairs]`.
fn pair_buckets<B: Backend>(pattern: &HopsPattern<B>) -> Tensor<B, 1, Int> {
    unpack_words(pattern.pair_buckets.clone(), pattern.pairs)
}

/// Scaled scores plus bias of every pair, `[heads, pairs]`, and the gathered query and key
/// rows `[heads, pairs, head_dim]`.
fn scores<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> (Tensor<B, 2>, Tensor<B, 3>, Tensor<B, 3>) {
    let [heads, _, head_dim] = q.dims();
    let scale = (head_dim as f64).sqrt().recip();
    let q_pairs = select(q, 1, pattern.pair_rows.clone());
    let k_pairs = select(k, 1, pattern.pair_keys.clone());
    let dots = (q_pairs.clone() * k_pairs.clone())
        .sum_dim(2)
        .reshape([heads, pattern.pairs]);
    let bias = select(table, 1, pair_buckets(pattern));
    (dots * scale + bias, q_pairs, k_pairs)
}

/// `[heads, rows]` per-row sums of `[heads, pairs]` values.
fn row_sums<B: Backend>(values: Tensor<B, 2>, pattern: &HopsPattern<B>) -> Tensor<B, 2> {
    let [heads, _] = values.dims();
    select_add(
        Tensor::zeros([heads, pattern.rows], &values.device()),
        1,
        pattern.pair_rows.clone(),
        values,
    )
}

/// Pairs per chunk of [`head_max`]'s first reduction.
const MAX_CHUNK: usize = 1024;

/// Each head's largest score, `[heads, 1]`, as a constant (softmax does not depend on the
/// shift). burn has no segment maximum (its scatter adds only), so rows share their head's
/// shift: exact unless a row's scores all lie over ~87 below the head's largest, where their
/// exponentials would underflow. Reduced in chunks, so that no reduction runs along a
/// contiguous axis of more than 2^18 elements (burn 0.21's wgpu reductions are wrong there).
fn head_max<B: Backend>(scores: Tensor<B, 2>) -> Tensor<B, 2> {
    let [heads, pairs] = scores.dims();
    let chunks = pairs.div_ceil(MAX_CHUNK);
    let padding = chunks * MAX_CHUNK - pairs;
    let mut scores = scores.detach();
    if padding > 0 {
        let pad = Tensor::<B, 2>::full([heads, padding], NEG, &scores.device());
        scores = Tensor::cat(vec![scores, pad], 1);
    }
    scores
        .reshape([heads, chunks, MAX_CHUNK])
        .max_dim(2)
        .max_dim(1)
        .reshape([heads, 1])
}

/// `[heads, rows, head_dim]` sums over each row's pairs of `weights · rows_of_pairs`.
fn weighted_row_sums<B: Backend>(
    weights: Tensor<B, 2>,
    paired: Tensor<B, 3>,
    rows: usize,
    index: Tensor<B, 1, Int>,
) -> Tensor<B, 3> {
    let [heads, _, head_dim] = paired.dims();
    select_add(
        Tensor::zeros([heads, rows, head_dim], &paired.device()),
        1,
        index,
        paired * weights.unsqueeze_dim(2),
    )
}

/// Probabilities of every pair `[heads, pairs]` and each row's log-sum-exp `[heads, rows]`.
fn probabilities<B: Backend>(
    scores: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let max = head_max(scores.clone());
    let exp = (scores - max.clone()).exp();
    let sums = row_sums(exp.clone(), pattern);
    let p = exp / select(sums.clone(), 1, pattern.pair_rows.clone());
    (p, sums.log() + max)
}

/// The attention output and each row's log-sum-exp, differentiable through burn's autodiff.
pub fn attention<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    table: Tensor<B, 2>,
    pattern: &HopsPattern<B>,
) -> (Tensor<B, 3>, Tensor<B, 2>) {
    let (s, _, _) = scores(q, k, table, pattern);
    let (p, lse) = probabilities(s, pattern);
    let v_pairs = select(v, 1, pattern.pair_keys.clone());
    let output = weighted_row_sums(p, v_pairs, pattern.rows, pattern.pair_rows.clone());
    (output, lse)
}

fn float<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn primitive<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// The forward from plain ops.
pub fn forward<B: Backend>(inputs: HopsInputs<B>) -> AttentionSaved<B> {
    let (output, lse) = attention(
        float(inputs.q),
        float(inputs.k),
        float(inputs.v),
        float(inputs.table),
        &inputs.pattern,
    );
    AttentionSaved {
        output: primitive(output),
        lse: primitive(lse),
    }
}

/// The backward from plain ops: recomputes the probabilities from the saved log-sum-exp and
/// applies the softmax and product derivatives pair by pair.
pub fn backward<B: Backend>(
    inputs: HopsInputs<B>,
    saved: AttentionSaved<B>,
    grad_output: FloatTensor<B>,
    grad_lse: Option<FloatTensor<B>>,
) -> AttentionGrads<B> {
    let pattern = &inputs.pattern;
    let q: Tensor<B, 3> = float(inputs.q);
    let k: Tensor<B, 3> = float(inputs.k);
    let v: Tensor<B, 3> = float(inputs.v);
    let table: Tensor<B, 2> = float(inputs.table);
    let output: Tensor<B, 3> = float(saved.output);
    let lse: Tensor<B, 2> = float(saved.lse);
    let d_out: Tensor<B, 3> = float(grad_output);
    let [heads, rows, head_dim] = q.dims();
    let [_, keys, _] = k.dims();
    let [_, buckets] = table.dims();
    let scale = (head_dim as f64).sqrt().recip();
    let (s, q_pairs, k_pairs) = scores(q, k, table, pattern);
    let p = (s - select(lse, 1, pattern.pair_rows.clone())).exp();
    let mut delta = (d_out.clone() * output).sum_dim(2).reshape([heads, rows]);
    if let Some(grad_lse) = grad_lse {
        delta = delta - float::<B, 2>(grad_lse);
    }
    let d_out_pairs = select(d_out, 1, pattern.pair_rows.clone());
    let v_pairs = select(v, 1, pattern.pair_keys.clone());
    let d_p = (d_out_pairs.clone() * v_pairs)
        .sum_dim(2)
        .reshape([heads, pattern.pairs]);
    let d_s = p.clone() * (d_p - select(delta, 1, pattern.pair_rows.clone()));
    let d_q = weighted_row_sums(d_s.clone(), k_pairs, rows, pattern.pair_rows.clone()) * scale;
    let d_k = weighted_row_sums(d_s.clone(), q_pairs, keys, pattern.pair_keys.clone()) * scale;
    let d_v = weighted_row_sums(p, d_out_pairs, keys, pattern.pair_keys.clone());
    let d_table = select_add(
        Tensor::zeros([heads, buckets], &d_s.device()),
        1,
        pair_buckets(pattern),
        d_s,
    );
    AttentionGrads {
        q: primitive(d_q),
        k: primitive(d_k),
        v: primitive(d_v),
        table: primitive(d_table),
    }
}

impl HopsAttentionBackend for CpuBackend {
    fn hops_attention(inputs: HopsInputs<Self>) -> AttentionSaved<Self> {
        forward(inputs)
    }
}

impl HopsAttentionBackward for CpuBackend {
    fn hops_attention_backward(
        inputs: HopsInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
        grad_lse: Option<FloatTensor<Self>>,
    ) -> AttentionGrads<Self> {
        backward(inputs, saved, grad_output, grad_lse)
    }
}
