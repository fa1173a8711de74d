//! What training reports, per epoch and at the end.

use serde::{Deserialize, Serialize};

/// Figures of one epoch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training cross-entropy over the epoch's steps (weighted by training nodes).
    pub loss: f64,
    /// Accuracy on the training nodes after the epoch.
    pub train_acc: f64,
    /// Accuracy on the validation nodes after the epoch.
    pub val_acc: f64,
    /// Accuracy on the test nodes after the epoch.
    pub test_acc: f64,
    /// Wall-clock seconds of the epoch, evaluation included.
    pub seconds: f64,
}

/// The outcome of a training run.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    /// Test accuracy of the model of best validation accuracy.
    pub test_acc: f64,
    /// Best validation accuracy.
    pub val_acc: f64,
    /// Epoch at which the best validation accuracy was reached.
    pub best_epoch: usize,
    /// Training loss of the last epoch run.
    pub final_loss: f64,
    /// Epochs run (early stopping may end before the requested number).
    pub epochs: usize,
    /// Wall-clock seconds of the whole run, preprocessing included.
    pub seconds: f64,
    /// Peak bytes reserved by each device's memory pool (empty on CPU backends).
    pub peak_device_bytes: Vec<u64>,
    /// Number of graph-aware sequences the graph was split into.
    pub sequences: usize,
    /// Every epoch's figures.
    pub history: Vec<EpochMetrics>,
    /// The loss of every optimizer step, in order.
    pub step_losses: Vec<f64>,
    /// Per device of the plan: its measured step time and peak memory.
    pub devices: Vec<DeviceRun>,
    /// Every final parameter value in the model's canonical order (see
    /// [`GraphTransformer::all_parameter_values`](crate::model::GraphTransformer::all_parameter_values)).
    #[serde(skip)]
    pub parameters: Vec<f32>,
}

/// What one device of a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRun {
    /// The device's index in the plan (its rank).
    pub rank: usize,
    /// The adapter it ran on ("name | driver | API"; empty where the backend has none).
    pub adapter: String,
    /// Median wall-clock seconds of a training step on this device.
    pub step_seconds: f64,
    /// Peak bytes reserved by the device's memory pool (`None` on CPU backends).
    pub peak_bytes: Option<u64>,
    /// Peak bytes held by live tensors, sampled after every forward and backward pass and
    /// optimizer step (`None` on CPU backends).
    pub peak_in_use_bytes: Option<u64>,
    /// Mean payload bytes the device sent per optimizer step: every message (context-parallel
    /// exchanges, pipeline transfers, gradient sums, reports).
    pub sent_bytes_per_step: f64,
    /// Mean payload bytes the device sent during an optimizer step's passes, gradient sums and
    /// loss report (evaluation, checkpoints and the closing reports excluded): what the
    /// planner's `sent_bytes` predicts.
    pub step_sent_bytes: f64,
    /// Median over the optimizer steps of the seconds of the device's pipeline transfers
    /// (activations and input gradients), each from its hand-over to the sending thread to its
    /// last send: the wait for the pass that produced it, the copy to the host, the sends.
    /// Zero without a pipeline.
    pub transfer_seconds_per_step: f64,
    /// The median part of [`Self::transfer_seconds_per_step`] the device did not wait for:
    /// transfer time hidden behind its compute.
    pub hidden_transfer_seconds_per_step: f64,
    /// Median over the optimizer steps of the seconds of the device's context-parallel row
    /// exchanges (key gathers and halos, the tokens' and the logits' gathers, and their
    /// backwards), each from the start of its copy to the host to the exchanged rows on the
    /// device: the wait for what produced the rows, the copies, the messages. Zero without
    /// context parallelism.
    pub exchange_seconds_per_step: f64,
    /// The median part of [`Self::exchange_seconds_per_step`] the device did not wait for:
    /// the layers' key exchanges travel while the device computes the queries, keys and
    /// values of its own rows.
    pub hidden_exchange_seconds_per_step: f64,
}
