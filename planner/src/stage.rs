//! One device grid under evaluation: a stage's balanced shares, time and memory fit for a
//! given layer count and micro-batching, and the configuration they make.
//!
//! A stage's figures depend only on its devices and their neighbours in the grid, which
//! stage it is (the first has the embedding, the last the head), how many layers it has and
//! the micro-batching, never on the other stages' layer counts or shares; this is what lets
//! the search split layers stage by stage.

use crate::balance::{Affine, Balanced, Member, balance, fits};
use crate::cost::{CostModel, GroupLink, Micro, Place};
use crate::enumerate::{GridSpace, micro_batching};
use crate::grid::{Cell, Grid};
use crate::{Degrees, Link, ParallelConfig};
use rustc_hash::FxHashMap;

/// A grid with the all-reduce group link and the shape of each stage worked out once.
pub(crate) struct Layout {
    pub grid: Grid,
    reduce: Vec<GroupLink>,
    /// Each device's divisor of its rates under this grid (see [`CostModel::sharing`]).
    sharing: Vec<f64>,
    shapes: Vec<StageShape>,
}

/// A stage's figures with balanced shares in every replica.
pub(crate) struct StageEval {
    /// Forward and backward of one micro-batch on the stage's slowest device.
    pub time: f64,
    /// The stage's slowest gradient all-reduce plus optimizer step.
    pub post: f64,
    /// Whether every device of the stage fits its memory.
    pub fits: bool,
    /// The largest memory-to-capacity ratio in the stage.
    pub overflow: f64,
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
    /// The model of the device at `place` (whose layer count is ignored).
    fn new(cost: &CostModel, place: Place) -> Self {
        let at = |layers| Place { layers, ..place };
        let post = |layers| {
            let (allreduce, optimizer) = cost.post_time(&at(layers));
            allreduce + optimizer
        };
        let device = &cost.cluster.devices[place.cell.device];
        let share_cap = device.max_buffer_bytes.map_or(f64::INFINITY, |limit| {
            Affine::cap_below(&cost.buffer_terms(&at(1)), limit)
        });
        CellModel {
            time: Bilinear::fit(|n, s| cost.micro_batch_time(&at(n), s).total()),
            memory: Bilinear::fit(|n, s| cost.memory(&at(n), s).total()),
            post: (post(0), post(1) - post(0)),
            capacity: device.memory_bytes,
            share_cap,
        }
    }

    /// Its balancing figures at `layers` layers.
    fn member(&self, layers: usize) -> Member {
        Member {
            time: self.time.at(layers),
            memory: self.memory.at(layers),
            capacity: self.capacity,
            share_cap: self.share_cap,
        }
    }
}

/// What a cell's model depends on within one stage and micro-batching, as bits: its
/// device's figures, how many devices of the grid share its hardware, and its links from its
/// ring predecessor and to its stage neighbours.
/// The cost model reads nothing else of a cell (the same facts make devices interchangeable
/// in `enumerate::device_classes`), so cells with equal keys have equal models.
#[derive(PartialEq, Eq, Hash)]
struct CellKey {
    device: [u64; 4],
    buffer: Option<u64>,
    overhead: [Option<[u64; 2]>; 3],
    contention: Option<u64>,
    links: [Option<[u64; 2]>; 3],
}

impl CellKey {
    /// The key of `cell`, with `link(a, b)` the link between devices `a` and `b` and
    /// `sharing` the grid's divisors of each device's rates.
    fn of(
        cost: &CostModel,
        cell: &Cell,
        link: &impl Fn(usize, usize) -> Link,
        sharing: &[f64],
    ) -> Self {
        let d = &cost.cluster.devices[cell.device];
        let link_from = |other: Option<usize>| {
            other.map(|o| {
                let l = link(o, cell.device);
                [l.bandwidth.to_bits(), l.latency.to_bits()]
            })
        };
        CellKey {
            device: [
                d.flops,
                d.mem_bandwidth,
                d.memory_bytes,
                sharing[cell.device],
            ]
            .map(f64::to_bits),
            buffer: d.max_buffer_bytes.map(f64::to_bits),
            overhead: d
                .overheads()
                .map(|(_, figures)| figures.map(|f| f.map(f64::to_bits))),
            contention: d.overhead_contention.map(f64::to_bits),
            links: [
                link_from(cell.ring_from),
                link_from(cell.prev),
                link_from(cell.next),
            ],
        }
    }
}

/// A stage's cells grouped by key, the same under every micro-batching: cells with equal
/// keys share one model, and replicas made of the same models in the same order (as in a
/// stage of several nodes of one kind) get equal shares and times from the same
/// computation, so each distinct replica is balanced once and its result reused: an exact
/// saving.
struct StageShape {
    /// One cell per distinct key.
    representatives: Vec<Cell>,
    /// The distinct replicas, each the indices in `representatives` of its `cp` shards.
    distinct: Vec<Vec<usize>>,
    /// Each replica's index in `distinct`.
    replicas: Vec<usize>,
}

