//! A hybrid parallel configuration: degrees, which device does what, node shares,
//! micro-batches. See [`ParallelConfig`] for the device layout convention.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{ClusterSpec, ModelSpec, PlannerError};

/// How far node shares of one group may sum away from 1.
const SHARE_SUM_TOLERANCE: f64 = 1e-6;

/// Degrees of data, pipeline and context parallelism; text form `dp2-pp2-cp2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Degrees {
    /// Data-parallel replicas.
    pub dp: usize,
    /// Pipeline stages.
    pub pp: usize,
    /// Context-parallel shards per stage.
    pub cp: usize,
}

impl Degrees {
    /// Devices used: `dp · pp · cp`.
    pub fn devices(&self) -> usize {
        self.dp * self.pp * self.cp
    }

    /// Checks that a stored text form names these degrees.
    pub(crate) fn check_text(&self, text: &str) -> Result<(), PlannerError> {
        if text.parse::<Degrees>()? == *self {
            Ok(())
        } else {
            Err(PlannerError::Config(format!(
                "config_text {text:?} does not match config {self}"
            )))
        }
    }
}

impl fmt::Display for Degrees {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dp{}-pp{}-cp{}", self.dp, self.pp, self.cp)
    }
}

impl FromStr for Degrees {
    type Err = PlannerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || PlannerError::ConfigText {
            text: text.to_string(),
        };
        let mut parts = text.split('-');
        let mut degree = |prefix: &str| -> Result<usize, PlannerError> {
            let digits = parts
                .next()
                .and_then(|p| p.strip_prefix(prefix))
                .ok_or_else(bad)?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            digits.parse().ok().filter(|&d| d >= 1).ok_or_else(bad)
        };
        let degrees = Degrees {
            dp: degree("dp")?,
            pp: degree("pp")?,
            cp: degree("cp")?,
        };
        match parts.next() {
            None => Ok(degrees),
            Some(_) => Err(bad()),
        }
    }
}

/// One pipeline stage: its layers and its devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Transformer layers `[first, last)`; stage 0 also runs the embedding layers, the
    /// last stage the classification head.
    pub layers: [usize; 2],
    /// Device indices, `[replica][shard]`.
    pub devices: Vec<Vec<usize>>,
}

impl Stage {
    /// Number of transformer layers in the stage.
    pub fn layer_count(&self) -> usize {
        self.layers[1].saturating_sub(self.layers[0])
    }
}

/// Everything the engine needs to execute a plan.
///
/// Device layout convention: the device of data-parallel replica `r`, pipeline stage `s` and
/// context-parallel shard `c` is `stages[s].devices[r][c]` (read by
/// [`ParallelConfig::device`]); conceptually `devices[replica][stage][shard]`. Within a
/// (replica, stage) group, shard `c` holds the `c`-th contiguous block of each sequence's
/// nodes (in graph-partition order) of size `node_shares[device] · seq_len`, and receives
/// K/V blocks from shard `c - 1` (mod cp) in the ring. Activations cross from stage `s` to
/// stage `s + 1` within a replica, shard `c` to shard `c`. Gradients of a stage are
/// all-reduced over its `dp · cp` devices.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelConfig {
    /// The degrees.
    pub degrees: Degrees,
    /// The `pp` stages in order.
    pub stages: Vec<Stage>,
    /// Per cluster device (indexed like `ClusterSpec::devices`): the fraction of each
    /// sequence's nodes in its CP shard; 0 for unused devices. Each (replica, stage) group
    /// sums to 1.
    pub node_shares: Vec<f64>,
    /// Micro-batches per replica per step, one sequence each (1F1B schedule; gradient
    /// accumulation when pp = 1): `dp × micro_batches` is the model's `num_sequences`.
    pub micro_batches: usize,
}

