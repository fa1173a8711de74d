//! Lower bounds on the step of every configuration of a choice of degrees, or of one grid
//! (under the micro-batching its dp sets); the search skips what cannot beat the best found
//! so far.
//!
//! The argument: a step is `(m + pp − 1) · t_max + post ≥ (m + pp − 1) · t_max`, where `t_max`
//! is the slowest device's micro-batch time (see `predict`). Every replica runs the whole
//! model on one sequence per micro-batch, so its devices' FLOPs sum to at least
//! `CostModel::sequence_flops(cp)` whatever the split and shares, and each device's
//! time is at least its FLOPs over its FLOP/s (memory traffic and messages only add). The
//! slowest device of a replica is no faster than the replica's FLOPs over its summed FLOP/s
//! (a maximum is at least the FLOP/s-weighted mean), so `t_max` is at least that of the
//! replica with the least summed FLOP/s. Any choice of `dp · pp · cp` devices has a replica
//! with at most `1 / dp` of the `dp · pp · cp` fastest devices' summed FLOP/s.
//!
//! [`StepBound::layers`] is tighter and dearer, for a grid about to be evaluated: it
//! counts memory traffic too (see there).

use std::cell::RefCell;

use crate::Degrees;
use crate::cost::{CostModel, GroupLink, Place};
use crate::enumerate::{GridSpace, micro_batching};
use crate::grid::{Cell, Grid};
use rustc_hash::FxHashMap;

/// Lower bounds on the step of a cluster and model.
pub(crate) struct StepBound {
    /// `fastest[k]`: the summed FLOP/s of the `k` fastest devices.
    fastest: Vec<f64>,
    /// `(β, δ)` of [`StepBound::layers`] by device class and `cp`.
    per_layer: RefCell<FxHashMap<(usize, usize), PerLayer>>,
}

/// `(β, δ)`: a device's per-layer attention, message-passing and FFN time at share 0, and
/// its growth to share 1.
type PerLayer = (f64, f64);

impl StepBound {
    /// The bounds of `cost`'s cluster and model.
    pub fn new(cost: &CostModel) -> Self {
        let mut flops: Vec<f64> = cost.cluster.devices.iter().map(|d| d.flops).collect();
        flops.sort_by(|a, b| b.total_cmp(a));
        let fastest = std::iter::once(0.0)
            .chain(flops.iter().scan(0.0, |sum, &f| {
                *sum += f;
                Some(*sum)
            }))
            .collect();
        StepBound {
            fastest,
            per_layer: RefCell::default(),
        }
    }

    /// A lower bound on the step of every grid of `degrees`.
    pub fn degrees(&self, cost: &CostModel, degrees: Degrees) -> f64 {
        let replica_flops = self.fastest[degrees.devices()] / degrees.dp as f64;
        pipelined_flop_time(cost, degrees, replica_flops)
    }

    /// A lower bound on the step of `grid`, whatever the split and shares.
    pub fn grid(&self, cost: &CostModel, grid: &Grid) -> f64 {
        let replica_flops = grid.slowest_replica_flops(cost.cluster);
        pipelined_flop_time(cost, grid.degrees, replica_flops)
    }

    /// A lower bound on the step of `grid` from its layers' attention, message-passing and
    /// FFN terms, FLOPs and memory traffic, devices classed by `space`.
    ///
    /// On a device with share `s` those terms are `n · (β + δ · s)` for its stage's `n`
    /// layers, with `β, δ ≥ 0` (`CostModel::micro_batch_time` at one layer, shares 0 and
    /// 1: the terms are affine in the share, and β holds the weights and key table, δ the
    /// rows), and the micro-batch time is at least that. Weighting a replica's devices by
    /// `1 / δ`, and with each stage's shares summing to 1 and its layers to `L`,
    /// `Σ t / δ ≥ Σ_s n_s · (1 + Σ_{c} β / δ) ≥ L · (1 + min_s Σ_{c} β / δ)`; the slowest
    /// device is no faster than this weighted mean, `t_max ≥ that / Σ 1 / δ`. Interchangeable
    /// devices have the same β and δ. The result is lowered by [`ROUNDING`] so that the
    /// prediction's own rounding cannot put it above.
    pub fn layers(&self, cost: &CostModel, space: &GridSpace, grid: &Grid) -> f64 {
        let Degrees { dp, pp, cp } = grid.degrees;
        let micro = micro_batching(cost.model, dp);
        let mut slowest: f64 = 0.0;
        for r in 0..dp {
            let (mut speed, mut least_fixed) = (0.0, f64::INFINITY);
            for s in 0..pp {
                let mut fixed = 0.0;
                for c in 0..cp {
                    let (beta, delta) = self.per_layer(cost, space, grid, grid.cell(r, s, c));
                    speed += 1.0 / delta;
                    fixed += beta / delta;
                }
                least_fixed = least_fixed.min(fixed);
            }
            let layers = cost.model.layers as f64;
            slowest = slowest.max(layers * (1.0 + least_fixed) / speed);
        }
        (micro.count + pp - 1) as f64 * slowest * (1.0 - ROUNDING)
    }

