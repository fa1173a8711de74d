//! Progress of long work: a bar on a terminal, plain periodic log lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use megagraph_engine::train::EpochMetrics;

/// Reports training epochs to standard error.
pub enum EpochProgress {
    /// An indicatif bar (standard error is a terminal).
    Bar(ProgressBar),
    /// A log line at most every `every` (standard error is a file or pipe).
    Lines {
        every: Duration,
        last: Option<Instant>,
    },
}

impl EpochProgress {
    /// A reporter for up to `epochs` epochs, suited to where standard error goes.
    pub fn new(epochs: usize) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(epochs as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] epoch {pos}/{len} {msg}",
                )
                .expect("the template is valid")
                .progress_chars("=> "),
            );
            Self::Bar(bar)
        } else {
            Self::Lines {
                every: Duration::from_secs(5),
                last: None,
            }
        }
    }

    /// Reports one finished epoch.
    pub fn epoch(&mut self, m: &EpochMetrics) {
        let summary = format!(
            "loss {:.4}  train {:.3}  val {:.3}  test {:.3}  ({:.2} s/epoch)",
            m.loss, m.train_acc, m.val_acc, m.test_acc, m.seconds
        );
        match self {
            Self::Bar(bar) => {
                bar.set_position(m.epoch as u64);
                bar.set_message(summary);
            }
            Self::Lines { every, last } => {
                if last.is_none_or(|t| t.elapsed() >= *every) {
                    eprintln!("epoch {:>4}  {summary}", m.epoch);
                    *last = Some(Instant::now());
                }
            }
        }
    }

    /// Ends the report.
    pub fn finish(self) {
        if let Self::Bar(bar) = self {
            bar.finish();
        }
    }
}
