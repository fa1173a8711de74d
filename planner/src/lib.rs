//! MegaGraph planner: cluster and model specs, cost model, search.
//!
//! Profile → Model → Search: a [`ClusterSpec`] (measured devices and links) and a
//! [`ModelSpec`] (the Graph Transformer and its sequences) go in; [`predict`] gives the
//! per-device step time and peak memory of a [`ParallelConfig`] term by term; [`search()`]
//! finds the configuration of least predicted step time that fits every device, and
//! returns it as a [`Plan`] with the pure-DP, uniform-PP and uniform-CP baselines.
//! [`exhaustive_search`] is the brute-force oracle the search is tested against;
//! [`stage_times`] gives each pipeline stage's forward and backward for a timeline.

#![deny(missing_docs)]

mod balance;
mod baseline;
mod best;
mod bound;
mod cluster;
mod config;
mod cost;
mod enumerate;
mod error;
mod explain;
mod grid;
mod json;
mod model;
mod pipeline;
mod plan;
mod schedule;
mod scope;
mod search;
mod split;
mod stage;
#[cfg(test)]
mod testing;

pub use baseline::{Baseline, Baselines};
pub use cluster::{ClusterSpec, DeviceSpec, Link, Overhead, PairLink, StepOverhead, load_cluster};
pub use config::{Degrees, ParallelConfig, Stage};
pub use cost::{
    DevicePrediction, MEMORY_TOLERANCE, MemoryBreakdown, Prediction, TimeBreakdown, predict,
};
pub use error::PlannerError;
pub use model::{DEGREE_BUCKETS, HaloSpec, MAX_DISTANCE_LIMIT, ModelSpec, load_model};
pub use pipeline::{StageTime, stage_times};
pub use plan::Plan;
pub use schedule::{Pass, one_forward_one_backward};
pub use scope::{AttentionScope, DEFAULT_MAX_PAIRS};
pub use search::{exhaustive_search, search, search_fixed};

/// The `schema_version` of every document this planner reads and writes.
pub const SCHEMA_VERSION: u64 = 1;

/// Device bytes of uploaded sequences the engine keeps for reuse per sequence: each device's
/// sequence cache has its node share of it (a context-parallel shard with a quarter of the
/// rows has a quarter, so every shard of a group holds as many sequences, and the cost model's
/// term stays linear in the share); the sequences in flight are kept whatever their size.
pub const SEQUENCE_CACHE_BYTES: u64 = 1 << 30;