    /// `(β, δ)` of [`StepBound::layers`] for the device of `cell` in `grid`.
    fn per_layer(&self, cost: &CostModel, space: &GridSpace, grid: &Grid, cell: Cell) -> PerLayer {
        let key = (space.class_of(cell.device), grid.degrees.cp);
        *self.per_layer.borrow_mut().entry(key).or_insert_with(|| {
            let place = Place {
                cell,
                degrees: grid.degrees,
                layers: 1,
                micro: micro_batching(cost.model, grid.degrees.dp),
                reduce: GroupLink::over(1, std::iter::empty()),
                // A device sharing its hardware only computes slower: its own rates bound it.
                sharing: 1.0,
            };
            let at = |share| {
                let t = cost.micro_batch_time(&place, share);
                t.attention + t.message_passing + t.ffn
            };
            (at(0.0), at(1.0) - at(0.0))
        })
    }
}

/// Relative slack of [`StepBound::layers`] for rounding.
const ROUNDING: f64 = 1e-9;

/// `(m + pp − 1) · sequence_flops(cp) / replica_flops`, `m` the micro-batches of a
/// replica: the 1F1B step if a replica with `replica_flops` FLOP/s spread its FLOPs
/// perfectly and did nothing else.
fn pipelined_flop_time(cost: &CostModel, degrees: Degrees, replica_flops: f64) -> f64 {
    let micro = micro_batching(cost.model, degrees.dp);
    let factor = (micro.count + degrees.pp - 1) as f64;
    factor * cost.sequence_flops(degrees.cp) / replica_flops
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::cost::predict;
    use crate::enumerate::all_degrees;
    use crate::stage::Layout;
    use crate::testing::{arb_cluster, arb_model};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Any grid (devices in a random order), any split, balanced shares: the prediction
        /// is never below the grid's bounds, nor the FLOP bound below the degrees' bound.
        #[test]
        fn bounds_never_exceed_the_prediction(
            cluster in arb_cluster(6),
            model in arb_model(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 2),
            order in Just((0..6).collect::<Vec<usize>>()).prop_shuffle(),
        ) {
            let cost = CostModel::new(&cluster, &model);
            let bound = StepBound::new(&cost);
            let degrees = all_degrees(cluster.devices.len(), &model);
            let degrees = degrees[picks[0].index(degrees.len())];
            let micro = micro_batching(&model, degrees.dp);
            let cells = order.into_iter().filter(|&d| d < cluster.devices.len());
            let grid = Grid { degrees, cells: cells.take(degrees.devices()).collect() };
            let layout = Layout::new(&cost, grid, None);
            let mut layers = vec![1; degrees.pp];
            layers[picks[1].index(degrees.pp)] += model.layers - degrees.pp;
            let config = layout.config(&cost, &layers, micro);
            let step = predict(&cluster, &model, &config).step_seconds;
            let (of_grid, of_degrees) =
                (bound.grid(&cost, &layout.grid), bound.degrees(&cost, degrees));
            let of_layers = bound.layers(&cost, &GridSpace::new(&cost), &layout.grid);
            prop_assert!(of_grid <= step * (1.0 + 1e-12), "grid bound {of_grid} > step {step}");
            prop_assert!(of_layers <= step, "layers bound {of_layers} > step {step}");
            prop_assert!(of_degrees <= of_grid * (1.0 + 1e-12), "{of_degrees} > {of_grid}");
        }
    }
}
