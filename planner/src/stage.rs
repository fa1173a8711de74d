//! One device grid under evaluation: a stage's balanced shares, time and memory fit for a
//! given layer count and micro-batching, and the configuration they make.
//!
//! A stage's figures depend only on its devices and their neighbours in the grid, which
//! stage it is (the first has the embedding, the last the head), how many layers it has and
//! the micro-batching, never on the other stages' layer counts or shares; this is what lets
//! the search split layers stage by stage.

use std::cell::OnceCell;
use std::collections::HashMap;

use crate::balance::{Affine, Balanced, Member, balance, fits};
use crate::cost::{CostModel, GroupLink, Micro, Place};
use crate::grid::Grid;
use crate::{Degrees, ParallelConfig};

/// A grid with the all-reduce group link of each stage looked up once, when first needed
/// (the search bounds many grids it never evaluates).
pub(crate) struct Layout {
    pub grid: Grid,
    reduce: OnceCell<Vec<GroupLink>>,
}

/// A stage with balanced shares in every replica.
pub(crate) struct StageEval {
    /// Forward and backward of one micro-batch on the stage's slowest device.
    pub time: f64,
    /// The stage's slowest gradient all-reduce plus optimizer step.
    pub post: f64,
    /// Whether every device of the stage fits its memory.
    pub fits: bool,
    /// The largest memory-to-capacity ratio in the stage.
    pub overflow: f64,
    /// Shares, `[replica · cp + shard]`.
    pub shares: Vec<f64>,
}

/// `f(n, s) = a + b·n + c·s + d·n·s` for layer count `n` and share `s`: every cost term is
/// affine in each (per-layer terms scale with `n`, per-node terms with `s`).
#[derive(Debug, Clone, Copy)]
struct Bilinear {
    a: f64,
    b: f64,
    c: f64,
    d: f64,
}

impl Bilinear {
    /// The bilinear function through `f` at `n, s ∈ {0, 1}`.
    fn fit(f: impl Fn(usize, f64) -> f64) -> Self {
        let (f00, f10, f01, f11) = (f(0, 0.0), f(1, 0.0), f(0, 1.0), f(1, 1.0));
        Bilinear {
            a: f00,
            b: f10 - f00,
            c: f01 - f00,
            d: f11 - f10 - f01 + f00,
        }
    }

    /// The function of the share at `layers` layers.
    fn at(&self, layers: usize) -> Affine {
        let n = layers as f64;
        Affine {
            at_zero: self.a + self.b * n,
            slope: self.c + self.d * n,
        }
    }
}

/// One device of a stage as a function of the stage's layer count and its share.
struct CellModel {
    /// Forward and backward of one micro-batch.
    time: Bilinear,
    /// Peak memory.
    memory: Bilinear,
    /// All-reduce plus optimizer with no layers, and per layer.
    post: (f64, f64),
    capacity: f64,
    /// The largest share the device's buffer limit allows.
    share_cap: f64,
}

impl CellModel {
    /// Its balancing figures at `layers` layers.
    fn member(&self, layers: usize) -> Member {
        Member {
            time: self.time.at(layers),
            memory: self.memory.at(layers),
            capacity: self.capacity,
            share_cap: self.share_cap,
        }
    }

    /// Its figures' bits, for merging equal replicas.
    fn bits(&self) -> [u64; 12] {
        let (t, m) = (&self.time, &self.memory);
        [
            t.a,
            t.b,
            t.c,
            t.d,
            m.a,
            m.b,
            m.c,
            m.d,
            self.post.0,
            self.post.1,
            self.capacity,
            self.share_cap,
        ]
        .map(f64::to_bits)
    }
}

/// One stage's devices as functions of the stage's layer count, for one micro-batching.
///
/// Replicas whose cells have equal figures (as in a stage of several nodes of one kind) get
/// equal shares and times from the same computation, so each distinct replica is balanced
/// once and its result reused: an exact saving.
pub(crate) struct StageModel {
    /// The distinct replicas, each `cp` cells.
    distinct: Vec<Vec<CellModel>>,
    /// Each replica's index in `distinct`.
    replicas: Vec<usize>,
}

impl StageModel {
    /// The stage of `cells` (`[replica · cp + shard]`), equal replicas merged.
    fn new(cells: Vec<CellModel>, cp: usize) -> Self {
        let mut distinct: Vec<Vec<CellModel>> = Vec::new();
        let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut replicas = Vec::with_capacity(cells.len() / cp);
        let mut cells = cells.into_iter();
        loop {
            let replica: Vec<CellModel> = cells.by_ref().take(cp).collect();
            if replica.is_empty() {
                break;
            }
            let key = replica.iter().flat_map(CellModel::bits).collect();
            let next = distinct.len();
            let at = *index.entry(key).or_insert(next);
            if at == next {
                distinct.push(replica);
            }
            replicas.push(at);
        }
        StageModel { distinct, replicas }
    }

