//! A trained model in one file (`train --save-model`): the parameters of the epoch of best
//! validation accuracy, without the optimizer's state, with the run's settings; and reading
//! either kind of file, a saved model or a checkpoint.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::format::{decode, decode_file, encode_file, format_of};
use super::store::write_atomic;
use super::{Checkpoint, CheckpointError, StateTensor};

/// Value of a saved model's `format` metadata key.
const MODEL_FORMAT: &str = "megagraph-model";

/// What a saved model holds besides its tensors; stored as JSON under the key `megagraph`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedModelMeta {
    /// The epoch (1-based) whose parameters these are.
    pub epoch: usize,
    /// That epoch's figures, as JSON (training writes its `EpochMetrics`).
    pub metrics: serde_json::Value,
    /// Every setting of the run, as JSON (training writes its `TrainOptions`).
    pub settings: serde_json::Value,
}

/// A saved model: its metadata and its parameters (`param.IIII`, in canonical order).
#[derive(Debug, Clone, PartialEq)]
pub struct SavedModel {
    /// Everything besides the tensors.
    pub meta: SavedModelMeta,
    /// The parameters, in order.
    pub tensors: Vec<StateTensor>,
}

/// A file of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredFile {
    /// A checkpoint (`--checkpoint DIR`): parameters, optimizer state and position.
    Checkpoint(Checkpoint),
    /// A saved model (`--save-model FILE`).
    Model(SavedModel),
}

/// Writes `model` as the file `path`, atomically (a crash never leaves a torn file there).
pub fn write_model(path: &Path, model: &SavedModel) -> Result<(), CheckpointError> {
    let bytes = encode_file(path, MODEL_FORMAT, &model.meta, &model.tensors)?;
    write_atomic(path, &bytes)
}

/// Reads and verifies a checkpoint or a saved model (told apart by their `format` key).
pub fn read_stored(path: &Path) -> Result<StoredFile, CheckpointError> {
    let file = std::fs::read(path).map_err(CheckpointError::io(path))?;
    if format_of(&file).as_deref() == Some(MODEL_FORMAT) {
        let (meta, tensors) = decode_file(path, &file, MODEL_FORMAT)?;
        return Ok(StoredFile::Model(SavedModel { meta, tensors }));
    }
    decode(path, &file).map(StoredFile::Checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::testutil::sample;

    fn model() -> SavedModel {
        SavedModel {
            meta: SavedModelMeta {
                epoch: 7,
                metrics: serde_json::json!({"epoch": 7, "val_acc": 0.75}),
                settings: serde_json::json!({"seq_len": 64}),
            },
            tensors: vec![
                StateTensor {
                    name: "param.0000".into(),
                    shape: vec![2, 2],
                    values: vec![1.0, -0.0, f32::MIN_POSITIVE, -7.5],
                },
                StateTensor {
                    name: "param.0001".into(),
                    shape: vec![],
                    values: vec![9.0],
                },
            ],
        }
    }

    #[test]
    fn a_model_round_trips_and_tells_itself_from_a_checkpoint() -> Result<(), CheckpointError> {
        let dir = tempfile::tempdir().map_err(CheckpointError::io(Path::new("tmp")))?;
        let path = dir.path().join("best.safetensors");
        write_model(&path, &model())?;
        assert_eq!(read_stored(&path)?, StoredFile::Model(model()));
        let checkpoint = crate::checkpoint::write_checkpoint(dir.path(), &sample(3), 1)?;
        assert!(matches!(read_stored(&checkpoint)?, StoredFile::Checkpoint(c) if c.meta.step == 3));
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .map_err(CheckpointError::io(dir.path()))?
            .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
            .collect();
        assert_eq!(names.len(), 2, "no temporary left: {names:?}");
        Ok(())
    }

    #[test]
    fn a_damaged_model_is_refused() -> Result<(), CheckpointError> {
        let dir = tempfile::tempdir().map_err(CheckpointError::io(Path::new("tmp")))?;
        let path = dir.path().join("best.safetensors");
        write_model(&path, &model())?;
        let mut bytes = std::fs::read(&path).map_err(CheckpointError::io(&path))?;
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).map_err(CheckpointError::io(&path))?;
        let err = read_stored(&path).expect_err("damaged");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        std::fs::write(&path, b"not safetensors").map_err(CheckpointError::io(&path))?;
        let err = read_stored(&path).expect_err("not a file of ours");
        assert!(
            err.to_string().contains("is not a valid checkpoint"),
            "{err}"
        );
        Ok(())
    }
}
