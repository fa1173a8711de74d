//! Where each device sits in a plan: its data-parallel replica, pipeline stage and
//! context-parallel shard; the groups it communicates with; the rows of its shard.

use std::ops::Range;

use megagraph_planner::{Degrees, ParallelConfig};

use crate::{EngineError, comm::Rank, model::ModelPart};

/// A device's place in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    /// Data-parallel replica.
    pub replica: usize,
    /// Pipeline stage.
    pub stage: usize,
    /// Context-parallel shard within the (replica, stage) group.
    pub shard: usize,
}

/// A checked plan configuration, answering where devices are and whom they talk to.
#[derive(Debug, Clone)]
pub struct Layout {
    config: ParallelConfig,
    roles: Vec<Option<Role>>,
}

impl Layout {
    /// One device running everything.
    pub fn single(layers: usize) -> Self {
        Self::new(ParallelConfig::one_device(layers), 1, layers)
            .expect("the single-device layout is valid for a model with layers")
    }

    /// Checks `config` against the `available` devices and a model of `layers` layers.
    pub fn new(
        config: ParallelConfig,
        available: usize,
        layers: usize,
    ) -> Result<Self, EngineError> {
        let bad = |message: String| Err(EngineError::Plan(message));
        config
            .check_shape()
            .map_err(|e| EngineError::Plan(e.to_string()))?;
        let named = config.node_shares.len();
        if named > available {
            return bad(format!(
                "the plan is for {named} devices but only {available} are here (ask for more with --devices, or plan for this machine)"
            ));
        }
        let last = config.stages.last().map_or(0, |s| s.layers[1]);
        if last != layers {
            return bad(format!(
                "the plan's stages cover {last} layers but the model has {layers} (plan for this model, or set --layers {last})"
            ));
        }
        let mut roles = vec![None; named];
        for (stage, s) in config.stages.iter().enumerate() {
            for (replica, shards) in s.devices.iter().enumerate() {
                for (shard, &device) in shards.iter().enumerate() {
                    roles[device] = Some(Role {
                        replica,
                        stage,
                        shard,
                    });
                }
            }
        }
        Ok(Self { config, roles })
    }

    /// The degrees.
    pub fn degrees(&self) -> Degrees {
        self.config.degrees
    }

    /// Micro-batches per replica per step.
    pub fn micro_batches(&self) -> usize {
        self.config.micro_batches
    }

    /// Sequences per optimizer step over all replicas.
    pub fn batch(&self) -> usize {
        self.config.degrees.dp * self.config.micro_batches
    }

    /// The devices the plan uses, ascending.
    pub fn ranks(&self) -> Vec<Rank> {
        (0..self.roles.len())
            .filter(|&r| self.roles[r].is_some())
            .collect()
    }

    /// Number of device slots the plan names (its ranks are below this).
    pub fn size(&self) -> usize {
        self.roles.len()
    }

    /// The role of `rank`, if the plan uses it.
    pub fn role(&self, rank: Rank) -> Option<Role> {
        self.roles.get(rank).copied().flatten()
    }

    /// The device of `replica`, `stage`, `shard`.
    pub fn device(&self, replica: usize, stage: usize, shard: usize) -> Rank {
        self.config.device(replica, stage, shard)
    }

    /// The shards of one (replica, stage) group, in shard order.
    pub fn shard_group(&self, replica: usize, stage: usize) -> Vec<Rank> {
        self.config.stages[stage].devices[replica].clone()
    }

    /// Every device of `stage`, replica-major: those holding the stage's parameters.
    pub fn stage_group(&self, stage: usize) -> Vec<Rank> {
        self.config.stages[stage].devices.concat()
    }

    /// The model part `stage` runs.
    pub fn part(&self, stage: usize) -> ModelPart {
        let [first, last] = self.config.stages[stage].layers;
        ModelPart {
            embedding: stage == 0,
            layers: first..last,
            output: stage + 1 == self.config.stages.len(),
        }
    }

    /// Rows of a sequence of `nodes` nodes held by each shard of a (replica, stage) group,
    /// in shard order: proportional to the shards' node shares, every shard at least one row.
    pub fn shard_rows(
        &self,
        replica: usize,
        stage: usize,
        nodes: usize,
    ) -> Result<Vec<usize>, EngineError> {
        let group = self.shard_group(replica, stage);
        if nodes < group.len() {
            return Err(EngineError::Plan(format!(
                "a sequence of {nodes} nodes cannot be split over {} context-parallel shards",
                group.len()
            )));
        }
        let shares: Vec<f64> = group.iter().map(|&d| self.config.node_shares[d]).collect();
        Ok(split_rows(nodes, &shares))
    }

    /// The fraction of each sequence's rows the device at `role` holds: its node share over
    /// the sum of its (replica, stage) group's.
    pub fn node_share(&self, role: Role) -> f64 {
        let group = self.shard_group(role.replica, role.stage);
        let share = |d: &Rank| self.config.node_shares[*d];
        share(&group[role.shard]) / group.iter().map(share).sum::<f64>()
    }

