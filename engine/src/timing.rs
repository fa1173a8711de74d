//! Wall-clock timing for benchmarks and device profiles.

use std::time::Instant;

/// Seconds of the fastest of three runs of `work`, after one warm-up run (kernel compilation
/// and autotuning happen there).
pub(crate) fn best_seconds(mut work: impl FnMut()) -> f64 {
    work();
    (0..3)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}
