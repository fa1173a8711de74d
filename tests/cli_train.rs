//! `megagraph train` and `megagraph devices` end to end: the JSON contract of
//! DESIGN.md's "Command-line contract", and reproducibility with a fixed seed.

use serde_json::Value;

use crate::common::{Run, TestError, TestResult, have_adapter, megagraph, megagraph_with_env};

/// A tiny wgpu training run: 200 nodes, one layer of width 16, three epochs.
pub(crate) const TINY_TRAIN: &[&str] = &[
    "train",
    "--synthetic",
    "sbm:200:3",
    "--epochs",
    "3",
    "--hidden",
    "16",
    "--heads",
    "2",
    "--layers",
    "1",
    "--seed",
    "7",
    "--json",
];

/// Parses the last line of standard output as one JSON object.
pub(crate) fn last_json_line(run: &Run) -> Result<serde_json::Map<String, Value>, TestError> {
    let last = run
        .stdout
        .lines()
        .last()
        .ok_or_else(|| format!("no output on stdout:\n{}", run.describe()))?;
    match serde_json::from_str(last)? {
        Value::Object(map) => Ok(map),
        other => Err(format!("last stdout line is not a JSON object: {other}").into()),
    }
}

/// Asserts the run exited 0.
fn assert_success(run: &Run) {
    assert_eq!(run.code, Some(0), "expected success:\n{}", run.describe());
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
}

/// Fetches `key` as a number.
fn number(report: &serde_json::Map<String, Value>, key: &str) -> Result<f64, TestError> {
    report
        .get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("report lacks numeric {key:?}: {report:?}").into())
}

