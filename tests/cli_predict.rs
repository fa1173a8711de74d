//! `megagraph predict` and `megagraph evaluate` end to end, on both backends: train with
//! checkpoints and `--save-model`, then evaluate each file (its test accuracy is the one
//! training reported for the epoch it holds, to the last bit) and predict (a CSV row per node
//! with names, probabilities summing to 1, argmax agreeing with evaluate), and bad inputs
//! (one line, non-zero exit, no panic).

use std::path::{Path, PathBuf};

use megagraph_engine::graph::{Graph, SbmParams, sbm};
use serde_json::Value;

use crate::cli_errors::{assert_no_repeated_clause, assert_one_line_error};
use crate::common::{
    Run, TestError, TestResult, have_adapter, megagraph, named_graph_arrays, write_npz,
};

/// A path as `&str`.
fn text(path: &Path) -> Result<&str, TestError> {
    path.to_str().ok_or_else(|| "temp path is not UTF-8".into())
}

/// The last line of standard output as JSON, after checking the run succeeded.
fn last_json(run: &Run) -> Result<Value, TestError> {
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let last = run.stdout.lines().last().ok_or("no output")?;
    Ok(serde_json::from_str(last)?)
}

/// A named 300-node graph written as an .npz, and a run trained on it.
struct TrainedRun {
    dir: tempfile::TempDir,
    graph: Graph,
    data: PathBuf,
    checkpoints: PathBuf,
    model: PathBuf,
    report: Value,
}

/// Trains 4 epochs on `backend` (one sequence unless `extra` says otherwise: one step per
/// epoch, a checkpoint after each, so the newest holds the last epoch's parameters) with
/// `--save-model` and the options `extra`.
fn train(backend: &str, extra: &[&str]) -> Result<TrainedRun, TestError> {
    let dir = tempfile::tempdir()?;
    let graph = sbm(&SbmParams::new(300, 3, 5))?;
    let data = dir.path().join("named.npz");
    write_npz(&data, &named_graph_arrays(&graph))?;
    let checkpoints = dir.path().join("ck");
    let model = dir.path().join("best.safetensors");
    let args = [
        "train",
        "--backend",
        backend,
        "--data",
        text(&data)?,
        "--epochs",
        "4",
        "--hidden",
        "16",
        "--heads",
        "2",
        "--layers",
        "1",
        "--seed",
        "3",
        "--dropout",
        "0",
        "--lr",
        "0.02",
        "--checkpoint",
        text(&checkpoints)?,
        "--checkpoint-every",
        "1",
        "--save-model",
        text(&model)?,
        "--json",
    ];
    let run = megagraph(&[&args[..], extra].concat())?;
    let report = last_json(&run)?;
    assert!(run.stderr.contains("saved model: "), "{}", run.describe());
    Ok(TrainedRun {
        dir,
        graph,
        data,
        checkpoints,
        model,
        report,
    })
}

/// `megagraph COMMAND` (evaluate or predict) of `checkpoint` on the run's data, with `extra`.
fn on_data(
    t: &TrainedRun,
    command: &str,
    checkpoint: &Path,
    backend: &str,
    extra: &[&str],
) -> Result<Run, TestError> {
    let args = [
        command,
        "--backend",
        backend,
        "--checkpoint",
        text(checkpoint)?,
        "--data",
        text(&t.data)?,
    ];
    megagraph(&[&args[..], extra].concat())
}

/// `megagraph evaluate --json` of `checkpoint` on the run's data.
fn evaluate(t: &TrainedRun, checkpoint: &Path, backend: &str) -> Result<Value, TestError> {
    last_json(&on_data(t, "evaluate", checkpoint, backend, &["--json"])?)
}