impl ParallelConfig {
    /// Device 0 alone running all `layers` layers, one micro-batch.
    pub fn one_device(layers: usize) -> Self {
        ParallelConfig {
            degrees: Degrees {
                dp: 1,
                pp: 1,
                cp: 1,
            },
            stages: vec![Stage {
                layers: [0, layers],
                devices: vec![vec![0]],
            }],
            node_shares: vec![1.0],
            micro_batches: 1,
        }
    }

    /// The device of `replica`, `stage` and `shard`.
    pub fn device(&self, replica: usize, stage: usize, shard: usize) -> usize {
        self.stages[stage].devices[replica][shard]
    }

    /// Checks the configuration against a cluster and model: its shape (see
    /// [`ParallelConfig::check_shape`]), device indices, layers `0..model.layers`, replicas
    /// no more than sequences, shards no more than nodes, `dp × micro_batches` the sequences
    /// of a step (one sequence per micro-batch, as the engine runs them).
    pub fn validate(&self, cluster: &ClusterSpec, model: &ModelSpec) -> Result<(), PlannerError> {
        let count = cluster.devices.len();
        if self.node_shares.len() != count {
            return Err(PlannerError::Config(format!(
                "node_shares has {} entries, the cluster has {count} devices",
                self.node_shares.len()
            )));
        }
        self.check_shape()?;
        let last = self.stages.last().map_or(0, |s| s.layers[1]);
        if last != model.layers {
            return Err(PlannerError::Config(format!(
                "stages cover layers 0..{last}, the model has {} layers",
                model.layers
            )));
        }
        let Degrees { dp, cp, .. } = self.degrees;
        if dp > model.num_sequences {
            return Err(PlannerError::Config(format!(
                "dp {dp} exceeds num_sequences {}",
                model.num_sequences
            )));
        }
        if cp > model.seq_len {
            return Err(PlannerError::Config(format!(
                "cp {cp} exceeds seq_len {}",
                model.seq_len
            )));
        }
        if dp * self.micro_batches != model.num_sequences {
            return Err(PlannerError::Config(format!(
                "dp {dp} × micro_batches {} is not the {} sequences of a step (num_sequences)",
                self.micro_batches, model.num_sequences
            )));
        }
        Ok(())
    }

