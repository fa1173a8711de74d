//! The Graph Transformer, as burn modules.
//!
//! One forward pass takes one [`SequenceTensors`] (a graph-aware sequence of nodes already on
//! the device) and returns class logits for every node of the sequence.

mod attention;
mod config;
mod dropout;
mod layer;
mod params;
mod propagate;
mod sequence;
mod shard;
mod state;
mod transfer;
mod transformer;

pub use attention::{AttentionKernel, BiasedAttention, OwnProjection};
pub use config::ModelConfig;
pub use dropout::{DropoutSite, dropout, feature_dropout};
pub use layer::GraphTransformerLayer;
pub use megagraph_planner::{AttentionScope, DEFAULT_MAX_PAIRS};
pub use params::{ModelPart, ParameterShapes};
pub use propagate::propagate;
pub use sequence::{AttentionPairs, KeyExchange, SequenceInput, SequenceTensors};
pub use shard::{HostSequence, SequencePairs, ShardSpec};
pub use state::{AdamMoments, ModelOptimizer, adam_moments, restore_adam};
pub use transformer::GraphTransformer;

use crate::{
    comm::ExchangeBackend,
    device::MemoryProbe,
    kernels::{BiasedAttentionBackend, CounterDropoutBackend, HopsAttentionBackend},
};

/// What the model needs of a backend: the fused attention of both scopes, counter-based
/// dropout, the row exchanges of context parallelism, and the device's buffer limit (the
/// feed-forward block runs in row blocks within it).
pub trait ModelBackend:
    BiasedAttentionBackend
    + HopsAttentionBackend
    + CounterDropoutBackend
    + ExchangeBackend
    + MemoryProbe
{
}

impl<
    B: BiasedAttentionBackend
        + HopsAttentionBackend
        + CounterDropoutBackend
        + ExchangeBackend
        + MemoryProbe,
> ModelBackend for B
{
}
