//! A differentiable exchange of node rows between the devices of a group, staged through the
//! host: the forward and the backward are functions of host values ([`RowsExchange`]), run on
//! every member (so that the collective completes whether or not its input is tracked). The
//! context-parallel all-gather ([`RowExchange`](super::RowExchange)) and the halo exchange
//! ([`HaloExchange`](super::HaloExchange)) are two such exchanges.

use std::cell::Cell;
use std::fmt::Debug;
use std::time::Instant;

use burn::{
    backend::{Autodiff, autodiff::checkpoint::strategy::CheckpointStrategy, wgpu::WgpuRuntime},
    cubecl::Runtime,
    tensor::{Tensor, TensorData, TensorPrimitive, backend::Backend, ops::FloatTensor},
};

use super::Communicator;
use crate::{
    device::{CpuBackend, WgpuBackend},
    host::{HostRead, host_f32},
    linear_map::{LinearMap, apply_linear},
    timing::TransferTime,
};

thread_local! {
    /// The time this thread's exchanges took since [`take_exchange_time`] last read it.
    static EXCHANGE_TIME: Cell<TransferTime> = Cell::new(TransferTime::default());
}

/// The time the exchanges run on this thread (a device's worker) took since the last call,
/// and starts again from zero: each from its copy's start to its rows on the device, and the
/// part the thread waited for. An exchange started early ([`start_exchange`]) travels while
/// the device computes what does not need it; any other is waited for whole.
pub fn take_exchange_time() -> TransferTime {
    EXCHANGE_TIME.with(Cell::take)
}

/// Adds one exchange's time to this thread's.
fn record_exchange(seconds: f64, exposed_seconds: f64) {
    EXCHANGE_TIME.with(|time| {
        let mut sum = time.get();
        sum += TransferTime {
            seconds,
            exposed_seconds,
        };
        time.set(sum);
    });
}

/// A member's rows on their way to the host for an exchange: the copy is started
/// ([`start_exchange`]) before the device computes what does not need the exchange, and the
/// exchange ([`exchange_started_rows`]) takes the values from it.
pub struct StartedExchange {
    read: HostRead,
    started: Instant,
}

/// Starts copying `x`, this member's rows, to the host for an exchange of them. Call it from
/// the thread that drives the device, then enqueue the work that does not need the exchange.
pub fn start_exchange<B: Backend>(x: &Tensor<B, 2>) -> StartedExchange {
    StartedExchange {
        started: Instant::now(),
        read: HostRead::start(x.clone()),
    }
}

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
    /// The rows `x` (`[rows, C]`) after `exchange`'s forward; `started`: the copy of `x` to
    /// the host, if it was started before. By default through the host, untracked.
    fn exchange_rows<E: RowsExchange>(
        x: FloatTensor<Self>,
        exchange: &E,
        started: Option<StartedExchange>,
    ) -> FloatTensor<Self> {
        on_host::<Self, E>(x, exchange, "row exchange", E::forward, started)
    }

    /// Submits the work enqueued on `device` so far without waiting for it, so that the
    /// device computes it while the host waits for an exchange.
    fn submit(device: &Self::Device);
}

/// The rows `x` after `exchange`, differentiable through its backward.
pub fn exchange_rows<B: ExchangeBackend, E: RowsExchange>(
    x: Tensor<B, 2>,
    exchange: &E,
) -> Tensor<B, 2> {
    exchange_started_rows(x, exchange, None)
}

/// Like [`exchange_rows`], with the values of `x` from the copy `started` from it when given;
/// the work enqueued since that start is then submitted first, so that the device computes it
/// while the rows travel.
pub fn exchange_started_rows<B: ExchangeBackend, E: RowsExchange>(
    x: Tensor<B, 2>,
    exchange: &E,
    started: Option<StartedExchange>,
) -> Tensor<B, 2> {
    if started.is_some() {
        B::submit(&x.device());
    }
    Tensor::from_primitive(TensorPrimitive::Float(B::exchange_rows(
        x.into_primitive().tensor(),
        exchange,
        started,
    )))
}

