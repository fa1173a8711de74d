//! What a training run is made of: its options, its sequences (the graph cut by METIS, their
//! nodes labelled, their pairs built on first use) and its metrics. [`train`](crate::train)
//! and [`parallel`](crate::parallel) both build on it, and neither on the other's insides.

mod metrics;
mod options;
mod sequences;

pub use metrics::{DeviceRun, EpochMetrics, TrainReport};
pub use options::TrainOptions;
pub use sequences::{
    HOST_CACHE_BYTES, LabelledSequence, Role, Sequences, build as build_sequences,
};

use crate::{
    EngineError,
    graph::{Graph, Split},
    memory::{GraphSize, PairBytes, SequenceMemory, check_host, sequence_memory},
    model::AttentionScope,
};

/// The estimated memory of the sequences of `graph` under `options`: with full attention
/// every node of a sequence holds a bucket byte for each node of it; with a `hops` scope a key
/// and a bucket for each of its near pairs (and global tokens).
pub fn sequence_footprint(graph: &Graph, options: &TrainOptions) -> SequenceMemory {
    let config = options.model_config(graph);
    let pairs = match config.scope {
        AttentionScope::Full => {
            let row = options.sequence_nodes(graph) as u64;
            PairBytes {
                host_per_row: row,
                device_per_row: row,
                host_cache: HOST_CACHE_BYTES as u64,
            }
        }
        AttentionScope::Hops { max_pairs, .. } => {
            let row = (max_pairs + config.global_tokens) as u64 * 5;
            PairBytes {
                host_per_row: row + 8,
                device_per_row: 2 * row,
                host_cache: HOST_CACHE_BYTES as u64,
            }
        }
    };
    sequence_memory(&GraphSize::of(graph), options.seq_len as u64, pairs)
}

/// The sequences a run trains on, and inference runs over: `graph` cut into sequences of at
/// most `options.seq_len` nodes (METIS, seeded by `options.seed`), their nodes labelled by
/// `split`, their attention pairs built on first use. Sequences whose estimated host memory
/// exceeds what the machine has available are refused before they are built.
pub fn training_sequences(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
) -> Result<Sequences, EngineError> {
    let footprint = sequence_footprint(graph, options);
    let config = options.model_config(graph);
    let what = format!(
        "cutting {} nodes into sequences of up to {} ({} attention)",
        graph.num_nodes(),
        options.sequence_nodes(graph),
        config.scope
    );
    check_host(what, footprint.host)?;
    let _task = crate::progress::task(format!(
        "partitioning {} nodes into sequences (METIS)",
        graph.num_nodes()
    ));
    build_sequences(graph, split, options.seq_len, &config, options.seed)
}
