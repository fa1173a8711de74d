//! Lower bounds on the step of every configuration of a choice of degrees, or of one grid,
//! under one micro-batching; the search skips what cannot beat the best found so far.
//!
//! The argument: a step is `(m + pp − 1) · t_max + post ≥ (m + pp − 1) · t_max`, where `t_max`
//! is the slowest device's micro-batch time (see `predict`). Every replica runs the whole
//! model on `size` sequences per micro-batch, so its devices' FLOPs sum to at least
//! `size · CostModel::sequence_flops(cp)` whatever the split and shares, and each device's
//! time is at least its FLOPs over its FLOP/s (memory traffic and messages only add). The
//! slowest device of a replica is no faster than the replica's FLOPs over its summed FLOP/s
//! (a maximum is at least the FLOP/s-weighted mean), so `t_max` is at least that of the
//! replica with the least summed FLOP/s. Any choice of `dp · pp · cp` devices has a replica
//! with at most `1 / dp` of the `dp · pp · cp` fastest devices' summed FLOP/s.

use crate::Degrees;
use crate::cost::{CostModel, Micro};
use crate::grid::Grid;

/// FLOP-count lower bounds on the step of a cluster and model.
pub(crate) struct StepBound {
    /// `fastest[k]`: the summed FLOP/s of the `k` fastest devices.
    fastest: Vec<f64>,
}

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
        StepBound { fastest }
    }

    /// A lower bound on the step of every grid of `degrees` under `micro`.
    pub fn degrees(&self, cost: &CostModel, degrees: Degrees, micro: Micro) -> f64 {
        let replica_flops = self.fastest[degrees.devices()] / degrees.dp as f64;
        pipelined_flop_time(cost, degrees, micro, replica_flops)
    }

    /// A lower bound on the step of `grid` under `micro`, whatever the split and shares.
    pub fn grid(&self, cost: &CostModel, grid: &Grid, micro: Micro) -> f64 {
        let replica_flops = grid.slowest_replica_flops(cost.cluster);
        pipelined_flop_time(cost, grid.degrees, micro, replica_flops)
    }
}

/// `(m + pp − 1) · size · sequence_flops(cp) / replica_flops`: the 1F1B step if a replica
/// with `replica_flops` FLOP/s spread its FLOPs perfectly and did nothing else.
fn pipelined_flop_time(
    cost: &CostModel,
    degrees: Degrees,
    micro: Micro,
    replica_flops: f64,
) -> f64 {
    let factor = (micro.count + degrees.pp - 1) as f64;
    factor * micro.size as f64 * cost.sequence_flops(degrees.cp) / replica_flops
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::cost::predict;
    use crate::enumerate::{all_degrees, micro_batchings};
    use crate::stage::Layout;
    use crate::testing::{arb_cluster, arb_model};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Any grid (devices in a random order), any split, balanced shares: the prediction
        /// is never below the grid's bound, nor that below the degrees' bound.
        #[test]
        fn bounds_never_exceed_the_prediction(
            cluster in arb_cluster(6),
            model in arb_model(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 3),
            order in Just((0..6).collect::<Vec<usize>>()).prop_shuffle(),
        ) {
            let cost = CostModel::new(&cluster, &model);
            let bound = StepBound::new(&cost);
            let degrees = all_degrees(cluster.devices.len(), &model);
            let degrees = degrees[picks[0].index(degrees.len())];
            let micros = micro_batchings(&model, degrees.dp);
            let micro = micros[picks[1].index(micros.len())];
            let cells = order.into_iter().filter(|&d| d < cluster.devices.len());
            let grid = Grid { degrees, cells: cells.take(degrees.devices()).collect() };
            let layout = Layout::new(&cost, grid, None);
            let mut layers = vec![1; degrees.pp];
            layers[picks[2].index(degrees.pp)] += model.layers - degrees.pp;
            let config = layout.config(&cost, &layers, micro);
            let step = predict(&cluster, &model, &config).step_seconds;
            let (of_grid, of_degrees) =
                (bound.grid(&cost, &layout.grid, micro), bound.degrees(&cost, degrees, micro));
            prop_assert!(of_grid <= step * (1.0 + 1e-12), "grid bound {of_grid} > step {step}");
            prop_assert!(of_degrees <= of_grid * (1.0 + 1e-12), "{of_degrees} > {of_grid}");
        }
    }
}
