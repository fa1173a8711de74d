//! A differentiable exchange of node rows between the devices of a group, staged through the
//! host: the forward and the backward are functions of host values ([`RowsExchange`]), run on
//! every member (so that the collective completes whether or not its input is tracked). The
//! context-parallel all-gather ([`RowExchange`](super::RowExchange)) and the halo exchange
//! ([`HaloExchange`](super::HaloExchange)) are two such exchanges.

use std::fmt::Debug;

use burn::{
    backend::{Autodiff, autodiff::checkpoint::strategy::CheckpointStrategy},
    tensor::{Tensor, TensorData, TensorPrimitive, backend::Backend, ops::FloatTensor},
};

use super::Communicator;
use crate::{
    device::{CpuBackend, WgpuBackend},
    host::host_f32,
    linear_map::{LinearMap, apply_linear},
};

/// Rows of `width` values each, on the host, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRows {
    /// The values.
    pub values: Vec<f32>,
    /// Values per row.
    pub width: usize,
}

impl HostRows {
    /// Rows held.
    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.width).unwrap_or(0)
    }
}

/// An exchange of rows among a group, seen from one member: what it makes of its rows, and of
/// the gradient of what it made.
pub trait RowsExchange: Clone + Debug + Send + Sync + 'static {
    /// This member's communicator.
    fn comm(&self) -> &dyn Communicator;

    /// The forward: this member's rows to the exchanged rows.
    fn forward(&self, rows: HostRows) -> Result<HostRows, String>;

    /// The backward: the gradient of the exchanged rows to that of this member's rows.
    fn backward(&self, grad: HostRows) -> Result<HostRows, String>;
}

/// A backend that can exchange rows among the devices of a group.
pub trait ExchangeBackend: Backend {
    /// The rows `x` (`[rows, C]`) after `exchange`'s forward.
    fn exchange_rows<E: RowsExchange>(x: FloatTensor<Self>, exchange: &E) -> FloatTensor<Self>;
}

/// The rows `x` after `exchange`, differentiable through its backward.
pub fn exchange_rows<B: ExchangeBackend, E: RowsExchange>(
    x: Tensor<B, 2>,
    exchange: &E,
) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::exchange_rows(
        x.into_primitive().tensor(),
        exchange,
    )))
}

/// Runs `step` (the forward or the backward of `exchange`) on the host values of `x` and puts
/// the result on `x`'s device. A failure inside a tensor operation cannot return an error: the
/// job is aborted on every rank and this rank's worker unwinds with the message.
fn on_host<B: Backend, E: RowsExchange>(
    x: FloatTensor<B>,
    exchange: &E,
    what: &str,
    step: impl FnOnce(&E, HostRows) -> Result<HostRows, String>,
) -> FloatTensor<B> {
    let device = B::float_device(&x);
    let t: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(x));
    let [_, width] = t.dims();
    let rows = HostRows {
        values: host_f32(t),
        width,
    };
    let out = step(exchange, rows).unwrap_or_else(|error| {
        let comm = exchange.comm();
        comm.abort(&format!("{what} failed: {error}"));
        panic!("{what} failed on rank {}: {error}", comm.rank())
    });
    let dims = [out.rows(), out.width];
    Tensor::<B, 2>::from_data(TensorData::new(out.values, dims), &device)
        .into_primitive()
        .tensor()
}

impl ExchangeBackend for WgpuBackend {
    fn exchange_rows<E: RowsExchange>(x: FloatTensor<Self>, exchange: &E) -> FloatTensor<Self> {
        on_host::<Self, E>(x, exchange, "row exchange", E::forward)
    }
}

impl ExchangeBackend for CpuBackend {
    fn exchange_rows<E: RowsExchange>(x: FloatTensor<Self>, exchange: &E) -> FloatTensor<Self> {
        on_host::<Self, E>(x, exchange, "row exchange", E::forward)
    }
}

/// An exchange as a linear map: its transpose sends the gradient rows back (every member takes
/// part, tracked input or not, so that the exchange completes).
#[derive(Debug, Clone)]
struct ExchangeMap<E>(E);

impl<B: Backend, E: RowsExchange> LinearMap<B> for ExchangeMap<E> {
    fn transpose(&self, grad: FloatTensor<B>) -> FloatTensor<B> {
        on_host::<B, E>(grad, &self.0, "row-gradient exchange", E::backward)
    }
}

impl<B: ExchangeBackend, C: CheckpointStrategy> ExchangeBackend for Autodiff<B, C> {
    fn exchange_rows<E: RowsExchange>(x: FloatTensor<Self>, exchange: &E) -> FloatTensor<Self> {
        apply_linear::<B, C, _>(x, &ExchangeMap(exchange.clone()), |x| {
            B::exchange_rows(x, exchange)
        })
    }
}
