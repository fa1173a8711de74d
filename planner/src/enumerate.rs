//! The search space: degrees, their micro-batching and device grids.
//!
//! Grids are enumerated up to symmetry. Two devices are interchangeable when swapping them
//! changes nothing the cost model sees: same figures, same link to every other device (such
//! classes are an equivalence). Replicas are interchangeable too (the cost model's
//! all-reduce depends only on the set of a stage's devices). So a grid is determined, up to
//! cost, by the class of each cell with the replicas' class blocks in non-decreasing order;
//! that enumeration is exact. When it would exceed [`EXACT_GRID_BUDGET`] grids for one
//! choice of degrees, structured grids are used instead (see [`structured_grids`]).

use crate::cost::{CostModel, GroupLink, Micro};
use crate::grid::Grid;
use crate::{Degrees, Link, ModelSpec};

/// Largest number of symmetry-distinct grids enumerated for one choice of degrees.
pub(crate) const EXACT_GRID_BUDGET: f64 = 2_000.0;

/// Every `(dp, pp, cp)` with `dp·pp·cp ≤ devices`, `dp` dividing `num_sequences` (the
/// sequences of a step), `pp ≤ layers`, `cp ≤ seq_len`; more devices first.
pub(crate) fn all_degrees(devices: usize, model: &ModelSpec) -> Vec<Degrees> {
    let mut all = Vec::new();
    let divides = |dp: &usize| model.num_sequences.is_multiple_of(*dp);
    for dp in (1..=devices.min(model.num_sequences)).filter(divides) {
        for pp in 1..=(devices / dp).min(model.layers) {
            for cp in 1..=(devices / (dp * pp)).min(model.seq_len) {
                all.push(Degrees { dp, pp, cp });
            }
        }
    }
    all.sort_by_key(|d| std::cmp::Reverse(d.devices()));
    all
}

/// The micro-batching of `dp` replicas: the engine runs one sequence per micro-batch, so a
/// replica runs `num_sequences / dp` of them per step (`dp` divides the step's sequences).
pub(crate) fn micro_batching(model: &ModelSpec, dp: usize) -> Micro {
    Micro {
        count: model.num_sequences / dp,
    }
}

/// Classes of interchangeable devices, each in index order, ordered by first index.
pub(crate) fn device_classes(cost: &CostModel) -> Vec<Vec<usize>> {
    let devices = &cost.cluster.devices;
    let n = devices.len();
    let interchangeable = |a: usize, b: usize| {
        let (x, y) = (&devices[a], &devices[b]);
        x.memory_bytes == y.memory_bytes
            && x.flops == y.flops
            && x.mem_bandwidth == y.mem_bandwidth
            && x.max_buffer_bytes == y.max_buffer_bytes
            && x.hardware == y.hardware
            && x.layer_overhead == y.layer_overhead
            && x.end_overhead == y.end_overhead
            && x.step_overhead == y.step_overhead
            && x.overhead_contention == y.overhead_contention
            && (0..n)
                .filter(|&w| w != a && w != b)
                .all(|w| cost.link(a, w) == cost.link(b, w))
    };
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for d in 0..n {
        match classes
            .iter_mut()
            .find(|class| interchangeable(class[0], d))
        {
            Some(class) => class.push(d),
            None => classes.push(vec![d]),
        }
    }
    classes
}

/// The device classes of a cluster (see [`device_classes`]) and the count of class
/// sequences of every length: what choosing the grids of any degrees needs, computed once.
pub(crate) struct GridSpace {
    classes: Vec<Vec<usize>>,
    /// Each device's index in `classes`.
    class_of: Vec<usize>,
    /// `class_links[a · classes + b]`: the link between a device of class `a` and another
    /// of class `b`. Interchangeable devices have equal links to every other device, so
    /// this is the same for every such pair (two pairs within a class too: for `x`, `y`,
    /// `z` of a class, `link(x, y) = link(z, y) = link(z, x)`). Unused for a class of one
    /// with itself.
    class_links: Vec<Link>,
    /// `sequences[n]`: the class sequences of length `n` (see [`class_sequences`]).
    sequences: Vec<f64>,
}

impl GridSpace {
    /// The grid space of `cost`'s cluster.
    pub fn new(cost: &CostModel) -> Self {
        let classes = device_classes(cost);
        let sequences = class_sequences(&classes, cost.cluster.devices.len());
        let mut class_of = vec![0; cost.cluster.devices.len()];
        for (c, class) in classes.iter().enumerate() {
            for &d in class {
                class_of[d] = c;
            }
        }
        let class_links = classes
            .iter()
            .flat_map(|a| {
                classes.iter().map(move |b| {
                    let other = if a[0] == b[0] { b.get(1) } else { b.first() };
                    other.map_or(cost.cluster.link, |&o| cost.link(a[0], o))
                })
            })
            .collect();
        GridSpace {
            classes,
            class_of,
            class_links,
            sequences,
        }
    }

