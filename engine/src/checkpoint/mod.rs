//! Checkpoints of a training run on disk: one file per saved step, written atomically and
//! verified when read, so that a run can resume after a crash from the newest intact one.
//!
//! # Format, version 1
//!
//! **Files.** A checkpoint directory holds one file per saved step, named
//! `step-{step:08}.safetensors` (`step-00000120.safetensors` after 120 optimizer steps); the
//! step in the name orders them, the highest being the newest. A file being written is a
//! hidden temporary `.step-{step:08}.safetensors.{pid}.tmp` in the same directory, renamed
//! onto its final name once complete and synced to disk: a crash leaves at most such a
//! temporary (never listed nor read, removed by a later write), never a torn file under a
//! final name.
//!
//! **Layout.** Each file is a [safetensors](https://huggingface.co/docs/safetensors) file:
//! an 8-byte little-endian header length N, N bytes of JSON header (padded with spaces to a
//! multiple of 8), then the data section, every tensor's values as little-endian `F32`,
//! row-major, back to back in the order of their names. The header maps each tensor's name to
//! its dtype (always `F32`), shape and byte range in the data section.
//!
//! **Tensor names** are the caller's, one per tensor and unique (not `__metadata__`), e.g.
//! `param.0007` for a model parameter and `adam.m1.0007` for its first Adam moment (the names training writes are listed in `parallel::checkpointing`).
//!
//! **Metadata.** The header's `__metadata__` map (string values) holds:
//! - `format`: `megagraph-checkpoint`;
//! - `version`: `1`;
//! - `megagraph`: the [`CheckpointMeta`] as JSON;
//! - `tensors`: a JSON array of `{"name", "shape"}`, one per tensor in the checkpoint's order
//!   (safetensors itself keeps them sorted by name); reading returns the tensors in this order;
//! - `crc32`: the CRC-32 (IEEE, as zlib's) in decimal of the data section followed by the
//!   UTF-8 bytes of the `megagraph` and `tensors` values.
//!
//! - `megagraph` also carries `settings`: every setting of the run (its `TrainOptions`:
//!   model, sequence length, seed, split...), which `predict` and `evaluate` rebuild the model
//!   and its sequences from.
//!
//! **Saved models** (`train --save-model FILE`) are files of the same layout with `format` =
//! `megagraph-model` (version 1), tensors `param.IIII` only (no optimizer state), and as
//! `megagraph` a [`SavedModelMeta`]: the epoch of best validation accuracy whose parameters
//! they hold, its figures and the settings.
//!
//! **Verification.** Reading refuses a file that is not a complete safetensors file (bad
//! header, truncated), lacks `format` = `megagraph-checkpoint`, has another `version`, whose
//! checksum does not match (a damaged tensor value, step, loss or shape), whose metadata is not
//! valid JSON of the expected form, or whose tensors are not exactly the listed ones, each
//! `F32` with its listed shape and as many bytes as that shape takes.

mod format;
mod saved;
mod store;

use std::path::PathBuf;

pub use format::read_checkpoint;
pub use saved::{SavedModel, SavedModelMeta, StoredFile, read_stored, write_model};
pub use store::{list_checkpoints, load_latest, write_checkpoint};

/// One tensor of a checkpoint: canonical name, shape, row-major f32 values.
#[derive(Debug, Clone, PartialEq)]
pub struct StateTensor {
    /// The tensor's name, unique within the checkpoint.
    pub name: String,
    /// Its shape (`[]` for a scalar).
    pub shape: Vec<usize>,
    /// Its values, row-major; as many as the shape's product.
    pub values: Vec<f32>,
}

/// What a checkpoint holds besides tensors; stored as JSON in the safetensors `__metadata__`
/// map under the key `megagraph` (see the [module docs](crate::checkpoint) for the other keys).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CheckpointMeta {
    /// Optimizer steps completed.
    pub step: usize,
    /// The epoch (1-based) the next step belongs to.
    pub epoch: usize,
    /// Batches of that epoch already taken.
    pub batches_done: usize,
    /// The run's seed.
    pub seed: u64,
    /// Text of the plan that wrote it, e.g. `dp2-pp1-cp1` (informational).
    pub plan: String,
    /// The model configuration as JSON; the caller compares it on resume.
    pub model: serde_json::Value,
    /// Every setting of the run that wrote it, as JSON (training writes its `TrainOptions`:
    /// model, sequence length, seed, split...); `null` in checkpoints written before it was
    /// stored.
    #[serde(default)]
    pub settings: serde_json::Value,
    /// The loss of every optimizer step so far; all finite.
    pub step_losses: Vec<f64>,
    /// Epoch metrics so far, as JSON (caller-defined).
    pub history: serde_json::Value,
    /// Early-stopping state, as JSON (caller-defined).
    pub best: serde_json::Value,
}

/// A whole checkpoint: its metadata and its tensors, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Everything besides the tensors.
    pub meta: CheckpointMeta,
    /// The tensors, in the order they were written.
    pub tensors: Vec<StateTensor>,
}

/// What can go wrong writing, finding or reading checkpoints; every message names the file or
/// directory.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing a file or directory failed.
    #[error("checkpoint I/O failed on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A file is not an intact checkpoint of this format.
    #[error("{} is not a valid checkpoint: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint that cannot be written as asked (the caller's data breaks the format).
    #[error("cannot write checkpoint {}: {reason}", path.display())]
    Invalid {
        /// The file it would have been.
        path: PathBuf,
        /// What is wrong with the data.
        reason: String,
    },
    /// The directory holds no checkpoint file.
    #[error("no checkpoint (step-*.safetensors) in {}", dir.display())]
    NoCheckpoint {
        /// The directory.
        dir: PathBuf,
    },
    /// Every checkpoint file of the directory was refused.
    #[error(
        "no valid checkpoint in {}: all {} were refused: {}",
        dir.display(),
        rejected.len(),
        rejected.join("; ")
    )]
    NoneValid {
        /// The directory.
        dir: PathBuf,
        /// Why each file was refused, newest first.
        rejected: Vec<String>,
    },
}

impl CheckpointError {
    /// An I/O error on `path`.
    fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::{Checkpoint, CheckpointMeta, StateTensor};

    /// A small checkpoint at `step` with tensors of ranks 0, 1 and 2, deliberately not in
    /// name order, including values whose bits must survive (NaN payload, -0, subnormal).
    pub fn sample(step: usize) -> Checkpoint {
        Checkpoint {
            meta: CheckpointMeta {
                step,
                epoch: 3,
                batches_done: 2,
                seed: 42,
                plan: "dp2-pp1-cp1".into(),
                model: serde_json::json!({"hidden": 16, "layers": 2}),
                settings: serde_json::json!({"seq_len": 64}),
                step_losses: vec![1.25, 0.1 + 0.2, 1e-300],
                history: serde_json::json!([{"epoch": 1, "val_acc": 0.5}]),
                best: serde_json::json!(null),
            },
            tensors: vec![
                StateTensor {
                    name: "param.0001".into(),
                    shape: vec![2, 3],
                    values: vec![
                        1.0,
                        -0.0,
                        f32::from_bits(0x7fc0_1234),
                        f32::MIN_POSITIVE / 4.0,
                        step as f32,
                        -7.5,
                    ],
                },
                StateTensor {
                    name: "adam.moment_1.0001".into(),
                    shape: vec![4],
                    values: vec![0.5, 0.25, -3.0, 1e-20],
                },
                StateTensor {
                    name: "param.0000".into(),
                    shape: vec![],
                    values: vec![9.0],
                },
            ],
        }
    }
}
