//! What the model's overheads cost while every logical device of an adapter runs it at once:
//! the planner's `overhead_contention`.

use std::sync::Barrier;
use std::time::Instant;

use burn::backend::wgpu::WgpuDevice;
use serde::{Deserialize, Serialize};

use super::{OVERHEAD_LAYERS, default_model, forward_backward};
use crate::device::WgpuAutodiff;
use crate::graph::{SbmParams, sbm};
use crate::model::{GraphTransformer, HostSequence};
use crate::timing::median;

/// Timed rounds, after one to warm up: the median round is kept.
const ROUNDS: usize = 7;

/// The default model's forward and backward over one sequence, timed on one device alone and
/// on every device at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SharedOverhead {
    /// Nodes of the timed sequence (the profile's length over the devices: a
    /// context-parallel shard's rows).
    pub nodes: usize,
    /// Devices that ran it at once.
    pub devices: usize,
    /// Median seconds on the first device while the others idle.
    pub alone_seconds: f64,
    /// Median seconds of the slowest device while all of them run it at once, started
    /// together (as the shards of a context-parallel layer run).
    pub at_once_seconds: f64,
    /// The median over rounds of at once ÷ alone, each round timing both back to back (so
    /// that load from outside that comes and goes weighs on both alike).
    pub slowdown: f64,
}

impl SharedOverhead {
    /// How much longer each other busy device makes a run, as a fraction of the run alone:
    /// `(slowdown − 1) / (devices − 1)`, not below 0 (the planner's `overhead_contention`; 1
    /// where the devices take turns, below 1 where the hardware runs part of their work side
    /// by side).
    pub fn contention(&self) -> f64 {
        let others = self.devices.saturating_sub(1).max(1) as f64;
        ((self.slowdown - 1.0) / others).max(0.0)
    }
}

/// Times the default model (hidden 64, 4 heads, 3 layers, dropout on) over a sequence of
/// `nodes`, round after round on the first of `devices` alone, then on all of them at once.
/// At a shard's few rows the run is mostly overhead (dispatch, autodiff bookkeeping, small
/// kernels), so the ratio is the overheads' slowdown under sharing.
pub fn shared_overhead(devices: &[WgpuDevice], nodes: usize) -> SharedOverhead {
    let graph = sbm(&SbmParams::new(nodes, 3, 0)).expect("a small SBM graph always generates");
    let config = default_model(&graph, OVERHEAD_LAYERS[1]);
    let host = HostSequence::new(&graph, (0..nodes as u32).collect(), &config);
    let barrier = Barrier::new(devices.len());
    // Per device, per round: (seconds alone, seconds at once); alone is the first device's.
    let seconds: Vec<Vec<(f64, f64)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (devices.iter().enumerate())
            .map(|(index, device)| {
                let (barrier, graph, config, host) = (&barrier, &graph, &config, &host);
                scope.spawn(move || {
                    let seq = host.to_device::<WgpuAutodiff>(graph, config, device);
                    let model = GraphTransformer::<WgpuAutodiff>::new(config, device);
                    let timed = || {
                        let start = Instant::now();
                        forward_backward(&model, &seq, device);
                        start.elapsed().as_secs_f64()
                    };
                    (0..=ROUNDS)
                        .map(|_| {
                            barrier.wait();
                            let alone = if index == 0 { timed() } else { 0.0 };
                            barrier.wait();
                            (alone, timed())
                        })
                        .collect()
                })
            })
            .collect();
        (threads.into_iter())
            .map(|t| t.join().expect("a profiling thread does not panic"))
            .collect()
    });
    summarise(nodes, &seconds)
}

/// The measurement from `seconds[device][round]` = (alone, at once), the warm-up round 0 left
/// out: per round the first device's time alone and the slowest device's at once.
fn summarise(nodes: usize, seconds: &[Vec<(f64, f64)>]) -> SharedOverhead {
    let rounds: Vec<(f64, f64)> = (1..=ROUNDS)
        .map(|round| {
            let at_once = seconds.iter().map(|d| d[round].1).fold(0.0, f64::max);
            (seconds[0][round].0, at_once)
        })
        .collect();
    let median_of =
        |value: fn(&(f64, f64)) -> f64| median(&mut rounds.iter().map(value).collect::<Vec<_>>());
    SharedOverhead {
        nodes,
        devices: seconds.len(),
        alone_seconds: median_of(|r| r.0),
        at_once_seconds: median_of(|r| r.1),
        slowdown: median_of(|r| r.1 / r.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_is_the_slowdown_per_other_device() {
        let shared = |devices, slowdown| SharedOverhead {
            nodes: 128,
            devices,
            alone_seconds: 0.1,
            at_once_seconds: 0.1 * slowdown,
            slowdown,
        };
        // Four devices taking turns: four times as long, 1 per other device.
        assert!((shared(4, 4.0).contention() - 1.0).abs() < 1e-12);
        // Half again as long with two: 0.5.
        assert!((shared(2, 1.5).contention() - 0.5).abs() < 1e-12);
        // Faster at once than alone (noise) is no contention, not a negative one.
        assert_eq!(shared(4, 0.9).contention(), 0.0);
    }

    #[test]
    fn rounds_pair_the_first_device_alone_with_the_slowest_at_once() {
        // Round 0 warms up and is left out. Device 0's time alone; the slower device at once.
        let alone = [9.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0];
        let first = [9.0, 2.0, 4.0, 3.0, 1.0, 3.0, 2.0, 5.0];
        let second = [9.0, 3.0, 1.0, 4.0, 4.0, 2.0, 6.0, 1.0];
        let seconds = [
            alone.iter().copied().zip(first).collect(),
            vec![0.0; 8].into_iter().zip(second).collect(),
        ];
        let shared = summarise(64, &seconds);
        // At once per round: 3, 4, 4, 4, 3, 6, 5 (median 4); alone: median 1; ratios 3, 4, 2,
        // 4, 3, 3, 5 (median 3): the ratio is taken round by round, not of the medians.
        assert_eq!((shared.nodes, shared.devices), (64, 2));
        assert_eq!((shared.alone_seconds, shared.at_once_seconds), (1.0, 4.0));
        assert_eq!(shared.slowdown, 3.0);
    }
}
