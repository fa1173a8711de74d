//! Checks that an SVG renders: rasterised with resvg, text through the system's fonts, at
//! the size the SVG states, with ink on it, and pixels changed by its text. For tests; built with
//! the `check` feature.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use resvg::tiny_skia::Pixmap;
use resvg::usvg::{self, fontdb};

/// The least fraction of pixels that must differ from the white background.
const MIN_INK: f64 = 0.01;

/// Why an SVG does not pass.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The file cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The SVG does not parse.
    #[error("the SVG does not parse: {0}")]
    Parse(#[from] usvg::Error),
    /// The root element states no usable `width` and `height`.
    #[error("the SVG root states no width and height in pixels")]
    NoSize,
    /// The rendered size is not the stated one.
    #[error("the SVG states {stated:?} pixels but renders at {rendered:?}")]
    Size {
        /// `width`, `height` attributes.
        stated: (u32, u32),
        /// The pixmap's.
        rendered: (u32, u32),
    },
    /// There are no fonts, so text would not render.
    #[error("no fonts found on this system (install fonts-dejavu-core)")]
    NoFonts,
    /// Too little ink.
    #[error("only {ink} of {pixels} pixels are not background (need {MIN_INK} of them)")]
    Blank {
        /// Pixels that are not white.
        ink: usize,
        /// All pixels.
        pixels: usize,
    },
    /// The text added no ink: its fonts did not resolve.
    #[error("the SVG's text rendered no pixels (fonts for `sans-serif` not found)")]
    NoText,
}

/// What rendering found.
#[derive(Debug)]
pub struct Rendered {
    /// Width × height in pixels, as stated and as rendered.
    pub size: (u32, u32),
    /// Pixels that are not white.
    pub ink: usize,
    /// Pixels that the text changes.
    pub text_ink: usize,
    /// The bitmap.
    pub pixmap: Pixmap,
}

/// The system fonts, loaded once, with `sans-serif` mapped to a family that exists.
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            let sans = [
                "DejaVu Sans",
                "Liberation Sans",
                "Noto Sans",
                "Arial",
                "Helvetica",
            ];
            let family = sans
                .into_iter()
                .find(|f| {
                    db.faces()
                        .any(|face| face.families.iter().any(|(n, _)| n == f))
                })
                .map(str::to_string)
                .or_else(|| {
                    db.faces()
                        .next()
                        .and_then(|f| f.families.first().map(|(n, _)| n.clone()))
                });
            if let Some(family) = family {
                db.set_sans_serif_family(family);
            }
            Arc::new(db)
        })
        .clone()
}

/// The `width` and `height` attributes of the root `<svg>` element, in pixels.
fn stated_size(svg: &str) -> Option<(u32, u32)> {
    let start = svg.find("<svg")?;
    let tag = &svg[start..start + svg[start..].find('>')?];
    let attribute = |name: &str| -> Option<u32> {
        let key = format!(" {name}=\"");
        let at = tag.find(&key)? + key.len();
        let value = &tag[at..at + tag[at..].find('"')?];
        value.trim_end_matches("px").parse().ok()
    };
    Some((attribute("width")?, attribute("height")?))
}

/// Rasterises `svg` at its stated size and counts non-white pixels.
fn raster(svg: &str) -> Result<(Pixmap, usize), CheckError> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)?;
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height()).ok_or(CheckError::NoSize)?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let ink = pixmap
        .pixels()
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
        .count();
    Ok((pixmap, ink))
}

/// `svg` without its `<text>` elements.
fn without_text(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</text>") {
            Some(end) => rest = &rest[start + end + "</text>".len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Renders `svg` and checks it: the rendered size is the stated one, at least 1% of the
/// pixels carry ink, and its text (if any) changes pixels.
pub fn check_svg(svg: &str) -> Result<Rendered, CheckError> {
    let stated = stated_size(svg).ok_or(CheckError::NoSize)?;
    if fonts().is_empty() {
        return Err(CheckError::NoFonts);
    }
    let (pixmap, ink) = raster(svg)?;
    let rendered = (pixmap.width(), pixmap.height());
    if rendered != stated {
        return Err(CheckError::Size { stated, rendered });
    }
    let pixels = pixmap.pixels().len();
    if (ink as f64) < MIN_INK * pixels as f64 {
        return Err(CheckError::Blank { ink, pixels });
    }
    let (bare, _) = raster(&without_text(svg))?;
    let text_ink = pixmap
        .pixels()
        .iter()
        .zip(bare.pixels())
        .filter(|(a, b)| a != b)
        .count();
    if svg.contains("<text") && text_ink == 0 {
        return Err(CheckError::NoText);
    }
    Ok(Rendered {
        size: stated,
        ink,
        text_ink,
        pixmap,
    })
}

/// [`check_svg`] of the file at `path`.
pub fn check_svg_file(path: &Path) -> Result<Rendered, CheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| CheckError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    check_svg(&text)
}

/// The `src="…"` and `href="…"` values of an HTML page, in order.
pub fn html_references(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for key in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQUARE: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"><rect x="0" y="0" width="40" height="30" fill="#000"/></svg>"##;

    #[test]
    fn a_filled_svg_passes_and_a_blank_one_does_not() -> Result<(), CheckError> {
        let rendered = check_svg(SQUARE)?;
        assert_eq!(rendered.size, (40, 30));
        assert_eq!(rendered.ink, 1200);
        let blank = r#"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"></svg>"#;
        assert!(matches!(
            check_svg(blank),
            Err(CheckError::Blank { ink: 0, .. })
        ));
        assert!(matches!(check_svg("<svg></svg>"), Err(CheckError::NoSize)));
        Ok(())
    }

    #[test]
    fn text_renders_through_the_system_fonts() -> Result<(), CheckError> {
        let svg = SQUARE.replace(
            "</svg>",
            r##"<text x="2" y="25" font-family="sans-serif" font-size="20" fill="#fff">Ag</text></svg>"##,
        );
        assert_eq!(without_text(&svg), SQUARE);
        let rendered = check_svg(&svg)?;
        assert!(rendered.text_ink > 20, "{rendered:?}");
        Ok(())
    }

    #[test]
    fn references_are_found() {
        let html = r#"<img src="a.svg"><a href="b.json">b</a><img src="c.svg">"#;
        assert_eq!(html_references(html), vec!["a.svg", "c.svg", "b.json"]);
    }
}
