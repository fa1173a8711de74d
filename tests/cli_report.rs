//! `--report DIR` end to end: every SVG the commands write renders (resvg, system fonts) at
//! its stated size with ink on it, index.html links only files that exist, metrics.json
//! holds the series, and an unwritable directory is a clear error (`plan`) or a fallback
//! that training survives (`train`).

use std::path::{Path, PathBuf};

use megagraph_report::check::{check_svg_file, html_references};
use serde_json::Value;

use crate::cli_errors::assert_one_line_error;
use crate::cli_train::TINY_TRAIN;
use crate::common::{Run, TestError, TestResult, have_adapter, megagraph, workspace_root};

fn utf8(path: &Path) -> Result<&str, TestError> {
    path.to_str().ok_or_else(|| "path is not UTF-8".into())
}

/// `megagraph TINY_TRAIN... extra...`.
fn train(extra: &[&str]) -> Result<Run, TestError> {
    let args: Vec<&str> = TINY_TRAIN.iter().chain(extra).copied().collect();
    megagraph(&args)
}

/// A path whose parent is a regular file, so that no directory can be made there (whoever
/// runs the test, root included).
fn unwritable(dir: &Path) -> Result<PathBuf, TestError> {
    let file = dir.join("a-file");
    std::fs::write(&file, "")?;
    Ok(file.join("report"))
}

/// The last stdout line as JSON.
fn last_json(run: &Run) -> Result<Value, TestError> {
    let line = run.stdout.lines().last().ok_or("nothing on stdout")?;
    Ok(serde_json::from_str(line)?)
}

/// Checks a training report directory against the run's JSON result: both SVGs render at
/// their stated sizes, index.html links only files that exist, metrics.json has a point
/// per epoch and the best epoch.
fn check_training_report(dir: &Path, result: &Value) -> TestResult {
    for (name, size) in [("training.svg", (900, 640)), ("devices.svg", (1000, 440))] {
        let rendered = check_svg_file(&dir.join(name))?;
        assert_eq!(rendered.size, size, "{name}");
        assert!(rendered.text_ink > 0, "{name} shows no text");
    }
    let page = std::fs::read_to_string(dir.join("index.html"))?;
    let references = html_references(&page);
    assert!(references.len() >= 3, "{references:?}");
    for reference in &references {
        assert!(
            dir.join(reference).is_file(),
            "index.html links missing {reference}"
        );
    }
    assert!(
        page.contains("--report"),
        "the settings lack the command line"
    );
    let metrics: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json"))?)?;
    let epochs = metrics["epochs"]
        .as_array()
        .ok_or("metrics.json has no epochs")?;
    assert_eq!(Some(epochs.len() as u64), result["epochs"].as_u64());
    assert_eq!(metrics["best_epoch"], result["best_epoch"]);
    for key in ["loss", "train_acc", "val_acc", "test_acc", "seconds"] {
        assert!(
            epochs.iter().all(|e| e[key].is_number()),
            "{key}: {metrics}"
        );
    }
    assert!(
        metrics["devices"][0]["step_seconds"]
            .as_f64()
            .is_some_and(|s| s > 0.0)
    );
    Ok(())
}

#[test]
fn train_report_renders_and_links_only_its_files() -> TestResult {
    if !have_adapter("cli_report::train_report_renders_and_links_only_its_files")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("report");
    let run = train(&["--report", utf8(&out)?])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let result = last_json(&run)?;
    check_training_report(&out, &result)?;
    let index = out.join("index.html");
    assert!(
        run.stderr_lines()
            .contains(&format!("report: {}", index.display()).as_str()),
        "{}",
        run.describe()
    );
    let metrics: Value = serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json"))?)?;
    // The report draws the peak of live tensors (the pool's reserved bytes are page-sized).
    assert_eq!(
        metrics["devices"][0]["peak_bytes"],
        result["devices"][0]["peak_in_use_bytes"]
    );
    Ok(())
}