    /// The class of device `device`.
    pub fn class_of(&self, device: usize) -> usize {
        self.class_of[device]
    }

    /// `CostModel::link` between distinct devices `a` and `b`, from their classes.
    pub fn link(&self, a: usize, b: usize) -> Link {
        self.class_links[self.class_of[a] * self.classes.len() + self.class_of[b]]
    }

    /// `CostModel::group_link` of `devices` from the links between their classes.
    pub fn group_link(&self, devices: &[usize]) -> GroupLink {
        let classes = self.classes.len();
        let mut count = vec![0usize; classes];
        let mut present = Vec::new();
        for &d in devices {
            let c = self.class_of[d];
            if count[c] == 0 {
                present.push(c);
            }
            count[c] += 1;
        }
        let count = &count;
        let pairs = present.iter().enumerate().flat_map(|(i, &a)| {
            present[i..]
                .iter()
                .filter(move |&&b| b != a || count[a] >= 2)
                .map(move |&b| (a, b))
        });
        GroupLink::over(
            devices.len(),
            pairs.map(|(a, b)| self.class_links[a * classes + b]),
        )
    }

    /// The grids the search evaluates for `degrees`: all symmetry-distinct grids if there
    /// are at most [`EXACT_GRID_BUDGET`], else [`structured_grids`].
    pub fn grids(&self, cost: &CostModel, degrees: Degrees) -> Vec<Grid> {
        if grid_count_bound(&self.sequences, degrees) <= EXACT_GRID_BUDGET {
            distinct_grids(&self.classes, degrees)
        } else {
            structured_grids(cost, &self.classes, degrees)
        }
    }
}

/// An upper bound on the symmetry-distinct grids: the fewer of the class sequences over
/// all cells and the multisets of `dp` replica blocks (`sequences` as of [`GridSpace`]).
fn grid_count_bound(sequences: &[f64], degrees: Degrees) -> f64 {
    let block = degrees.pp * degrees.cp;
    let blocks = sequences[block];
    let multisets = (1..=degrees.dp)
        .map(|i| (blocks + (i - 1) as f64) / i as f64)
        .product::<f64>();
    sequences[degrees.dp * block].min(multisets)
}

/// For each length `n ≤ longest`, the sequences of `n` classes using each class at most its
/// size: `n!` times the coefficient of `x^n` in `Π_class Σ_{j ≤ size} x^j / j!`.
fn class_sequences(classes: &[Vec<usize>], longest: usize) -> Vec<f64> {
    let mut coefficients = vec![0.0; longest + 1];
    coefficients[0] = 1.0;
    for class in classes {
        let mut next = vec![0.0; longest + 1];
        for (j, &c) in coefficients.iter().enumerate() {
            let mut inverse_factorial = 1.0;
            for used in 0..=class.len().min(longest - j) {
                if used > 0 {
                    inverse_factorial /= used as f64;
                }
                next[j + used] += c * inverse_factorial;
            }
        }
        coefficients = next;
    }
    let mut factorial = 1.0;
    coefficients
        .iter()
        .enumerate()
        .map(|(n, &c)| {
            if n > 0 {
                factorial *= n as f64;
            }
            c * factorial
        })
        .collect()
}

/// Every grid up to device-class and replica symmetry.
fn distinct_grids(classes: &[Vec<usize>], degrees: Degrees) -> Vec<Grid> {
    struct Walk<'a> {
        classes: &'a [Vec<usize>],
        block: usize,
        sequence: Vec<usize>,
        left: Vec<usize>,
        grids: Vec<Grid>,
        degrees: Degrees,
    }
    impl Walk<'_> {
        fn visit(&mut self, pos: usize, tied: bool) {
            if pos == self.sequence.len() {
                let mut taken = vec![0; self.classes.len()];
                let cells = self
                    .sequence
                    .iter()
                    .map(|&c| {
                        taken[c] += 1;
                        self.classes[c][taken[c] - 1]
                    })
                    .collect();
                self.grids.push(Grid {
                    degrees: self.degrees,
                    cells,
                });
                return;
            }
            let in_block = pos % self.block;
            // A replica's block may not sort before the previous replica's.
            let tied = if in_block == 0 { pos > 0 } else { tied };
            let lowest = if tied {
                self.sequence[pos - self.block]
            } else {
                0
            };
            for class in lowest..self.classes.len() {
                if self.left[class] == 0 {
                    continue;
                }
                self.left[class] -= 1;
                self.sequence[pos] = class;
                let still_tied = tied && class == self.sequence[pos - self.block];
                self.visit(pos + 1, still_tied);
                self.left[class] += 1;
            }
        }
    }
    let mut walk = Walk {
        classes,
        block: degrees.pp * degrees.cp,
        sequence: vec![0; degrees.devices()],
        left: classes.iter().map(Vec::len).collect(),
        grids: Vec::new(),
        degrees,
    };
    walk.visit(0, false);
    walk.grids
}

