//! Training a Graph Transformer on one device: the entry point over
//! [`parallel`](crate::parallel), which runs the optimisation loop, evaluation and early
//! stopping on one device or many; and figures of a run's sequences. What a run is made of
//! (options, sequences, metrics) lives in [`run`](crate::run), which both depend on.

mod figures;

pub use crate::run::{
    DeviceRun, EpochMetrics, HOST_CACHE_BYTES, LabelledSequence, Role, Sequences, TrainOptions,
    TrainReport, build_sequences, sequence_footprint, training_sequences,
};
pub use figures::{SequenceFigures, measure_sequences};

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
