//! `model.json`: the Graph Transformer being trained, and its parameter counts.
//!
//! The engine's model: an input projection `features → hidden`, a degree embedding
//! (`DEGREE_BUCKETS × hidden`), one spatial-bias table (`distance_buckets × heads`, shared
//! by all layers as in Graphormer), `layers` pre-LN blocks (multi-head attention with the
//! per-head spatial bias added to the scores; FFN `hidden → ffn_hidden → hidden`), a final
//! layer norm and a classification head `hidden → classes`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{AttentionScope, PlannerError, json};

/// Rows of the degree-embedding table: degrees are clipped to `DEGREE_BUCKETS - 1` (the
/// engine's `max_degree` of 63).
pub const DEGREE_BUCKETS: usize = 64;

/// The largest `max_distance`: buckets `0..=max_distance` and the far bucket fit in a byte.
pub const MAX_DISTANCE_LIMIT: usize = 254;

/// The Graph Transformer's shape and the training data's sequence layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Must be 1.
    pub schema_version: u64,
    /// Transformer blocks.
    pub layers: usize,
    /// Hidden width.
    pub hidden: usize,
    /// Attention heads; must divide `hidden`.
    pub heads: usize,
    /// Width of the FFN's inner layer.
    pub ffn_hidden: usize,
    /// Input node features.
    pub features: usize,
    /// Output classes.
    pub classes: usize,
    /// Nodes per sequence (S).
    pub seq_len: usize,
    /// Sequences per optimizer step over all data-parallel replicas (the batch): each replica
    /// runs `num_sequences / dp` of them, one per micro-batch, so `dp` divides it.
    pub num_sequences: usize,
    /// Sequences the graph is cut into: a device keeps every sequence it has uploaded in its
    /// sequence cache while its node share of
    /// [`SEQUENCE_CACHE_BYTES`](crate::SEQUENCE_CACHE_BYTES) has room,
    /// and the cost model counts the held ones beyond those in flight (0: not given, then
    /// only the in-flight sequences).
    #[serde(default)]
    pub graph_sequences: usize,
    /// Largest shortest-path distance with its own bias bucket; farther pairs share one.
    pub max_distance: usize,
    /// Bytes per element of parameters, optimizer state and activations.
    pub bytes_per_element: usize,
    /// Which pairs attend: `{"kind": "full"}` (the default) or
    /// `{"kind": "hops", "hops": K, "max_pairs": MAX}`.
    #[serde(default)]
    pub scope: AttentionScope,
    /// Learned global tokens (hops scope).
    #[serde(default)]
    pub global_tokens: usize,
    /// Measured mean near pairs per node of the sequences (hops scope; 0: not measured, then
    /// the model assumes MAX).
    #[serde(default)]
    pub pairs_per_node: f64,
    /// Measured mean message-passing edges per node of the sequences, self-loop included
    /// (0: not measured, then the model assumes 1).
    #[serde(default)]
    pub edges_per_node: f64,
    /// Mean non-zero input features per node of the graph (0: not measured, then the features
    /// are counted as dense rows, an upper bound).
    #[serde(default)]
    pub feature_entries_per_node: f64,
    /// Measured halos of the hops scope's context parallelism: per CP degree, the largest
    /// halo of a shard as a fraction of the sequence's nodes, when the sequence is split into
    /// that many equal shards. A degree not listed is assumed to need every other shard's rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub halo: Vec<HaloSpec>,
}

/// The measured halo of one context-parallel degree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaloSpec {
    /// The CP degree.
    pub cp: usize,
    /// Rows of the largest halo of a shard, as a fraction of the sequence's nodes.
    pub fraction: f64,
}

/// Reads, parses and validates a `model.json`; errors name the file.
pub fn load_model(path: &Path) -> Result<ModelSpec, PlannerError> {
    json::load(path, ModelSpec::from_json)
}

