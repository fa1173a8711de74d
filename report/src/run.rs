//! What a training run did, as the report draws it: the input of [`crate::write_training`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `schema_version` of `metrics.json`.
pub const METRICS_SCHEMA_VERSION: u64 = 1;

/// A finished training run: its settings, every epoch's figures and each device's use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingRun {
    /// The command line that ran it.
    pub command: String,
    /// Its settings by name (flags as resolved, defaults included; the device).
    pub settings: BTreeMap<String, String>,
    /// Every epoch run, in order.
    pub epochs: Vec<EpochPoint>,
    /// 1-based epoch of best validation accuracy (the model kept).
    pub best_epoch: usize,
    /// Each device the run used.
    pub devices: Vec<DeviceUse>,
    /// How the measured step times were taken (shown with them), e.g. "epoch time ÷ steps,
    /// evaluation included".
    pub step_time: String,
}

/// Figures of one epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpochPoint {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss (cross-entropy) over the epoch.
    pub loss: f64,
    /// Accuracy on the training nodes after the epoch, in [0, 1].
    pub train_acc: f64,
    /// Accuracy on the validation nodes after the epoch, in [0, 1].
    pub val_acc: f64,
    /// Accuracy on the test nodes after the epoch, in [0, 1].
    pub test_acc: f64,
    /// Wall-clock seconds of the epoch.
    pub seconds: f64,
}

/// One device's measured use, beside the plan's prediction when a plan was used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceUse {
    /// The device's name.
    pub name: String,
    /// Measured mean seconds of one training step.
    pub step_seconds: f64,
    /// Measured peak device memory, bytes (`None` where the backend cannot tell).
    pub peak_bytes: Option<u64>,
    /// The plan's predicted step time, seconds.
    pub predicted_step_seconds: Option<f64>,
    /// The plan's predicted peak memory, bytes.
    pub predicted_peak_bytes: Option<u64>,
}

impl TrainingRun {
    /// The figures of the best epoch, if it was run.
    pub fn best(&self) -> Option<&EpochPoint> {
        self.epochs.iter().find(|e| e.epoch == self.best_epoch)
    }
}

/// `metrics.json`: the series behind the pictures.
#[derive(Serialize)]
pub(crate) struct MetricsFile<'a> {
    pub schema_version: u64,
    #[serde(flatten)]
    pub run: &'a TrainingRun,
}
