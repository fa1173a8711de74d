//! Training a Graph Transformer: sequences, the optimisation loop (run by
//! [`parallel`](crate::parallel) on one device or many), evaluation and early stopping.

mod metrics;
mod options;
mod sequences;

pub use metrics::{DeviceRun, EpochMetrics, TrainReport};
pub use options::TrainOptions;
pub use sequences::{LabelledSequence, Role, build as build_sequences};

use burn::tensor::backend::AutodiffBackend;

use crate::{
    EngineError,
    device::MemoryProbe,
    graph::{Graph, Split},
    model::ModelBackend,
    parallel::{Layout, train_parallel},
};

/// Trains a model on `graph` with `split` on one `device`, calling `on_epoch` after every
/// epoch: one optimizer step per sequence.
///
/// The reported accuracies are those of the epoch of best validation accuracy.
pub fn train<B>(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    device: &B::Device,
    on_epoch: &mut dyn FnMut(&EpochMetrics),
) -> Result<TrainReport, EngineError>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    let layout = Layout::single(options.model.layers);
    train_parallel::<B>(
        graph,
        split,
        options,
        &layout,
        std::slice::from_ref(device),
        on_epoch,
    )
}
