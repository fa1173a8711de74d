//! The halo exchange of the hops scope's context parallelism: forward, a shard receives from
//! the owning shards the rows its near pairs (and message-passing edges) reach — its halo —
//! and sends its own rows to the shards that need them, point to point; backward, the
//! gradients of the halo rows go back to their owners, which add them to their rows'.
//! Traffic follows the partition's cut, not the sequence length.

use std::sync::Arc;

use super::{
    Communicator, Rank, Tag,
    exchange::{HostRows, RowsExchange},
};

/// Who sends which rows to whom in one shard group, seen from one shard.
#[derive(Debug, Clone)]
pub struct HaloExchange {
    /// This shard's communicator.
    pub comm: Arc<dyn Communicator>,
    /// The group's ranks, in shard order.
    pub group: Vec<Rank>,
    /// Rows this shard holds.
    pub rows: usize,
    /// `send[q]`: this shard's rows (local indices, ascending) that shard `q` needs; empty for
    /// this shard itself.
    pub send: Vec<Vec<u32>>,
    /// `receive[q]`: how many rows this shard receives from shard `q`; the halo is their
    /// concatenation in shard order.
    pub receive: Vec<usize>,
}

impl HaloExchange {
    /// Rows of the halo.
    pub fn halo_rows(&self) -> usize {
        self.receive.iter().sum()
    }

    /// The other shards this shard exchanges with: (position, rank).
    fn others(&self) -> impl Iterator<Item = (usize, Rank)> + '_ {
        let me = self.comm.rank();
        self.group
            .iter()
            .copied()
            .enumerate()
            .filter(move |&(_, rank)| rank != me)
    }

    /// Receives `count` rows of `width` from `from`, checked.
    fn receive_rows(
        &self,
        from: Rank,
        tag: Tag,
        count: usize,
        width: usize,
    ) -> Result<Vec<f32>, String> {
        let part = self.comm.recv(from, tag).map_err(|e| e.to_string())?;
        if part.len() != count * width {
            return Err(format!(
                "rank {from} sent {} values, expected {count} rows of {width}",
                part.len()
            ));
        }
        Ok(part)
    }
}

impl RowsExchange for HaloExchange {
    fn comm(&self) -> &dyn Communicator {
        &*self.comm
    }

    /// Sends first (sends never block), then receives in shard order.
    fn forward(&self, rows: HostRows) -> Result<HostRows, String> {
        let width = rows.width;
        assert_eq!(
            rows.rows(),
            self.rows,
            "a shard exchanges the rows it holds"
        );
        for (q, rank) in self.others() {
            if self.send[q].is_empty() {
                continue;
            }
            let mut part = Vec::with_capacity(self.send[q].len() * width);
            for &r in &self.send[q] {
                let r = r as usize;
                part.extend_from_slice(&rows.values[r * width..(r + 1) * width]);
            }
            self.comm
                .send(rank, Tag::Halo, part)
                .map_err(|e| format!("halo send: {e}"))?;
        }
        let mut table = rows.values;
        table.reserve(self.halo_rows() * width);
        for (q, rank) in self.others() {
            if self.receive[q] > 0 {
                let part = self
                    .receive_rows(rank, Tag::Halo, self.receive[q], width)
                    .map_err(|e| format!("halo receive: {e}"))?;
                table.extend(part);
            }
        }
        Ok(HostRows {
            values: table,
            width,
        })
    }

    /// Each halo block's gradient back to its owner; this shard's own rows' gradient plus
    /// those the other shards return for them, in shard order (deterministic).
    fn backward(&self, grad: HostRows) -> Result<HostRows, String> {
        let width = grad.width;
        let mut start = self.rows;
        for (q, rank) in self.others() {
            let count = self.receive[q];
            if count == 0 {
                continue;
            }
            let part = grad.values[start * width..(start + count) * width].to_vec();
            start += count;
            self.comm
                .send(rank, Tag::HaloGrad, part)
                .map_err(|e| format!("halo-gradient send: {e}"))?;
        }
        let mut own = grad.values[..self.rows * width].to_vec();
        for (q, rank) in self.others() {
            if self.send[q].is_empty() {
                continue;
            }
            let part = self
                .receive_rows(rank, Tag::HaloGrad, self.send[q].len(), width)
                .map_err(|e| format!("halo-gradient receive: {e}"))?;
            for (i, &r) in self.send[q].iter().enumerate() {
                let r = r as usize;
                for (o, g) in own[r * width..(r + 1) * width]
                    .iter_mut()
                    .zip(&part[i * width..(i + 1) * width])
                {
                    *o += g;
                }
            }
        }
        Ok(HostRows { values: own, width })
    }
}