    /// Checks the configuration against itself: degrees at least 1 and multiplying to the
    /// devices used, `pp` stages of `dp × cp` distinct devices each, layer ranges covering
    /// `0..L` without gaps or empty stages, at least one micro-batch, every device index
    /// within `node_shares`, shares in `[0, 1]` summing to 1 per group, 0 for unused devices.
    pub fn check_shape(&self) -> Result<(), PlannerError> {
        let bad = |message: String| Err(PlannerError::Config(message));
        let Degrees { dp, pp, cp } = self.degrees;
        if dp == 0 || pp == 0 || cp == 0 {
            return bad(format!("degrees must be >= 1, got {}", self.degrees));
        }
        if self.micro_batches == 0 {
            return bad("micro_batches must be >= 1, got 0".to_string());
        }
        if self.stages.len() != pp {
            return bad(format!(
                "pp is {pp} but there are {} stages",
                self.stages.len()
            ));
        }
        let count = self.node_shares.len();
        let mut used = vec![false; count];
        let mut next_layer = 0;
        for (s, stage) in self.stages.iter().enumerate() {
            let [first, last] = stage.layers;
            if first != next_layer || last <= first {
                return bad(format!(
                    "stage {s} has layers {first}..{last}, expected a non-empty range from {next_layer}"
                ));
            }
            next_layer = last;
            if stage.devices.len() != dp || stage.devices.iter().any(|g| g.len() != cp) {
                return bad(format!(
                    "stage {s} devices must be {dp} replicas of {cp} shards"
                ));
            }
            for (r, group) in stage.devices.iter().enumerate() {
                let mut sum = 0.0;
                for &device in group {
                    if device >= count {
                        return bad(format!(
                            "stage {s} uses device {device}, node_shares has {count} entries"
                        ));
                    }
                    if std::mem::replace(&mut used[device], true) {
                        return bad(format!("device {device} appears more than once"));
                    }
                    let share = self.node_shares[device];
                    if !(0.0..=1.0).contains(&share) {
                        return bad(format!(
                            "node share of device {device} is {share}, not in [0, 1]"
                        ));
                    }
                    sum += share;
                }
                if (sum - 1.0).abs() > SHARE_SUM_TOLERANCE {
                    return bad(format!(
                        "node shares of stage {s} replica {r} sum to {sum}, not 1"
                    ));
                }
            }
        }
        if let Some(device) = (0..count).find(|&d| !used[d] && self.node_shares[d] != 0.0) {
            return bad(format!(
                "device {device} is unused but has node share {}",
                self.node_shares[device]
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_stage() -> ParallelConfig {
        ParallelConfig {
            degrees: Degrees {
                dp: 1,
                pp: 2,
                cp: 2,
            },
            stages: vec![
                Stage {
                    layers: [0, 3],
                    devices: vec![vec![0, 1]],
                },
                Stage {
                    layers: [3, 4],
                    devices: vec![vec![3, 2]],
                },
            ],
            node_shares: vec![0.6, 0.4, 0.5, 0.5, 0.0],
            micro_batches: 2,
        }
    }

    #[test]
    fn text_form_round_trips() -> Result<(), PlannerError> {
        for text in ["dp2-pp2-cp2", "dp1-pp12-cp1", "dp64-pp1-cp3"] {
            let degrees: Degrees = text.parse()?;
            assert_eq!(degrees.to_string(), text);
        }
        let degrees = Degrees {
            dp: 3,
            pp: 1,
            cp: 8,
        };
        assert_eq!(degrees.to_string().parse::<Degrees>()?, degrees);
        Ok(())
    }

    #[test]
    fn bad_text_forms_are_errors() {
        for text in [
            "",
            "dp2-pp2",
            "dp0-pp1-cp1",
            "pp2-dp2-cp2",
            "dp2-pp2-cp2-x",
            "dp+2-pp1-cp1",
            "dp2-pp2-cpx",
        ] {
            let message = text.parse::<Degrees>().unwrap_err().to_string();
            assert_eq!(
                message,
                format!("config {text:?}: expected the form dpN-ppN-cpN with N >= 1")
            );
        }
    }

    #[test]
    fn layout_convention_reads_replica_stage_shard() {
        let config = two_stage();
        assert_eq!(config.device(0, 1, 0), 3);
        assert_eq!(config.device(0, 0, 1), 1);
    }

    #[test]
    fn consistent_shape_passes_and_breaks_are_named() -> Result<(), PlannerError> {
        two_stage().check_shape()?;
        let mut gap = two_stage();
        gap.stages[1].layers = [4, 5];
        assert_eq!(
            gap.check_shape().unwrap_err().to_string(),
            "config: stage 1 has layers 4..5, expected a non-empty range from 3"
        );
        let mut sum = two_stage();
        sum.node_shares[0] = 0.7;
        assert_eq!(
            sum.check_shape().unwrap_err().to_string(),
            "config: node shares of stage 0 replica 0 sum to 1.1, not 1"
        );
        let mut twice = two_stage();
        twice.stages[1].devices[0][0] = 0;
        assert_eq!(
            twice.check_shape().unwrap_err().to_string(),
            "config: device 0 appears more than once"
        );
        let mut degrees = two_stage();
        degrees.degrees.pp = 3;
        assert_eq!(
            degrees.check_shape().unwrap_err().to_string(),
            "config: pp is 3 but there are 2 stages"
        );
        let mut stray = two_stage();
        stray.node_shares[4] = 0.25;
        assert_eq!(
            stray.check_shape().unwrap_err().to_string(),
            "config: device 4 is unused but has node share 0.25"
        );
        Ok(())
    }
}
