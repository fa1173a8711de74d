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
    best_seconds_after(budget, || (), |()| work())
}

/// Like [`best_seconds_within`], but each run of `work` takes what an untimed `prepare` made
/// for it (so that only `work` is timed).
pub(crate) fn best_seconds_after<T>(
    budget: f64,
    mut prepare: impl FnMut() -> T,
    mut work: impl FnMut(T),
) -> f64 {
    work(prepare());
    let mut best = f64::INFINITY;
    let mut total = 0.0;
    for _ in 0..3 {
        let input = prepare();
        let start = Instant::now();
        work(input);
        let seconds = start.elapsed().as_secs_f64();
        best = best.min(seconds);
        total += seconds;
        if total >= budget {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::best_seconds_within;

    #[test]
    fn runs_a_warm_up_and_at_most_three_timed_runs() {
        let mut calls = 0;
        best_seconds_within(f64::INFINITY, || calls += 1);
        assert_eq!(calls, 4);
        let mut calls = 0;
        best_seconds_within(0.0, || calls += 1);
        assert_eq!(calls, 2, "a zero budget stops after one timed run");
    }
}