/// Runs `step` (the forward or the backward of `exchange`) on the host values of `x` (from
/// the copy `started` from it, if given) and puts the result on `x`'s device; records the
/// time on this thread. A failure inside a tensor operation cannot return an error: the job
/// is aborted on every rank and this rank's worker unwinds with the message.
fn on_host<B: Backend, E: RowsExchange>(
    x: FloatTensor<B>,
    exchange: &E,
    what: &str,
    step: impl FnOnce(&E, HostRows) -> Result<HostRows, String>,
    started: Option<StartedExchange>,
) -> FloatTensor<B> {
    let entered = Instant::now();
    let device = B::float_device(&x);
    let t: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(x));
    let [_, width] = t.dims();
    let fail = |error: String| -> ! {
        let comm = exchange.comm();
        comm.abort(&format!("{what} failed: {error}"));
        panic!("{what} failed on rank {}: {error}", comm.rank())
    };
    let (began, values) = match started {
        Some(StartedExchange { read, started }) => (
            started,
            read.values()
                .unwrap_or_else(|e| fail(format!("reading the rows back: {e}"))),
        ),
        None => (entered, host_f32(t)),
    };
    let out = step(exchange, HostRows { values, width }).unwrap_or_else(|error| fail(error));
    let dims = [out.rows(), out.width];
    let on_device = Tensor::<B, 2>::from_data(TensorData::new(out.values, dims), &device)
        .into_primitive()
        .tensor();
    let now = Instant::now();
    record_exchange((now - began).as_secs_f64(), (now - entered).as_secs_f64());
    on_device
}

impl ExchangeBackend for WgpuBackend {
    fn submit(device: &Self::Device) {
        // A failed submission fails the next read of the device, the exchange's own.
        let _ = WgpuRuntime::client(device).flush();
    }
}

impl ExchangeBackend for CpuBackend {
    /// The CPU backend computes each operation as it is called: nothing waits.
    fn submit(_device: &Self::Device) {}
}

/// An exchange as a linear map: its transpose sends the gradient rows back (every member takes
/// part, tracked input or not, so that the exchange completes).
#[derive(Debug, Clone)]
struct ExchangeMap<E>(E);

impl<B: Backend, E: RowsExchange> LinearMap<B> for ExchangeMap<E> {
    fn transpose(&self, grad: FloatTensor<B>) -> FloatTensor<B> {
        on_host::<B, E>(grad, &self.0, "row-gradient exchange", E::backward, None)
    }
}

impl<B: ExchangeBackend, C: CheckpointStrategy> ExchangeBackend for Autodiff<B, C> {
    fn exchange_rows<E: RowsExchange>(
        x: FloatTensor<Self>,
        exchange: &E,
        started: Option<StartedExchange>,
    ) -> FloatTensor<Self> {
        apply_linear::<B, C, _>(x, &ExchangeMap(exchange.clone()), |x| {
            B::exchange_rows(x, exchange, started)
        })
    }

    fn submit(device: &Self::Device) {
        B::submit(device);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use burn::tensor::{Tensor, TensorData};

    use super::{exchange_rows, exchange_started_rows, start_exchange, take_exchange_time};
    use crate::{
        comm::{LocalHub, RowExchange},
        device::CpuAutodiff,
        host::host_f32,
    };

    #[test]
    fn a_started_exchange_gathers_what_a_waited_one_does_and_both_are_timed() {
        let hub = LocalHub::new(2);
        let members: Vec<_> = (0..2)
            .map(|rank| {
                let comm = Arc::new(hub.communicator(rank).expect("rank of the hub"));
                std::thread::spawn(move || {
                    let exchange = RowExchange {
                        comm,
                        group: vec![0, 1],
                        rows: vec![1, 2],
                    };
                    let rows = rank + 1;
                    let values: Vec<f32> = (0..rows * 3).map(|v| (10 * rank + v) as f32).collect();
                    let x = Tensor::<CpuAutodiff, 2>::from_data(
                        TensorData::new(values, [rows, 3]),
                        &Default::default(),
                    );
                    take_exchange_time();
                    let waited = host_f32(exchange_rows(x.clone(), &exchange));
                    let after_waited = take_exchange_time();
                    let started = start_exchange(&x);
                    let gathered = host_f32(exchange_started_rows(x, &exchange, Some(started)));
                    (waited, gathered, after_waited, take_exchange_time())
                })
            })
            .collect();
        let mut expected: Vec<f32> = (0..3).map(|v| v as f32).collect();
        expected.extend((0..6).map(|v| (10 + v) as f32));
        for member in members {
            let (waited, gathered, waited_time, started_time) = member.join().expect("member");
            assert_eq!(waited, expected);
            assert_eq!(gathered, expected);
            for time in [waited_time, started_time] {
                assert!(time.seconds > 0.0, "{time:?}");
                assert!((0.0..=time.seconds).contains(&time.exposed_seconds));
            }
            assert_eq!(
                waited_time.hidden_seconds(),
                0.0,
                "an exchange waited for whole hides nothing"
            );
        }
    }
}
