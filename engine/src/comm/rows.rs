//! The differentiable all-gather of node rows across the shards of a context-parallel group:
//! forward, every shard gets the rows of all shards; backward, each shard gets the sum over
//! shards of the gradient of its own rows (a reduce-scatter).

use std::sync::Arc;

use burn::tensor::Tensor;

use super::{
    Communicator, Rank, Tag,
    exchange::{ExchangeBackend, HostRows, RowsExchange, exchange_rows},
};

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

/// All-gathers the rows of `x` (`[local rows, C]`) over `exchange`'s group.
pub fn gather_rows<B: ExchangeBackend>(x: Tensor<B, 2>, exchange: &RowExchange) -> Tensor<B, 2> {
    exchange_rows(x, exchange)
}

impl RowsExchange for RowExchange {
    fn comm(&self) -> &dyn Communicator {
        &*self.comm
    }

    /// Every shard's rows, in shard order.
    fn forward(&self, rows: HostRows) -> Result<HostRows, String> {
        let expected = self.rows[self.position()];
        assert_eq!(
            rows.rows(),
            expected,
            "a shard gathers the rows it was given"
        );
        let blocks = self
            .comm
            .all_gather(&self.group, Tag::Gather, rows.values)
            .map_err(|e| format!("row all-gather: {e}"))?;
        Ok(HostRows {
            values: blocks.concat(),
            width: rows.width,
        })
    }

    /// The reduce-scatter: the summed gradient of this shard's rows.
    fn backward(&self, grad: HostRows) -> Result<HostRows, String> {
        let width = grad.width;
        let mut blocks = Vec::with_capacity(self.rows.len());
        let mut start = 0;
        for &rows in &self.rows {
            blocks.push(grad.values[start * width..(start + rows) * width].to_vec());
            start += rows;
        }
        let own = self
            .comm
            .reduce_scatter_sum(&self.group, Tag::ScatterGrad, blocks)
            .map_err(|e| format!("row-gradient reduce-scatter: {e}"))?;
        Ok(HostRows { values: own, width })
    }
}
