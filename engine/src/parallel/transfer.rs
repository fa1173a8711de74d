//! A pipeline stage's transfers: its input rows (and the global tokens' states) from the
//! previous stage, its output to the next, and their gradients back. Stages may split a
//! sequence differently, so a shard exchanges with each shard of the other stage the rows they
//! share (possibly none). The global tokens are replicated on every shard of a stage: the
//! first shard sends them on to every shard of the next stage and receives the sum of their
//! gradients; the other shards' copies get a zero gradient (the first's carries the whole).

use std::ops::Range;

use burn::tensor::{
    Tensor, TensorData,
    backend::{AutodiffBackend, Backend},
};

use super::{
    Layout,
    sender::{Outgoing, StageSender},
    worker::Worker,
};
use crate::{EngineError, comm::Tag, device::MemoryProbe, host::HostRead, model::ModelBackend};

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// The stage's input from the previous stage: this shard's `rows` of a sequence of
    /// `nodes`, then the global tokens, `[rows + G, hidden]`.
    pub(super) fn receive_stage_input<D: Backend<Device = B::Device>>(
        &self,
        rows: &Range<usize>,
        nodes: usize,
    ) -> Result<Tensor<D, 2>, EngineError> {
        let stage = self.role.stage - 1;
        let mut values = self.receive_rows(stage, Tag::Activation, rows, nodes)?;
        let tokens = self.job.config.global_tokens;
        if tokens > 0 {
            let from = self.job.layout.device(self.role.replica, stage, 0);
            values.extend(self.receive_exact(from, Tag::Activation, tokens)?);
        }
        Ok(self.tensor(values, rows.len() + tokens))
    }

    /// Sends the stage's output `[rows + G, hidden]` on to the next stage: its copy to the host
    /// starts here and the sending thread sends it while this device computes on.
    pub(super) fn send_stage_output<D: Backend>(
        &self,
        output: Tensor<D, 2>,
        rows: &Range<usize>,
        nodes: usize,
    ) -> Result<(), EngineError> {
        let stage = self.role.stage + 1;
        let read = HostRead::start(output);
        let mut messages = self.row_messages(stage, Tag::Activation, rows, nodes)?;
        if let Some(tokens) = self.token_values(rows)
            && self.role.shard == 0
        {
            for to in self.stage_shards(stage) {
                messages.push(Outgoing {
                    to,
                    tag: Tag::Activation,
                    values: tokens.clone(),
                });
            }
        }
        self.stage_sender().send(read, messages)
    }

    /// The gradient of the stage's output from the next stage, `[rows + G, hidden]`: this
    /// shard's rows, and on the first shard the summed gradients of the tokens (zero on the
    /// others).
    pub(super) fn receive_output_grad<D: Backend<Device = B::Device>>(
        &self,
        rows: &Range<usize>,
        nodes: usize,
    ) -> Result<Tensor<D, 2>, EngineError> {
        let stage = self.role.stage + 1;
        let mut values = self.receive_rows(stage, Tag::ActivationGrad, rows, nodes)?;
        let tokens = self.job.config.global_tokens;
        if tokens > 0 {
            let mut sum = vec![0f32; tokens * self.job.config.hidden];
            if self.role.shard == 0 {
                for from in self.stage_shards(stage) {
                    let part = self.receive_exact(from, Tag::ActivationGrad, tokens)?;
                    sum.iter_mut().zip(part).for_each(|(s, p)| *s += p);
                }
            }
            values.extend(sum);
        }
        Ok(self.tensor(values, rows.len() + tokens))
    }

    /// Sends the gradient of the stage's input `[rows + G, hidden]` back to the previous
    /// stage: the rows to their shards, the tokens' to its first shard (on the sending thread,
    /// like [`Self::send_stage_output`]).
    pub(super) fn send_input_grad<D: Backend>(
        &self,
        grad: Tensor<D, 2>,
        rows: &Range<usize>,
        nodes: usize,
    ) -> Result<(), EngineError> {
        let stage = self.role.stage - 1;
        let read = HostRead::start(grad);
        let mut messages = self.row_messages(stage, Tag::ActivationGrad, rows, nodes)?;
        if let Some(tokens) = self.token_values(rows) {
            messages.push(Outgoing {
                to: self.job.layout.device(self.role.replica, stage, 0),
                tag: Tag::ActivationGrad,
                values: tokens,
            });
        }
        self.stage_sender().send(read, messages)
    }

    /// Where the global tokens' values lie in a stage transfer of this shard's `rows` then
    /// the tokens; `None` for a model without tokens (no token message is sent).
    fn token_values(&self, rows: &Range<usize>) -> Option<Range<usize>> {
        let width = self.job.config.hidden;
        let own = rows.len() * width;
        let tokens = self.job.config.global_tokens;
        (tokens > 0).then(|| own..own + tokens * width)
    }

    /// The sending thread of a pipeline device.
    fn stage_sender(&self) -> &StageSender {
        self.sender
            .as_ref()
            .expect("a device of a pipeline of two or more stages has a sending thread")
    }

    /// The devices of this replica's `stage`, in shard order.
    fn stage_shards(&self, stage: usize) -> Vec<usize> {
        self.job.layout.shard_group(self.role.replica, stage)
    }

    /// A `[count, hidden]` tensor of `values` on this device.
    fn tensor<D: Backend<Device = B::Device>>(
        &self,
        values: Vec<f32>,
        count: usize,
    ) -> Tensor<D, 2> {
        let width = self.job.config.hidden;
        Tensor::from_data(TensorData::new(values, [count, width]), &self.device)
    }

    /// A message of `count` rows of `hidden` from `from`, checked.
    fn receive_exact(&self, from: usize, tag: Tag, count: usize) -> Result<Vec<f32>, EngineError> {
        let width = self.job.config.hidden;
        let part = self.comm.recv(from, tag)?;
        if part.len() != count * width {
            return Err(EngineError::Plan(format!(
                "rank {} expected {count}×{width} values from rank {from}, got {}",
                self.rank,
                part.len()
            )));
        }
        Ok(part)
    }

    /// The row ranges of the shards of this replica's `stage` for a sequence of `nodes`.
    fn stage_ranges(&self, stage: usize, nodes: usize) -> Result<Vec<Range<usize>>, EngineError> {
        let rows = self
            .job
            .layout
            .shard_rows(self.role.replica, stage, nodes)?;
        Ok((0..rows.len())
            .map(|c| Layout::shard_range(&rows, c))
            .collect())
    }

    /// The messages that carry this shard's rows `mine` (the first `mine.len()` rows of a
    /// transfer) to the shards of `stage` (of this replica) that hold them: stages may split a
    /// sequence differently, so a shard sends each shard of the other stage the rows they
    /// share (possibly none).
    fn row_messages(
        &self,
        stage: usize,
        tag: Tag,
        mine: &Range<usize>,
        nodes: usize,
    ) -> Result<Vec<Outgoing>, EngineError> {
        let width = self.job.config.hidden;
        let ranges = self.stage_ranges(stage, nodes)?;
        Ok(ranges
            .into_iter()
            .enumerate()
            .map(|(shard, theirs)| {
                let (lo, hi) = (mine.start.max(theirs.start), mine.end.min(theirs.end));
                let values = if lo < hi {
                    (lo - mine.start) * width..(hi - mine.start) * width
                } else {
                    0..0
                };
                Outgoing {
                    to: self.job.layout.device(self.role.replica, stage, shard),
                    tag,
                    values,
                }
            })
            .collect())
    }

    /// Receives this shard's rows `mine` (`rows × hidden` values) from the shards of `stage`.
    fn receive_rows(
        &self,
        stage: usize,
        tag: Tag,
        mine: &Range<usize>,
        nodes: usize,
    ) -> Result<Vec<f32>, EngineError> {
        let width = self.job.config.hidden;
        let mut values = Vec::with_capacity(mine.len() * width);
        for (shard, theirs) in self.stage_ranges(stage, nodes)?.into_iter().enumerate() {
            let from = self.job.layout.device(self.role.replica, stage, shard);
            let part = self.comm.recv(from, tag)?;
            let shared = mine
                .end
                .min(theirs.end)
                .saturating_sub(mine.start.max(theirs.start));
            if part.len() != shared * width {
                return Err(EngineError::Plan(format!(
                    "rank {} expected {shared}×{width} values from rank {from}, got {}",
                    self.rank,
                    part.len()
                )));
            }
            values.extend(part);
        }
        Ok(values)
    }
}
