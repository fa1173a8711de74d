//! The Graph Transformer, as burn modules.
//!
//! One forward pass takes one [`SequenceTensors`] (a graph-aware sequence of nodes already on
//! the device) and returns class logits for every node of the sequence.

mod attention;
mod config;
mod layer;
mod params;
mod propagate;
mod sequence;
mod state;
mod transfer;
mod transformer;

pub use attention::{AttentionKernel, BiasedAttention};
pub use config::ModelConfig;
pub use layer::GraphTransformerLayer;
pub use params::ModelPart;
pub use propagate::propagate;
pub use sequence::{EdgeTensors, HostSequence, SequenceTensors};
pub use state::{AdamMoments, ModelOptimizer, adam_moments, restore_adam};
pub use transformer::GraphTransformer;

use crate::{comm::RowExchangeBackend, kernels::BiasedAttentionBackend};

/// What the model needs of a backend: the fused attention and the row exchange of context
/// parallelism.
pub trait ModelBackend: BiasedAttentionBackend + RowExchangeBackend {}

impl<B: BiasedAttentionBackend + RowExchangeBackend> ModelBackend for B {}
