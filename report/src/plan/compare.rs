//! The plan against pure DP, uniform PP and uniform CP: predicted step time and per-device
//! peak memory, the ones that do not fit hatched red, each device type's memory as a line.

use megagraph_planner::{Degrees, DeviceSpec, MEMORY_TOLERANCE};
use plotters::style::RGBColor;

use super::{PlanPicture, counted, device_types};
use crate::bars::{Bar, BarChart, Group};
use crate::canvas::{Area, Drawn, OVERFLOW, byte_unit, color, time_unit};

/// The palette index of the first device type, so that device colours (by type) do not
/// repeat the first stage colours of the device strip and timeline.
const DEVICE_COLORS: usize = 3;

/// The fill of baseline bars.
const BASELINE: RGBColor = RGBColor(170, 170, 170);

/// One configuration compared: its name, degrees, micro-batches, step, peaks, fit.
struct Row<'a> {
    name: &'a str,
    degrees: Degrees,
    micro_batches: usize,
    step_seconds: f64,
    peak_bytes: Vec<u64>,
    fits: bool,
}

impl Row<'_> {
    /// The label under its group.
    fn label(&self) -> Vec<String> {
        vec![
            self.name.to_string(),
            format!("{} ×{}", self.degrees, self.micro_batches),
        ]
    }

    fn warning(&self) -> Option<String> {
        (!self.fits).then(|| "does not fit".to_string())
    }
}

/// Draws the two charts side by side.
pub(super) fn draw(area: &Area, picture: &PlanPicture) -> Drawn {
    let plan = picture.plan;
    let mut rows = vec![Row {
        name: "plan",
        degrees: plan.config.degrees,
        micro_batches: plan.config.micro_batches,
        step_seconds: plan.prediction.step_seconds,
        peak_bytes: plan.prediction.peak_bytes(),
        fits: plan.prediction.fits(),
    }];
    for (name, b) in plan.baselines.named() {
        rows.push(Row {
            name,
            degrees: b.degrees,
            micro_batches: b.micro_batches,
            step_seconds: b.step_seconds,
            peak_bytes: b.peak_bytes.clone(),
            fits: b.fits,
        });
    }
    let (width, _) = area.dim_in_pixel();
    let (left, right) = area.split_horizontally(width * 9 / 20);
    step_chart(&rows).draw(&left)?;
    memory_chart(&rows, &picture.cluster.devices).draw(&right)
}

fn step_chart(rows: &[Row]) -> BarChart {
    let (searched, baseline) = (color(0), BASELINE);
    BarChart {
        caption: "Predicted step time".to_string(),
        note: Some("the plan against the baselines, each with its best micro-batching".to_string()),
        y_desc: "time of one training step".to_string(),
        unit: time_unit,
        groups: rows
            .iter()
            .enumerate()
            .map(|(i, row)| Group {
                label: row.label(),
                bars: vec![Bar {
                    value: row.step_seconds,
                    color: if i == 0 { searched } else { baseline },
                    over: !row.fits,
                }],
                warning: row.warning(),
            })
            .collect(),
        limits: Vec::new(),
        legend: vec![
            (searched, "the plan".to_string()),
            (baseline, "baseline".to_string()),
            (OVERFLOW, "does not fit".to_string()),
        ],
    }
}

fn memory_chart(rows: &[Row], devices: &[DeviceSpec]) -> BarChart {
    let types = device_types(devices.iter().map(|d| d.name.as_str()));
    let type_of = |d: &DeviceSpec| types.iter().position(|(n, _)| *n == d.name).unwrap_or(0);
    let type_color = |t: usize| color(DEVICE_COLORS + t);
    let mut limits: Vec<(f64, Vec<String>)> = Vec::new();
    for (name, count) in &types {
        let memory = devices
            .iter()
            .find(|d| d.name == *name)
            .map_or(0.0, |d| d.memory_bytes);
        match limits.iter_mut().find(|(m, _)| *m == memory) {
            Some((_, names)) => names.push(counted(name, *count)),
            None => limits.push((memory, vec![counted(name, *count)])),
        }
    }
    BarChart {
        caption: "Predicted peak memory per device".to_string(),
        note: Some(
            "one bar per cluster device, in device order; none where a device is unused"
                .to_string(),
        ),
        y_desc: "peak memory".to_string(),
        unit: byte_unit,
        groups: rows
            .iter()
            .map(|row| Group {
                label: row.label(),
                bars: devices
                    .iter()
                    .zip(&row.peak_bytes)
                    .map(|(device, &bytes)| Bar {
                        value: bytes as f64,
                        color: type_color(type_of(device)),
                        over: bytes as f64 > device.memory_bytes * (1.0 + MEMORY_TOLERANCE),
                    })
                    .collect(),
                warning: row.warning(),
            })
            .collect(),
        limits: limits
            .into_iter()
            .map(|(memory, names)| {
                let unit = byte_unit(memory);
                (
                    memory,
                    format!("memory of {}: {}", names.join(", "), unit.label(memory)),
                )
            })
            .collect(),
        legend: types
            .iter()
            .enumerate()
            .map(|(i, (name, count))| (type_color(i), counted(name, *count)))
            .collect(),
    }
}
