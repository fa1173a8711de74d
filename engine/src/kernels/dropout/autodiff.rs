//! Counter-based dropout under `Autodiff<B>`: dropout is linear in its input, so the gradient
//! is the upstream gradient through the same mask, recomputed from the mask's numbers. The
//! backward keeps only those numbers, no tensor.

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::ops::FloatTensor,
};

use super::{CounterDropoutBackend, DropoutMask};

/// The backward step of one dropout, registered on the autodiff graph.
#[derive(Debug)]
struct DropoutBackward;

impl<B: CounterDropoutBackend> Backward<B, 1> for DropoutBackward {
    type State = DropoutMask;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            grads.register::<B>(node.id, B::counter_dropout(grad, &ops.state));
        }
    }
}

impl<B: CounterDropoutBackend, C: CheckpointStrategy> CounterDropoutBackend for Autodiff<B, C> {
    fn counter_dropout(x: FloatTensor<Self>, mask: &DropoutMask) -> FloatTensor<Self> {
        let output = B::counter_dropout(x.primitive, mask);
        match DropoutBackward
            .prepare::<C>([x.node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(*mask, output),
            OpsKind::UnTracked(prep) => prep.finish(output),
        }
    }
}