impl ModelSpec {
    /// A full-scope model without measured figures and with every size zero: the base of
    /// struct updates (`ModelSpec { layers: 4, …, ..ModelSpec::full_scope() }`).
    pub fn full_scope() -> Self {
        Self {
            schema_version: crate::SCHEMA_VERSION,
            layers: 0,
            hidden: 0,
            heads: 0,
            ffn_hidden: 0,
            features: 0,
            classes: 0,
            seq_len: 0,
            num_sequences: 0,
            graph_sequences: 0,
            max_distance: 0,
            bytes_per_element: 0,
            scope: AttentionScope::Full,
            global_tokens: 0,
            pairs_per_node: 0.0,
            edges_per_node: 0.0,
            feature_entries_per_node: 0.0,
            halo: Vec::new(),
        }
    }

    /// Parses and validates the text of a `model.json`.
    pub fn from_json(text: &str) -> Result<Self, PlannerError> {
        let spec: Self = json::parse(text, "model")?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks the version, that every size is at least 1, that heads divide hidden, that the
    /// distance buckets fit in a byte and that elements are 1 to 8 bytes.
    pub fn validate(&self) -> Result<(), PlannerError> {
        json::check_version(self.schema_version, "model")?;
        for (field, value) in [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("ffn_hidden", self.ffn_hidden),
            ("features", self.features),
            ("classes", self.classes),
            ("seq_len", self.seq_len),
            ("num_sequences", self.num_sequences),
        ] {
            if value == 0 {
                return Err(PlannerError::Model {
                    field,
                    rule: ">= 1",
                    value,
                });
            }
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(PlannerError::HeadsDivideHidden {
                heads: self.heads,
                hidden: self.hidden,
            });
        }
        if self.max_distance > MAX_DISTANCE_LIMIT {
            return Err(PlannerError::Model {
                field: "max_distance",
                rule: "<= 254 (buckets are one byte)",
                value: self.max_distance,
            });
        }
        for (field, value) in [
            ("pairs_per_node", self.pairs_per_node),
            ("edges_per_node", self.edges_per_node),
            ("feature_entries_per_node", self.feature_entries_per_node),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return Err(PlannerError::ModelFigure {
                    field,
                    rule: ">= 0",
                    value,
                });
            }
        }
        for halo in &self.halo {
            if halo.cp < 2 || !(0.0..=1.0).contains(&halo.fraction) {
                return Err(PlannerError::ModelFigure {
                    field: "halo",
                    rule: "a fraction in [0, 1] for a CP degree of at least 2",
                    value: halo.fraction,
                });
            }
        }
        if self.global_tokens > 0 && !self.scope.is_hops() {
            return Err(PlannerError::Model {
                field: "global_tokens",
                rule: "0 under the full scope",
                value: self.global_tokens,
            });
        }
        if !(1..=8).contains(&self.bytes_per_element) {
            return Err(PlannerError::Model {
                field: "bytes_per_element",
                rule: "between 1 and 8",
                value: self.bytes_per_element,
            });
        }
        Ok(())
    }

    /// Spatial-bias buckets: distances `0..=max_distance`, one far bucket, and one for the
    /// pairs with a global token when there are any.
    pub fn distance_buckets(&self) -> usize {
        self.max_distance + 2 + usize::from(self.global_tokens > 0)
    }

    /// Attention pairs per node row: every node under the full scope; under the hops scope
    /// the measured near pairs (MAX if not measured, capped at the sequence) and the tokens.
    pub fn pairs_per_row(&self) -> f64 {
        match self.scope {
            AttentionScope::Full => self.seq_len as f64,
            AttentionScope::Hops { max_pairs, .. } => {
                let near = if self.pairs_per_node > 0.0 {
                    self.pairs_per_node
                } else {
                    max_pairs.min(self.seq_len) as f64
                };
                near + self.global_tokens as f64
            }
        }
    }

    /// Rows a shard of a `cp`-way split reads beyond its own, as a fraction of the sequence
    /// (hops scope): the measured halo, or every other shard's rows if not measured.
    pub fn halo_fraction(&self, cp: usize) -> f64 {
        if cp <= 1 {
            return 0.0;
        }
        self.halo
            .iter()
            .find(|h| h.cp == cp)
            .map_or(1.0 - 1.0 / cp as f64, |h| h.fraction)
    }

