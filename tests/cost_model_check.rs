//! `scripts/cost-model-check.sh --json` without training: a stand-in for the binary (through
//! `MEGAGRAPH=`) answers `profile` and `train` as the real one does, and the script must fold
//! every plan's devices into the maxima of its last JSON line.

use std::process::Command;

use serde_json::{Value, json};

use crate::common::{TestResult, workspace_root};

/// A `megagraph` stand-in: `profile` writes an empty cluster to `--out`; `train` prints one
/// report whose devices' figures grow with the plan's dp degree.
const FAKE_BINARY: &str = r#"#!/usr/bin/env bash
case $1 in
profile)
    while [ $# -gt 0 ]; do [ "$1" = --out ] && echo '{}' >"$2"; shift; done ;;
train)
    degrees=""
    while [ $# -gt 0 ]; do [ "$1" = --degrees ] && degrees=$2; shift; done
    dp=${degrees#dp}; dp=${dp%%-*}
    echo "training $degrees" >&2
    echo "progress line"
    printf '{"devices": [%s, %s]}\n' \
        "{\"step_seconds\": $dp.5, \"predicted_step_seconds\": 1.0, \"peak_in_use_bytes\": ${dp}000, \"peak_bytes\": 4096, \"predicted_peak_bytes\": 3000}" \
        "{\"step_seconds\": 0.5, \"predicted_step_seconds\": 2.0, \"peak_in_use_bytes\": 10, \"peak_bytes\": 4096, \"predicted_peak_bytes\": 5000}" ;;
esac
"#;

#[test]
fn the_cost_model_check_reports_each_plans_maxima_as_json() -> TestResult {
    let dir = tempfile::tempdir()?;
    let binary = dir.path().join("megagraph");
    std::fs::write(&binary, FAKE_BINARY)?;
    Command::new("chmod").arg("+x").arg(&binary).status()?;
    let out = Command::new("bash")
        .arg(workspace_root().join("scripts/cost-model-check.sh"))
        .arg("--json")
        .env("MEGAGRAPH", &binary)
        .env("OUT", dir.path().join("out"))
        .env("PLANS", "dp1-pp1-cp2 dp2-pp1-cp1")
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("| dp2-pp1-cp1 |"), "the table: {stdout}");
    let last: Value = serde_json::from_str(stdout.lines().last().ok_or("no output")?)?;
    let plan = |name: &str, dp: u64| {
        json!({
            "plan": name,
            "measured_step_seconds": dp as f64 + 0.5,
            "predicted_step_seconds": 2.0,
            "measured_peak_in_use_bytes": dp * 1000,
            "predicted_peak_bytes": 5000,
        })
    };
    assert_eq!(
        last,
        json!({"plans": [plan("dp1-pp1-cp2", 1), plan("dp2-pp1-cp1", 2)]})
    );
    let refused = Command::new("bash")
        .arg(workspace_root().join("scripts/cost-model-check.sh"))
        .arg("--yaml")
        .output()?;
    assert_eq!(refused.status.code(), Some(2), "an unknown argument");
    Ok(())
}
