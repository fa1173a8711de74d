//! `index.html`: the training pictures together with the run's settings.

use std::fmt::Write;

use crate::{TrainingRun, devices, training};

/// The file name.
pub(crate) const FILE: &str = "index.html";
/// The file name of the series behind the pictures.
pub(crate) const METRICS: &str = "metrics.json";

/// `text` with the characters HTML gives a meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The page: a summary line, the settings, both pictures and a link to the series.
pub(crate) fn page(run: &TrainingRun) -> String {
    let mut out = String::from(concat!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<title>MegaGraph training report</title>\n<style>\n",
        "body { font-family: sans-serif; margin: 2em auto; max-width: 1040px; color: #222; }\n",
        "table { border-collapse: collapse; } td, th { padding: 2px 12px 2px 0; text-align: left; }\n",
        "th { font-weight: normal; color: #666; } code { font-size: 90%; }\n",
        "img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }\n",
        "</style>\n</head>\n<body>\n<h1>MegaGraph training report</h1>\n",
    ));
    let last = run.epochs.last();
    match (run.best(), last) {
        (Some(best), Some(last)) => {
            let _ = writeln!(
                out,
                "<p>Best epoch {} of {}: validation accuracy {:.4}, test accuracy {:.4}; final training loss {:.4}.</p>",
                run.best_epoch, last.epoch, best.val_acc, best.test_acc, last.loss
            );
        }
        _ => out.push_str("<p>No epoch was run.</p>\n"),
    }
    let _ = writeln!(
        out,
        "<h2>Settings</h2>\n<table>\n<tr><th>command</th><td><code>{}</code></td></tr>",
        escape(&run.command)
    );
    for (name, value) in &run.settings {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</table>\n");
    for (title, file, size, alt) in [
        (
            "Training",
            training::FILE,
            training::SIZE,
            "loss and train/validation accuracy per epoch, best epoch marked",
        ),
        (
            "Devices",
            devices::FILE,
            devices::SIZE,
            "per device: measured step time and peak memory, beside the plan's prediction if any",
        ),
    ] {
        let _ = writeln!(
            out,
            "<h2>{title}</h2>\n<img src=\"{file}\" width=\"{}\" height=\"{}\" alt=\"{alt}\">",
            size.0, size.1
        );
    }
    let _ = writeln!(
        out,
        "<p>The series behind the pictures: <a href=\"{METRICS}\">{METRICS}</a>.</p>\n</body>\n</html>"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_settings_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
