//! Grouped bar charts: bars per group with values on top, hatched bars, notes under groups,
//! horizontal limit lines and a legend.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::canvas::{
    Area, Drawn, GREY, OVERFLOW, Unit, anchored, fit, font, hatch, swatch, text_width, tick,
};

/// One bar.
pub(crate) struct Bar {
    /// Its height in base units (seconds, bytes).
    pub value: f64,
    pub color: RGBColor,
    /// Hatched red outline: over a limit.
    pub over: bool,
}

/// Bars side by side under one label.
pub(crate) struct Group {
    /// Label lines under the group.
    pub label: Vec<String>,
    pub bars: Vec<Bar>,
    /// A red note above the group's tallest bar, e.g. "does not fit".
    pub warning: Option<String>,
}

/// A chart of groups of bars.
pub(crate) struct BarChart {
    pub caption: String,
    /// A line under the caption, e.g. how the figures were taken.
    pub note: Option<String>,
    /// What the y axis measures, without the unit.
    pub y_desc: String,
    /// The unit of the axis for its largest value.
    pub unit: fn(f64) -> Unit,
    pub groups: Vec<Group>,
    /// Horizontal dashed lines at these values (base units), each labelled; those far above
    /// every bar are named in a note instead, so that the bars stay readable.
    pub limits: Vec<(f64, String)>,
    /// Legend entries.
    pub legend: Vec<(RGBColor, String)>,
}

/// Pixels of the label text under the groups.
const LABEL_PX: f64 = 11.0;
/// The widest a bar gets, pixels.
const MAX_BAR_PX: f64 = 150.0;
/// A limit more than this many times the tallest bar is noted, not drawn.
const OFF_SCALE: f64 = 3.0;

impl BarChart {
    /// Draws the chart into `area`.
    pub fn draw(&self, area: &Area) -> Drawn {
        let tallest = self
            .groups
            .iter()
            .flat_map(|g| g.bars.iter().map(|b| b.value))
            .fold(0.0, f64::max);
        let (shown, off): (Vec<_>, Vec<_>) = self
            .limits
            .iter()
            .partition(|(value, _)| tallest == 0.0 || *value <= OFF_SCALE * tallest);
        let peak = shown.iter().map(|l| l.0).fold(tallest, f64::max);
        let unit = (self.unit)(peak);
        let top = if peak > 0.0 {
            unit.of(peak) * 1.22
        } else {
            1.0
        };
        let n = self.groups.len().max(1) as f64;
        let label_lines = self.groups.iter().map(|g| g.label.len()).max().unwrap_or(1);
        let legend_rows = usize::from(!self.legend.is_empty());
        let (width, _) = area.dim_in_pixel();
        let middle = width as i32 / 2;
        let head = if self.note.is_some() { 48 } else { 30 };
        let (title, body) = area.split_vertically(head);
        title.draw(&Text::new(
            self.caption.clone(),
            (middle, 18),
            anchored(font(16.0), HPos::Center, VPos::Center),
        ))?;
        if let Some(note) = &self.note {
            title.draw(&Text::new(
                fit(note, f64::from(width) - 20.0, 12.0),
                (middle, 38),
                anchored(font(12.0).color(&GREY), HPos::Center, VPos::Center),
            ))?;
        }
        let mut chart = ChartBuilder::on(&body)
            .margin(10)
            .margin_top(4)
            .margin_bottom(10 + 20 * legend_rows as i32)
            .x_label_area_size(14 + 16 * label_lines as i32)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..n, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(6)
            .y_label_formatter(&tick)
            .y_desc(format!("{} ({})", self.y_desc, unit.name))
            .label_style(font(12.0))
            .axis_desc_style(font(13.0))
            .draw()?;
        let (x0, _) = chart.backend_coord(&(0.0, 0.0));
        let (x1, _) = chart.backend_coord(&(1.0, 0.0));
        let group_px = f64::from(x1 - x0);
        for (i, group) in self.groups.iter().enumerate() {
            self.draw_group(&mut chart, area, unit, i as f64, group, group_px)?;
        }
        for (value, label) in shown {
            let y = unit.of(*value);
            chart.draw_series(DashedLineSeries::new(
                [(0.0, y), (n, y)],
                8,
                5,
                GREY.stroke_width(2),
            ))?;
            chart.draw_series([EmptyElement::at((n, y))
                + Text::new(
                    label.clone(),
                    (-4, -4),
                    anchored(font(11.0).color(&GREY), HPos::Right, VPos::Bottom),
                )])?;
        }
        for (k, (_, label)) in off.into_iter().enumerate() {
            chart.draw_series([EmptyElement::at((n, top))
                + Text::new(
                    format!("{label} (above the scale)"),
                    (-4, 4 + 15 * k as i32),
                    anchored(font(11.0).color(&GREY), HPos::Right, VPos::Top),
                )])?;
        }
        self.draw_legend(area)
    }

