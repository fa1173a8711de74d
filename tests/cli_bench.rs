//! `megagraph bench attention`: the JSON contract of DESIGN.md and its input checks.

use crate::cli_errors::assert_one_line_error;
use crate::common::{TestResult, have_adapter, megagraph};

#[test]
fn bench_attention_reports_the_contract() -> TestResult {
    if !have_adapter("bench_attention_reports_the_contract")? {
        return Ok(());
    }
    let run = megagraph(&[
        "bench",
        "attention",
        "--nodes",
        "96",
        "--heads",
        "2",
        "--head-dim",
        "16",
        "--variants",
        "--json",
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let report: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    assert_eq!(report["nodes"], 96);
    // Every kernel shape timed, the register-blocked one first, and the chosen ones among them.
    let variants = report["kernel_variants"]
        .as_array()
        .ok_or_else(|| format!("no kernel_variants: {report}"))?;
    assert!(variants.len() > 1, "{report}");
    assert_eq!(variants[0]["kernel"], "registers");
    for variant in variants {
        for key in ["forward_ms", "forward_backward_ms"] {
            assert!(
                variant[key].as_f64().is_some_and(|ms| ms > 0.0),
                "{variant}"
            );
        }
    }
    for chosen in report["chosen_kernels"]
        .as_array()
        .ok_or("no chosen_kernels")?
    {
        assert!(
            variants.iter().any(|v| v["kernel"] == *chosen),
            "{chosen} is none of {variants:?}"
        );
    }
    for key in [
        "fused_ms",
        "reference_ms",
        "fused_peak_bytes",
        "reference_peak_bytes",
        "fused_gflops",
        "matmul_peak_gflops",
    ] {
        let value = report[key]
            .as_f64()
            .ok_or_else(|| format!("{key} missing or not a number: {report}"))?;
        assert!(value > 0.0, "{key} = {value}");
    }
    Ok(())
}

#[test]
fn bench_attention_rejects_a_head_dim_the_kernel_cannot_read() -> TestResult {
    let run = megagraph(&["bench", "attention", "--nodes", "64", "--head-dim", "6"])?;
    assert_one_line_error(&run, Some(1), &["--head-dim (6)", "multiple of 4"]);
    let run = megagraph(&["bench", "attention", "--nodes", "64", "--head-dim", "72"])?;
    assert_one_line_error(&run, Some(1), &["--head-dim (72)", "up to 68"]);
    Ok(())
}

#[test]
fn bench_attention_hops_reports_pairs_beside_the_dense_kernels_and_the_reference() -> TestResult {
    if !have_adapter(
        "bench_attention_hops_reports_pairs_beside_the_dense_kernels_and_the_reference",
    )? {
        return Ok(());
    }
    let pairs =
        std::env::temp_dir().join(format!("megagraph-bench-pairs-{}.npz", std::process::id()));
    let pairs_arg = pairs.to_str().ok_or("temp path is not UTF-8")?;
    let run = megagraph(&[
        "bench",
        "attention",
        "--scope",
        "hops:1",
        "--nodes",
        "256",
        "--heads",
        "2",
        "--head-dim",
        "8",
        "--export-pairs",
        pairs_arg,
        "--variants",
        "--json",
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let report: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    assert_eq!(report["scope"], "hops:1:256");
    // 256 × 2 × 8 floats fit any binding: all heads in one launch.
    assert_eq!(report["heads_per_block"], 2);
    let pairs_count = report["pairs"].as_u64().ok_or("pairs missing")?;
    // Every node pairs with itself at least; R-MAT's hubs give more.
    assert!(pairs_count > 256, "{report}");
    for key in ["hops_ms", "dense_ms", "reference_ms", "hops_peak_bytes"] {
        let value = report[key]
            .as_f64()
            .ok_or_else(|| format!("{key} missing or not a number: {report}"))?;
        assert!(value > 0.0, "{key} = {value}");
    }
    // --variants: one invocation per row (the default, which ran) and teams of several.
    assert_eq!(
        report["chosen_teams"],
        serde_json::json!(["team:1", "team:1"])
    );
    let teams = report["team_variants"]
        .as_array()
        .ok_or_else(|| format!("no team_variants: {report}"))?;
    assert_eq!(teams[0]["team"], "team:1", "{report}");
    assert!(teams.len() >= 3, "{report}");
    for team in teams {
        assert!(
            team["forward_backward_ms"]
                .as_f64()
                .is_some_and(|ms| ms > 0.0),
            "{team}"
        );
    }
    // The exported pairs are a zip of offsets, keys and buckets.
    let file = std::fs::File::open(&pairs)?;
    let names: Vec<String> = zip::ZipArchive::new(file)?
        .file_names()
        .map(String::from)
        .collect();
    std::fs::remove_file(&pairs)?;
    for name in ["offsets.npy", "keys.npy", "buckets.npy"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    Ok(())
}
