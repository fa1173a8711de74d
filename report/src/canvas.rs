//! What every picture shares: the SVG canvas, palette, text styles, axis units, hatching and
//! labels that fit their room.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::ReportError;

/// A drawing area in pixels of an SVG being written.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What a drawing step returns: any plotters error, turned into [`ReportError::Draw`].
pub(crate) type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Draws a `size` (width × height pixels) SVG on a white background with `draw`.
pub(crate) fn svg(
    file: &'static str,
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Drawn,
) -> Result<String, ReportError> {
    let mut text = String::new();
    let drawn = (|| {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
        Ok(())
    })();
    drawn.map_err(|e: Box<dyn std::error::Error>| ReportError::Draw {
        file,
        message: e.to_string(),
    })?;
    Ok(text)
}

/// Okabe–Ito colours, distinguishable with colour-blindness: series, devices, stages.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
];

/// The `i`-th palette colour, cycling.
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// What does not fit in memory.
pub(crate) const OVERFLOW: RGBColor = RGBColor(200, 30, 30);
/// Secondary ink: baselines, limits, notes.
pub(crate) const GREY: RGBColor = RGBColor(110, 110, 110);

/// Plotters text sizes are 1.24 × the SVG font size in pixels.
const PLOTTERS_SIZE_PER_PX: f64 = 1.24;
/// Mean advance of a sans-serif glyph, in font sizes (DejaVu Sans measures about 0.57).
const GLYPH_WIDTH: f64 = 0.58;

/// Sans-serif text of `px` pixels, black, anchored at its left baseline.
pub(crate) fn font(px: f64) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", px * PLOTTERS_SIZE_PER_PX).into_font()).color(&BLACK)
}