/// Grids for clusters too large to enumerate: devices taken in index order, or class by
/// class from the fastest class, the first `dp·pp·cp` of them laid on the grid in each of
/// the six nestings of the axes (CP innermost keeps a ring inside a class, e.g. a node).
/// The index-order grids include the baselines' grids, so the search never does worse.
fn structured_grids(cost: &CostModel, classes: &[Vec<usize>], degrees: Degrees) -> Vec<Grid> {
    let k = degrees.devices();
    let by_index: Vec<usize> = (0..cost.cluster.devices.len()).collect();
    let mut by_class = classes.to_vec();
    by_class.sort_by(|a, b| {
        let flops = |class: &Vec<usize>| cost.cluster.devices[class[0]].flops;
        flops(b).total_cmp(&flops(a)).then(a[0].cmp(&b[0]))
    });
    let by_class: Vec<usize> = by_class.concat();
    let Degrees { dp, pp, cp } = degrees;
    let sizes = [dp, pp, cp];
    let nestings = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut grids = Vec::new();
    for order in [&by_index, &by_class] {
        for nesting in nestings {
            let mut cells = vec![0; k];
            for r in 0..dp {
                for s in 0..pp {
                    for c in 0..cp {
                        let index = [r, s, c];
                        let position = nesting
                            .iter()
                            .fold(0, |acc, &axis| acc * sizes[axis] + index[axis]);
                        cells[(r * pp + s) * cp + c] = order[position];
                    }
                }
            }
            let grid = Grid { degrees, cells };
            if !grids.contains(&grid) {
                grids.push(grid);
            }
        }
    }
    grids
}

/// Every grid: each ordered choice of `dp·pp·cp` distinct devices (for the exhaustive oracle).
pub(crate) fn every_grid(devices: usize, degrees: Degrees, mut visit: impl FnMut(Grid)) {
    fn extend(
        cells: &mut Vec<usize>,
        used: &mut [bool],
        k: usize,
        degrees: Degrees,
        visit: &mut dyn FnMut(Grid),
    ) {
        if cells.len() == k {
            visit(Grid {
                degrees,
                cells: cells.clone(),
            });
            return;
        }
        for d in 0..used.len() {
            if !used[d] {
                used[d] = true;
                cells.push(d);
                extend(cells, used, k, degrees, visit);
                cells.pop();
                used[d] = false;
            }
        }
    }
    let mut used = vec![false; devices];
    extend(
        &mut Vec::new(),
        &mut used,
        degrees.devices(),
        degrees,
        &mut visit,
    );
}

