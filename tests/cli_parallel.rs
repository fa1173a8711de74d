//! `megagraph train --plan` and `--devices`: a plan run end to end with per-device figures
//! beside the plan's predictions, and one-line errors before any training for plans that
//! cannot run.

use megagraph_engine::graph::SyntheticSpec;

use crate::cli_errors::assert_one_line_error;
use crate::common::{
    TestError, TestResult, assert_losses_close, have_adapter, megagraph, step_losses,
    workspace_root,
};

/// The flags of a small run whose model the plans below are made for.
pub(crate) const RUN: [&str; 12] = [
    "--synthetic",
    "sbm:240:3",
    "--seq-len",
    "60",
    "--layers",
    "2",
    "--hidden",
    "16",
    "--heads",
    "2",
    "--seed",
    "1",
];

/// Writes a cluster of `devices` equal devices of `memory` bytes and the model of [`RUN`],
/// and plans it; returns the plan's path.
fn plan_for(dir: &std::path::Path, devices: usize, memory: f64) -> Result<String, TestError> {
    plan_cluster(dir, &vec![0; devices], memory, None)
}

/// Writes a cluster of equal devices of `memory` bytes, device `i` driven by MPI process
/// `processes[i]`, and the model of [`RUN`] with a batch of two sequences per step, and plans it
/// (for `degrees`, or the best plan);
/// returns the plan's path. Each `degrees` gets its own files in `dir`.
pub(crate) fn plan_cluster(
    dir: &std::path::Path,
    processes: &[usize],
    memory: f64,
    degrees: Option<&str>,
) -> Result<String, TestError> {
    let graph = "sbm:240:3".parse::<SyntheticSpec>()?.generate(1)?;
    let devices: Vec<_> = processes
        .iter()
        .map(|p| serde_json::json!({"name": "lavapipe", "memory_bytes": memory, "flops": 3e9, "mem_bandwidth": 2.5e9, "process": p}))
        .collect();
    let cluster = serde_json::json!({
        "schema_version": 1,
        "devices": devices,
        "link": {"bandwidth": 8e8, "latency": 8e-3},
    });
    let model = serde_json::json!({
        "schema_version": 1, "layers": 2, "hidden": 16, "heads": 2, "ffn_hidden": 32,
        "features": graph.feature_dim(), "classes": graph.num_classes(), "seq_len": 60,
        "num_sequences": 2, "max_distance": 5, "bytes_per_element": 4,
    });
    let name = degrees.unwrap_or("best");
    let cluster_path = dir.join(format!("cluster-{name}.json"));
    let model_path = dir.join("model.json");
    let plan_path = dir.join(format!("plan-{name}.json"));
    std::fs::write(&cluster_path, cluster.to_string())?;
    std::fs::write(&model_path, model.to_string())?;
    let path = |p: &std::path::Path| {
        p.to_str()
            .map(str::to_string)
            .ok_or("temp path is not UTF-8")
    };
    let (cluster_arg, model_arg, plan_arg) =
        (path(&cluster_path)?, path(&model_path)?, path(&plan_path)?);
    let mut args = vec![
        "plan",
        "--cluster",
        &cluster_arg,
        "--model",
        &model_arg,
        "--out",
        &plan_arg,
        "--json",
    ];
    if let Some(degrees) = degrees {
        args.extend(["--degrees", degrees]);
    }
    let run = megagraph(&args)?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    Ok(plan_arg)
}

fn train(extra: &[&str]) -> Result<crate::common::Run, TestError> {
    let mut args = vec!["train"];
    args.extend(RUN);
    args.extend(extra);
    megagraph(&args)
}

#[test]
fn a_plan_runs_on_logical_devices_and_reports_each_device() -> TestResult {
    if !have_adapter("a_plan_runs_on_logical_devices_and_reports_each_device")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let plan = plan_for(dir.path(), 2, 8e9)?;
    let run = train(&["--plan", &plan, "--devices", "2", "--epochs", "2", "--json"])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let last = run.stdout.lines().last().ok_or("no output")?;
    let report: serde_json::Value = serde_json::from_str(last)?;
    let devices = report["devices"].as_array().ok_or("devices is a list")?;
    assert!(!devices.is_empty(), "{report}");
    for device in devices {
        for key in [
            "step_seconds",
            "peak_bytes",
            "predicted_step_seconds",
            "predicted_peak_bytes",
        ] {
            assert!(
                device[key].as_f64().is_some_and(|v| v > 0.0),
                "{key} in {device}"
            );
        }
    }
    assert_eq!(report["epochs"], 2, "{report}");
    assert!(
        report["plan"].as_str().is_some_and(|p| p.starts_with("dp")),
        "{report}"
    );
    Ok(())
}

#[test]
fn a_plan_for_more_devices_than_present_is_refused() -> TestResult {
    if !have_adapter("a_plan_for_more_devices_than_present_is_refused")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let plan = plan_for(dir.path(), 3, 8e9)?;
    let run = train(&["--plan", &plan, "--devices", "2"])?;
    assert_one_line_error(&run, Some(1), &["plan is for 3 devices but only 2"]);
    Ok(())
}

