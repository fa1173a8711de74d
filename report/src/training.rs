//! `training.svg`: loss and train/validation accuracy per epoch, the best epoch marked.

use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::prelude::*;

use crate::canvas::{Area, Drawn, GREY, color, font, svg, tick};
use crate::{EpochPoint, ReportError, TrainingRun};

/// The file name.
pub(crate) const FILE: &str = "training.svg";
/// Width × height in pixels.
pub(crate) const SIZE: (u32, u32) = (900, 640);

/// The picture of `run`'s epochs.
pub(crate) fn draw(run: &TrainingRun) -> Result<String, ReportError> {
    if run.epochs.is_empty() {
        return Err(ReportError::Empty {
            file: FILE,
            reason: "the run has no epochs".to_string(),
        });
    }
    svg(FILE, SIZE, |root| {
        let (top, bottom) = root.split_vertically(SIZE.1 / 2);
        loss_panel(&top, run)?;
        accuracy_panel(&bottom, run)
    })
}

/// A chart over the run's epochs (`0..=n+1`, so that the first and last sit off the axes,
/// labelled at the epochs only) and `y`.
type EpochChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordi32, RangedCoordf64>>;

/// The chart of one panel with its caption, axes and axis descriptions.
fn epoch_chart<'a, 'b>(
    area: &'a Area<'b>,
    run: &TrainingRun,
    caption: &str,
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Result<EpochChart<'a, 'b>, Box<dyn std::error::Error>> {
    let last = run.epochs.iter().map(|e| e.epoch).max().unwrap_or(1) as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(17.0))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(0..last + 1, y)?;
    let epoch = |e: &i32| {
        if (1..=last).contains(e) {
            e.to_string()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels((last as usize + 2).min(12))
        .x_label_formatter(&epoch)
        .y_labels(6)
        .y_label_formatter(&tick)
        .x_desc("epoch")
        .y_desc(y_desc)
        .label_style(font(12.0))
        .axis_desc_style(font(13.0))
        .draw()?;
    Ok(chart)
}

/// One series as a line with dots, in legend colour `c`.
fn series(
    chart: &mut EpochChart,
    name: &str,
    points: impl Iterator<Item = (i32, f64)> + Clone,
    c: usize,
) -> Drawn {
    let style = color(c).stroke_width(2);
    chart
        .draw_series(LineSeries::new(points.clone(), style))?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    chart.draw_series(points.map(move |p| Circle::new(p, 3, color(c).filled())))?;
    Ok(())
}

/// The best epoch as a vertical dashed line over `y`, then the legend at `position`.
fn best_and_legend<'a, 'b: 'a>(
    chart: &mut EpochChart<'a, 'b>,
    run: &TrainingRun,
    y: (f64, f64),
    position: SeriesLabelPosition,
) -> Drawn {
    let best = run.best_epoch as i32;
    chart
        .draw_series(DashedLineSeries::new(
            [(best, y.0), (best, y.1)],
            6,
            4,
            GREY.stroke_width(2),
        ))?
        .label("best epoch (the model kept)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREY.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(position)
        .label_font(font(12.0))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn loss_panel(area: &Area, run: &TrainingRun) -> Drawn {
    let finite = run.epochs.iter().map(|e| e.loss).filter(|l| l.is_finite());
    let top = finite.fold(0.0, f64::max).max(1e-3) * 1.1;
    let y_desc = "loss (mean cross-entropy, nats)";
    let mut chart = epoch_chart(area, run, "Training loss per epoch", 0.0..top, y_desc)?;
    let points = run.epochs.iter().map(|e| (e.epoch as i32, e.loss));
    series(&mut chart, "training loss", points, 0)?;
    best_and_legend(&mut chart, run, (0.0, top), SeriesLabelPosition::UpperRight)
}

fn accuracy_panel(area: &Area, run: &TrainingRun) -> Drawn {
    let top = 105.0;
    let caption = match run.best() {
        Some(best) => format!(
            "Accuracy per epoch; best epoch {}: validation {:.1}%, test {:.1}%",
            run.best_epoch,
            100.0 * best.val_acc,
            100.0 * best.test_acc
        ),
        None => "Accuracy per epoch".to_string(),
    };
    let mut chart = epoch_chart(area, run, &caption, 0.0..top, "accuracy (% of nodes)")?;
    let percent = |f: fn(&EpochPoint) -> f64| {
        run.epochs
            .iter()
            .map(move |e| (e.epoch as i32, 100.0 * f(e)))
    };
    series(&mut chart, "train accuracy", percent(|e| e.train_acc), 2)?;
    series(&mut chart, "validation accuracy", percent(|e| e.val_acc), 5)?;
    if let Some(point) = run.best() {
        let at = (run.best_epoch as i32, 100.0 * point.val_acc);
        chart.draw_series([Circle::new(at, 7, BLACK.stroke_width(2))])?;
    }
    best_and_legend(&mut chart, run, (0.0, top), SeriesLabelPosition::LowerRight)
}
