//! The device strip: one box per device, as wide as its share of the cluster's FLOP/s,
//! coloured by pipeline stage and labelled with its name, layers, node share and replica.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::PlanPicture;
use crate::canvas::{Area, Drawn, GREY, LINE_HEIGHT, anchored, color, fit_block, font, text_width};

/// Pixels left and right of the strip.
const SIDE: i32 = 12;
/// Top and height of the boxes.
const TOP: i32 = 58;
const HEIGHT: i32 = 124;

/// FLOP/s with an SI prefix.
fn flops(value: f64) -> String {
    let (scale, prefix) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")]
        .into_iter()
        .find(|(s, _)| value >= *s)
        .unwrap_or((1.0, ""));
    format!("{:.1} {prefix}FLOP/s", value / scale)
}

/// Draws the strip.
pub(super) fn draw(area: &Area, picture: &PlanPicture) -> Drawn {
    let plan = picture.plan;
    let devices = &picture.cluster.devices;
    let roles = plan.roles();
    let (width, _) = area.dim_in_pixel();
    area.draw(&Text::new(
        "Devices, each box as wide as its speed (share of the cluster's FLOP/s); colour = pipeline stage",
        (SIDE, 16),
        anchored(font(15.0), HPos::Left, VPos::Center),
    ))?;
    // Replica by replica, stage by stage, shard by shard; unused devices last.
    let mut order: Vec<usize> = (0..devices.len()).collect();
    order.sort_by_key(|&d| roles[d].map_or((usize::MAX, 0, 0), |(r, s, c)| (r, s, c)));
    let total: f64 = devices.iter().map(|d| d.flops).sum();
    let room = f64::from(width) - 2.0 * f64::from(SIDE);
    let mut x = f64::from(SIDE);
    let mut replica_span: Vec<(usize, i32, i32)> = Vec::new();
    for &d in &order {
        let w = room * devices[d].flops / total;
        let (left, right) = (x.round() as i32, (x + w).round() as i32 - 2);
        x += w;
        let mut lines = vec![format!("#{d} {}", devices[d].name)];
        let fill = match roles[d] {
            Some((r, s, _)) => {
                lines.push(format!("stage {s}, replica {r}"));
                lines.push(format!("layers {}", plan.stage_label(s)));
                lines.push(format!(
                    "node share {:.1}%",
                    100.0 * plan.config.node_shares[d]
                ));
                match replica_span.last_mut() {
                    Some(span) if span.0 == r => span.2 = right,
                    _ => replica_span.push((r, left, right)),
                }
                color(s).mix(0.35)
            }
            None => {
                lines.push("unused".to_string());
                GREY.mix(0.15)
            }
        };
        lines.push(flops(devices[d].flops));
        area.draw(&Rectangle::new(
            [(left, TOP), (right, TOP + HEIGHT)],
            fill.filled(),
        ))?;
        area.draw(&Rectangle::new(
            [(left, TOP), (right, TOP + HEIGHT)],
            BLACK.stroke_width(1),
        ))?;
        let room = (f64::from(right - left - 8), f64::from(HEIGHT - 8));
        let (px, lines) = fit_block(&lines, room, 13.0, 7.0);
        let line_height = px * LINE_HEIGHT;
        let first = f64::from(TOP) + (f64::from(HEIGHT) - line_height * lines.len() as f64) / 2.0;
        for (i, line) in lines.into_iter().enumerate() {
            let y = first + line_height * (i as f64 + 0.5);
            area.draw(&Text::new(
                line,
                (left + 4, y.round() as i32),
                anchored(font(px), HPos::Left, VPos::Center),
            ))?;
        }
    }
    if plan.config.degrees.dp > 1 {
        for (r, left, right) in replica_span {
            let y = TOP - 10;
            area.draw(&PathElement::new(
                vec![(left, y + 6), (left, y), (right, y), (right, y + 6)],
                GREY.stroke_width(2),
            ))?;
            let label = format!("replica {r}");
            if text_width(&label, 12.0) < f64::from(right - left) {
                area.draw(&Text::new(
                    label,
                    ((left + right) / 2, y - 3),
                    anchored(font(12.0).color(&GREY), HPos::Center, VPos::Bottom),
                ))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_get_a_prefix() {
        assert_eq!(flops(82.6e12), "82.6 TFLOP/s");
        assert_eq!(flops(1.9e9), "1.9 GFLOP/s");
    }
}
