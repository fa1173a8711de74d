//! Writing a report directory: everything is drawn first, then the directory is made and
//! the files written.

use std::path::{Path, PathBuf};

use megagraph_planner::{ClusterSpec, ModelSpec, Plan};

use crate::plan::PlanPicture;
use crate::run::{METRICS_SCHEMA_VERSION, MetricsFile};
use crate::{ReportError, TrainingRun, devices, html, plan, training};

/// The name of the file [`check_writable`] writes and removes.
const PROBE: &str = ".megagraph-write-check";

/// Creates `dir` (and its parents) and checks that a file can be written in it: what a
/// long run calls before it starts, so that a bad directory is known early.
pub fn check_writable(dir: &Path) -> Result<(), ReportError> {
    create(dir)?;
    let probe = dir.join(PROBE);
    let written = std::fs::write(&probe, b"").and_then(|()| std::fs::remove_file(&probe));
    written.map_err(|source| ReportError::Write {
        path: probe,
        source,
    })
}

fn create(dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes `files` (name, contents) into `dir`, creating it; returns their paths.
fn write_all(dir: &Path, files: &[(&str, String)]) -> Result<Vec<PathBuf>, ReportError> {
    create(dir)?;
    files
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|source| ReportError::Write {
                path: path.clone(),
                source,
            })?;
            Ok(path)
        })
        .collect()
}

/// Writes `training.svg`, `devices.svg`, `metrics.json` and `index.html` of `run` into
/// `dir`; returns the paths written.
pub fn write_training(dir: &Path, run: &TrainingRun) -> Result<Vec<PathBuf>, ReportError> {
    let metrics = MetricsFile {
        schema_version: METRICS_SCHEMA_VERSION,
        run,
    };
    let metrics = serde_json::to_string_pretty(&metrics).expect("metrics always serialize") + "\n";
    let files = [
        (training::FILE, training::draw(run)?),
        (devices::FILE, devices::draw(run)?),
        (html::METRICS, metrics),
        (html::FILE, html::page(run)),
    ];
    write_all(dir, &files)
}

