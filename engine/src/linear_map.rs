//! One-input linear maps under `Autodiff<B>`: the gradient of `y = A·x` is `Aᵀ·dy`, a function of
//! the map alone, so the backward keeps the map's description, never a tensor. Counter-based
//! dropout (a diagonal mask, its own transpose) and the row exchanges of context parallelism
//! (whose transpose returns gradient rows to their owners) are such maps.

use std::{fmt::Debug, marker::PhantomData};

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::{backend::Backend, ops::FloatTensor},
};

/// A linear map `A` whose transpose the backward applies.
pub(crate) trait LinearMap<B: Backend>: Clone + Debug + Send + 'static {
    /// `Aᵀ · grad`.
    fn transpose(&self, grad: FloatTensor<B>) -> FloatTensor<B>;
}

/// The backward step of a [`LinearMap`], registered on the autodiff graph.
#[derive(Debug)]
struct LinearBackward<M>(PhantomData<M>);

impl<B: Backend, M: LinearMap<B>> Backward<B, 1> for LinearBackward<M> {
    type State = M;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        // The transpose runs whether or not the input is tracked: an exchange is a collective,
        // and every member must take part.
        let input_grad = ops.state.transpose(grad);
        if let Some(node) = parent {
            grads.register::<B>(node.id, input_grad);
        }
    }
}

/// `forward(x)` on the inner backend, the application of `map` to `x`, tracked so that the
/// backward applies `map`'s transpose.
pub(crate) fn apply_linear<B: Backend, C: CheckpointStrategy, M: LinearMap<B>>(
    x: FloatTensor<Autodiff<B, C>>,
    map: &M,
    forward: impl FnOnce(FloatTensor<B>) -> FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    match LinearBackward::<M>(PhantomData)
        .prepare::<C>([x.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(map.clone(), forward(x.primitive)),
        OpsKind::UnTracked(prep) => prep.finish(forward(x.primitive)),
    }
}
