//! `--report DIR`: pictures of a training run or a plan, written through megagraph-report.
//!
//! A training report directory is checked before training starts. If it cannot be written
//! (then, or when the run ends), one `error:` line on standard error names it and the OS
//! error, training goes on, and the report goes to a fresh directory under the system's
//! temporary directory, which the closing line names; the exit code stays 0 because the
//! results were saved. Only when the fallback cannot be written either does `train` exit
//! non-zero (after printing its results). `plan --report` has nothing long-running to save:
//! an unwritable directory is its one-line error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use megagraph_engine::train::{TrainOptions, TrainReport};
use megagraph_planner::{ClusterSpec, ModelSpec, Plan};
use megagraph_report::{DeviceUse, EpochPoint, ReportError, TrainingRun, check_writable};

/// Where a training run's report goes.
#[derive(Debug)]
pub struct ReportTarget {
    /// The directory asked for.
    asked: PathBuf,
    /// The fallback chosen because `asked` could not be written when training started.
    fallback: Option<PathBuf>,
}

/// A fresh directory for a report that could not go where it was asked to.
fn fallback_dir() -> Result<PathBuf, ReportError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!(
        "megagraph-report-{}-{nanos:09}",
        std::process::id()
    ));
    check_writable(&dir)?;
    Ok(dir)
}

/// Prints the line saying that `asked` cannot take the report and where it goes instead.
fn say_fallback(error: &ReportError, fallback: Result<PathBuf, ReportError>) -> Option<PathBuf> {
    match fallback {
        Ok(dir) => {
            crate::error_line::say_error(format_args!(
                "{error}; the report will be written to {} instead",
                dir.display()
            ));
            Some(dir)
        }
        Err(again) => {
            crate::error_line::say_error(format_args!(
                "{error}; no fallback directory either: {again}"
            ));
            None
        }
    }
}

impl ReportTarget {
    /// Checks `--report DIR` before training: creates it and writes a probe file. If that
    /// fails, says so now and picks the fallback directory.
    pub fn prepare(asked: Option<&Path>) -> Option<ReportTarget> {
        let asked = asked?.to_path_buf();
        let fallback = match check_writable(&asked) {
            Ok(()) => None,
            Err(error) => say_fallback(&error, fallback_dir()),
        };
        Some(ReportTarget { asked, fallback })
    }

    /// Writes the report of a finished run, falling back to a fresh directory if its
    /// directory fails now; says on standard error where it went.
    pub fn write(
        &self,
        options: &TrainOptions,
        report: &TrainReport,
        device: &str,
        plan: Option<&Plan>,
    ) -> anyhow::Result<()> {
        let run = training_run(options, report, device, plan);
        let dir = self.fallback.as_deref().unwrap_or(&self.asked);
        let written = match megagraph_report::write_training(dir, &run) {
            Ok(_) => dir.to_path_buf(),
            Err(error) => {
                let Some(fallback) = say_fallback(&error, fallback_dir()) else {
                    anyhow::bail!("the training report was not saved: {error}");
                };
                megagraph_report::write_training(&fallback, &run)?;
                fallback
            }
        };
        let index = written.join("index.html");
        if written == self.asked {
            eprintln!("report: {}", index.display());
        } else {
            eprintln!(
                "report: {} (not in {}, which cannot be written)",
                index.display(),
                self.asked.display()
            );
        }
        Ok(())
    }
}

/// Writes `plan.svg` of `plan` into `dir` and says where.
pub fn write_plan(
    dir: &Path,
    plan: &Plan,
    cluster: &ClusterSpec,
    model: &ModelSpec,
) -> anyhow::Result<()> {
    let written = megagraph_report::write_plan(dir, plan, cluster, model)?;
    for path in written {
        eprintln!("report: {}", path.display());
    }
    Ok(())
}

/// The command line as typed, arguments with spaces quoted.
fn command_line() -> String {
    let quote = |a: String| {
        if a.contains(char::is_whitespace) {
            format!("'{a}'")
        } else {
            a
        }
    };
    std::env::args().map(quote).collect::<Vec<_>>().join(" ")
}