#[test]
fn train_survives_an_unwritable_report_dir_and_says_where_the_report_went() -> TestResult {
    let dir = tempfile::tempdir()?;
    let asked = unwritable(dir.path())?;
    let run = train(&["--backend", "ndarray", "--report", utf8(&asked)?])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let result = last_json(&run)?;
    assert!(result["test_acc"].is_number(), "{result}");
    let lines = run.stderr_lines();
    let early = lines
        .iter()
        .find(|l| l.starts_with("error: "))
        .ok_or_else(|| format!("no error line:\n{}", run.describe()))?;
    assert!(early.contains(&asked.display().to_string()), "{early}");
    assert!(
        early.contains("cannot create the report directory"),
        "{early}"
    );
    assert!(early.contains("Not a directory"), "{early}");
    let closing = lines
        .iter()
        .find_map(|l| l.strip_prefix("report: "))
        .ok_or_else(|| format!("no report line:\n{}", run.describe()))?;
    let index = closing
        .split(" (not in ")
        .next()
        .ok_or("empty report line")?;
    assert!(closing.contains(&asked.display().to_string()), "{closing}");
    let fallback = Path::new(index)
        .parent()
        .ok_or("index.html has no directory")?;
    assert!(fallback.starts_with(std::env::temp_dir()), "{closing}");
    let checked = check_training_report(fallback, &result);
    std::fs::remove_dir_all(fallback)?;
    checked
}

#[test]
fn plan_report_renders_the_plan_the_table_prints() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = workspace_root();
    let cluster = root.join("examples/clusters/desk-rtx4090-rx7900xtx.json");
    let model = root.join("examples/models/wide-gt.json");
    let run = megagraph(&[
        "plan",
        "--cluster",
        utf8(&cluster)?,
        "--model",
        utf8(&model)?,
        "--report",
        utf8(dir.path())?,
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let svg = dir.path().join("plan.svg");
    let rendered = check_svg_file(&svg)?;
    assert_eq!(rendered.size.0, 1200);
    assert!(rendered.text_ink > 0);
    assert!(
        run.stderr_lines()
            .contains(&format!("report: {}", svg.display()).as_str()),
        "{}",
        run.describe()
    );
    // The table shows what the picture does: each device's stage, layers and share, and
    // the plan against the baselines with the one that does not fit.
    let text = std::fs::read_to_string(&svg)?;
    for needle in [
        "rtx4090",
        "rx7900xtx",
        "layers 0..10 + emb",
        "pure DP",
        "does not fit",
    ] {
        assert!(text.contains(needle), "plan.svg lacks {needle:?}");
    }
    let table = &run.stdout;
    for needle in [
        "rtx4090",
        "rx7900xtx",
        "0..10 + emb",
        "10..24 + head",
        "100.0%",
    ] {
        assert!(
            table.contains(needle),
            "the table lacks {needle:?}:\n{table}"
        );
    }
    let pure_dp = table
        .lines()
        .find(|l| l.starts_with("pure DP"))
        .ok_or_else(|| format!("no pure DP row:\n{table}"))?;
    assert!(pure_dp.ends_with("no"), "{pure_dp}");
    Ok(())
}

#[test]
fn plan_report_into_an_unwritable_dir_is_a_one_line_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    let asked = unwritable(dir.path())?;
    let root = workspace_root();
    let run = megagraph(&[
        "plan",
        "--cluster",
        utf8(&root.join("examples/clusters/desk-rtx4090-rx7900xtx.json"))?,
        "--model",
        utf8(&root.join("examples/models/cora-gt.json"))?,
        "--report",
        utf8(&asked)?,
    ])?;
    let path = asked.display().to_string();
    assert_one_line_error(
        &run,
        Some(1),
        &[
            &path,
            "cannot create the report directory",
            "Not a directory",
        ],
    );
    assert!(run.stdout.is_empty(), "{}", run.describe());
    Ok(())
}
