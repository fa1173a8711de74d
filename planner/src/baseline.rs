//! The baselines every plan is compared with: pure DP, uniform PP, uniform CP.

use serde::{Deserialize, Serialize};

use crate::cost::predict;
use crate::enumerate::micro_batching;
use crate::grid::Grid;
use crate::{ClusterSpec, Degrees, ModelSpec, ParallelConfig, PlannerError};

/// Predicted figures of one baseline configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "BaselineFile", try_from = "BaselineFile")]
pub struct Baseline {
    /// Its degrees.
    pub degrees: Degrees,
    /// Its micro-batches (the fastest count that fits, else the least overflowing).
    pub micro_batches: usize,
    /// Predicted step time, seconds.
    pub step_seconds: f64,
    /// Predicted peak bytes per cluster device.
    pub peak_bytes: Vec<u64>,
    /// Whether every device fits.
    pub fits: bool,
}

/// The three baselines, each on devices `0, 1, …` in index order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baselines {
    /// One replica per device, as many as divide the step's sequences.
    pub pure_dp: Baseline,
    /// One stage per device (at most one per layer), equal layers (earlier stages take the
    /// remainder).
    pub uniform_pp: Baseline,
    /// One CP shard per device, equal node shares.
    pub uniform_cp: Baseline,
}

impl Baselines {
    /// The baselines of a cluster and model.
    pub(crate) fn of(cluster: &ClusterSpec, model: &ModelSpec) -> Self {
        let n = cluster.devices.len();
        let baseline = |dp, pp, cp| uniform(cluster, model, Degrees { dp, pp, cp });
        Baselines {
            pure_dp: baseline(most_replicas(n, model.num_sequences), 1, 1),
            uniform_pp: baseline(1, n.min(model.layers), 1),
            uniform_cp: baseline(1, 1, n.min(model.seq_len)),
        }
    }

    /// The baselines with their display names, in order.
    pub fn named(&self) -> [(&'static str, &Baseline); 3] {
        [
            ("pure DP", &self.pure_dp),
            ("uniform PP", &self.uniform_pp),
            ("uniform CP", &self.uniform_cp),
        ]
    }
}

/// The most replicas of a step's `sequences` on `devices`: the largest divisor of
/// `sequences` not above `devices` (each replica runs the same number of sequences).
fn most_replicas(devices: usize, sequences: usize) -> usize {
    (1..=devices.min(sequences))
        .rev()
        .find(|dp| sequences.is_multiple_of(*dp))
        .unwrap_or(1)
}

/// `degrees` on devices `0, 1, …` of a cluster of `devices`, with equal layers (earlier
/// stages take the remainder), equal shares and `micro_batches`.
pub(crate) fn uniform_config(
    devices: usize,
    model: &ModelSpec,
    degrees: Degrees,
    micro_batches: usize,
) -> ParallelConfig {
    let Degrees { pp, cp, .. } = degrees;
    let grid = Grid {
        degrees,
        cells: (0..degrees.devices()).collect(),
    };
    let layers: Vec<usize> = (0..pp)
        .map(|s| model.layers / pp + usize::from(s < model.layers % pp))
        .collect();
    let mut node_shares = vec![0.0; devices];
    node_shares[..degrees.devices()].fill(1.0 / cp as f64);
    ParallelConfig {
        degrees,
        stages: grid.stages(&layers),
        node_shares,
        micro_batches,
    }
}

/// The uniform configuration of `degrees` with its best micro-batching.
fn uniform(cluster: &ClusterSpec, model: &ModelSpec, degrees: Degrees) -> Baseline {
    let micro_batches = micro_batching(model, degrees.dp).count;
    let config = uniform_config(cluster.devices.len(), model, degrees, micro_batches);
    let prediction = predict(cluster, model, &config);
    Baseline {
        degrees,
        micro_batches,
        step_seconds: prediction.step_seconds,
        peak_bytes: prediction.peak_bytes(),
        fits: prediction.fits(),
    }
}

/// A baseline as written in a plan file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    config: Degrees,
    config_text: String,
    micro_batches: usize,
    predicted_step_seconds: f64,
    predicted_peak_bytes: Vec<u64>,
    fits: bool,
}

impl From<Baseline> for BaselineFile {
    fn from(b: Baseline) -> Self {
        BaselineFile {
            config: b.degrees,
            config_text: b.degrees.to_string(),
            micro_batches: b.micro_batches,
            predicted_step_seconds: b.step_seconds,
            predicted_peak_bytes: b.peak_bytes,
            fits: b.fits,
        }
    }
}

impl TryFrom<BaselineFile> for Baseline {
    type Error = PlannerError;

    fn try_from(file: BaselineFile) -> Result<Self, Self::Error> {
        file.config.check_text(&file.config_text)?;
        Ok(Baseline {
            degrees: file.config,
            micro_batches: file.micro_batches,
            step_seconds: file.predicted_step_seconds,
            peak_bytes: file.predicted_peak_bytes,
            fits: file.fits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster, device, model};

    #[test]
    fn uniform_stages_cover_the_layers() {
        let model = model(5, 64, 1);
        let config = uniform_config(
            4,
            &model,
            Degrees {
                dp: 1,
                pp: 3,
                cp: 1,
            },
            1,
        );
        let layers: Vec<[usize; 2]> = config.stages.iter().map(|s| s.layers).collect();
        assert_eq!(layers, vec![[0, 2], [2, 4], [4, 5]]);
        assert_eq!(config.node_shares, vec![1.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn baselines_are_capped_by_sequences_layers_and_nodes() {
        let devices = (0..4).map(|_| device("d", 1e10, 1e13, 1e12)).collect();
        let spec = cluster(devices, (1e10, 1e-5), vec![]);
        let baselines = Baselines::of(&spec, &model(3, 64, 2));
        assert_eq!(
            baselines.pure_dp.degrees,
            Degrees {
                dp: 2,
                pp: 1,
                cp: 1
            }
        );
        assert_eq!(
            baselines.uniform_pp.degrees,
            Degrees {
                dp: 1,
                pp: 3,
                cp: 1
            }
        );
        assert_eq!(
            baselines.uniform_cp.degrees,
            Degrees {
                dp: 1,
                pp: 1,
                cp: 4
            }
        );
        assert!(
            baselines
                .named()
                .iter()
                .all(|(_, b)| b.fits && b.peak_bytes.len() == 4)
        );
    }
}