/// `style` anchored at `h` and `v` instead.
pub(crate) fn anchored(style: TextStyle<'static>, h: HPos, v: VPos) -> TextStyle<'static> {
    style.pos(Pos::new(h, v))
}

/// The estimated width in pixels of `text` at `px` pixels.
pub(crate) fn text_width(text: &str, px: f64) -> f64 {
    text.chars().count() as f64 * px * GLYPH_WIDTH
}

/// `text`, cut with an ellipsis so that it is at most `width` pixels wide at `px` pixels.
pub(crate) fn fit(text: &str, width: f64, px: f64) -> String {
    if text_width(text, px) <= width {
        return text.to_string();
    }
    let keep = (width / (px * GLYPH_WIDTH)).floor() as usize;
    let mut cut: String = text.chars().take(keep.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` broken at spaces into lines of at most `chars` characters (a longer word stays
/// whole on its own line).
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Line height in font sizes.
pub(crate) const LINE_HEIGHT: f64 = 1.3;

/// The largest font size from `max_px` down to `min_px` at which `lines`, wrapped at spaces
/// where needed, fit a `width × height` pixel box, and the wrapped lines (at `min_px`, cut
/// with an ellipsis where they still do not fit).
pub(crate) fn fit_block(
    lines: &[String],
    (width, height): (f64, f64),
    max_px: f64,
    min_px: f64,
) -> (f64, Vec<String>) {
    let mut px = max_px;
    loop {
        let chars = (width / (px * GLYPH_WIDTH)).floor().max(1.0) as usize;
        let wrapped: Vec<String> = lines.iter().flat_map(|l| wrap(l, chars)).collect();
        let fits_across = wrapped.iter().all(|l| text_width(l, px) <= width);
        if fits_across && wrapped.len() as f64 * px * LINE_HEIGHT <= height {
            return (px, wrapped);
        }
        if px <= min_px {
            let cut = lines.iter().map(|l| fit(l, width, min_px)).collect();
            return (min_px, cut);
        }
        px = (px - 0.5).max(min_px);
    }
}

/// An axis tick value with no trailing zeros: `2`, `0.5`, `12.25`.
pub(crate) fn tick(value: &f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An axis unit: its name and how many base units (seconds, bytes) it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Unit {
    pub name: &'static str,
    pub size: f64,
}

impl Unit {
    /// `value` (in base units) in this unit.
    pub fn of(&self, value: f64) -> f64 {
        value / self.size
    }

    /// `value` (in base units) with three significant digits and the unit's name.
    pub fn label(&self, value: f64) -> String {
        let v = self.of(value);
        let digits = if v >= 100.0 {
            0
        } else if v >= 10.0 {
            1
        } else {
            2
        };
        format!("{v:.digits$} {}", self.name)
    }
}

/// The largest of s, ms, µs in which `max_seconds` is at least 1.
pub(crate) fn time_unit(max_seconds: f64) -> Unit {
    [("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)]
        .into_iter()
        .map(|(name, size)| Unit { name, size })
        .find(|u| max_seconds >= u.size)
        .unwrap_or(Unit {
            name: "µs",
            size: 1e-6,
        })
}

/// GiB, or MiB, or KiB: the largest in which `max_bytes` is at least 1.
pub(crate) fn byte_unit(max_bytes: f64) -> Unit {
    [("GiB", 30), ("MiB", 20), ("KiB", 10)]
        .into_iter()
        .map(|(name, shift)| Unit {
            name,
            size: (1u64 << shift) as f64,
        })
        .find(|u| max_bytes >= u.size)
        .unwrap_or(Unit {
            name: "KiB",
            size: 1024.0,
        })
}

/// Diagonal hatching, 45°, every `step` pixels, inside the pixel rectangle `a`–`b`.
pub(crate) fn hatch(area: &Area, a: (i32, i32), b: (i32, i32), color: RGBColor) -> Drawn {
    let (x0, x1) = (a.0.min(b.0), a.0.max(b.0));
    let (y0, y1) = (a.1.min(b.1), a.1.max(b.1));
    let step = 6;
    let style = color.stroke_width(1);
    // Lines x − y = c for c from x0 − y1 to x1 − y0, clipped to the rectangle.
    let mut c = x0 - y1 + step;
    while c < x1 - y0 {
        let start = (c + y0).max(x0);
        let end = (c + y1).min(x1);
        if start < end {
            area.draw(&PathElement::new(
                vec![(start, start - c), (end, end - c)],
                style,
            ))?;
        }
        c += step;
    }
    Ok(())
}

/// A legend swatch and its label, drawn at `at` (the swatch's top left); returns the x just
/// past the label.
pub(crate) fn swatch(
    area: &Area,
    at: (i32, i32),
    fill: RGBColor,
    label: &str,
    px: f64,
) -> Result<i32, Box<dyn std::error::Error>> {
    let (x, y) = at;
    let side = px.round() as i32;
    area.draw(&Rectangle::new(
        [(x, y), (x + side, y + side)],
        fill.filled(),
    ))?;
    area.draw(&Rectangle::new(
        [(x, y), (x + side, y + side)],
        BLACK.stroke_width(1),
    ))?;
    area.draw(&Text::new(
        label.to_string(),
        (x + side + 5, y + side / 2),
        anchored(font(px), HPos::Left, VPos::Center),
    ))?;
    Ok(x + side + 5 + text_width(label, px).ceil() as i32 + 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_keep_the_largest_value_at_least_one() {
        assert_eq!(time_unit(9.5).name, "s");
        assert_eq!(time_unit(0.02).name, "ms");
        assert_eq!(time_unit(3e-5).name, "µs");
        assert_eq!(time_unit(0.0).name, "µs");
        assert_eq!(byte_unit(24.0 * (1u64 << 30) as f64).name, "GiB");
        assert_eq!(byte_unit(54e6).name, "MiB");
        assert_eq!(time_unit(0.0125).label(0.0125), "12.5 ms");
        assert_eq!(byte_unit(3e9).label(3e9), "2.79 GiB");
        assert_eq!(
            (tick(&2.0), tick(&0.5), tick(&12.25), tick(&0.0)),
            ("2".into(), "0.5".into(), "12.25".into(), "0".into())
        );
    }

    #[test]
    fn long_labels_are_cut_to_their_room() {
        assert_eq!(fit("rtx4090", 200.0, 12.0), "rtx4090");
        let cut = fit("llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)", 100.0, 10.0);
        assert!(
            cut.ends_with('…') && text_width(&cut, 10.0) <= 100.0,
            "{cut}"
        );
        assert_eq!(
            wrap("layers 17..24 + head", 13),
            vec!["layers 17..24", "+ head"]
        );
        let lines = [
            "#4 a100-pcie-80gb".to_string(),
            "layers 17..24 + head".to_string(),
        ];
        let (px, wide) = fit_block(&lines, (400.0, 100.0), 13.0, 7.0);
        assert_eq!((px, wide.as_slice()), (13.0, &lines[..]));
        let (px, narrow) = fit_block(&lines, (80.0, 100.0), 13.0, 7.0);
        assert!(px >= 7.0 && narrow.len() >= 3, "{px} {narrow:?}");
        assert!(
            narrow.iter().all(|l| text_width(l, px) <= 80.0),
            "{narrow:?}"
        );
        let (px, cut) = fit_block(&lines, (20.0, 10.0), 13.0, 7.0);
        assert_eq!((px, cut.len()), (7.0, 2));
        assert!(cut.iter().all(|l| l.ends_with('…')), "{cut:?}");
    }

    #[test]
    fn an_svg_has_the_size_asked_for() -> Result<(), ReportError> {
        let text = svg("t.svg", (320, 200), |area| {
            hatch(area, (10, 10), (100, 60), OVERFLOW)?;
            swatch(area, (10, 100), color(0), "label", 12.0)?;
            Ok(())
        })?;
        assert!(text.contains(r#"width="320""#) && text.contains(r#"height="200""#));
        assert!(
            text.contains("<line") || text.contains("<polyline"),
            "{text}"
        );
        Ok(())
    }
}
