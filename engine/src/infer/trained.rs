//! A trained model read back: its settings, its parameters and which of a run's parameters
//! they are.

use std::fmt;
use std::path::{Path, PathBuf};

use super::InferError;
use crate::{
    checkpoint::{StateTensor, StoredFile, load_latest, read_stored},
    graph::Graph,
    model::ModelConfig,
    run::{EpochMetrics, TrainOptions},
};

/// Which of a run's parameters a file holds.
#[derive(Debug, Clone)]
pub enum Holds {
    /// A checkpoint: the parameters after `step` optimizer steps, `batches_done` batches into
    /// epoch `epoch`. Saved after an epoch's last batch, they are the parameters that epoch's
    /// evaluation scored.
    Step {
        /// Optimizer steps taken.
        step: usize,
        /// The epoch the step belongs to.
        epoch: usize,
        /// Batches of that epoch taken.
        batches_done: usize,
    },
    /// A saved model: the parameters of the epoch of best validation accuracy.
    BestEpoch(EpochMetrics),
}

impl fmt::Display for Holds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holds::Step {
                step,
                epoch,
                batches_done,
            } => write!(
                f,
                "the parameters after step {step} (epoch {epoch}, {batches_done} batch(es) of it)"
            ),
            Holds::BestEpoch(m) => write!(
                f,
                "the best validation epoch {} (val_acc {:.4}, test_acc {:.4} in training)",
                m.epoch, m.val_acc, m.test_acc
            ),
        }
    }
}

/// A trained model: what a checkpoint or a saved model holds, ready to rebuild.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The file it was read from.
    pub path: PathBuf,
    /// The settings of the run that wrote it.
    pub settings: TrainOptions,
    /// Every parameter's values, in the model's canonical order.
    pub parameters: Vec<f32>,
    /// Which of the run's parameters they are.
    pub holds: Holds,
    /// Newer checkpoints of the directory that were refused, each with why.
    pub refused: Vec<(PathBuf, String)>,
}

impl Trained {
    /// Reads a saved model or a checkpoint file, or the newest valid checkpoint of a
    /// checkpoint directory (the newer ones refused are listed in `refused`).
    pub fn load(path: &Path) -> Result<Self, InferError> {
        let (path, stored, refused) = if path.is_dir() {
            let (file, checkpoint, refused) = load_latest(path)?;
            let refused = (refused.into_iter())
                .map(|(p, e)| (p, e.to_string()))
                .collect();
            (file, StoredFile::Checkpoint(checkpoint), refused)
        } else {
            (path.to_path_buf(), read_stored(path)?, Vec::new())
        };
        let (settings, tensors, holds) = match stored {
            StoredFile::Checkpoint(c) => {
                let holds = Holds::Step {
                    step: c.meta.step,
                    epoch: c.meta.epoch,
                    batches_done: c.meta.batches_done,
                };
                (c.meta.settings, c.tensors, holds)
            }
            StoredFile::Model(m) => {
                let metrics =
                    serde_json::from_value(m.meta.metrics).map_err(|e| InferError::BadRecord {
                        path: path.clone(),
                        what: "metrics",
                        reason: e.to_string(),
                    })?;
                (m.meta.settings, m.tensors, Holds::BestEpoch(metrics))
            }
        };
        if settings.is_null() {
            return Err(InferError::NoSettings { path });
        }
        let settings = serde_json::from_value(settings).map_err(|e| InferError::BadRecord {
            path: path.clone(),
            what: "settings",
            reason: e.to_string(),
        })?;
        Ok(Self {
            parameters: parameters(tensors),
            path,
            settings,
            holds,
            refused,
        })
    }

    /// The model configuration it was trained with.
    pub fn config(&self) -> &ModelConfig {
        &self.settings.model
    }

    /// Refuses data of another feature width or class count than the model's.
    pub fn check_data(&self, graph: &Graph) -> Result<(), InferError> {
        let config = self.config();
        if (config.features, config.classes) == (graph.feature_dim(), graph.num_classes()) {
            return Ok(());
        }
        Err(InferError::DataMismatch {
            path: self.path.clone(),
            model_features: config.features,
            model_classes: config.classes,
            data: graph.name().to_string(),
            data_features: graph.feature_dim(),
            data_classes: graph.num_classes(),
        })
    }
}

/// The values of the parameter tensors (`param.IIII`) in the order written, the canonical one.
fn parameters(tensors: Vec<StateTensor>) -> Vec<f32> {
    (tensors.into_iter())
        .filter(|t| t.name.starts_with("param."))
        .flat_map(|t| t.values)
        .collect()
}