/// Runs the same tiny training twice with the same seed (concurrently, two processes): both
/// succeed, the last stdout line is the JSON report with the contract's keys, and the two
/// runs report the same final loss and accuracies (fixed seed ⇒ same result on one device).
#[test]
fn train_json_report_is_complete_and_reproducible() -> TestResult {
    if !have_adapter("cli_train::train_json_report_is_complete_and_reproducible")? {
        return Ok(());
    }
    let (first, second) = std::thread::scope(|s| {
        let a = s.spawn(|| megagraph(TINY_TRAIN).map_err(|e| e.to_string()));
        let b = s.spawn(|| megagraph(TINY_TRAIN).map_err(|e| e.to_string()));
        (a.join(), b.join())
    });
    let first = first.map_err(|_| "first run's thread panicked")??;
    let second = second.map_err(|_| "second run's thread panicked")??;
    assert_success(&first);
    assert_success(&second);

    let report = last_json_line(&first)?;
    for key in ["test_acc", "val_acc", "final_loss", "seconds"] {
        let value = number(&report, key)?;
        assert!(value.is_finite(), "{key} is {value}");
    }
    for key in ["test_acc", "val_acc"] {
        let value = number(&report, key)?;
        assert!(
            (0.0..=1.0).contains(&value),
            "{key} = {value} is not a fraction"
        );
    }
    assert!(number(&report, "final_loss")? > 0.0, "{report:?}");
    let epochs = report.get("epochs").and_then(Value::as_u64);
    assert!(
        epochs.is_some_and(|e| (1..=3).contains(&e)),
        "epochs should be an integer in 1..=3: {report:?}"
    );
    let peaks = report
        .get("peak_device_bytes")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("peak_device_bytes is not an array: {report:?}"))?;
    assert!(
        !peaks.is_empty(),
        "peak_device_bytes is empty on wgpu: {report:?}"
    );
    for peak in peaks {
        assert!(
            peak.as_u64().is_some_and(|b| b > 0),
            "peak_device_bytes entry {peak} is not a positive integer"
        );
    }

    let again = last_json_line(&second)?;
    eprintln!(
        "final_loss with --seed 7: {:?} and {:?}",
        report.get("final_loss"),
        again.get("final_loss")
    );
    let mut differences = Vec::new();
    for key in ["final_loss", "val_acc", "test_acc", "epochs"] {
        if report.get(key) != again.get(key) {
            differences.push(format!(
                "{key}: {:?} then {:?}",
                report.get(key),
                again.get(key)
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "two runs with --seed 7 on the same device differ: {}",
        differences.join("; ")
    );
    Ok(())
}

/// `megagraph devices --json` prints one object with an `adapters` array whose entries name
/// the adapter, its graphics API and its device type.
#[test]
fn devices_json_lists_adapters() -> TestResult {
    let run = megagraph(&["devices", "--json"])?;
    assert_success(&run);
    let report = last_json_line(&run)?;
    let adapters = report
        .get("adapters")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no adapters array: {report:?}"))?;
    for adapter in adapters {
        for key in ["name", "backend", "device_type"] {
            assert!(
                adapter
                    .get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty()),
                "adapter lacks a non-empty {key:?}: {adapter}"
            );
        }
        // The limits the kernel shapes are chosen within.
        for key in [
            "max_compute_workgroup_storage_size",
            "max_compute_invocations_per_workgroup",
        ] {
            assert!(
                adapter[key].as_u64().is_some_and(|v| v > 0),
                "{key}: {adapter}"
            );
        }
        let sizes = adapter["subgroup_sizes"]
            .as_array()
            .ok_or_else(|| format!("no subgroup_sizes: {adapter}"))?;
        assert!(
            sizes.len() == 2 && sizes[0].as_u64() <= sizes[1].as_u64(),
            "subgroup_sizes is [min, max]: {adapter}"
        );
        for key in ["features", "cooperative_matrices"] {
            assert!(adapter[key].is_array(), "{key}: {adapter}");
        }
    }
    // Only the "lists at least one" check needs an adapter (and skips without one).
    if have_adapter("cli_train::devices_json_lists_adapters")? {
        assert!(
            !adapters.is_empty(),
            "the engine sees an adapter but `devices --json` lists none"
        );
    }
    Ok(())
}

/// `megagraph train` needs no arguments: every option has a default (the embedded synthetic
/// graph, the default split and model). Only the epoch count and the backend are overridden,
/// to keep the run to one short CPU epoch.
#[test]
fn train_defaults_are_accepted() -> TestResult {
    let run = megagraph(&["train", "--epochs", "1", "--backend", "ndarray", "--json"])?;
    assert_success(&run);
    let report = last_json_line(&run)?;
    assert_eq!(report.get("epochs").and_then(Value::as_u64), Some(1));
    assert!(number(&report, "final_loss")?.is_finite(), "{report:?}");
    assert_eq!(
        report
            .get("peak_device_bytes")
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(0),
        "the CPU backend has no device memory to report: {report:?}"
    );
    Ok(())
}

/// A short run on an easy graph learns: three well-separated SBM communities, 10 epochs of
/// four sequences on the CPU backend, end far above chance (1/3). Measured at seed 7: val 0.90,
/// test 0.775; a model that learns nothing stays near 0.33.
#[test]
fn a_short_run_on_an_easy_graph_ends_well_above_chance() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:200:3",
        "--epochs",
        "10",
        "--seq-len",
        "50",
        "--hidden",
        "16",
        "--heads",
        "2",
        "--layers",
        "1",
        "--lr",
        "0.01",
        "--seed",
        "7",
        "--json",
    ])?;
    assert_success(&run);
    let report = last_json_line(&run)?;
    for key in ["val_acc", "test_acc"] {
        let accuracy = number(&report, key)?;
        assert!(
            accuracy >= 0.6,
            "{key} = {accuracy}: not well above chance (1/3) on an easy graph"
        );
    }
    Ok(())
}

/// Every long step of a run announces itself on standard error when asked to show every step
/// (`MEGAGRAPH_PROGRESS_AFTER=0`): generating the graph, cutting it into sequences, building
/// their pairs, the first epoch; `--json` alone keeps standard error free of them.
#[test]
fn progress_names_each_long_step_and_json_keeps_it_quiet() -> TestResult {
    let args = [
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:300:3",
        "--seq-len",
        "100",
        "--epochs",
        "1",
        "--hidden",
        "16",
        "--heads",
        "2",
        "--layers",
        "1",
        "--json",
    ];
    let every_step = [("MEGAGRAPH_PROGRESS_AFTER", "0")];
    let steps = [
        "generating sbm:300:3",
        "partitioning 300 nodes into sequences",
        "building the attention pairs of 3 sequence(s)",
        "the first epoch",
    ];
    let shown = megagraph_with_env(&[&args[..], &["--progress"]].concat(), &every_step)?;
    assert_success(&shown);
    for step in steps {
        assert!(
            shown.stderr_lines().iter().any(|l| l.starts_with(step)),
            "no line for {step:?}:\n{}",
            shown.describe()
        );
    }
    let quiet = megagraph_with_env(&args, &every_step)?;
    assert_success(&quiet);
    for step in steps {
        assert!(
            !quiet.stderr.contains(step),
            "--json showed {step:?}:\n{}",
            quiet.describe()
        );
    }
    Ok(())
}