    /// The stage with `layers` layers, shares balanced per replica.
    pub fn eval(&self, layers: usize) -> StageEval {
        let n = layers as f64;
        let mut eval = StageEval {
            time: 0.0,
            post: 0.0,
            fits: true,
            overflow: 0.0,
            shares: Vec::new(),
        };
        let balanced: Vec<Balanced> = self
            .distinct
            .iter()
            .map(|replica| {
                let members: Vec<Member> = replica.iter().map(|c| c.member(layers)).collect();
                balance(&members)
            })
            .collect();
        for (replica, b) in self.distinct.iter().zip(&balanced) {
            for cell in replica {
                eval.post = eval.post.max(cell.post.0 + cell.post.1 * n);
            }
            eval.time = eval.time.max(b.time);
            eval.fits &= b.fits;
            eval.overflow = eval.overflow.max(b.overflow);
        }
        eval.shares = self
            .replicas
            .iter()
            .flat_map(|&r| balanced[r].shares.iter().copied())
            .collect();
        eval
    }

    /// How many of `1..=most` layers fit from 1 up (the `fits` of [`StageModel::eval`]
    /// without balancing).
    pub fn fitting(&self, most: usize) -> usize {
        (1..=most)
            .take_while(|&layers| {
                self.distinct
                    .iter()
                    .all(|replica| fits(replica.iter().map(|c| c.member(layers))))
            })
            .count()
    }
}

impl Layout {
    /// The layout of `grid`.
    pub fn new(grid: Grid) -> Self {
        Layout {
            grid,
            reduce: OnceCell::new(),
        }
    }

    /// The all-reduce group link of stage `stage`.
    fn reduce(&self, cost: &CostModel, stage: usize) -> GroupLink {
        let all = self.reduce.get_or_init(|| {
            (0..self.grid.degrees.pp)
                .map(|s| cost.group_link(&self.grid.stage_devices(s)))
                .collect()
        });
        all[stage]
    }

    /// Summed FLOP/s of the grid's slowest replica (by summed FLOP/s).
    pub fn slowest_replica_flops(&self, cost: &CostModel) -> f64 {
        let Degrees { pp, cp, .. } = self.grid.degrees;
        self.grid
            .cells
            .chunks(pp * cp)
            .map(|replica| {
                replica
                    .iter()
                    .map(|&d| cost.cluster.devices[d].flops)
                    .sum::<f64>()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Stage `stage` under `micro` as a function of its layer count.
    pub fn stage_model(&self, cost: &CostModel, stage: usize, micro: Micro) -> StageModel {
        let Degrees { dp, cp, .. } = self.grid.degrees;
        let reduce = self.reduce(cost, stage);
        let mut cells = Vec::with_capacity(dp * cp);
        for r in 0..dp {
            for c in 0..cp {
                let place = |layers| Place {
                    cell: self.grid.cell(r, stage, c),
                    degrees: self.grid.degrees,
                    layers,
                    micro,
                    reduce,
                };
                let post = |layers| {
                    let (allreduce, optimizer) = cost.post_time(&place(layers));
                    allreduce + optimizer
                };
                let device = self.grid.at(r, stage, c);
                let share_cap = cost.cluster.devices[device]
                    .max_buffer_bytes
                    .map_or(f64::INFINITY, |limit| {
                        Affine::cap_below(&cost.buffer_terms(&place(1)), limit)
                    });
                cells.push(CellModel {
                    time: Bilinear::fit(|n, s| cost.micro_batch_time(&place(n), s).total()),
                    memory: Bilinear::fit(|n, s| cost.memory(&place(n), s).total()),
                    post: (post(0), post(1) - post(0)),
                    capacity: cost.cluster.devices[device].memory_bytes,
                    share_cap,
                });
            }
        }
        StageModel::new(cells, cp)
    }

    /// The configuration with `layers[s]` layers in stage `s`, balanced shares and `micro`.
    pub fn config(&self, cost: &CostModel, layers: &[usize], micro: Micro) -> ParallelConfig {
        let Degrees { dp, cp, .. } = self.grid.degrees;
        let mut node_shares = vec![0.0; cost.cluster.devices.len()];
        for (s, &count) in layers.iter().enumerate() {
            let eval = self.stage_model(cost, s, micro).eval(count);
            for r in 0..dp {
                for c in 0..cp {
                    node_shares[self.grid.at(r, s, c)] = eval.shares[r * cp + c];
                }
            }
        }
        ParallelConfig {
            degrees: self.grid.degrees,
            stages: self.grid.stages(layers),
            node_shares,
            micro_batches: micro.count,
        }
    }
}
