//! `model.json`: the Graph Transformer being trained, and its parameter counts.
//!
//! The engine's model: an input projection `features → hidden`, a degree embedding
//! (`DEGREE_BUCKETS × hidden`), one spatial-bias table (`distance_buckets × heads`, shared
//! by all layers as in Graphormer), `layers` pre-LN blocks (multi-head attention with the
//! per-head spatial bias added to the scores; FFN `hidden → ffn_hidden → hidden`), a final
//! layer norm and a classification head `hidden → classes`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{PlannerError, json};

/// Rows of the degree-embedding table: degrees are clipped to `DEGREE_BUCKETS - 1`.
pub const DEGREE_BUCKETS: usize = 512;

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
    /// Sequences per training step (over all data-parallel replicas).
    pub num_sequences: usize,
    /// Largest shortest-path distance with its own bias bucket; farther pairs share one.
    pub max_distance: usize,
    /// Bytes per element of parameters, optimizer state and activations.
    pub bytes_per_element: usize,
}

/// Reads, parses and validates a `model.json`; errors name the file.
pub fn load_model(path: &Path) -> Result<ModelSpec, PlannerError> {
    json::load(path, ModelSpec::from_json)
}

impl ModelSpec {
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
        if !(1..=8).contains(&self.bytes_per_element) {
            return Err(PlannerError::Model {
                field: "bytes_per_element",
                rule: "between 1 and 8",
                value: self.bytes_per_element,
            });
        }
        Ok(())
    }

    /// Spatial-bias buckets: distances `0..=max_distance` and one far bucket.
    pub fn distance_buckets(&self) -> usize {
        self.max_distance + 2
    }

    /// Parameters of one transformer block: two layer norms, Q/K/V and output projections,
    /// the two FFN matmuls, all with biases.
    pub fn layer_params(&self) -> f64 {
        let (h, f) = (self.hidden as f64, self.ffn_hidden as f64);
        let norms = 4.0 * h;
        let attention = 4.0 * h * h + 4.0 * h;
        let ffn = 2.0 * h * f + f + h;
        norms + attention + ffn
    }

    /// Parameters of the embedding layers (first pipeline stage): input projection with
    /// bias, degree embedding, spatial-bias table.
    pub fn embedding_params(&self) -> f64 {
        let h = self.hidden as f64;
        let projection = self.features as f64 * h + h;
        let degree = DEGREE_BUCKETS as f64 * h;
        let spatial = (self.distance_buckets() * self.heads) as f64;
        projection + degree + spatial
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
        // 4·128 + (4·128² + 4·128) + (2·128·256 + 256 + 128)
        assert_eq!(model.layer_params(), 512.0 + 66_048.0 + 65_920.0);
        assert_eq!(
            model.embedding_params(),
            1433.0 * 128.0 + 128.0 + 512.0 * 128.0 + 80.0
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
