//! A micro-batch's forward through one device's stage and shard: the shard's upload (kept in
//! the device's cache), the stage's input and output, the layers, and the shard's loss term;
//! and what waits for the backward.

use std::ops::Range;

use burn::tensor::{Tensor, TensorData, activation::log_softmax, backend::AutodiffBackend};

use super::{Layout, Role, worker::Worker};
use crate::{
    EngineError,
    device::MemoryProbe,
    kernels::DropoutStreams,
    model::{GraphTransformer, ModelBackend, SequenceTensors, ShardSpec},
    run::LabelledSequence,
};

/// A forward pass waiting for its backward.
pub(super) struct InFlight<B: AutodiffBackend> {
    /// The stage's input received from the previous stage (tracked), if any.
    pub(super) input: Option<Tensor<B, 2>>,
    /// This shard's rows of the sequence.
    pub(super) rows: Range<usize>,
    /// Nodes of the whole sequence.
    pub(super) nodes: usize,
    pub(super) end: StageEnd<B>,
}

/// What a stage's forward ends in.
pub(super) enum StageEnd<B: AutodiffBackend> {
    /// Last stage: the loss of the micro-batch.
    Loss(Tensor<B, 1>),
    /// Other stages: the output sent on, whose gradient will come back.
    Output(Tensor<B, 2>),
}

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// The forward of one micro-batch (sequence `index`) through this stage at step `step`,
    /// whose dropout masks are those of (the run's seed, `step`, `index`) on any plan.
    pub(super) fn forward(
        &self,
        model: &GraphTransformer<B>,
        index: usize,
        batch: usize,
        step: usize,
    ) -> Result<InFlight<B>, EngineError> {
        let (tensors, rows) = self.upload(index)?;
        let streams = DropoutStreams::new(self.job.options.seed, step, index);
        let tensors = tensors.lift::<B>().with_dropout(streams);
        let seq = self.job.sequences.get(index);
        let nodes = seq.nodes.len();
        let (input, x) = if self.role.stage > 0 {
            let x = self.receive_stage_input::<B>(&rows, nodes)?.require_grad();
            (Some(x.clone()), x)
        } else {
            (None, model.forward_embedding(&tensors))
        };
        let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
        let end = if self.part.output {
            let logits = model.forward_output(output, &tensors);
            StageEnd::Loss(self.loss(logits, seq, &rows, batch))
        } else {
            self.send_stage_output(output.clone().inner(), &rows, nodes)?;
            StageEnd::Output(output)
        };
        Ok(InFlight {
            input,
            rows,
            nodes,
            end,
        })
    }

    /// This shard's term of the step loss: the cross-entropy of its training rows, divided by
    /// the sequence's training nodes and the batch's sequences, so that the terms of all shards
    /// and micro-batches sum to the batch's mean per-sequence loss. One-hot weights rather
    /// than a gather keep the same graph on every shard, rows to train or not.
    fn loss(
        &self,
        logits: Tensor<B, 2>,
        seq: &LabelledSequence,
        rows: &Range<usize>,
        batch: usize,
    ) -> Tensor<B, 1> {
        let [count, classes] = logits.dims();
        let mut weights = vec![0f32; count * classes];
        let scale = 1.0 / (seq.train.len().max(1) * batch) as f32;
        for &position in &seq.train {
            let position = position as usize;
            if rows.contains(&position) {
                let label = self.job.graph.labels()[seq.nodes[position] as usize] as usize;
                weights[(position - rows.start) * classes + label] = scale;
            }
        }
        let weights =
            Tensor::<B, 2>::from_data(TensorData::new(weights, [count, classes]), &self.device);
        (log_softmax(logits, 1) * weights).sum().neg()
    }

    /// This device's shard of sequence `index` on its device (uploaded at its first use and
    /// kept while the cache has room), with the exchanges of its shard group, and its rows.
    pub(super) fn upload(
        &self,
        index: usize,
    ) -> Result<(SequenceTensors<B::InnerBackend>, Range<usize>), EngineError> {
        let shard = self.shard_spec(self.job.sequences.get(index).nodes.len())?;
        let rows = shard.rows();
        let tensors = self.cache.borrow_mut().get_or_upload(index, || {
            let host = self.job.sequences.host(index, self.job.graph);
            Ok(host.shard_to_device(self.job.graph, self.job.config, &shard, &self.device))
        })?;
        Ok((tensors, rows))
    }

    /// This device's shard of a sequence of `nodes` nodes: every shard's rows in its group,
    /// and the group's ranks.
    fn shard_spec(&self, nodes: usize) -> Result<ShardSpec, EngineError> {
        let layout = self.job.layout;
        let Role {
            replica,
            stage,
            shard,
        } = self.role;
        let rows = layout.shard_rows(replica, stage, nodes)?;
        Ok(ShardSpec {
            ranges: (0..rows.len())
                .map(|c| Layout::shard_range(&rows, c))
                .collect(),
            position: shard,
            group: (rows.len() > 1)
                .then(|| (self.comm.clone(), layout.shard_group(replica, stage))),
            embeds: stage == 0,
            overlap: !self.synchronous_transfers,
        })
    }
}
