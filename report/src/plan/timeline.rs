//! The 1F1B timeline of one step: a row per pipeline stage, forward, backward and update
//! boxes over time, idle time (the bubbles) left blank.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{PlanPicture, counted, device_types};
use crate::canvas::{Area, Drawn, anchored, color, fit, font, swatch, text_width, time_unit};
use crate::schedule::{Pass, one_f_one_b};

/// Pixels around the rows: caption above, axis and legend below.
const FRAME: u32 = 130;
/// Height of the label column on the left.
const LABELS: u32 = 270;

/// Row height in pixels for `stages` rows.
fn row(stages: usize) -> u32 {
    (360 / stages.max(1) as u32).clamp(18, 46)
}

/// Height in pixels of the timeline of `stages` stages.
pub(super) fn height(stages: usize) -> u32 {
    FRAME + row(stages) * stages.max(1) as u32
}

/// The colour of a pass of stage `stage`: the stage's colour (as in the device strip), light
/// for the forward, full for the backward; the update in dark grey.
fn pass_color(pass: Pass, stage: usize) -> RGBColor {
    let RGBColor(r, g, b) = color(stage);
    let light = |c: u8| ((u16::from(c) + 255) / 2) as u8;
    match pass {
        Pass::Forward => RGBColor(light(r), light(g), light(b)),
        Pass::Backward => color(stage),
        Pass::Update => UPDATE,
    }
}

/// The fill of the update (all-reduce and optimizer) boxes.
const UPDATE: RGBColor = RGBColor(80, 80, 80);

/// The fill of idle time.
const IDLE: RGBColor = RGBColor(238, 238, 238);

/// Draws the timeline.
pub(super) fn draw(area: &Area, picture: &PlanPicture) -> Drawn {
    let plan = picture.plan;
    let stages = picture.stages.len();
    let m = plan.config.micro_batches;
    let slots = one_f_one_b(&picture.stages, m);
    let step = plan.prediction.step_seconds;
    let end = slots.iter().map(|s| s.end).fold(step, f64::max) * 1.03;
    let unit = time_unit(end);
    let dp = plan.config.degrees.dp;
    let caption = if dp > 1 {
        format!(
            "1F1B schedule of one step, {m} micro-batch(es) per replica; each of the {dp} replicas runs it at once"
        )
    } else {
        format!(
            "1F1B schedule of one step, {m} micro-batch(es); gaps are idle time (pipeline bubbles)"
        )
    };
    let (_, total) = area.dim_in_pixel();
    let (body, legend) = area.split_vertically(total - 30);
    let mut chart = ChartBuilder::on(&body)
        .caption(caption, font(15.0))
        .margin(10)
        .margin_top(14)
        .margin_right(120)
        .x_label_area_size(40)
        .y_label_area_size(LABELS)
        .build_cartesian_2d(0.0..unit.of(end), 0.0..stages as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(10)
        .x_desc(format!("time within the step ({})", unit.name))
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .draw()?;
    let top = |s: usize| (stages - s) as f64 - 0.12;
    let bottom = |s: usize| (stages - s - 1) as f64 + 0.12;
    for s in 0..stages {
        chart.draw_series([Rectangle::new(
            [(0.0, bottom(s)), (unit.of(step), top(s))],
            IDLE.filled(),
        )])?;
        let stage = &plan.config.stages[s];
        let names = stage.devices[0]
            .iter()
            .map(|&d| picture.cluster.devices[d].name.as_str());
        let types: Vec<String> = device_types(names)
            .into_iter()
            .map(|(name, count)| counted(name, count))
            .collect();
        let mut devices = types.join(", ");
        if dp > 1 {
            devices.push_str(&format!(" in each of {dp} replicas"));
        }
        let label_px = if row(stages) >= 30 { 11.5 } else { 10.0 };
        let room = f64::from(LABELS) - 16.0;
        let lines = [
            format!("stage {s}: layers {}", plan.stage_label(s)),
            devices,
        ];
        let shown = if row(stages) >= 30 {
            &lines[..]
        } else {
            &lines[..1]
        };
        for (i, line) in shown.iter().enumerate() {
            let dy = (i as f64 - (shown.len() as f64 - 1.0) / 2.0) * (label_px + 3.0);
            chart.draw_series([EmptyElement::at((0.0, (top(s) + bottom(s)) / 2.0))
                + Text::new(
                    fit(line, room, label_px),
                    (-8, dy.round() as i32),
                    anchored(font(label_px), HPos::Right, VPos::Center),
                )])?;
        }
    }
    let (x0, _) = chart.backend_coord(&(0.0, 0.0));
    let (x1, _) = chart.backend_coord(&(unit.of(end), 0.0));
    let px_per_unit = f64::from(x1 - x0) / unit.of(end);
    for slot in &slots {
        let (a, b) = (unit.of(slot.start), unit.of(slot.end));
        let corners = [(a, bottom(slot.stage)), (b, top(slot.stage))];
        chart.draw_series([Rectangle::new(
            corners,
            pass_color(slot.pass, slot.stage).filled(),
        )])?;
        chart.draw_series([Rectangle::new(corners, WHITE.stroke_width(1))])?;
        let text = match slot.pass {
            Pass::Update => "update".to_string(),
            _ => (slot.micro + 1).to_string(),
        };
        if text_width(&text, 10.0) + 4.0 <= (b - a) * px_per_unit {
            let middle = ((a + b) / 2.0, (top(slot.stage) + bottom(slot.stage)) / 2.0);
            let ink = if slot.pass == Pass::Forward {
                font(10.0).color(&BLACK)
            } else {
                font(10.0).color(&WHITE)
            };
            chart.draw_series([EmptyElement::at(middle)
                + Text::new(text, (0, 0), anchored(ink, HPos::Center, VPos::Center))])?;
        }
    }
    let s = unit.of(step);
    chart.draw_series(DashedLineSeries::new(
        [(s, 0.0), (s, stages as f64)],
        6,
        4,
        BLACK.stroke_width(2),
    ))?;
    chart.draw_series([EmptyElement::at((s, stages as f64))
        + Text::new(
            format!("predicted step {}", unit.label(step)),
            (4, -3),
            anchored(font(12.0), HPos::Left, VPos::Bottom),
        )])?;
    let mut x = LABELS as i32 + 10;
    for (fill, label) in [
        (
            pass_color(Pass::Forward, 0),
            "forward (light; micro-batch number)",
        ),
        (pass_color(Pass::Backward, 0), "backward (full colour)"),
        (UPDATE, "gradient all-reduce + optimizer"),
        (IDLE, "idle (bubble)"),
    ] {
        x = swatch(&legend, (x, 6), fill, label, 12.0)?;
    }
    Ok(())
}
