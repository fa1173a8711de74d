//! Progress of long steps of work (building sequences, profiling, the first epoch's kernel
//! compilation, inference), reported to a process-wide sink that the caller installs: the CLI
//! shows it on standard error. Without a sink nothing is reported.

use std::sync::{Arc, RwLock};
use std::time::Instant;

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    /// The task began.
    Begin {
        /// What it does, e.g. "profiling device 2 of 4".
        task: &'a str,
    },
    /// `done` of its `total` parts are done.
    Advance {
        /// The task.
        task: &'a str,
        /// Parts done.
        done: u64,
        /// Parts in all.
        total: u64,
    },
    /// The task ended after `seconds`.
    End {
        /// The task.
        task: &'a str,
        /// Its wall-clock seconds.
        seconds: f64,
    },
}

/// Where progress goes.
pub trait Sink: Send + Sync {
    /// Takes one event (called from any thread).
    fn event(&self, event: &Event<'_>);
}

/// The installed sink.
static SINK: RwLock<Option<Arc<dyn Sink>>> = RwLock::new(None);

/// Installs `sink` as where progress goes (`None`: nowhere).
pub fn set_sink(sink: Option<Arc<dyn Sink>>) {
    *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
}

/// Sends `event` to the sink, if one is installed.
fn send(event: &Event<'_>) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(sink) = sink {
        sink.event(event);
    }
}

/// A long task, reported as begun when made and as ended when dropped.
#[derive(Debug)]
pub struct Task {
    name: String,
    start: Instant,
}

/// Begins the task `name`.
pub fn task(name: impl Into<String>) -> Task {
    let task = Task {
        name: name.into(),
        start: Instant::now(),
    };
    send(&Event::Begin { task: &task.name });
    task
}

impl Task {
    /// Reports `done` of `total` parts done.
    pub fn advance(&self, done: u64, total: u64) {
        send(&Event::Advance {
            task: &self.name,
            done,
            total,
        });
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        send(&Event::End {
            task: &self.name,
            seconds: self.start.elapsed().as_secs_f64(),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Records every event as text.
    struct Recorder(Mutex<Vec<String>>);

    impl Sink for Recorder {
        fn event(&self, event: &Event<'_>) {
            let text = match event {
                Event::Begin { task } => format!("begin {task}"),
                Event::Advance { task, done, total } => format!("{task} {done}/{total}"),
                Event::End { task, .. } => format!("end {task}"),
            };
            self.0.lock().expect("not poisoned").push(text);
        }
    }

    #[test]
    fn a_task_reports_begin_advance_and_end() {
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        set_sink(Some(recorder.clone()));
        {
            let t = task("work");
            t.advance(1, 2);
        }
        set_sink(None);
        drop(task("unseen"));
        let events = recorder.0.lock().expect("not poisoned").clone();
        assert_eq!(events, ["begin work", "work 1/2", "end work"]);
    }
}