/// The loop a user runs: train, evaluate the saved model (the best epoch's test accuracy to
/// the bit), predict from the checkpoint directory (the newest holds the last epoch: its
/// CSV's argmax is right on as many nodes as that epoch's accuracies say); with
/// `evaluate_checkpoint`, also evaluate the checkpoint directory.
fn train_predict_evaluate(backend: &str, evaluate_checkpoint: bool) -> TestResult {
    let t = train(backend, &[])?;
    let history = t.report["history"].as_array().ok_or("history")?;
    let last = history.last().ok_or("no epoch")?;
    let of_best = evaluate(&t, &t.model, backend)?;
    assert_eq!(
        of_best["test_acc"], t.report["test_acc"],
        "{of_best} vs {}",
        t.report
    );
    assert_eq!(
        of_best["val_acc"], t.report["val_acc"],
        "{of_best} vs {}",
        t.report
    );
    assert_eq!(of_best["per_class"].as_array().map(Vec::len), Some(3));
    if evaluate_checkpoint {
        let of_last = evaluate(&t, &t.checkpoints, backend)?;
        for key in ["train_acc", "val_acc", "test_acc"] {
            assert_eq!(
                of_last[key], last[key],
                "{key}: checkpoint {of_last} vs epoch {last}"
            );
        }
    }

    let csv = t.dir.path().join("p.csv");
    let embeddings = t.dir.path().join("e.npy");
    let outputs = ["--out", text(&csv)?, "--embeddings", text(&embeddings)?];
    let run = on_data(&t, "predict", &t.checkpoints, backend, &outputs)?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let correct = check_csv(&csv, &t.graph)?;
    let scored: f64 = ["train", "val", "test"]
        .iter()
        .map(|set| {
            let acc = last[format!("{set}_acc")].as_f64().unwrap_or(f64::NAN);
            let nodes = of_best[format!("{set}_nodes")].as_f64().unwrap_or(f64::NAN);
            (acc * nodes).round()
        })
        .sum();
    assert_eq!(
        correct as f64, scored,
        "the CSV's argmax against the last epoch's accuracies"
    );
    let file = npyz::NpyFile::new(std::fs::File::open(&embeddings)?)?;
    assert_eq!(file.shape(), &[300, 16]);
    assert!(file.into_vec::<f32>()?.iter().all(|v| v.is_finite()));
    Ok(())
}

/// Checks the CSV of [`train_predict_evaluate`]: the header, a row per node with its name,
/// the predicted class and its name, probabilities that sum to 1 and peak at the prediction;
/// returns how many nodes it predicts right.
fn check_csv(path: &Path, graph: &Graph) -> Result<usize, TestError> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("node,name,predicted,predicted_name,p_0,p_1,p_2")
    );
    let mut correct = 0;
    let mut rows = 0;
    for (node, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 7, "{line}");
        assert_eq!(fields[0], node.to_string());
        assert_eq!(fields[1], format!("node-{node}"));
        let predicted: usize = fields[2].parse()?;
        assert_eq!(fields[3], format!("class-{predicted}"));
        let p: Vec<f64> = fields[4..]
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, _>>()?;
        let sum: f64 = p.iter().sum();
        assert!(
            (sum - 1.0).abs() <= 1e-5,
            "node {node}: probabilities sum to {sum}"
        );
        let top = p.iter().cloned().fold(f64::MIN, f64::max);
        assert_eq!(p[predicted], top, "node {node}: {line}");
        correct += usize::from(predicted == graph.labels()[node] as usize);
        rows += 1;
    }
    assert_eq!(rows, graph.num_nodes());
    Ok(correct)
}

#[test]
fn train_predict_evaluate_on_ndarray() -> TestResult {
    train_predict_evaluate("ndarray", true)
}

#[test]
fn train_predict_evaluate_on_wgpu() -> TestResult {
    if !have_adapter("cli_predict::train_predict_evaluate_on_wgpu")? {
        return Ok(());
    }
    train_predict_evaluate("wgpu", false)
}

