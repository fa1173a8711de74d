//! The device grid of a configuration, flat, with the neighbours the cost model needs.

use crate::{ClusterSpec, Degrees, ParallelConfig, Stage};

/// Devices placed on a `dp × pp × cp` grid; cell `(r, s, c)` is `cells[(r·pp + s)·cp + c]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Grid {
    pub degrees: Degrees,
    pub cells: Vec<usize>,
}

/// A device's place in a grid and its neighbours.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell {
    pub device: usize,
    pub stage: usize,
    /// The device it receives K/V blocks from in the CP ring, if cp > 1.
    pub ring_from: Option<usize>,
    /// Same replica and shard, previous stage.
    pub prev: Option<usize>,
    /// Same replica and shard, next stage.
    pub next: Option<usize>,
}

impl Grid {
    /// The grid of a configuration.
    pub fn of(config: &ParallelConfig) -> Self {
        let Degrees { dp, pp, cp } = config.degrees;
        let mut cells = Vec::with_capacity(dp * pp * cp);
        for r in 0..dp {
            for stage in &config.stages {
                cells.extend_from_slice(&stage.devices[r]);
            }
        }
        Grid {
            degrees: config.degrees,
            cells,
        }
    }

    /// The device at replica `r`, stage `s`, shard `c`.
    pub fn at(&self, r: usize, s: usize, c: usize) -> usize {
        let Degrees { pp, cp, .. } = self.degrees;
        self.cells[(r * pp + s) * cp + c]
    }

    /// The cell at replica `r`, stage `s`, shard `c` with its neighbours.
    pub fn cell(&self, r: usize, s: usize, c: usize) -> Cell {
        let Degrees { pp, cp, .. } = self.degrees;
        Cell {
            device: self.at(r, s, c),
            stage: s,
            ring_from: (cp > 1).then(|| self.at(r, s, (c + cp - 1) % cp)),
            prev: (s > 0).then(|| self.at(r, s - 1, c)),
            next: (s + 1 < pp).then(|| self.at(r, s + 1, c)),
        }
    }

    /// Summed FLOP/s of the grid's slowest replica (by summed FLOP/s).
    pub fn slowest_replica_flops(&self, cluster: &ClusterSpec) -> f64 {
        let Degrees { pp, cp, .. } = self.degrees;
        self.cells
            .chunks(pp * cp)
            .map(|replica| {
                replica
                    .iter()
                    .map(|&d| cluster.devices[d].flops)
                    .sum::<f64>()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// The devices of stage `s` over all replicas and shards.
    pub fn stage_devices(&self, s: usize) -> Vec<usize> {
        let Degrees { dp, cp, .. } = self.degrees;
        (0..dp)
            .flat_map(|r| (0..cp).map(move |c| self.at(r, s, c)))
            .collect()
    }

    /// The stages of a configuration on this grid with `layers[s]` layers in stage `s`.
    pub fn stages(&self, layers: &[usize]) -> Vec<Stage> {
        let Degrees { dp, cp, .. } = self.degrees;
        let mut first = 0;
        layers
            .iter()
            .enumerate()
            .map(|(s, &count)| {
                let stage = Stage {
                    layers: [first, first + count],
                    devices: (0..dp)
                        .map(|r| (0..cp).map(|c| self.at(r, s, c)).collect())
                        .collect(),
                };
                first += count;
                stage
            })
            .collect()
    }
}