impl StageShape {
    /// The shape of stage `stage` of `grid`, with `link(a, b)` the link between devices
    /// `a` and `b` and `sharing` the grid's divisors of each device's rates.
    fn new(
        cost: &CostModel,
        grid: &Grid,
        stage: usize,
        link: &impl Fn(usize, usize) -> Link,
        sharing: &[f64],
    ) -> Self {
        let Degrees { dp, cp, .. } = grid.degrees;
        let mut representatives = Vec::new();
        let mut by_key: FxHashMap<CellKey, usize> = FxHashMap::default();
        let shards: Vec<usize> = (0..dp)
            .flat_map(|r| (0..cp).map(move |c| grid.cell(r, stage, c)))
            .map(|cell| {
                *by_key
                    .entry(CellKey::of(cost, &cell, link, sharing))
                    .or_insert_with(|| {
                        representatives.push(cell);
                        representatives.len() - 1
                    })
            })
            .collect();
        let mut distinct: Vec<Vec<usize>> = Vec::new();
        let mut by_shards: FxHashMap<&[usize], usize> = FxHashMap::default();
        let replicas = shards
            .chunks(cp)
            .map(|replica| {
                *by_shards.entry(replica).or_insert_with(|| {
                    distinct.push(replica.to_vec());
                    distinct.len() - 1
                })
            })
            .collect();
        StageShape {
            representatives,
            distinct,
            replicas,
        }
    }
}

/// One stage's devices as functions of the stage's layer count, for one micro-batching.
pub(crate) struct StageModel<'a> {
    /// The model of each of the shape's representatives.
    cells: Vec<CellModel>,
    shape: &'a StageShape,
}

impl StageModel<'_> {
    /// The balancing figures of a distinct replica at `layers` layers.
    fn members(&self, replica: &[usize], layers: usize) -> impl Iterator<Item = Member> {
        replica.iter().map(move |&c| self.cells[c].member(layers))
    }

    /// Each distinct replica balanced at `layers` layers.
    fn balanced(&self, layers: usize) -> Vec<Balanced> {
        self.shape
            .distinct
            .iter()
            .map(|replica| balance(&self.members(replica, layers).collect::<Vec<_>>()))
            .collect()
    }

    /// The stage with `layers` layers, shares balanced per replica.
    pub fn eval(&self, layers: usize) -> StageEval {
        let n = layers as f64;
        let mut eval = StageEval {
            time: 0.0,
            post: 0.0,
            fits: true,
            overflow: 0.0,
        };
        for cell in &self.cells {
            eval.post = eval.post.max(cell.post.0 + cell.post.1 * n);
        }
        for b in self.balanced(layers) {
            eval.time = eval.time.max(b.time);
            eval.fits &= b.fits;
            eval.overflow = eval.overflow.max(b.overflow);
        }
        eval
    }

    /// The balanced shares at `layers` layers, `[replica · cp + shard]`.
    pub fn shares(&self, layers: usize) -> Vec<f64> {
        let balanced = self.balanced(layers);
        self.shape
            .replicas
            .iter()
            .flat_map(|&r| balanced[r].shares.iter().copied())
            .collect()
    }

    /// How many of `1..=most` layers fit from 1 up (the `fits` of [`StageModel::eval`]
    /// without balancing).
    pub fn fitting(&self, most: usize) -> usize {
        (1..=most)
            .take_while(|&layers| {
                self.shape
                    .distinct
                    .iter()
                    .all(|replica| fits(self.members(replica, layers)))
            })
            .count()
    }
}

impl Layout {
    /// The layout of `grid`, links looked up by device class in `space` if given (the same
    /// links, faster), else pair by pair.
    pub fn new(cost: &CostModel, grid: Grid, space: Option<&GridSpace>) -> Self {
        let stages = 0..grid.degrees.pp;
        let reduce = stages
            .clone()
            .map(|s| {
                let devices = grid.stage_devices(s);
                space.map_or_else(|| cost.group_link(&devices), |c| c.group_link(&devices))
            })
            .collect();
        let link = |a, b| space.map_or_else(|| cost.link(a, b), |c| c.link(a, b));
        let micro = micro_batching(cost.model, grid.degrees.dp);
        let sharing = cost.sharing(&grid, micro);
        let shapes = stages
            .map(|s| StageShape::new(cost, &grid, s, &link, &sharing))
            .collect();
        Layout {
            grid,
            reduce,
            sharing,
            shapes,
        }
    }

    /// Stage `stage` under `micro` as a function of its layer count.
    pub fn stage_model(&self, cost: &CostModel, stage: usize, micro: Micro) -> StageModel<'_> {
        let shape = &self.shapes[stage];
        let cells = shape
            .representatives
            .iter()
            .map(|&cell| {
                let place = Place {
                    cell,
                    degrees: self.grid.degrees,
                    layers: 0,
                    micro,
                    reduce: self.reduce[stage],
                    sharing: self.sharing[cell.device],
                };
                CellModel::new(cost, place)
            })
            .collect();
        StageModel { cells, shape }
    }

    /// The configuration with `layers[s]` layers in stage `s`, balanced shares and `micro`.
    pub fn config(&self, cost: &CostModel, layers: &[usize], micro: Micro) -> ParallelConfig {
        let Degrees { dp, cp, .. } = self.grid.degrees;
        let mut node_shares = vec![0.0; cost.cluster.devices.len()];
        for (s, &count) in layers.iter().enumerate() {
            let shares = self.stage_model(cost, s, micro).shares(count);
            for r in 0..dp {
                for c in 0..cp {
                    node_shares[self.grid.at(r, s, c)] = shares[r * cp + c];
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
