//! Options of a training run.

use serde::{Deserialize, Serialize};

use crate::{
    EngineError,
    graph::{Graph, SplitSpec},
    model::ModelConfig,
};

/// Optimisation settings, the split and the model shape of a run: everything that fixes what
/// a run computes besides the data. Checkpoints and saved models store it whole (as JSON), so
/// a field added here (with a serde default) travels with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    /// Largest number of epochs.
    pub epochs: usize,
    /// Stop after this many epochs without a better validation accuracy.
    pub patience: usize,
    /// Adam learning rate.
    pub learning_rate: f64,
    /// L2 weight decay added to the gradients (PyTorch `Adam(weight_decay=...)`).
    pub weight_decay: f32,
    /// Largest number of nodes in one sequence (one training step).
    pub seq_len: usize,
    /// Seed of parameter initialisation, dropout, partitioning and sequence order.
    pub seed: u64,
    /// Stop after this many optimizer steps (then evaluate once), if set.
    pub max_steps: Option<usize>,
    /// How the nodes are split into training, validation and test nodes (shuffled by `seed`).
    #[serde(default)]
    pub split: SplitSpec,
    /// Model shape; `features` and `classes` are taken from the graph.
    pub model: ModelConfig,
    /// Evaluate after every this many epochs (and after the last one); early stopping and the
    /// best epoch see only the evaluated epochs.
    #[serde(default = "every_epoch")]
    pub eval_every: usize,
}

/// The default of [`TrainOptions::eval_every`] (also for options saved before it existed).
fn every_epoch() -> usize {
    1
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            epochs: 200,
            patience: 50,
            learning_rate: 5e-3,
            weight_decay: 5e-4,
            seq_len: 1024,
            seed: 0,
            max_steps: None,
            split: SplitSpec::default(),
            model: ModelConfig::new(0, 0),
            eval_every: every_epoch(),
        }
    }
}

impl TrainOptions {
    /// Nodes of the longest sequence `graph` is cut into: `seq_len`, or the whole graph when
    /// it has fewer nodes.
    pub fn sequence_nodes(&self, graph: &Graph) -> usize {
        self.seq_len.min(graph.num_nodes())
    }

    /// The model configuration for `graph`: this run's shape with the graph's feature width
    /// and class count.
    pub fn model_config(&self, graph: &Graph) -> ModelConfig {
        ModelConfig {
            features: graph.feature_dim(),
            classes: graph.num_classes(),
            ..self.model.clone()
        }
    }

    /// Checks the options, naming the offending value.
    pub fn validate(&self) -> Result<(), EngineError> {
        let fail = |msg: String| Err(EngineError::InvalidOptions(msg));
        if self.epochs == 0 {
            return fail("epochs must be at least 1".into());
        }
        if self.seq_len == 0 {
            return fail("seq-len must be at least 1".into());
        }
        if self.eval_every == 0 {
            return fail("eval-every must be at least 1".into());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return fail(format!(
                "learning rate must be positive, got {}",
                self.learning_rate
            ));
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return fail(format!(
                "weight decay must be >= 0, got {}",
                self.weight_decay
            ));
        }
        Ok(())
    }
}
