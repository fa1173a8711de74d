//! Progress of long work on standard error: bars and spinners on a terminal, plain periodic
//! log lines otherwise. Quiet under `--json` unless `--progress` is given, and in every
//! process of an `mpirun` job but the first.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use megagraph_engine::progress::{Event, Sink, set_sink};
use megagraph_engine::train::EpochMetrics;

/// A task shown as a line only once it has run this long (quick ones stay silent), unless
/// [`ANNOUNCE_AFTER_VAR`] says otherwise.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(2);
/// Seconds a task runs before its line shows, overriding [`ANNOUNCE_AFTER`]; `0` shows every
/// task as it begins.
pub const ANNOUNCE_AFTER_VAR: &str = "MEGAGRAPH_PROGRESS_AFTER";

/// How long a task runs before its line shows: [`ANNOUNCE_AFTER_VAR`] when it holds a
/// non-negative number of seconds, else [`ANNOUNCE_AFTER`].
fn announce_after() -> Duration {
    static AFTER: OnceLock<Duration> = OnceLock::new();
    *AFTER.get_or_init(|| {
        std::env::var(ANNOUNCE_AFTER_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .unwrap_or(ANNOUNCE_AFTER)
    })
}
/// A running task's line repeats this often.
const REPEAT_EVERY: Duration = Duration::from_secs(10);

/// Whether progress is shown: without `--json`, or with `--progress`; never in an `mpirun`
/// process other than the first (the first one speaks for the job).
pub fn shown(json: bool, progress: bool) -> bool {
    let rank = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok());
    (!json || progress) && rank.is_none_or(|r| r == "0")
}

/// Shows the engine's long tasks on standard error when [`shown`].
pub fn install(json: bool, progress: bool) {
    if shown(json, progress) {
        set_sink(Some(StderrSink::start()));
    }
}

/// The bars of this process, drawn together on a terminal.
fn bars() -> &'static MultiProgress {
    static BARS: OnceLock<MultiProgress> = OnceLock::new();
    BARS.get_or_init(MultiProgress::new)
}

/// A task being shown.
struct Running {
    name: String,
    start: Instant,
    parts: Option<(u64, u64)>,
    /// Its spinner, on a terminal.
    spinner: Option<ProgressBar>,
    /// When its last line was printed (not a terminal), if one was.
    last_line: Option<Instant>,
}

impl Running {
    /// The line saying where it stands.
    fn line(&self) -> String {
        let seconds = self.start.elapsed().as_secs();
        match self.parts {
            Some((done, total)) => format!("{}: {done}/{total} ({seconds} s)", self.name),
            None => format!("{}… ({seconds} s)", self.name),
        }
    }
}

/// The engine's tasks on standard error.
struct StderrSink {
    terminal: bool,
    running: Arc<Mutex<Vec<Running>>>,
}

impl StderrSink {
    /// A sink for where standard error goes; off a terminal, with the thread that prints the
    /// lines of tasks that run long.
    fn start() -> Arc<Self> {
        let sink = Arc::new(Self {
            terminal: std::io::stderr().is_terminal(),
            running: Arc::new(Mutex::new(Vec::new())),
        });
        if !sink.terminal {
            let running = sink.running.clone();
            std::thread::spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(250));
                    let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
                    for task in running.iter_mut() {
                        let due = match task.last_line {
                            None => task.start.elapsed() >= announce_after(),
                            Some(last) => last.elapsed() >= REPEAT_EVERY,
                        };
                        if due {
                            eprintln!("{}", task.line());
                            task.last_line = Some(Instant::now());
                        }
                    }
                }
            });
        }
        sink
    }
}

impl Sink for StderrSink {
    fn event(&self, event: &Event<'_>) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match *event {
            Event::Begin { task } => {
                let spinner = self.terminal.then(|| {
                    let spinner = bars().add(ProgressBar::new_spinner());
                    spinner.set_style(
                        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                            .expect("the template is valid"),
                    );
                    spinner.set_message(task.to_string());
                    spinner.enable_steady_tick(Duration::from_millis(120));
                    spinner
                });
                let mut started = Running {
                    name: task.to_string(),
                    start: Instant::now(),
                    parts: None,
                    spinner,
                    last_line: None,
                };
                if !self.terminal && announce_after().is_zero() {
                    eprintln!("{}", started.line());
                    started.last_line = Some(Instant::now());
                }
                running.push(started);
            }
            Event::Advance { task, done, total } => {
                if let Some(r) = running.iter_mut().rev().find(|r| r.name == task) {
                    r.parts = Some((done, total));
                    if let Some(spinner) = &r.spinner {
                        spinner.set_message(format!("{task}: {done}/{total}"));
                    }
                }
            }
            Event::End { task, seconds } => {
                let Some(at) = running.iter().rposition(|r| r.name == task) else {
                    return;
                };
                let r = running.remove(at);
                let line = format!("{task}: done in {seconds:.1} s");
                match r.spinner {
                    Some(spinner) => {
                        spinner.finish_and_clear();
                        if seconds >= announce_after().as_secs_f64() {
                            let _ = bars().println(line);
                        }
                    }
                    None if r.last_line.is_some() => eprintln!("{line}"),
                    None => {}
                }
            }
        }
    }
}

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
            let bar = bars().add(ProgressBar::new(epochs as u64));
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
