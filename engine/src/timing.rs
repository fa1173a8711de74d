//! Wall-clock timing for benchmarks and device profiles.

use std::time::Instant;

/// Seconds of the fastest of three runs of `work`, after one warm-up run (kernel compilation
/// and autotuning happen there).
pub(crate) fn best_seconds(work: impl FnMut()) -> f64 {
    best_seconds_within(f64::INFINITY, work)
}

/// Like [`best_seconds`], but stops after the first measured run that brings the measured
/// total to `budget` seconds or more (so a slow case costs a warm-up and one or two runs).
pub(crate) fn best_seconds_within(budget: f64, mut work: impl FnMut()) -> f64 {
    timed_runs(budget, 3, |_| false, || (), |()| work())
}

/// The median of `values` (0 when empty).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Relative gap within which [`agreeing_best_seconds_after`] takes its two fastest runs to
/// agree.
const AGREEMENT: f64 = 0.05;

/// Most timed runs of [`agreeing_best_seconds_after`].
const MOST_AGREEING_RUNS: usize = 7;

/// Like [`best_seconds_within`], but each run of `work` takes what an untimed `prepare` made
/// for it (only `work` is timed), and runs go on until the two fastest agree within 5% (up to
/// seven runs, or until the measured total reaches `budget`): a figure is kept once a second
/// run confirms it, unless the budget runs out first.
pub(crate) fn agreeing_best_seconds_after<T>(
    budget: f64,
    prepare: impl FnMut() -> T,
    work: impl FnMut(T),
) -> f64 {
    timed_runs(budget, MOST_AGREEING_RUNS, two_fastest_agree, prepare, work)
}

/// Whether the two fastest of `runs` (sorted fastest first) are within [`AGREEMENT`].
fn two_fastest_agree(runs: &[f64]) -> bool {
    match runs {
        [fastest, second, ..] => second - fastest <= AGREEMENT * fastest,
        _ => false,
    }
}

/// The fastest of up to `most` timed runs of `work` (after an untimed warm-up run), each on
/// what an untimed `prepare` made; stops early once the measured total reaches `budget` or
/// `enough` holds of the run times so far, sorted fastest first.
fn timed_runs<T>(
    budget: f64,
    most: usize,
    enough: impl Fn(&[f64]) -> bool,
    mut prepare: impl FnMut() -> T,
    mut work: impl FnMut(T),
) -> f64 {
    work(prepare());
    let mut runs: Vec<f64> = Vec::with_capacity(most);
    for _ in 0..most {
        let input = prepare();
        let start = Instant::now();
        work(input);
        runs.push(start.elapsed().as_secs_f64());
        runs.sort_by(f64::total_cmp);
        if runs.iter().sum::<f64>() >= budget || enough(&runs) {
            break;
        }
    }
    runs[0]
}

/// Time spent in transfers that may overlap a device's compute: a pipeline stage's sends, or
/// the row exchanges of context parallelism.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TransferTime {
    /// Seconds from each transfer's start (its hand-over, or its copy's start) to its end,
    /// summed: the wait for the device to finish what produced it and copy it, and the
    /// messages.
    pub seconds: f64,
    /// Seconds the worker waited for transfers to finish, summed: what compute did not hide.
    pub exposed_seconds: f64,
}

impl std::ops::AddAssign for TransferTime {
    fn add_assign(&mut self, other: Self) {
        self.seconds += other.seconds;
        self.exposed_seconds += other.exposed_seconds;
    }
}

impl TransferTime {
    /// Seconds of transfer hidden behind the worker's compute.
    pub fn hidden_seconds(&self) -> f64 {
        (self.seconds - self.exposed_seconds).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use std::{cell::Cell, thread::sleep, time::Duration};

    use super::{
        agreeing_best_seconds_after, best_seconds_within, median, timed_runs, two_fastest_agree,
    };

    #[test]
    fn runs_a_warm_up_and_at_most_three_timed_runs() {
        let mut calls = 0;
        best_seconds_within(f64::INFINITY, || calls += 1);
        assert_eq!(calls, 4);
        let mut calls = 0;
        best_seconds_within(0.0, || calls += 1);
        assert_eq!(calls, 2, "a zero budget stops after one timed run");
    }

    #[test]
    fn two_runs_agree_within_five_percent() {
        assert!(two_fastest_agree(&[1.0, 1.04, 3.0]));
        assert!(!two_fastest_agree(&[1.0, 1.1]));
        assert!(!two_fastest_agree(&[1.0]), "one run agrees with nothing");
    }

    #[test]
    fn timed_runs_stop_once_enough_holds() {
        let calls = Cell::new(0);
        let count = |()| calls.set(calls.get() + 1);
        timed_runs(f64::INFINITY, 7, |runs| runs.len() == 2, || (), count);
        assert_eq!(calls.get(), 3, "a warm-up and the two runs it took");
    }

    #[test]
    fn disagreeing_runs_go_on_to_the_most_or_the_budget() {
        // The n-th call sleeps n × 10 ms: no two runs agree within 5%.
        let calls = Cell::new(0);
        let work = |()| {
            sleep(Duration::from_millis(10 * calls.get()));
            calls.set(calls.get() + 1);
        };
        let seconds = agreeing_best_seconds_after(f64::INFINITY, || (), work);
        assert_eq!(calls.get(), 8, "a warm-up and seven runs");
        assert!(
            (0.01..0.02).contains(&seconds),
            "the fastest run is the 10 ms one: {seconds}"
        );
        calls.set(2);
        agreeing_best_seconds_after(0.05, || (), work);
        assert_eq!(
            calls.get(),
            5,
            "runs of 30 and 40 ms reach the 50 ms budget"
        );
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [9.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 30.0]), 3.0);
        assert_eq!(median(&mut []), 0.0);
    }
}
