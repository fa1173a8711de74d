//! Counter-based dropout under `Autodiff<B>`: dropout is linear in its input and its mask is
//! diagonal, so the gradient is the upstream gradient through the same mask, recomputed from
//! the mask's numbers; the backward keeps only those numbers.

use burn::{
    backend::{Autodiff, autodiff::checkpoint::strategy::CheckpointStrategy},
    tensor::ops::FloatTensor,
};

use super::{CounterDropoutBackend, DropoutMask};
use crate::linear_map::{LinearMap, apply_linear};

impl<B: CounterDropoutBackend> LinearMap<B> for DropoutMask {
    fn transpose(&self, grad: FloatTensor<B>) -> FloatTensor<B> {
        B::counter_dropout(grad, self)
    }
}

impl<B: CounterDropoutBackend, C: CheckpointStrategy> CounterDropoutBackend for Autodiff<B, C> {
    fn counter_dropout(x: FloatTensor<Self>, mask: &DropoutMask) -> FloatTensor<Self> {
        apply_linear::<B, C, _>(x, mask, |x| B::counter_dropout(x, mask))
    }
}
