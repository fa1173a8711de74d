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
        "--json",
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let report: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    assert_eq!(report["nodes"], 96);
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
