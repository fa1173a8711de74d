//! The Graph Transformer, as burn modules.
//!
//! One forward pass takes one [`SequenceTensors`] (a graph-aware sequence of nodes already on
//! the device) and returns class logits for every node of the sequence.

mod attention;
mod config;
mod layer;
mod propagate;
mod sequence;
mod transfer;
mod transformer;

pub use attention::{AttentionKernel, BiasedAttention};
pub use config::ModelConfig;
pub use layer::GraphTransformerLayer;
pub use propagate::propagate;
pub(crate) use sequence::int_tensor;
pub use sequence::{EdgeTensors, HostSequence, SequenceTensors};
pub use transformer::GraphTransformer;
