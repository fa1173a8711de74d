//! Hops attention under `Autodiff<B>`: the forward saves its output and log-sum-exp, the
//! backward calls the backend's. The packed variant also passes the gradient of the
//! log-sum-exp back (a global token's partial attentions combine through it).

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::{backend::AutodiffBackend, ops::FloatTensor},
};

use super::{HopsAttentionBackend, HopsAttentionBackward, HopsInputs, HopsPattern, pack, unpack};
use crate::kernels::{AttentionGrads, AttentionSaved};

/// The backward step of hops attention, registered on the autodiff graph.
#[derive(Debug)]
struct HopsAttentionBackwardStep {
    /// Whether the output is the packed `[heads, rows, head_dim + 1]` (output and lse).
    packed: bool,
}

impl<B: HopsAttentionBackward> Backward<B, 4> for HopsAttentionBackwardStep {
    type State = (HopsInputs<B>, AttentionSaved<B>);

    fn backward(
        self,
        ops: Ops<Self::State, 4>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [node_q, node_k, node_v, node_table] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (inputs, saved) = ops.state;
        let (grad_output, grad_lse) = if self.packed {
            let (output, lse) = unpack::<B>(grad);
            (output, Some(lse))
        } else {
            (grad, None)
        };
        let AttentionGrads { q, k, v, table } =
            B::hops_attention_backward(inputs, saved, grad_output, grad_lse);
        for (node, grad) in [(node_q, q), (node_k, k), (node_v, v), (node_table, table)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// Runs the forward on the inner backend and records it: the output is the attention output,
/// or, `packed`, output and lse packed.
fn tracked<B: HopsAttentionBackward, C: CheckpointStrategy>(
    inputs: HopsInputs<Autodiff<B, C>>,
    packed: bool,
) -> (FloatTensor<Autodiff<B, C>>, FloatTensor<Autodiff<B, C>>) {
    let HopsInputs {
        q,
        k,
        v,
        table,
        pattern,
    } = inputs;
    let inner = HopsInputs {
        q: q.primitive.clone(),
        k: k.primitive.clone(),
        v: v.primitive.clone(),
        table: table.primitive.clone(),
        pattern: inner_pattern(pattern),
    };
    let prepared = HopsAttentionBackwardStep { packed }
        .prepare::<C>([
            q.node.clone(),
            k.node.clone(),
            v.node.clone(),
            table.node.clone(),
        ])
        .compute_bound()
        .stateful();
    let saved = B::hops_attention(inner.clone());
    let lse = <Autodiff<B, C> as AutodiffBackend>::from_inner(saved.lse.clone());
    let out = if packed {
        pack::<B>(saved.clone())
    } else {
        saved.output.clone()
    };
    let out = match prepared {
        OpsKind::Tracked(prep) => prep.finish((inner, saved), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    };
    (out, lse)
}

fn inner_pattern<B: HopsAttentionBackward, C: CheckpointStrategy>(
    pattern: HopsPattern<Autodiff<B, C>>,
) -> HopsPattern<B> {
    pattern.map(|t| t.inner())
}

impl<B: HopsAttentionBackward, C: CheckpointStrategy> HopsAttentionBackend for Autodiff<B, C> {
    fn hops_attention(inputs: HopsInputs<Self>) -> AttentionSaved<Self> {
        let (output, lse) = tracked(inputs, false);
        AttentionSaved { output, lse }
    }

    fn hops_attention_packed(inputs: HopsInputs<Self>) -> FloatTensor<Self> {
        tracked(inputs, true).0
    }
}