    /// Group `i`'s bars, value labels, warning and label.
    fn draw_group(
        &self,
        chart: &mut ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        area: &Area,
        unit: Unit,
        i: f64,
        group: &Group,
        group_px: f64,
    ) -> Drawn {
        let k = group.bars.len().max(1) as f64;
        let width = (0.8 / k).min(MAX_BAR_PX / group_px);
        let first = i + 0.5 - width * k / 2.0;
        let mut tallest: f64 = 0.0;
        let mut labelled = true;
        for (j, bar) in group.bars.iter().enumerate() {
            let left = first + j as f64 * width;
            let right = left + width * 0.92;
            let y = unit.of(bar.value);
            tallest = tallest.max(y);
            let fill = if bar.over {
                OVERFLOW.mix(0.35)
            } else {
                bar.color.mix(1.0)
            };
            chart.draw_series([Rectangle::new([(left, 0.0), (right, y)], fill.filled())])?;
            let outline = if bar.over { OVERFLOW } else { BLACK };
            chart.draw_series([Rectangle::new(
                [(left, 0.0), (right, y)],
                outline.stroke_width(1),
            )])?;
            if bar.over {
                let a = chart.backend_coord(&(left, 0.0));
                let b = chart.backend_coord(&(right, y));
                hatch(area, relative(area, a), relative(area, b), OVERFLOW)?;
            }
            let text = unit.label(bar.value);
            if text_width(&text, 11.0) <= group_px * width * 1.3 {
                chart.draw_series([EmptyElement::at(((left + right) / 2.0, y))
                    + Text::new(
                        text,
                        (0, -3),
                        anchored(font(11.0), HPos::Center, VPos::Bottom),
                    )])?;
            } else {
                labelled = false;
            }
        }
        if !labelled {
            let most = group.bars.iter().map(|b| b.value).fold(0.0, f64::max);
            chart.draw_series([EmptyElement::at((i + 0.5, tallest))
                + Text::new(
                    format!("max {}", unit.label(most)),
                    (0, -3),
                    anchored(font(11.0), HPos::Center, VPos::Bottom),
                )])?;
        }
        if let Some(warning) = &group.warning {
            chart.draw_series([EmptyElement::at((i + 0.5, tallest))
                + Text::new(
                    warning.clone(),
                    (0, -18),
                    anchored(font(12.0).color(&OVERFLOW), HPos::Center, VPos::Bottom),
                )])?;
        }
        for (line, text) in group.label.iter().enumerate() {
            let text = fit(text, group_px * 0.98, LABEL_PX);
            chart.draw_series([EmptyElement::at((i + 0.5, 0.0))
                + Text::new(
                    text,
                    (0, 8 + 16 * line as i32),
                    anchored(font(LABEL_PX), HPos::Center, VPos::Top),
                )])?;
        }
        Ok(())
    }

    /// The legend in one row along the bottom of `area`.
    fn draw_legend(&self, area: &Area) -> Drawn {
        let (width, height) = area.dim_in_pixel();
        let mut x = 70;
        for (color, label) in &self.legend {
            let room = width as i32 - x - 30;
            if room < 40 {
                break;
            }
            let label = fit(label, f64::from(room), 12.0);
            x = swatch(area, (x, height as i32 - 22), *color, &label, 12.0)?;
        }
        Ok(())
    }
}

/// The backend coordinate `p` relative to `area`'s top left.
fn relative(area: &Area, p: (i32, i32)) -> (i32, i32) {
    let (x, y) = area.get_base_pixel();
    (p.0 - x, p.1 - y)
}
