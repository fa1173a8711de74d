//! One device's share of evaluation: forward only (no autodiff graph, so none of the
//! backward's memory), through its pipeline and shards, over its replica's sequences.

use burn::{module::AutodiffModule, tensor::backend::AutodiffBackend};

use super::worker::Worker;
use crate::{EngineError, device::MemoryProbe, model::ModelBackend};

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// Accuracy on the train, validation and test nodes: replica `r` evaluates the sequences
    /// `i` with `i mod dp = r`, forward only, through its pipeline and shards.
    pub(super) fn evaluate(&self) -> Result<[f64; 3], EngineError> {
        let model = self.model.valid();
        let dp = self.job.layout.degrees().dp;
        let mut counts = vec![0f32; 6];
        for (index, seq) in self.job.sequences.list().iter().enumerate() {
            if index % dp != self.role.replica {
                continue;
            }
            let (tensors, rows) = self.upload(index)?;
            let nodes = seq.nodes.len();
            let x = if self.role.stage > 0 {
                self.receive_stage_input::<B::InnerBackend>(&rows, nodes)?
            } else {
                model.forward_embedding(&tensors)
            };
            let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
            if !self.part.output {
                self.send_stage_output(output, &rows, nodes)?;
                continue;
            }
            let predicted = model.forward_output(output, &tensors).argmax(1).into_data();
            let predicted: Vec<i64> = predicted.iter::<i64>().collect();
            for (local, position) in rows.clone().enumerate() {
                if let Some(role) = seq.roles[position] {
                    let node = seq.nodes[position] as usize;
                    counts[3 + role as usize] += 1.0;
                    if predicted[local] == self.job.graph.labels()[node] as i64 {
                        counts[role as usize] += 1.0;
                    }
                }
            }
        }
        // Evaluation's transfers are not a step's: their time is left out of the figures.
        self.wait_for_sends()?;
        let counts = self.sum_over_job(counts)?;
        Ok(std::array::from_fn(|i| {
            counts[i] as f64 / counts[3 + i].max(1.0) as f64
        }))
    }
}
