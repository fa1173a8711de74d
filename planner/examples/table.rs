//! Prints the table of `examples/README.md`: every example cluster with every example model,
//! the plan found, its predicted step time, its speedup over each baseline and its peak
//! memory reduction against pure DP.
//!
//! Run with `cargo run -p megagraph-planner --example table`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use megagraph_planner::{Baseline, Plan, PlannerError, load_cluster, load_model, search};

/// The `.json` files of `examples/<kind>/`, sorted.
fn files(kind: &str) -> Result<Vec<PathBuf>, std::io::Error> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(kind);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
    paths.sort();
    Ok(paths)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// Seconds with a unit.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

/// The baseline's step over the plan's, marked when the baseline does not fit.
fn speedup(plan: &Plan, baseline: &Baseline) -> String {
    let ratio = baseline.step_seconds / plan.prediction.step_seconds;
    if baseline.fits {
        format!("{ratio:.2}×")
    } else {
        format!("{ratio:.2}× (OOM)")
    }
}

fn row(cluster: &Path, model: &Path) -> Result<String, PlannerError> {
    let (spec, gt) = (load_cluster(cluster)?, load_model(model)?);
    let name = format!("| {} | {} |", stem(cluster), stem(model));
    let start = Instant::now();
    let plan = match search(&spec, &gt) {
        Ok(plan) => plan,
        Err(e) => return Ok(format!("{name} {e} | | | | | | |")),
    };
    let searched = start.elapsed().as_secs_f64();
    let b = &plan.baselines;
    let dp_peak = b.pure_dp.peak_bytes.iter().copied().max().unwrap_or(0) as f64;
    let reduction = 100.0 * (1.0 - plan.prediction.max_peak_bytes() as f64 / dp_peak);
    Ok(format!(
        "{name} {} ×{} | {} | {} | {} | {} | {reduction:.1}% | {:.0} ms |",
        plan.config.degrees,
        plan.config.micro_batches,
        seconds(plan.prediction.step_seconds),
        speedup(&plan, &b.pure_dp),
        speedup(&plan, &b.uniform_pp),
        speedup(&plan, &b.uniform_cp),
        searched * 1e3
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "| cluster | model | plan (× micro-batches) | predicted step | vs pure DP | vs uniform PP | vs uniform CP | peak memory vs pure DP | search time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for cluster in files("clusters")? {
        for model in files("models")? {
            println!("{}", row(&cluster, &model)?);
        }
    }
    Ok(())
}
