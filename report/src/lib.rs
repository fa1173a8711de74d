//! MegaGraph reports: what happened, as pictures.
//!
//! [`write_training`] writes a training run's `training.svg` (loss and accuracy per epoch,
//! the best epoch marked), `devices.svg` (per device, measured step time and peak memory
//! beside a plan's prediction), `metrics.json` (the series behind them) and `index.html`
//! (both pictures with the run's settings). [`write_plan`] writes a plan's `plan.svg`: the
//! devices to scale of their speed with their layers and node shares, the 1F1B timeline of
//! one step, and predicted step time and peak memory against the baselines. The crate
//! depends on the planner but not on the engine: callers convert what they measured into a
//! [`TrainingRun`].

#![deny(missing_docs)]

mod bars;
mod canvas;
#[cfg(any(test, feature = "check"))]
pub mod check;
mod devices;
mod error;
mod html;
mod plan;
mod run;
mod schedule;
mod training;
mod write;

pub use error::ReportError;
pub use run::{DeviceUse, EpochPoint, METRICS_SCHEMA_VERSION, TrainingRun};
pub use write::{check_writable, write_plan, write_training};
