//! Errors of the engine.

use crate::{comm::CommError, graph::GraphError, memory::OutOfMemory};

/// What would fit instead of a buffer `what` beyond `limit` bytes.
fn shard_advice(what: &str, limit: u64) -> String {
    let split = "split the sequence over more devices with context parallelism, e.g. --devices 4";
    match what {
        "near-pair" => format!(
            "at most {} near pairs fit one buffer: lower MAX in --scope hops:K:MAX, or {split}",
            limit / 4
        ),
        _ => format!("{split}, or lower --seq-len"),
    }
}

/// Everything that can go wrong in the engine on bad input or a missing device.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The graph could not be loaded or is invalid.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The graph's sequences would take more memory than the machine has.
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
    /// The model configuration is inconsistent.
    #[error("invalid model configuration: {0}")]
    InvalidConfig(String),
    /// The training options are inconsistent with the graph or each other.
    #[error("invalid training options: {0}")]
    InvalidOptions(String),
    /// The training loss stopped being a finite number.
    #[error(
        "training diverged at epoch {epoch}, step {step}: loss is {loss} (try a lower learning rate)"
    )]
    Diverged {
        /// The epoch (from 1).
        epoch: usize,
        /// The optimizer step (from 1).
        step: usize,
        /// The loss of that step.
        loss: f64,
    },
    /// No usable wgpu adapter.
    #[error(
        "no wgpu adapter found: install a Vulkan driver (e.g. `apt-get install mesa-vulkan-drivers libvulkan1` for the software one) or use --backend ndarray"
    )]
    NoAdapter,
    /// An adapter selector that names none of the adapters present.
    #[error(
        "no adapter {selector} here; present: [{present}] (see `megagraph devices`, and --backends for other graphics APIs)"
    )]
    AdapterNotFound {
        /// The selector as given.
        selector: String,
        /// The adapters of the list searched, as "position: id".
        present: String,
    },
    /// A plan that cannot run here: devices missing, another model shape, too little memory.
    #[error("cannot run the plan: {0}")]
    Plan(String),
    /// A shard's largest buffer exceeds what its device can allocate.
    #[error(
        "device {rank} cannot hold its shard of a {nodes}-node sequence: {rows} rows need a {needed}-byte {what} buffer, beyond the device's {limit}-byte buffer limit ({})",
        shard_advice(what, *limit)
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
    #[error("adapter {adapter} could not open a device: {reason}")]
    DeviceRequest {
        /// The adapter's name and API.
        adapter: String,
        /// What wgpu said.
        reason: String,
    },
}
