//! MegaGraph engine: graph data, the Graph Transformer model, devices and training.

pub mod bench;
pub mod checkpoint;
pub mod comm;
pub mod device;
mod error;
pub mod graph;
pub mod kernels;
pub mod model;
pub mod parallel;
pub mod profile;
mod timing;
pub mod train;

pub use error::EngineError;

/// The burn version the engine is built on, for callers and tests that build tensors.
pub use burn;