/// A model of three sequences under a hops scope: `evaluate` rebuilds the sequences from the
/// settings saved with it (seq-len, scope, seed: the same METIS cut and near pairs), so the
/// saved model's and the newest checkpoint's accuracies are training's to the bit; `predict`
/// writes `.npy` probabilities and `.npz` arrays of one row per node.
#[test]
fn a_model_of_several_hops_sequences_evaluates_and_predicts_as_it_trained() -> TestResult {
    let t = train("ndarray", &["--seq-len", "100", "--scope", "hops:2"])?;
    assert_eq!(t.report["sequences"], 3, "{}", t.report);
    let of_best = evaluate(&t, &t.model, "ndarray")?;
    for key in ["val_acc", "test_acc"] {
        assert_eq!(
            of_best[key], t.report[key],
            "{key}: {of_best} vs {}",
            t.report
        );
    }
    for class in of_best["per_class"].as_array().ok_or("per_class")? {
        for key in ["class", "precision", "recall", "f1", "support"] {
            assert!(class[key].is_number(), "{key} of {class}");
        }
    }
    // The table a user reads: the accuracies, then a row per class with its name.
    let table = on_data(&t, "evaluate", &t.model, "ndarray", &[])?;
    assert_eq!(table.code, Some(0), "{}", table.describe());
    let test_acc = of_best["test_acc"].as_f64().ok_or("test_acc")?;
    assert!(
        table.stdout.contains(&format!("test_acc {test_acc:.4}")),
        "{}",
        table.describe()
    );
    for class in 0..3 {
        assert!(
            table
                .stdout
                .lines()
                .any(|l| l.contains(&format!("class-{class}"))),
            "no row for class {class}: {}",
            table.describe()
        );
    }
    let history = t.report["history"].as_array().ok_or("history")?;
    let last = history.last().ok_or("no epoch")?;
    let of_last = evaluate(&t, &t.checkpoints, "ndarray")?;
    for key in ["train_acc", "val_acc", "test_acc"] {
        assert_eq!(of_last[key], last[key], "{key}: {of_last} vs {last}");
    }
    let (npy, npz) = (t.dir.path().join("p.npy"), t.dir.path().join("p.npz"));
    for out in [&npy, &npz] {
        let run = on_data(&t, "predict", &t.model, "ndarray", &["--out", text(out)?])?;
        assert_eq!(run.code, Some(0), "{}", run.describe());
    }
    let probabilities = npyz::NpyFile::new(std::fs::File::open(&npy)?)?;
    assert_eq!(probabilities.shape(), &[300, 3]);
    let probabilities = probabilities.into_vec::<f32>()?;
    for row in probabilities.chunks(3) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() <= 1e-5, "{row:?}");
    }
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&npz)?)?;
    let predicted = npyz::NpyFile::new(archive.by_name("predicted.npy")?)?;
    assert_eq!(predicted.shape(), &[300]);
    let predicted = predicted.into_vec::<i64>()?;
    for (node, row) in probabilities.chunks(3).enumerate() {
        let top = row.iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(row[predicted[node] as usize], top, "node {node}: {row:?}");
    }
    Ok(())
}

#[test]
fn bad_inputs_get_one_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let graph = sbm(&SbmParams::new(60, 3, 2))?;
    let data = dir.path().join("small.npz");
    write_npz(&data, &named_graph_arrays(&graph))?;
    let model = dir.path().join("m.safetensors");
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--data",
        text(&data)?,
        "--steps",
        "1",
        "--hidden",
        "8",
        "--heads",
        "2",
        "--layers",
        "1",
        "--save-model",
        text(&model)?,
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty)?;
    let garbage = dir.path().join("garbage.safetensors");
    std::fs::write(&garbage, b"not a model")?;
    let missing = dir.path().join("missing");
    let out_missing_dir = dir.path().join("no/such/dir/p.csv");
    let embeddings_missing_dir = dir.path().join("no/such/dir/e.npy");
    let npy_out = dir.path().join("p.npy");
    let (data, model) = (text(&data)?, text(&model)?);
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["predict", "--checkpoint", text(&missing)?],
            vec!["missing", "No such file"],
        ),
        (
            vec!["predict", "--checkpoint", text(&empty)?],
            vec!["no checkpoint", "empty"],
        ),
        (
            vec!["evaluate", "--checkpoint", text(&garbage)?, "--data", data],
            vec!["garbage.safetensors", "not a valid checkpoint"],
        ),
        (
            vec!["predict", "--checkpoint", model, "--synthetic", "sbm:60:4"],
            vec![
                "trained on 500 features and 3 classes",
                "sbm:60:4 has 500 features and 4 classes",
            ],
        ),
        (
            vec![
                "predict",
                "--checkpoint",
                model,
                "--data",
                data,
                "--out",
                text(&out_missing_dir)?,
            ],
            vec!["--out", "p.csv", "cannot write"],
        ),
        (
            vec![
                "predict",
                "--checkpoint",
                model,
                "--data",
                data,
                "--out",
                text(&npy_out)?,
                "--embeddings",
                text(&embeddings_missing_dir)?,
            ],
            vec!["--embeddings", "e.npy", "cannot write"],
        ),
        (
            vec![
                "predict",
                "--checkpoint",
                model,
                "--data",
                data,
                "--out",
                "p.txt",
            ],
            vec!["p.txt", "unknown output format"],
        ),
        (
            vec![
                "predict",
                "--checkpoint",
                model,
                "--data",
                data,
                "--embeddings",
                "e.csv",
            ],
            vec!["e.csv", "expected .npy"],
        ),
        (
            vec![
                "evaluate",
                "--checkpoint",
                model,
                "--data",
                data,
                "--split",
                "halves",
            ],
            vec!["invalid split", "halves"],
        ),
    ];
    for (args, needles) in cases {
        let mut args = args;
        args.extend(["--backend", "ndarray"]);
        let run = megagraph(&args)?;
        assert_one_line_error(&run, Some(1), &needles);
        assert_no_repeated_clause(run.stderr_lines()[0]);
    }
    Ok(())
}