    /// Parameters of one transformer block: two layer norms, Q/K/V and output projections,
    /// the message-passing branch's linear layer, the two FFN matmuls, all with biases.
    pub fn layer_params(&self) -> f64 {
        let (h, f) = (self.hidden as f64, self.ffn_hidden as f64);
        let norms = 4.0 * h;
        let attention = 4.0 * h * h + 4.0 * h;
        let message_passing = h * h + h;
        let ffn = 2.0 * h * f + f + h;
        norms + attention + message_passing + ffn
    }

    /// Parameters of the embedding layers (first pipeline stage): input projection with
    /// bias, degree embedding, the global tokens' states, spatial-bias table.
    pub fn embedding_params(&self) -> f64 {
        let h = self.hidden as f64;
        let projection = self.features as f64 * h + h;
        let degree = DEGREE_BUCKETS as f64 * h;
        let tokens = self.global_tokens as f64 * h;
        let spatial = (self.distance_buckets() * self.heads) as f64;
        projection + degree + tokens + spatial
    }

    /// Parameters of the final layer norm and classification head (last pipeline stage).
    pub fn head_params(&self) -> f64 {
        let (h, c) = (self.hidden as f64, self.classes as f64);
        2.0 * h + h * c + c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"schema_version": 1, "layers": 4, "hidden": 128, "heads": 8,
        "ffn_hidden": 256, "features": 1433, "classes": 7, "seq_len": 2708,
        "num_sequences": 1, "max_distance": 8, "bytes_per_element": 4}"#;

    fn error_of(text: &str) -> String {
        match ModelSpec::from_json(text) {
            Ok(_) => panic!("expected an error for {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn good_model_parses_and_counts_parameters() -> Result<(), PlannerError> {
        let model = ModelSpec::from_json(GOOD)?;
        // 4·128 + (4·128² + 4·128) + (128² + 128) + (2·128·256 + 256 + 128)
        assert_eq!(model.layer_params(), 512.0 + 66_048.0 + 16_512.0 + 65_920.0);
        assert_eq!(
            model.embedding_params(),
            1433.0 * 128.0 + 128.0 + 64.0 * 128.0 + 80.0
        );
        assert_eq!(model.head_params(), 256.0 + 896.0 + 7.0);
        Ok(())
    }

    #[test]
    fn heads_must_divide_hidden() {
        let text = GOOD.replace("\"heads\": 8", "\"heads\": 3");
        assert_eq!(error_of(&text), "model: heads (3) must divide hidden (128)");
    }

    #[test]
    fn zero_sizes_are_errors() {
        let text = GOOD.replace("\"seq_len\": 2708", "\"seq_len\": 0");
        assert_eq!(error_of(&text), "model: seq_len must be >= 1, got 0");
        let text = GOOD.replace("\"bytes_per_element\": 4", "\"bytes_per_element\": 16");
        assert_eq!(
            error_of(&text),
            "model: bytes_per_element must be between 1 and 8, got 16"
        );
        let text = GOOD.replace("\"max_distance\": 8", "\"max_distance\": 300");
        assert_eq!(
            error_of(&text),
            "model: max_distance must be <= 254 (buckets are one byte), got 300"
        );
    }

    #[test]
    fn unknown_field_and_version_are_errors() {
        let text = GOOD.replace("\"classes\": 7", "\"classes\": 7, \"dropout\": 0.1");
        assert!(error_of(&text).starts_with("model: unknown field `dropout`"));
        let text = GOOD.replace("\"schema_version\": 1", "\"schema_version\": 0");
        assert_eq!(
            error_of(&text),
            "model: schema_version 0 is not supported (expected 1)"
        );
        let text = GOOD.replace("\"layers\": 4", "\"layers\": -4");
        assert!(error_of(&text).starts_with("model: invalid value: integer `-4`"));
    }
}
