//! Hyper-parameters of the Graph Transformer.

use megagraph_planner::ModelSpec;
use serde::{Deserialize, Serialize};

use super::{AttentionKernel, AttentionScope};
use crate::{EngineError, kernels::plan::MAX_FUSED_HEAD_DIM};

/// Shape and regularisation of a [`GraphTransformer`](super::GraphTransformer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Width of the input feature vectors (columns of the sparse feature matrix).
    pub features: usize,
    /// Number of output classes.
    pub classes: usize,
    /// Hidden width of every layer.
    pub hidden: usize,
    /// Attention heads; must divide `hidden`.
    pub heads: usize,
    /// Number of transformer layers.
    pub layers: usize,
    /// Width of the feed-forward block (usually 2 × hidden).
    pub ffn_hidden: usize,
    /// Largest shortest-path distance with its own bias bucket; farther pairs share one more.
    pub max_distance: u8,
    /// Degrees above this share the last degree-embedding row.
    pub max_degree: usize,
    /// Dropout on the input feature values.
    pub input_dropout: f64,
    /// Dropout on hidden activations (residual branches, FFN).
    pub dropout: f64,
    /// Which implementation computes the biased attention.
    pub attention: AttentionKernel,
    /// Steps of personalised-PageRank propagation of the logits (APPNP); 0 disables it.
    pub propagation_steps: usize,
    /// Teleport probability of that propagation.
    pub teleport: f64,
    /// Which pairs attend to each other (configurations written before scopes were added
    /// read as `full`).
    #[serde(default)]
    pub scope: AttentionScope,
    /// Learned global tokens (hops scope only): every node attends to them and they attend to
    /// every node of the sequence.
    #[serde(default)]
    pub global_tokens: usize,
}

impl ModelConfig {
    /// The defaults used by `megagraph train`, for a graph with the given feature width and
    /// class count.
    pub fn new(features: usize, classes: usize) -> Self {
        Self {
            features,
            classes,
            hidden: 64,
            heads: 4,
            layers: 2,
            ffn_hidden: 128,
            max_distance: 5,
            max_degree: 63,
            input_dropout: 0.5,
            dropout: 0.5,
            attention: AttentionKernel::Fused,
            propagation_steps: 10,
            teleport: 0.1,
            scope: AttentionScope::Full,
            global_tokens: 0,
        }
    }

    /// The planner's view of this model over sequences of `seq_len` nodes, in f32: its sizes
    /// and scope, one sequence a step and in the graph, and no measured figures (the caller
    /// fills in what it knows of the graph).
    pub fn planner_spec(&self, seq_len: usize) -> ModelSpec {
        ModelSpec {
            schema_version: megagraph_planner::SCHEMA_VERSION,
            layers: self.layers,
            hidden: self.hidden,
            heads: self.heads,
            ffn_hidden: self.ffn_hidden,
            features: self.features,
            classes: self.classes,
            seq_len,
            num_sequences: 1,
            graph_sequences: 1,
            max_distance: self.max_distance as usize,
            bytes_per_element: 4,
            scope: self.scope,
            global_tokens: self.global_tokens,
            ..ModelSpec::full_scope()
        }
    }

    /// Number of distance buckets: distances 0..=max_distance plus one "far" bucket.
    pub fn distance_buckets(&self) -> usize {
        self.max_distance as usize + 2
    }

    /// Columns of the spatial-bias table: the distance buckets, plus one shared by every pair
    /// with a global token when the model has any.
    pub fn bias_buckets(&self) -> usize {
        self.distance_buckets() + usize::from(self.global_tokens > 0)
    }

    /// The bias bucket of pairs with a global token, if the model has any.
    pub fn global_bucket(&self) -> Option<u8> {
        (self.global_tokens > 0).then_some(self.distance_buckets() as u8)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// Checks the configuration, naming the offending value.
    pub fn validate(&self) -> Result<(), EngineError> {
        let fail = |msg: String| Err(EngineError::InvalidConfig(msg));
        if self.features == 0 || self.classes == 0 {
            return fail(format!(
                "features ({}) and classes ({}) must be positive",
                self.features, self.classes
            ));
        }
        if self.hidden == 0 || self.heads == 0 || self.layers == 0 || self.ffn_hidden == 0 {
            return fail(format!(
                "hidden ({}), heads ({}), layers ({}) and ffn_hidden ({}) must be positive",
                self.hidden, self.heads, self.layers, self.ffn_hidden
            ));
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return fail(format!(
                "heads ({}) must divide hidden ({})",
                self.heads, self.hidden
            ));
        }
        let head_dim = self.head_dim();
        if self.attention == AttentionKernel::Fused
            && (!head_dim.is_multiple_of(4) || head_dim > MAX_FUSED_HEAD_DIM)
        {
            return fail(format!(
                "the fused attention kernels need a head dimension (hidden / heads = {head_dim}) that is a multiple of 4 and at most {MAX_FUSED_HEAD_DIM} (what their per-invocation arrays hold); change --hidden or --heads, or use --attention reference"
            ));
        }
        if self.max_distance == u8::MAX {
            return fail(
                "max_distance must be below 255 (one byte per pair, plus a far bucket)".into(),
            );
        }
        for (name, p) in [
            ("input dropout", self.input_dropout),
            ("dropout", self.dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return fail(format!("{name} must be in [0, 1), got {p}"));
            }
        }
        if self.global_tokens > 0 && self.max_distance >= u8::MAX - 1 {
            return fail(format!(
                "max_distance ({}) must be below 254 with global tokens (their bias bucket follows the far one)",
                self.max_distance
            ));
        }
        if self.global_tokens > 0 && !self.scope.is_hops() {
            return fail(format!(
                "global tokens ({}) need a hops scope (--scope hops:K); the full scope already attends to every node",
                self.global_tokens
            ));
        }
        if !(0.0..=1.0).contains(&self.teleport) {
            return fail(format!("teleport must be in [0, 1], got {}", self.teleport));
        }
        Ok(())
    }
}
