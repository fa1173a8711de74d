//! `--save-model`: the parameters of the epoch of best validation accuracy, written as a
//! saved model (see [`crate::checkpoint`]) after every epoch that improves on the best so far.
//! Writing then rather than at the end keeps the file right across a resume: the epochs
//! replayed after a resume reproduce the same improvements.

use burn::tensor::backend::AutodiffBackend;

use super::worker::Worker;
use crate::{
    EngineError,
    checkpoint::{SavedModel, SavedModelMeta, StateTensor, write_model},
    device::MemoryProbe,
    model::ModelBackend,
    run::EpochMetrics,
};

impl<B> Worker<'_, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// After epoch `metrics.epoch`, the best so far: gathers the parameters on the lead
    /// device, which writes them with the settings to the `--save-model` file (a collective of
    /// every device; nothing when no file is asked for).
    pub(super) fn save_best(&self, metrics: &EpochMetrics) -> Result<(), EngineError> {
        let Some(path) = &self.job.checkpoint.save_model else {
            return Ok(());
        };
        let Some(values) = self.collect_parameters()? else {
            return Ok(());
        };
        let shapes = self.shapes.of(&self.model.canonical_ids());
        let mut at = 0;
        let tensors = (shapes.into_iter().enumerate())
            .map(|(index, shape)| {
                let n: usize = shape.iter().product();
                at += n;
                StateTensor {
                    name: format!("param.{index:04}"),
                    shape,
                    values: values[at - n..at].to_vec(),
                }
            })
            .collect();
        let json = |v: serde_json::Result<serde_json::Value>| v.expect("settings serialize");
        let model = SavedModel {
            meta: SavedModelMeta {
                epoch: metrics.epoch,
                metrics: json(serde_json::to_value(metrics)),
                settings: json(serde_json::to_value(self.settings())),
            },
            tensors,
        };
        write_model(path, &model).map_err(|e| EngineError::Checkpoint(e.to_string()))
    }
}
