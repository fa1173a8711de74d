//! The CPU-side parts of `scripts/gpu-check.sh` that run without a GPU: the script parses, and
//! `scripts/gpu-check-summary.py` folds the steps' results into the figures the README's GPU
//! table takes (ratios against the peer, the fraction of the FP32 peak, each plan against its
//! baseline, the failed steps).

use std::process::Command;

use serde_json::{Value, json};

use crate::common::{TestResult, workspace_root};

#[test]
fn the_gpu_check_script_parses() -> TestResult {
    let status = Command::new("bash")
        .arg("-n")
        .arg(workspace_root().join("scripts/gpu-check.sh"))
        .status()?;
    assert!(status.success(), "bash -n scripts/gpu-check.sh: {status}");
    Ok(())
}

/// One line of `results.jsonl`.
fn step(name: &str, result: Value) -> String {
    json!({ "step": name, "seconds": 1, "result": result }).to_string()
}

fn losses(values: &[f64]) -> Value {
    json!({ "step_losses": values })
}

#[test]
fn the_gpu_check_summary_folds_every_figure() -> TestResult {
    let dir = tempfile::tempdir()?;
    let results = dir.path().join("results.jsonl");
    let ours = json!({
        "nodes": 4096, "heads": 4, "head_dim": 32, "fused_ms": 100.0, "fused_peak_bytes": 1 << 20,
        "chosen_kernels": ["tiled:4:2:64", "tiled:4:1:64"],
        "kernel_variants": [
            {"kernel": "registers", "forward_ms": 50.0, "forward_backward_ms": 300.0},
            {"kernel": "tiled:4:2:64", "forward_ms": 20.0, "forward_backward_ms": 100.0},
        ],
    });
    let peer = json!({"peer": "torch", "cases": [
        {"nodes": 4096, "heads": 4, "head_dim": 32, "seconds": 0.25, "peak_bytes": 1 << 30},
        {"nodes": 65536, "heads": 4, "head_dim": 32, "skipped": "out of memory: CUDA"},
    ]});
    let one = [1.5, 1.25, 1.0];
    let lines = [
        step("dense-4096", ours),
        step("dense-65536", json!({"failed": "exit 124 after 150 s"})),
        step("peer-dense", peer),
        step("plan-one-device", losses(&one)),
        step("plan-dp1-pp1-cp4", losses(&[1.5, 1.25, 1.00001])),
        step("plan-dp2-pp1-cp1", losses(&[1.4, 1.2])),
        step("plan-dp1-pp2-cp2", losses(&[1.4, 1.3])),
        step(
            "peer-self-test",
            json!({"output": "self-test ok (cuda, backend flash)"}),
        ),
    ];
    std::fs::write(&results, lines.join("\n") + "\n")?;
    let out = Command::new("python3")
        .arg(workspace_root().join("scripts/gpu-check-summary.py"))
        .arg(&results)
        .arg("50")
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout)?;

    let dense = &summary["dense"][0];
    assert_eq!(dense["nodes"], 4096);
    let close = |value: &Value, want: f64| {
        let got = value.as_f64().unwrap_or(f64::NAN);
        assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
    };
    close(&dense["peer_over_ours"], 2.5);
    // 14 · 4 · 4096² · 32 FLOP in 0.1 s, against a 50 TFLOP/s peak.
    let tflops = 14.0 * 4.0 * 4096f64.powi(2) * 32.0 / 0.1 / 1e12;
    close(&dense["ours_tflops"], tflops);
    close(&dense["ours_fraction_of_fp32_peak"], tflops / 50.0);
    close(&dense["registers_over_best_tiled"], 3.0);
    assert_eq!(dense["best_tiled"], "tiled:4:2:64");
    let skipped = &summary["dense"][1];
    assert_eq!(skipped["nodes"], 65536);
    assert!(skipped["peer"]["skipped"].is_string(), "{skipped}");

    let plans = summary["equivalence"]["plans"]
        .as_array()
        .ok_or("plans is a list")?;
    let plan = |degrees: &str| {
        plans
            .iter()
            .find(|p| p["degrees"] == degrees)
            .unwrap_or_else(|| panic!("{degrees} in {plans:?}"))
    };
    assert_eq!(plan("dp1-pp1-cp4")["baseline"], "one-device");
    assert_eq!(plan("dp1-pp1-cp4")["matches_baseline"], true);
    assert_eq!(plan("dp1-pp2-cp2")["baseline"], "dp2-pp1-cp1");
    assert_eq!(plan("dp1-pp2-cp2")["matches_baseline"], false);
    assert!(
        plans.iter().all(|p| p["degrees"] != "dp2-pp1-cp1"),
        "a baseline is not held against itself"
    );
    assert_eq!(summary["failed_steps"], json!(["dense-65536"]));
    Ok(())
}