/// `value`'s leaves by dotted path (`model.hidden`), strings without their quotes.
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, inner, out);
            }
        }
        Value::String(text) => {
            out.insert(prefix.to_string(), text.clone());
        }
        // An `f32` setting widened to `f64` prints as the `f32` it was (0.0005, not
        // 0.0005000000237487257).
        Value::Number(number) if number.is_f64() => {
            let wide = number.as_f64().unwrap_or(f64::NAN);
            let narrow = wide as f32;
            let text = if f64::from(narrow) == wide {
                narrow.to_string()
            } else {
                wide.to_string()
            };
            out.insert(prefix.to_string(), text);
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// What the report draws of a finished run on `device`, under `plan` if one was used.
///
/// Per device of the run: its median training-step time (evaluation excluded), its peak of
/// live tensors (the pool's reserved bytes where that was not sampled), and the plan's
/// predictions for it. Devices are named `device #rank` when there are several.
fn training_run(
    options: &TrainOptions,
    report: &TrainReport,
    device: &str,
    plan: Option<&Plan>,
) -> TrainingRun {
    let mut settings = BTreeMap::new();
    let options = serde_json::to_value(options).expect("options always serialize");
    flatten("", &options, &mut settings);
    settings.insert("device".to_string(), device.to_string());
    settings.insert("sequences".to_string(), report.sequences.to_string());
    settings.insert("seconds".to_string(), format!("{:.1}", report.seconds));
    let several = report.devices.len() > 1;
    let devices = report
        .devices
        .iter()
        .map(|d| {
            let predicted = plan.and_then(|p| p.prediction.devices.get(d.rank));
            DeviceUse {
                name: if several {
                    format!("{device} #{}", d.rank)
                } else {
                    device.to_string()
                },
                step_seconds: d.step_seconds,
                peak_bytes: d.peak_in_use_bytes.or(d.peak_bytes),
                predicted_step_seconds: predicted.map(|p| p.step_seconds),
                predicted_peak_bytes: predicted.map(|p| p.peak_bytes),
            }
        })
        .collect();
    TrainingRun {
        command: command_line(),
        settings,
        epochs: report
            .history
            .iter()
            .map(|m| EpochPoint {
                epoch: m.epoch,
                loss: m.loss,
                train_acc: m.train_acc,
                val_acc: m.val_acc,
                test_acc: m.test_acc,
                seconds: m.seconds,
            })
            .collect(),
        best_epoch: report.best_epoch,
        devices,
        step_time:
            "median training step (forward, backward, gradient sums, Adam); evaluation excluded"
                .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use megagraph_engine::train::{DeviceRun, EpochMetrics};

    use super::*;

    fn report(peaks: Vec<u64>) -> TrainReport {
        let history: Vec<EpochMetrics> = (1..=4)
            .map(|epoch| EpochMetrics {
                epoch,
                loss: 1.0 / epoch as f64,
                train_acc: 0.5,
                val_acc: 0.4 + 0.1 * epoch as f64,
                test_acc: 0.6,
                seconds: 3.0,
            })
            .collect();
        TrainReport {
            test_acc: 0.6,
            val_acc: 0.8,
            best_epoch: 4,
            final_loss: 0.25,
            epochs: 4,
            seconds: 13.0,
            devices: peaks
                .iter()
                .enumerate()
                .map(|(rank, &peak)| DeviceRun {
                    rank,
                    adapter: "card | driver | Vulkan".to_string(),
                    step_seconds: 1.5,
                    peak_bytes: Some(peak),
                    peak_in_use_bytes: None,
                    sent_bytes_per_step: 0.0,
                    step_sent_bytes: 0.0,
                    transfer_seconds_per_step: 0.0,
                    hidden_transfer_seconds_per_step: 0.0,
                    exchange_seconds_per_step: 0.0,
                    hidden_exchange_seconds_per_step: 0.0,
                })
                .collect(),
            peak_device_bytes: peaks,
            sequences: 2,
            step_losses: vec![1.0],
            parameters: Vec::new(),
            history,
        }
    }

    #[test]
    fn a_run_becomes_epochs_settings_and_one_use_per_device() {
        let options = TrainOptions::default();
        let run = training_run(&options, &report(vec![1000, 2000]), "gpu", None);
        assert_eq!(run.epochs.len(), 4);
        assert_eq!(run.best_epoch, 4);
        assert_eq!(run.epochs[1].loss, 0.5);
        assert_eq!(run.settings["epochs"], "200");
        assert_eq!(
            run.settings["model.layers"],
            options.model.layers.to_string()
        );
        assert_eq!(run.settings["device"], "gpu");
        assert_eq!(run.settings["weight_decay"], "0.0005");
        assert_eq!(run.settings["learning_rate"], "0.005");
        let names: Vec<&str> = run.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["gpu #0", "gpu #1"]);
        assert_eq!(run.devices[1].step_seconds, 1.5);
        assert_eq!(run.devices[1].peak_bytes, Some(2000));
        let mut cpu_report = report(vec![]);
        cpu_report.devices.push(DeviceRun {
            rank: 0,
            adapter: String::new(),
            step_seconds: 1.5,
            peak_bytes: None,
            peak_in_use_bytes: None,
            sent_bytes_per_step: 0.0,
            step_sent_bytes: 0.0,
            transfer_seconds_per_step: 0.0,
            hidden_transfer_seconds_per_step: 0.0,
            exchange_seconds_per_step: 0.0,
            hidden_exchange_seconds_per_step: 0.0,
        });
        let cpu = training_run(&options, &cpu_report, "ndarray cpu", None);
        assert_eq!(cpu.devices.len(), 1);
        assert_eq!(cpu.devices[0].peak_bytes, None);
    }

    #[test]
    fn a_directory_that_fails_late_sends_the_report_to_a_fallback() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let asked = dir.path().join("report");
        let target = ReportTarget::prepare(Some(&asked)).ok_or(anyhow::anyhow!("no target"))?;
        assert!(target.fallback.is_none());
        // The directory is replaced by a file while training runs.
        std::fs::remove_dir(&asked)?;
        std::fs::write(&asked, "")?;
        target.write(&TrainOptions::default(), &report(vec![7]), "gpu", None)?;
        assert!(asked.is_file());
        let fallbacks: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    n.to_string_lossy()
                        .starts_with(&format!("megagraph-report-{}-", std::process::id()))
                })
            })
            .collect();
        let written: Vec<&PathBuf> = fallbacks
            .iter()
            .filter(|p| p.join("index.html").is_file())
            .collect();
        assert!(!written.is_empty(), "{fallbacks:?}");
        for path in written {
            std::fs::remove_dir_all(path)?;
        }
        Ok(())
    }

    #[test]
    fn an_unwritable_directory_is_known_before_training() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("file");
        std::fs::write(&file, "")?;
        let target =
            ReportTarget::prepare(Some(&file.join("report"))).ok_or(anyhow::anyhow!("none"))?;
        let fallback = target
            .fallback
            .ok_or(anyhow::anyhow!("no fallback chosen"))?;
        assert!(fallback.is_dir());
        std::fs::remove_dir_all(fallback)?;
        assert!(ReportTarget::prepare(None).is_none());
        Ok(())
    }
}
