//! `scripts/cost-model-check.sh --json` without training: a stand-in for the binary (through
//! `MEGAGRAPH=`) answers `profile` and `train` as the real one does, and the script must fold
//! every plan's devices into their maxima and its rounds into their medians in its last JSON
//! line, each round starting its plans one further along.

use std::process::Command;

use serde_json::{Value, json};

use crate::common::{TestResult, workspace_root};

/// A `megagraph` stand-in: `profile` counts a round (in `rounds` beside it) and writes an empty
/// cluster to `--out`; `train` logs "round plan" to `order` beside it and prints one report
/// whose devices' figures grow with the plan's dp degree, the slowest step `dp.9`, `dp.5` and
/// `dp.3` seconds in rounds 1, 2 and 3 (median `dp.5`).
const FAKE_BINARY: &str = r#"#!/usr/bin/env bash
here=$(dirname "$0")
case $1 in
profile)
    echo $(($(cat "$here/rounds" 2>/dev/null || echo 0) + 1)) >"$here/rounds"
    while [ $# -gt 0 ]; do [ "$1" = --out ] && echo '{}' >"$2"; shift; done ;;
train)
    round=$(cat "$here/rounds")
    fractions=(_ 9 5 3)
    degrees=""
    while [ $# -gt 0 ]; do [ "$1" = --degrees ] && degrees=$2; shift; done
    dp=${degrees#dp}; dp=${dp%%-*}
    echo "$round $degrees" >>"$here/order"
    echo "training $degrees" >&2
    echo "progress line"
    printf '{"devices": [%s, %s]}\n' \
        "{\"step_seconds\": $dp.${fractions[$round]}, \"predicted_step_seconds\": 1.0, \"peak_in_use_bytes\": ${dp}000, \"peak_bytes\": 4096, \"predicted_peak_bytes\": 3000}" \
        "{\"step_seconds\": 0.5, \"predicted_step_seconds\": 2.0, \"peak_in_use_bytes\": 10, \"peak_bytes\": 4096, \"predicted_peak_bytes\": 5000}" ;;
esac
"#;

#[test]
fn the_cost_model_check_reports_each_plans_maxima_and_round_medians_as_json() -> TestResult {
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
    let order = std::fs::read_to_string(dir.path().join("order"))?;
    let expected = "1 dp1-pp1-cp2\n1 dp2-pp1-cp1\n2 dp2-pp1-cp1\n2 dp1-pp1-cp2\n\
                    3 dp1-pp1-cp2\n3 dp2-pp1-cp1\n";
    assert_eq!(
        order, expected,
        "three rounds, each starting one plan further"
    );
    assert!(
        stdout.contains("| 0.65, 0.75, 0.95 |"),
        "dp1-pp1-cp2's rounds, sorted: {stdout}"
    );
    let refused = Command::new("bash")
        .arg(workspace_root().join("scripts/cost-model-check.sh"))
        .arg("--yaml")
        .output()?;
    assert_eq!(refused.status.code(), Some(2), "an unknown argument");
    Ok(())
}
