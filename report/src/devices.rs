//! `devices.svg`: per device, measured step time and peak memory, beside the plan's
//! prediction when a plan was used.

use crate::bars::{Bar, BarChart, Group};
use crate::canvas::{byte_unit, color, svg, time_unit};
use crate::{DeviceUse, ReportError, TrainingRun};

/// The file name.
pub(crate) const FILE: &str = "devices.svg";
/// Width × height in pixels.
pub(crate) const SIZE: (u32, u32) = (1000, 440);

/// Legend colour of measured figures.
const MEASURED: usize = 0;
/// Legend colour of predicted figures.
const PREDICTED: usize = 1;

/// The picture of `run`'s devices.
pub(crate) fn draw(run: &TrainingRun) -> Result<String, ReportError> {
    if run.devices.is_empty() {
        return Err(ReportError::Empty {
            file: FILE,
            reason: "the run names no device".to_string(),
        });
    }
    let predicted = run
        .devices
        .iter()
        .any(|d| d.predicted_step_seconds.is_some() || d.predicted_peak_bytes.is_some());
    let mut legend = vec![(color(MEASURED), "measured".to_string())];
    if predicted {
        legend.push((color(PREDICTED), "predicted by the plan".to_string()));
    }
    let time = chart(
        run,
        "Step time per device",
        Some(format!("measured: {}", run.step_time)),
        "mean time of one training step",
        |d| (Some(d.step_seconds), d.predicted_step_seconds),
        &legend,
        time_unit,
    );
    let memory = chart(
        run,
        "Peak device memory",
        Some("measured: the high-water mark of the device's memory pool".to_string()),
        "peak memory",
        |d| {
            (
                d.peak_bytes.map(|b| b as f64),
                d.predicted_peak_bytes.map(|b| b as f64),
            )
        },
        &legend,
        byte_unit,
    );
    svg(FILE, SIZE, |root| {
        let (left, right) = root.split_horizontally(SIZE.0 / 2);
        time.draw(&left)?;
        memory.draw(&right)
    })
}

/// One panel: per device a measured bar and, where there is one, a predicted bar; a
/// device without a measurement says so under its name.
fn chart(
    run: &TrainingRun,
    caption: &str,
    note: Option<String>,
    y_desc: &str,
    figures: impl Fn(&DeviceUse) -> (Option<f64>, Option<f64>),
    legend: &[(plotters::style::RGBColor, String)],
    unit: fn(f64) -> crate::canvas::Unit,
) -> BarChart {
    let groups = run
        .devices
        .iter()
        .map(|device| {
            let (measured, predicted) = figures(device);
            let bar = |value: f64, c: usize| Bar {
                value,
                color: color(c),
                over: false,
            };
            let mut label = vec![device.name.clone()];
            if measured.is_none() {
                label.push("(not measured on this backend)".to_string());
            }
            Group {
                label,
                bars: [(measured, MEASURED), (predicted, PREDICTED)]
                    .into_iter()
                    .filter_map(|(v, c)| v.map(|v| bar(v, c)))
                    .collect(),
                warning: None,
            }
        })
        .collect();
    BarChart {
        caption: caption.to_string(),
        note,
        y_desc: y_desc.to_string(),
        unit,
        groups,
        limits: Vec::new(),
        legend: legend.to_vec(),
    }
}
