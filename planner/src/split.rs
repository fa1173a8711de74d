//! Splitting layers over pipeline stages.
//!
//! The step of a split is `factor · max_s time_s(n_s) + max_s post_s(n_s)` (1F1B with
//! `factor = m + pp − 1`), where stage `s` with `n_s` layers has micro-batch time `time_s`
//! and all-reduce-plus-optimizer time `post_s`; both grow with `n_s` and depend on nothing
//! else, and the embedding and head costs sit in the first and last stage's figures. The
//! least step is found exactly by a parametric search over the two bottlenecks: for bounds
//! `(τ, π)` each stage can take at most the layers whose figures stay within them, and the
//! bounds are feasible when those maxima sum to at least `L`. This is the min-max dynamic
//! programme over splits, solved by thresholds because stage costs are monotone in the
//! layer count; `exhaustive_search` checks it against every split.

use crate::stage::StageEval;

/// One stage's figures for `1..=n` layers (entry `n − 1`), made monotone in `n`.
pub(crate) struct StageTable {
    time: Vec<f64>,
    post: Vec<f64>,
    overflow: Vec<f64>,
    /// How many leading entries fit in memory.
    fitting: usize,
}

/// Layers per stage and the step (or overflow) they give.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Split {
    pub layers: Vec<usize>,
    pub value: f64,
}

impl StageTable {
    /// The table of a stage evaluated at 1, 2, … layers.
    pub fn new(evals: impl Iterator<Item = StageEval>) -> Self {
        let mut table = StageTable {
            time: Vec::new(),
            post: Vec::new(),
            overflow: Vec::new(),
            fitting: 0,
        };
        let rising = |v: &Vec<f64>, x: f64| v.last().map_or(x, |&l: &f64| l.max(x));
        for eval in evals {
            table.time.push(rising(&table.time, eval.time));
            table.post.push(rising(&table.post, eval.post));
            table.overflow.push(rising(&table.overflow, eval.overflow));
            if eval.fits && table.fitting + 1 == table.time.len() {
                table.fitting += 1;
            }
        }
        table
    }

    /// Most layers whose `values` stay within `bound`.
    fn within(values: &[f64], bound: f64) -> usize {
        values.partition_point(|&v| v <= bound)
    }
}

/// The split of `layers` layers with the least step among those that fit, if any does.
pub(crate) fn fastest_split(tables: &[StageTable], layers: usize, factor: f64) -> Option<Split> {
    let counts = |tau: f64, pi: f64| -> Vec<usize> {
        tables
            .iter()
            .map(|t| {
                t.fitting
                    .min(StageTable::within(&t.time, tau))
                    .min(StageTable::within(&t.post, pi))
            })
            .collect()
    };
    let feasible = |c: &[usize]| c.iter().all(|&n| n >= 1) && c.iter().sum::<usize>() >= layers;
    let candidates = |pick: fn(&StageTable) -> &Vec<f64>| {
        let mut values: Vec<f64> = tables
            .iter()
            .flat_map(|t| pick(t)[..t.fitting].iter().copied())
            .collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        values
    };
    let taus = candidates(|t| &t.time);
    let pis = candidates(|t| &t.post);
    let mut j = pis.len().checked_sub(1)?;
    let mut best: Option<(f64, f64, f64)> = None;
    for &tau in &taus {
        if !feasible(&counts(tau, pis[j])) {
            continue;
        }
        // The least feasible π only falls as τ grows.
        while j > 0 && feasible(&counts(tau, pis[j - 1])) {
            j -= 1;
        }
        let value = factor * tau + pis[j];
        if best.is_none_or(|(v, _, _)| value < v) {
            best = Some((value, tau, pis[j]));
        }
    }
    let (_, tau, pi) = best?;
    let split = trim(counts(tau, pi), layers);
    let (time, post) = split
        .iter()
        .zip(tables)
        .fold((0.0, 0.0), |(t, p), (&n, table)| {
            (
                f64::max(t, table.time[n - 1]),
                f64::max(p, table.post[n - 1]),
            )
        });
    Some(Split {
        value: factor * time + post,
        layers: split,
    })
}

/// The split of `layers` layers with the least worst memory-to-capacity ratio.
pub(crate) fn least_overflow_split(tables: &[StageTable], layers: usize) -> Split {
    let counts = |omega: f64| -> Vec<usize> {
        tables
            .iter()
            .map(|t| StageTable::within(&t.overflow, omega))
            .collect()
    };
    let feasible = |c: &[usize]| c.iter().all(|&n| n >= 1) && c.iter().sum::<usize>() >= layers;
    let mut omegas: Vec<f64> = tables
        .iter()
        .flat_map(|t| t.overflow.iter().copied())
        .collect();
    omegas.sort_by(f64::total_cmp);
    omegas.dedup();
    let least = omegas.partition_point(|&omega| !feasible(&counts(omega)));
    let omega = omegas[least.min(omegas.len() - 1)];
    Split {
        layers: trim(counts(omega), layers),
        value: omega,
    }
}

/// Lowers the counts, last stage first, until they sum to `layers`, keeping each at least 1.
fn trim(mut counts: Vec<usize>, layers: usize) -> Vec<usize> {
    let mut excess = counts.iter().sum::<usize>() - layers;
    for n in counts.iter_mut().rev() {
        let take = excess.min(*n - 1);
        *n -= take;
        excess -= take;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(time: &[f64], post: &[f64], fitting: usize) -> StageTable {
        StageTable::new(
            time.iter()
                .zip(post)
                .enumerate()
                .map(|(i, (&t, &p))| StageEval {
                    time: t,
                    post: p,
                    fits: i < fitting,
                    overflow: t,
                }),
        )
    }

    #[test]
    fn balances_the_bottleneck() -> Result<(), String> {
        // Stage 0 costs 3 per layer, stage 1 costs 1 per layer: 4 layers → 1 + 3.
        let tables = [
            table(&[3.0, 6.0, 9.0], &[0.0; 3], 3),
            table(&[1.0, 2.0, 3.0], &[0.0; 3], 3),
        ];
        let split = fastest_split(&tables, 4, 1.0).ok_or("a split fits")?;
        assert_eq!(split.layers, vec![1, 3]);
        assert_eq!(split.value, 3.0);
        Ok(())
    }

    #[test]
    fn weighs_both_bottlenecks() -> Result<(), String> {
        // With factor 1, [2, 2] gives 2 + 10 = 12, [1, 3] gives 3 + 1 = 4.
        let tables = [
            table(&[1.0, 2.0, 3.0], &[1.0, 10.0, 10.0], 3),
            table(&[1.0, 2.0, 3.0], &[0.0, 0.0, 0.0], 3),
        ];
        let split = fastest_split(&tables, 4, 1.0).ok_or("a split fits")?;
        assert_eq!(split.layers, vec![1, 3]);
        assert_eq!(split.value, 4.0);
        Ok(())
    }

    #[test]
    fn respects_memory_and_reports_overflow() {
        let tables = [
            table(&[1.0, 2.0, 3.0], &[0.0; 3], 1),
            table(&[1.0, 2.0, 3.0], &[0.0; 3], 2),
        ];
        assert_eq!(fastest_split(&tables, 4, 1.0), None);
        let overflow = least_overflow_split(&tables, 4);
        assert_eq!(overflow.layers, vec![2, 2]);
        assert_eq!(overflow.value, 2.0);
        assert_eq!(
            fastest_split(&tables, 3, 1.0).map(|s| s.layers),
            Some(vec![1, 2])
        );
    }
}