#[test]
fn a_plan_for_another_model_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let plan = plan_for(dir.path(), 2, 8e9)?;
    let mut args: Vec<&str> = vec!["train"];
    args.extend(RUN);
    let heads = args
        .iter()
        .position(|&a| a == "--heads")
        .ok_or("RUN sets --heads")?;
    args[heads + 1] = "4";
    args.extend(["--plan", &plan, "--devices", "2"]);
    let run = megagraph(&args)?;
    assert_one_line_error(&run, Some(1), &["heads 2", "heads 4"]);
    let cora_plan = dir.path().join("cora-plan.json");
    let cluster = workspace_root().join("examples/clusters/desk-rtx4090-rx7900xtx.json");
    let model = workspace_root().join("examples/models/cora-gt.json");
    let planned = megagraph(&[
        "plan",
        "--cluster",
        cluster.to_str().ok_or("path")?,
        "--model",
        model.to_str().ok_or("path")?,
        "--out",
        cora_plan.to_str().ok_or("path")?,
    ])?;
    assert_eq!(planned.code, Some(0), "{}", planned.describe());
    let run = train(&["--plan", cora_plan.to_str().ok_or("path")?])?;
    assert_one_line_error(&run, Some(1), &["layers 4", "layers 2"]);
    Ok(())
}

#[test]
fn a_plan_that_does_not_fit_is_refused() -> TestResult {
    // The planner writes no plan that does not fit, so shrink a good plan's device memory
    // (and its `fits`, which the loader checks against the devices' figures).
    let dir = tempfile::tempdir()?;
    let plan = plan_for(dir.path(), 2, 8e9)?;
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plan)?)?;
    for device in json["devices"].as_array_mut().ok_or("devices")? {
        device["memory_bytes"] = serde_json::json!(1e5);
    }
    json["fits"] = serde_json::json!(false);
    std::fs::write(&plan, json.to_string())?;
    let run = train(&["--plan", &plan, "--devices", "2"])?;
    assert_one_line_error(&run, Some(1), &["does not fit", "device"]);
    Ok(())
}

#[test]
fn devices_without_a_plan_profile_and_plan_first() -> TestResult {
    if !have_adapter("devices_without_a_plan_profile_and_plan_first")? {
        return Ok(());
    }
    let run = train(&["--devices", "2", "--epochs", "1", "--json"])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stderr.contains("planned dp"), "{}", run.describe());
    let report: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    let devices = report["devices"].as_array().ok_or("devices is a list")?;
    assert!(
        devices
            .iter()
            .all(|d| d["predicted_step_seconds"].as_f64().is_some()),
        "{report}"
    );
    Ok(())
}

#[test]
fn a_cluster_spec_alone_is_planned_on() -> TestResult {
    // Devices too small for the model: planning on the spec refuses it, before any device
    // work (so this needs no adapter), which shows `--cluster` needs no `--devices`.
    let dir = tempfile::tempdir()?;
    plan_cluster(dir.path(), &[0, 0], 8e9, None)?;
    let path = dir.path().join("cluster-best.json");
    let mut cluster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    for device in cluster["devices"].as_array_mut().ok_or("devices")? {
        device["memory_bytes"] = serde_json::json!(1e5);
    }
    std::fs::write(&path, cluster.to_string())?;
    let run = train(&["--cluster", path.to_str().ok_or("temp path is not UTF-8")?])?;
    assert_one_line_error(&run, Some(1), &["no configuration fits"]);
    Ok(())
}

#[test]
fn one_batch_trains_the_same_steps_on_one_device_and_under_dp2() -> TestResult {
    if !have_adapter("one_batch_trains_the_same_steps_on_one_device_and_under_dp2")? {
        return Ok(());
    }
    // Two sequences per step: one device accumulates both, dp2 gives one to each replica
    // (--degrees dp2 defaults the batch to 2). Dropout stays on: its masks follow the rows.
    let steps = ["--steps", "3", "--json"];
    let one = train(&[&["--batch", "2"], &steps[..]].concat())?;
    assert_eq!(one.code, Some(0), "{}", one.describe());
    let dp2 = train(&[&["--devices", "2", "--degrees", "dp2-pp1-cp1"], &steps[..]].concat())?;
    assert_eq!(dp2.code, Some(0), "{}", dp2.describe());
    assert!(dp2.stderr.contains("planned dp2"), "{}", dp2.describe());
    let want = step_losses(&one.stdout)?;
    assert_eq!(want.len(), 3, "{}", one.describe());
    assert_losses_close(
        &step_losses(&dp2.stdout)?,
        &want,
        1e-4,
        "dp2 against one device",
    );
    Ok(())
}

#[test]
fn a_batch_the_run_cannot_take_is_refused() -> TestResult {
    // Refused before any device work: no adapter needed.
    let dir = tempfile::tempdir()?;
    let plan = plan_cluster(dir.path(), &[0, 0], 8e9, Some("dp2-pp1-cp1"))?;
    let cluster = dir.path().join("cluster-dp2-pp1-cp1.json");
    let cluster = cluster.to_str().ok_or("temp path is not UTF-8")?;
    let cases: [(&[&str], &[&str]); 5] = [
        (&["--batch", "0"], &["--batch must be at least 1"]),
        (
            &["--batch", "5"],
            &["batch of 5 sequences", "4 sequence(s)"],
        ),
        (
            &["--degrees", "dp8-pp1-cp1"],
            &["batch of 8 sequences", "4 sequence(s)"],
        ),
        (
            &["--plan", &plan, "--devices", "2", "--batch", "1"],
            &["the plan runs 2 sequence(s) per step", "--batch asks 1"],
        ),
        (
            &[
                "--cluster",
                cluster,
                "--degrees",
                "dp2-pp1-cp1",
                "--batch",
                "3",
            ],
            &["dp dividing the 3 sequences of a step"],
        ),
    ];
    for (args, needles) in cases {
        assert_one_line_error(&train(args)?, Some(1), needles);
    }
    Ok(())
}
