//! Biased attention under `Autodiff<B>`: the forward saves its output and log-sum-exp, the
//! backward calls the backend's fused backward.

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::backend::AutodiffBackend,
};

use super::{
    AttentionBackwardBackend, AttentionGrads, AttentionInputs, AttentionSaved,
    BiasedAttentionBackend,
};

/// The backward step of biased attention, registered on the autodiff graph.
#[derive(Debug)]
struct BiasedAttentionBackward;

impl<B: AttentionBackwardBackend> Backward<B, 4> for BiasedAttentionBackward {
    type State = (AttentionInputs<B>, AttentionSaved<B>);

    fn backward(
        self,
        ops: Ops<Self::State, 4>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [node_q, node_k, node_v, node_table] = ops.parents;
        let grad_output = grads.consume::<B>(&ops.node);
        let (inputs, saved) = ops.state;
        let AttentionGrads { q, k, v, table } =
            B::biased_attention_backward(inputs, saved, grad_output);
        for (node, grad) in [(node_q, q), (node_k, k), (node_v, v), (node_table, table)] {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: AttentionBackwardBackend, C: CheckpointStrategy> BiasedAttentionBackend for Autodiff<B, C> {
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self> {
        let AttentionInputs {
            q,
            k,
            v,
            table,
            pairs,
        } = inputs;
        let inner = AttentionInputs {
            q: q.primitive.clone(),
            k: k.primitive.clone(),
            v: v.primitive.clone(),
            table: table.primitive.clone(),
            pairs: pairs.inner(),
        };
        let prepared = BiasedAttentionBackward
            .prepare::<C>([
                q.node.clone(),
                k.node.clone(),
                v.node.clone(),
                table.node.clone(),
            ])
            .compute_bound()
            .stateful();
        match prepared {
            OpsKind::Tracked(prep) => {
                let saved = B::biased_attention(inner.clone());
                let lse = saved.lse.clone();
                let output = prep.finish((inner, saved.clone()), saved.output);
                AttentionSaved {
                    output,
                    lse: <Autodiff<B, C> as AutodiffBackend>::from_inner(lse),
                }
            }
            OpsKind::UnTracked(prep) => {
                let saved = B::biased_attention(inner);
                let output = prep.finish(saved.output);
                AttentionSaved {
                    output,
                    lse: <Autodiff<B, C> as AutodiffBackend>::from_inner(saved.lse),
                }
            }
        }
    }
}