/// Writes `plan.svg` of `plan` (found for `cluster` and `model`) into `dir`; returns the
/// paths written.
pub fn write_plan(
    dir: &Path,
    plan: &Plan,
    cluster: &ClusterSpec,
    model: &ModelSpec,
) -> Result<Vec<PathBuf>, ReportError> {
    let svg = PlanPicture::new(plan, cluster, model).draw()?;
    write_all(dir, &[(plan::FILE, svg)])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use megagraph_planner::{load_cluster, load_model, search};

    use super::*;
    use crate::check::{check_svg_file, html_references};
    use crate::{DeviceUse, EpochPoint};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A run of `epochs` epochs on `devices` devices, the last with a prediction.
    pub(crate) fn run(epochs: usize, devices: usize) -> TrainingRun {
        let epochs: Vec<EpochPoint> = (1..=epochs)
            .map(|e| {
                let t = e as f64;
                EpochPoint {
                    epoch: e,
                    loss: 1.6 / t.sqrt(),
                    train_acc: 1.0 - 0.6 / t,
                    val_acc: 0.85 - 0.5 / t - 0.004 * t,
                    test_acc: 0.84 - 0.5 / t - 0.004 * t,
                    seconds: 2.0,
                }
            })
            .collect();
        let best = epochs
            .iter()
            .max_by(|a, b| a.val_acc.total_cmp(&b.val_acc))
            .map_or(1, |e| e.epoch);
        TrainingRun {
            command: "megagraph train --synthetic sbm:300:3 --report <dir>".to_string(),
            settings: BTreeMap::from([
                ("epochs".to_string(), epochs.len().to_string()),
                ("device".to_string(), "llvmpipe <&>".to_string()),
            ]),
            epochs,
            best_epoch: best,
            devices: (0..devices)
                .map(|d| DeviceUse {
                    name: format!("device {d}"),
                    step_seconds: 0.05 * (d + 1) as f64,
                    peak_bytes: Some(54_000_000 * (d as u64 + 1)),
                    predicted_step_seconds: (d + 1 == devices).then_some(0.04),
                    predicted_peak_bytes: (d + 1 == devices).then_some(40_000_000),
                })
                .collect(),
            step_time: "epoch time ÷ steps".to_string(),
        }
    }

    /// Checks every SVG among `paths` renders at `sizes[name]`.
    fn check_svgs(paths: &[PathBuf], sizes: &[(&str, (u32, u32))]) -> TestResult {
        for (name, size) in sizes {
            let path = paths
                .iter()
                .find(|p| p.ends_with(name))
                .ok_or(format!("{name} not written"))?;
            let rendered = check_svg_file(path)?;
            assert_eq!(rendered.size, *size, "{name}");
        }
        Ok(())
    }

    #[test]
    fn a_training_report_renders_and_links_only_its_files() -> TestResult {
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("nested/report");
        let run = run(30, 2);
        let paths = write_training(&out, &run)?;
        assert_eq!(paths.len(), 4);
        check_svgs(
            &paths,
            &[
                (training::FILE, training::SIZE),
                (devices::FILE, devices::SIZE),
            ],
        )?;
        let page = std::fs::read_to_string(out.join(html::FILE))?;
        let references = html_references(&page);
        assert_eq!(references.len(), 3, "{references:?}");
        for reference in references {
            assert!(
                out.join(&reference).is_file(),
                "index.html links {reference}"
            );
        }
        assert!(page.contains("llvmpipe &lt;&amp;&gt;"), "{page}");
        let metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(html::METRICS))?)?;
        assert_eq!(metrics["schema_version"], METRICS_SCHEMA_VERSION);
        assert_eq!(metrics["best_epoch"], run.best_epoch);
        assert_eq!(metrics["epochs"].as_array().map(Vec::len), Some(30));
        for key in [
            "epoch",
            "loss",
            "train_acc",
            "val_acc",
            "test_acc",
            "seconds",
        ] {
            assert!(metrics["epochs"][29][key].is_number(), "{key}");
        }
        assert_eq!(metrics["devices"][1]["predicted_peak_bytes"], 40_000_000);
        assert!(metrics["devices"][0]["predicted_step_seconds"].is_null());
        assert_eq!(metrics["step_time"], "epoch time ÷ steps");
        Ok(())
    }

    #[test]
    fn one_epoch_on_a_device_without_memory_figures_still_draws() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut run = run(1, 1);
        run.devices[0].peak_bytes = None;
        run.devices[0].predicted_peak_bytes = None;
        run.devices[0].predicted_step_seconds = None;
        let paths = write_training(dir.path(), &run)?;
        check_svgs(
            &paths,
            &[
                (training::FILE, training::SIZE),
                (devices::FILE, devices::SIZE),
            ],
        )
    }

    #[test]
    fn a_run_without_epochs_or_devices_is_an_error_naming_the_picture() {
        let dir = std::env::temp_dir();
        let mut empty = run(0, 1);
        let message = write_training(&dir, &empty).unwrap_err().to_string();
        assert_eq!(
            message,
            "training.svg: nothing to draw: the run has no epochs"
        );
        empty = run(3, 0);
        let message = write_training(&dir, &empty).unwrap_err().to_string();
        assert_eq!(
            message,
            "devices.svg: nothing to draw: the run names no device"
        );
    }

    fn example(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(path)
    }

    #[test]
    fn every_example_plan_renders() -> TestResult {
        let dir = tempfile::tempdir()?;
        for cluster in [
            "desk-rtx4090-rx7900xtx",
            "h100x4-a100x4-pcie-ib",
            "dgx-a100-8x80gb",
        ] {
            let cluster = load_cluster(&example(&format!("clusters/{cluster}.json")))?;
            for model in ["cora-gt", "ogbn-arxiv-gt", "ogbn-products-gt"] {
                let model = load_model(&example(&format!("models/{model}.json")))?;
                let plan = search(&cluster, &model)?;
                let paths = write_plan(dir.path(), &plan, &cluster, &model)?;
                let size = PlanPicture::new(&plan, &cluster, &model).size();
                check_svgs(&paths, &[(plan::FILE, size)])?;
            }
        }
        Ok(())
    }

    #[test]
    fn an_unwritable_directory_is_named_with_the_os_error() -> TestResult {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("file");
        std::fs::write(&file, "")?;
        let inside = file.join("report");
        let message = check_writable(&inside).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "{}: cannot create the report directory: ",
                inside.display()
            )),
            "{message}"
        );
        let message = write_training(&inside, &run(2, 1)).unwrap_err().to_string();
        assert!(
            message.contains("cannot create the report directory"),
            "{message}"
        );
        check_writable(&dir.path().join("fresh"))?;
        assert_eq!(std::fs::read_dir(dir.path().join("fresh"))?.count(), 0);
        Ok(())
    }
}
