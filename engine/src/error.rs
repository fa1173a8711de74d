//! Errors of the engine.

use crate::{comm::CommError, graph::GraphError};

/// Everything that can go wrong in the engine on bad input or a missing device.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The graph could not be loaded or is invalid.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The model configuration is inconsistent.
    #[error("invalid model configuration: {0}")]
    InvalidConfig(String),
    /// The training options are inconsistent with the graph or each other.
    #[error("invalid training options: {0}")]
    InvalidOptions(String),
    /// No usable wgpu adapter.
    #[error(
        "no wgpu adapter found: install a Vulkan driver (e.g. `apt-get install mesa-vulkan-drivers libvulkan1` for the software one) or use --backend ndarray"
    )]
    NoAdapter,
    /// An adapter index beyond the adapters present.
    #[error(
        "adapter {index} requested but only {available} wgpu adapter(s) are present (see `megagraph devices`)"
    )]
    AdapterOutOfRange {
        /// The index asked for.
        index: usize,
        /// How many adapters there are.
        available: usize,
    },
    /// A plan that cannot run here: devices missing, another model shape, too little memory.
    #[error("cannot run the plan: {0}")]
    Plan(String),
    /// A shard's largest buffer exceeds what its device can allocate.
    #[error(
        "device {rank} cannot hold its shard of a {nodes}-node sequence: {rows} rows need a {needed}-byte {what} buffer, beyond the device's {limit}-byte buffer limit (split the sequence over more devices with context parallelism, e.g. --devices 4, or lower --seq-len)"
    )]
    ShardTooLarge {
        /// The device.
        rank: usize,
        /// Nodes of the sequence.
        nodes: usize,
        /// Rows of the device's shard.
        rows: usize,
        /// Which buffer.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// The device's limit.
        limit: u64,
    },
    /// Devices could not exchange data.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// A checkpoint could not be written, read or used.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// A device's worker failed.
    #[error("device {rank} failed: {message}")]
    Worker {
        /// The device (rank) whose worker failed.
        rank: usize,
        /// What went wrong.
        message: String,
    },
    /// The adapter refused to create a device.
    #[error("adapter {index} (\"{name}\") could not open a device: {reason}")]
    DeviceRequest {
        /// The adapter's index.
        index: usize,
        /// The adapter's name.
        name: String,
        /// What wgpu said.
        reason: String,
    },
}