/// Every way to give `stages` stages at least one of `layers` layers (for the exhaustive
/// oracle).
pub(crate) fn every_split(layers: usize, stages: usize, mut visit: impl FnMut(&[usize])) {
    fn extend(split: &mut Vec<usize>, left: usize, stages: usize, visit: &mut dyn FnMut(&[usize])) {
        let remaining = stages - split.len();
        if remaining == 1 {
            split.push(left);
            visit(split);
            split.pop();
            return;
        }
        for n in 1..=left - (remaining - 1) {
            split.push(n);
            extend(split, left - n, stages, visit);
            split.pop();
        }
    }
    extend(&mut Vec::new(), layers, stages, &mut visit);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::PairLink;
    use crate::testing::{arb_cluster, arb_model, cluster, device, model};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn group_links_by_class_equal_the_pairwise_ones(
            cluster in arb_cluster(8),
            model in arb_model(),
            order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
            size in 1usize..=8,
        ) {
            let cost = CostModel::new(&cluster, &model);
            let space = GridSpace::new(&cost);
            let devices: Vec<usize> =
                order.into_iter().filter(|&d| d < cluster.devices.len()).take(size).collect();
            prop_assert_eq!(space.group_link(&devices), cost.group_link(&devices));
        }
    }

    fn uniform_devices(flops: &[f64]) -> Vec<crate::DeviceSpec> {
        flops.iter().map(|&f| device("d", 1e9, f, 1e11)).collect()
    }

    #[test]
    fn degrees_respect_limits() {
        let all = all_degrees(4, &model(2, 64, 3));
        assert!(
            all.iter()
                .all(|d| d.devices() <= 4 && d.dp <= 3 && d.pp <= 2)
        );
        assert!(all.contains(&Degrees {
            dp: 1,
            pp: 2,
            cp: 2
        }));
        assert!(!all.contains(&Degrees {
            dp: 4,
            pp: 1,
            cp: 1
        }));
        assert_eq!(all[0].devices(), 4);
    }

    #[test]
    fn replicas_divide_a_step_and_run_one_sequence_per_micro_batch() {
        let model = model(2, 64, 6);
        let replicas: Vec<usize> = all_degrees(8, &model).iter().map(|d| d.dp).collect();
        for dp in [1, 2, 3, 6] {
            assert!(replicas.contains(&dp), "dp {dp} of {replicas:?}");
            assert_eq!(micro_batching(&model, dp).count * dp, 6);
        }
        assert!(!replicas.contains(&4) && !replicas.contains(&5));
    }

    #[test]
    fn classes_follow_figures_and_links() {
        let link = PairLink {
            a: 0,
            b: 1,
            bandwidth: 1e11,
            latency: 0.0,
        };
        let model = model(2, 64, 2);
        let flops = [1e12, 1e12, 1e12, 2e12];
        let plain = cluster(uniform_devices(&flops), (1e9, 1e-5), vec![]);
        let cost = CostModel::new(&plain, &model);
        assert_eq!(device_classes(&cost), vec![vec![0, 1, 2], vec![3]]);
        let linked = cluster(uniform_devices(&flops), (1e9, 1e-5), vec![link]);
        let cost = CostModel::new(&linked, &model);
        assert_eq!(device_classes(&cost), vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn distinct_grids_count_orbits() {
        // Four identical devices: one grid per degrees.
        let one_class = vec![vec![0, 1, 2, 3]];
        let degrees = Degrees {
            dp: 2,
            pp: 1,
            cp: 2,
        };
        assert_eq!(distinct_grids(&one_class, degrees).len(), 1);
        assert_eq!(
            grid_count_bound(&class_sequences(&one_class, 4), degrees),
            1.0
        );
        // Four distinct devices, dp2-pp1-cp2: 4! / 2! orderings of the replicas.
        let singles: Vec<Vec<usize>> = (0..4).map(|d| vec![d]).collect();
        assert_eq!(distinct_grids(&singles, degrees).len(), 12);
        // Bound: blocks are the 12 ordered pairs, multisets of two of them 78, sequences 24.
        assert_eq!(
            grid_count_bound(&class_sequences(&singles, 4), degrees),
            24.0
        );
        // Two classes of two, dp2-pp1-cp1 on 2 of them: {aa, ab, bb}.
        let pairs = vec![vec![0, 1], vec![2, 3]];
        let dp2 = Degrees {
            dp: 2,
            pp: 1,
            cp: 1,
        };
        assert_eq!(grid_count_bound(&class_sequences(&pairs, 4), dp2), 3.0);
        let grids = distinct_grids(&pairs, dp2);
        let cells: Vec<Vec<usize>> = grids.into_iter().map(|g| g.cells).collect();
        assert_eq!(cells, vec![vec![0, 1], vec![0, 2], vec![2, 3]]);
    }

    #[test]
    fn every_grid_visits_all_orderings() {
        let mut count = 0;
        every_grid(
            4,
            Degrees {
                dp: 1,
                pp: 3,
                cp: 1,
            },
            |_| count += 1,
        );
        assert_eq!(count, 24);
    }

    #[test]
    fn every_split_gives_each_stage_a_layer() {
        let mut splits = Vec::new();
        every_split(4, 2, |s| splits.push(s.to_vec()));
        assert_eq!(splits, vec![vec![1, 3], vec![2, 2], vec![3, 1]]);
        let mut count = 0;
        every_split(6, 3, |_| count += 1);
        assert_eq!(count, 10);
    }

    #[test]
    fn structured_grids_keep_rings_in_a_class() {
        let spec = cluster(
            uniform_devices(&[1e12, 1e12, 3e12, 3e12]),
            (1e9, 1e-5),
            vec![],
        );
        let model = model(2, 64, 2);
        let cost = CostModel::new(&spec, &model);
        let classes = device_classes(&cost);
        let grids = structured_grids(
            &cost,
            &classes,
            Degrees {
                dp: 1,
                pp: 2,
                cp: 2,
            },
        );
        assert!(grids.iter().any(|g| g.cells == vec![0, 1, 2, 3]));
        assert!(grids.iter().any(|g| g.cells == vec![2, 3, 0, 1]));
        let unique: std::collections::HashSet<_> = grids.iter().collect();
        assert_eq!(unique.len(), grids.len());
    }
}
