//! The differentiable all-gather of node rows across the shards of a context-parallel group:
//! forward, every shard gets the rows of all shards; backward, each shard gets the sum over
//! shards of the gradient of its own rows (a reduce-scatter).

use std::sync::Arc;

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::{Tensor, TensorData, TensorPrimitive, backend::Backend, ops::FloatTensor},
};

use super::{Communicator, Rank, Tag};
use crate::device::{CpuBackend, WgpuBackend};

/// How the rows of one sequence are spread over the shards of a context-parallel group, seen
/// from one shard.
#[derive(Debug, Clone)]
pub struct RowExchange {
    /// This shard's communicator.
    pub comm: Arc<dyn Communicator>,
    /// The group's ranks, in shard order.
    pub group: Vec<Rank>,
    /// Rows held by each shard, in shard order; shard `i` holds the rows that follow shard
    /// `i - 1`'s.
    pub rows: Vec<usize>,
}

impl RowExchange {
    /// Position of this shard in the group.
    pub fn position(&self) -> usize {
        self.group
            .iter()
            .position(|&r| r == self.comm.rank())
            .expect("an exchange is built for a member of its group")
    }

    /// Rows of the whole sequence.
    pub fn total_rows(&self) -> usize {
        self.rows.iter().sum()
    }
}

/// A backend that can all-gather rows across a context-parallel group.
pub trait RowExchangeBackend: Backend {
    /// `[local rows, C]` → `[total rows, C]`: the rows of every shard, in shard order.
    fn gather_rows(x: FloatTensor<Self>, exchange: &RowExchange) -> FloatTensor<Self>;
}

/// All-gathers the rows of `x` (`[local rows, C]`) over `exchange`'s group.
pub fn gather_rows<B: RowExchangeBackend>(x: Tensor<B, 2>, exchange: &RowExchange) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::gather_rows(
        x.into_primitive().tensor(),
        exchange,
    )))
}

/// The failure of a collective inside a tensor operation, which cannot return an error: the
/// job is aborted on every rank and this rank's worker unwinds with the message.
fn collective_failed(exchange: &RowExchange, what: &str, error: impl std::fmt::Display) -> ! {
    exchange.comm.abort(&format!("{what} failed: {error}"));
    panic!("{what} failed on rank {}: {error}", exchange.comm.rank())
}

fn host_values<B: Backend>(x: FloatTensor<B>) -> (Vec<f32>, [usize; 2]) {
    let t: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(x));
    let dims = t.dims();
    let values = t
        .into_data()
        .convert::<f32>()
        .to_vec::<f32>()
        .expect("converted to f32");
    (values, dims)
}

fn device_tensor<B: Backend>(
    values: Vec<f32>,
    dims: [usize; 2],
    device: &B::Device,
) -> FloatTensor<B> {
    Tensor::<B, 2>::from_data(TensorData::new(values, dims), device)
        .into_primitive()
        .tensor()
}

/// The forward all-gather, staged through the host.
fn host_gather<B: Backend>(x: FloatTensor<B>, exchange: &RowExchange) -> FloatTensor<B> {
    let device = B::float_device(&x);
    let (values, [rows, width]) = host_values::<B>(x);
    let expected = exchange.rows[exchange.position()];
    assert_eq!(rows, expected, "a shard gathers the rows it was given");
    let blocks = exchange
        .comm
        .all_gather(&exchange.group, Tag::Gather, values)
        .unwrap_or_else(|e| collective_failed(exchange, "row all-gather", e));
    let total = exchange.total_rows();
    device_tensor::<B>(blocks.concat(), [total, width], &device)
}

/// The backward reduce-scatter: the summed gradient of this shard's rows.
fn host_scatter_grad<B: Backend>(grad: FloatTensor<B>, exchange: &RowExchange) -> FloatTensor<B> {
    let device = B::float_device(&grad);
    let (values, [_, width]) = host_values::<B>(grad);
    let mut blocks = Vec::with_capacity(exchange.rows.len());
    let mut start = 0;
    for &rows in &exchange.rows {
        blocks.push(values[start * width..(start + rows) * width].to_vec());
        start += rows;
    }
    let own = exchange
        .comm
        .reduce_scatter_sum(&exchange.group, Tag::ScatterGrad, blocks)
        .unwrap_or_else(|e| collective_failed(exchange, "row-gradient reduce-scatter", e));
    let rows = exchange.rows[exchange.position()];
    device_tensor::<B>(own, [rows, width], &device)
}

impl RowExchangeBackend for WgpuBackend {
    fn gather_rows(x: FloatTensor<Self>, exchange: &RowExchange) -> FloatTensor<Self> {
        host_gather::<Self>(x, exchange)
    }
}

impl RowExchangeBackend for CpuBackend {
    fn gather_rows(x: FloatTensor<Self>, exchange: &RowExchange) -> FloatTensor<Self> {
        host_gather::<Self>(x, exchange)
    }
}

/// The backward step of [`gather_rows`], registered on the autodiff graph.
#[derive(Debug)]
struct GatherRowsBackward;

impl<B: Backend> Backward<B, 1> for GatherRowsBackward {
    type State = RowExchange;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        // Every shard takes part, tracked input or not, so that the collective completes.
        let own = host_scatter_grad::<B>(grad, &ops.state);
        if let Some(node) = parent {
            grads.register::<B>(node.id, own);
        }
    }
}

impl<B: RowExchangeBackend, C: CheckpointStrategy> RowExchangeBackend for Autodiff<B, C> {
    fn gather_rows(x: FloatTensor<Self>, exchange: &RowExchange) -> FloatTensor<Self> {
        match GatherRowsBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::gather_rows(x.primitive.clone(), exchange);
                prep.finish(exchange.clone(), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::gather_rows(x.primitive, exchange)),
        }
    }
}