    /// The row range of `shard` from [`Layout::shard_rows`].
    pub fn shard_range(rows: &[usize], shard: usize) -> Range<usize> {
        let start: usize = rows[..shard].iter().sum();
        start..start + rows[shard]
    }
}

/// Splits `nodes` rows in proportion to `shares` (cumulative rounding, so the parts sum to
/// `nodes`), moving rows from the largest part to keep every part non-empty; needs
/// `nodes >= shares.len()`.
pub(crate) fn split_rows(nodes: usize, shares: &[f64]) -> Vec<usize> {
    let total: f64 = shares.iter().sum();
    let mut bounds = Vec::with_capacity(shares.len() + 1);
    bounds.push(0usize);
    let mut cumulative = 0.0;
    for share in shares {
        cumulative += share;
        bounds.push(((cumulative / total) * nodes as f64).round() as usize);
    }
    *bounds.last_mut().expect("non-empty") = nodes;
    let mut rows: Vec<usize> = bounds.windows(2).map(|w| w[1] - w[0]).collect();
    while let Some(empty) = rows.iter().position(|&r| r == 0) {
        let largest = (0..rows.len()).max_by_key(|&i| rows[i]).expect("non-empty");
        rows[largest] -= 1;
        rows[empty] += 1;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use megagraph_planner::Stage;

    fn config(text: &str, stages: Vec<Stage>, shares: Vec<f64>, micro: usize) -> ParallelConfig {
        ParallelConfig {
            degrees: text.parse().expect("degrees"),
            stages,
            node_shares: shares,
            micro_batches: micro,
        }
    }

    #[test]
    fn rows_follow_shares_sum_to_the_sequence_and_are_never_empty() {
        assert_eq!(split_rows(90, &[2.0, 1.0]), vec![60, 30]);
        assert_eq!(split_rows(10, &[0.25; 4]), vec![3, 2, 3, 2]);
        assert_eq!(split_rows(3, &[0.98, 0.01, 0.01]), vec![1, 1, 1]);
        for nodes in 4..40 {
            let rows = split_rows(nodes, &[0.5, 0.3, 0.15, 0.05]);
            assert_eq!(rows.iter().sum::<usize>(), nodes);
            assert!(rows.iter().all(|&r| r > 0), "{nodes}: {rows:?}");
        }
    }

    #[test]
    fn roles_and_groups_of_a_mixed_plan() -> Result<(), EngineError> {
        // dp2-pp2-cp1 over 4 devices: stage 0 on devices 0 (replica 0) and 2 (replica 1).
        let stages = vec![
            Stage {
                layers: [0, 1],
                devices: vec![vec![0], vec![2]],
            },
            Stage {
                layers: [1, 4],
                devices: vec![vec![1], vec![3]],
            },
        ];
        let layout = Layout::new(config("dp2-pp2-cp1", stages, vec![1.0; 4], 2), 4, 4)?;
        assert_eq!(
            layout.role(3),
            Some(Role {
                replica: 1,
                stage: 1,
                shard: 0
            })
        );
        assert_eq!(layout.stage_group(1), vec![1, 3]);
        assert_eq!(layout.batch(), 4);
        assert_eq!(layout.part(0).layers, 0..1);
        assert!(layout.part(1).output && !layout.part(1).embedding);
        Ok(())
    }

    #[test]
    fn a_shards_node_share_is_its_part_of_its_groups_rows() -> Result<(), EngineError> {
        // dp1-pp2-cp2: stage 0 on devices 0 and 1 at 3:1, stage 1 on devices 2 and 3 at 1:1.
        let stages = vec![
            Stage {
                layers: [0, 1],
                devices: vec![vec![0, 1]],
            },
            Stage {
                layers: [1, 2],
                devices: vec![vec![2, 3]],
            },
        ];
        let shares = vec![0.75, 0.25, 0.5, 0.5];
        let layout = Layout::new(config("dp1-pp2-cp2", stages, shares, 1), 4, 2)?;
        let share = |rank| layout.node_share(layout.role(rank).expect("in the plan"));
        assert_eq!([share(0), share(1)], [0.75, 0.25]);
        assert_eq!([share(2), share(3)], [0.5, 0.5]);
        assert_eq!(
            Layout::single(2).node_share(Layout::single(2).role(0).expect("one")),
            1.0
        );
        Ok(())
    }

    #[test]
    fn plans_for_missing_devices_or_another_depth_are_refused() {
        let stages = vec![Stage {
            layers: [0, 2],
            devices: vec![vec![0, 1, 2]],
        }];
        let plan = config("dp1-pp1-cp3", stages, vec![0.4, 0.3, 0.3], 1);
        let missing = Layout::new(plan.clone(), 2, 2).expect_err("3 devices named, 2 here");
        assert!(
            missing.to_string().contains("3 devices but only 2"),
            "{missing}"
        );
        let depth = Layout::new(plan, 3, 4).expect_err("2 layers planned, 4 built");
        assert!(
            depth
                .to_string()
                .contains("cover 2 layers but the model has 4"),
            "{depth}"
        );
    }
}
