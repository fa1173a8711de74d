//! The error type of inference.

use std::path::PathBuf;

use crate::{EngineError, checkpoint::CheckpointError, graph::GraphError};

/// What can go wrong reading a trained model, running it on data and writing the results;
/// every message is one line naming the file and the numbers involved.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    /// The checkpoint or saved model is missing, unreadable or damaged.
    #[error(transparent)]
    Stored(#[from] CheckpointError),
    /// The file holds no settings to rebuild the model from.
    #[error(
        "{}: holds no run settings (written before checkpoints stored them); train again to use it",
        path.display()
    )]
    NoSettings {
        /// The file.
        path: PathBuf,
    },
    /// The file's settings or records do not parse.
    #[error("{}: its {what} do not parse: {reason}", path.display())]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// Which record: "settings", "metrics".
        what: &'static str,
        /// The parser's message.
        reason: String,
    },
    /// The file's parameters do not fit the model its settings describe.
    #[error("{}: {reason}", path.display())]
    Parameters {
        /// The file.
        path: PathBuf,
        /// What does not fit.
        reason: String,
    },
    /// The data has another shape than the model was trained on.
    #[error(
        "the model in {} was trained on {model_features} features and {model_classes} classes, but {data} has {data_features} features and {data_classes} classes",
        path.display()
    )]
    DataMismatch {
        /// The model's file.
        path: PathBuf,
        /// Features the model reads.
        model_features: usize,
        /// Classes the model predicts.
        model_classes: usize,
        /// The data's name.
        data: String,
        /// Features of the data.
        data_features: usize,
        /// Classes of the data.
        data_classes: usize,
    },
    /// An output path whose kind is not known by its extension.
    #[error("{}: unknown output format (expected {expected})", path.display())]
    OutputFormat {
        /// The path.
        path: PathBuf,
        /// The extensions taken.
        expected: &'static str,
    },
    /// An output could not be written.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The graph or the split is invalid.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The model could not be built or run.
    #[error(transparent)]
    Engine(#[from] EngineError),
}
