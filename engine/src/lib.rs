//! MegaGraph engine: graph data, the Graph Transformer model, devices and training.

#![deny(missing_docs)]

pub mod bench;
pub mod checkpoint;
pub mod comm;
pub mod device;
mod error;
pub mod graph;
pub mod host;
pub mod infer;
pub mod kernels;
mod linear_map;
pub mod memory;
pub mod model;
pub mod parallel;
pub mod profile;
pub mod progress;
pub mod run;
mod timing;
pub mod train;

pub use error::EngineError;

/// The burn version the engine is built on, for callers and tests that build tensors.
pub use burn;