#[test]
fn eval_every_evaluates_every_nth_epoch_and_the_last() -> TestResult {
    if !have_adapter("cli_train::eval_every_evaluates_every_nth_epoch_and_the_last")? {
        return Ok(());
    }
    let mut args = TINY_TRAIN.to_vec();
    let epochs = args
        .iter()
        .position(|a| *a == "--epochs")
        .ok_or("TINY_TRAIN sets --epochs")?;
    args[epochs + 1] = "5";
    args.extend(["--eval-every", "2", "--patience", "5"]);
    let run = megagraph(&args)?;
    assert_success(&run);
    let report = last_json_line(&run)?;
    let evaluated: Vec<u64> = report["history"]
        .as_array()
        .ok_or_else(|| format!("no history: {report:?}"))?
        .iter()
        .filter_map(|h| h["epoch"].as_u64())
        .collect();
    assert_eq!(evaluated, [2, 4, 5], "{report:?}");
    assert!(
        report["best_epoch"]
            .as_u64()
            .is_some_and(|e| evaluated.contains(&e)),
        "the best epoch is an evaluated one: {report:?}"
    );
    // Every epoch trained: 5 epochs of the graph's sequences.
    let steps = report["step_losses"]
        .as_array()
        .ok_or("no step_losses")?
        .len();
    let sequences = report["sequences"].as_u64().ok_or("no sequences")? as usize;
    assert_eq!(steps, 5 * sequences, "{report:?}");

    let run = megagraph(&["train", "--eval-every", "0"])?;
    crate::cli_errors::assert_one_line_error(&run, Some(1), &["eval-every must be at least 1"]);
    Ok(())
}

/// `devices --backends all` lists every API's adapters: on CI's Mesa, lavapipe (Vulkan) and
/// llvmpipe through EGL (OpenGL), two compute stacks on one CPU.
#[test]
fn devices_of_every_api_show_the_vulkan_and_gl_stacks() -> TestResult {
    let bad = megagraph(&["devices", "--backends", "vulkan,glide"])?;
    assert_eq!(bad.code, Some(2), "{}", bad.describe());
    assert!(
        bad.stderr.contains("\"glide\" is no graphics API"),
        "{}",
        bad.describe()
    );
    let bad = megagraph(&["train", "--adapter", "opengl:0"])?;
    assert_eq!(bad.code, Some(2), "{}", bad.describe());
    assert!(
        bad.stderr.contains("\"opengl:0\" names no adapter") && bad.stderr.contains("API:N"),
        "{}",
        bad.describe()
    );
    if !have_adapter("cli_train::devices_of_every_api_show_the_vulkan_and_gl_stacks")? {
        return Ok(());
    }
    let run = megagraph(&["devices", "--backends", "all", "--json"])?;
    assert_success(&run);
    let report = last_json_line(&run)?;
    let apis: Vec<&str> = report["adapters"]
        .as_array()
        .ok_or_else(|| format!("no adapters array: {report:?}"))?
        .iter()
        .filter_map(|a| a["backend"].as_str())
        .collect();
    for api in ["Vulkan", "Gl"] {
        assert!(apis.contains(&api), "no {api} adapter among {apis:?}");
    }
    for adapter in report["adapters"].as_array().into_iter().flatten() {
        let (id, api) = (adapter["id"].as_str(), adapter["backend"].as_str());
        let prefix = format!("{}:", api.unwrap_or("?").to_lowercase());
        assert!(
            id.is_some_and(|id| id.starts_with(&prefix) && id.ends_with("#0")),
            "a stable id API:NAME#N: {adapter:?}"
        );
    }
    let missing = megagraph(&["train", "--adapter", "gl:7", "--epochs", "1"])?;
    assert_eq!(missing.code, Some(1), "{}", missing.describe());
    assert!(
        missing
            .stderr
            .contains("no adapter gl:7 here; present: [0: gl:"),
        "{}",
        missing.describe()
    );
    let gl_only = megagraph(&["devices", "--backends", "gl", "--json"])?;
    assert_success(&gl_only);
    let gl = last_json_line(&gl_only)?;
    assert!(
        gl["adapters"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|a| a["backend"] == "Gl")),
        "{gl:?}"
    );
    Ok(())
}
