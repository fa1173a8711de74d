//! One checkpoint as the bytes of one file, and back (the format of the [module docs](crate::checkpoint)).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::{Checkpoint, CheckpointError, StateTensor};

/// Value of a checkpoint's `format` metadata key.
const FORMAT: &str = "megagraph-checkpoint";
/// Value of the `version` metadata key this build writes and reads (of either kind of file).
const VERSION: &str = "1";
/// Length of safetensors' header-length prefix.
const PREFIX: usize = 8;

/// One entry of the `tensors` metadata value.
#[derive(Serialize, Deserialize)]
struct Entry {
    name: String,
    shape: Vec<usize>,
}

/// The checksum stored under `crc32`: the data section, then the `megagraph` and `tensors`
/// metadata values.
fn checksum<'a>(data: impl IntoIterator<Item = &'a [u8]>, meta: &str, tensors: &str) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for chunk in data {
        hasher.update(chunk);
    }
    hasher.update(meta.as_bytes());
    hasher.update(tensors.as_bytes());
    hasher.finalize()
}

/// The file contents of `checkpoint`; `path` (where it will go) names it in errors.
pub(super) fn encode(path: &Path, checkpoint: &Checkpoint) -> Result<Vec<u8>, CheckpointError> {
    if let Some((i, loss)) =
        (checkpoint.meta.step_losses.iter().enumerate()).find(|(_, l)| !l.is_finite())
    {
        return Err(CheckpointError::Invalid {
            path: path.to_path_buf(),
            reason: format!("step loss {i} is {loss}, which JSON cannot hold"),
        });
    }
    encode_file(path, FORMAT, &checkpoint.meta, &checkpoint.tensors)
}

/// The checkpoint in `file` (the contents of `path`), verified.
pub(super) fn decode(path: &Path, file: &[u8]) -> Result<Checkpoint, CheckpointError> {
    let (meta, tensors) = decode_file(path, file, FORMAT)?;
    Ok(Checkpoint { meta, tensors })
}

/// The contents of a file of kind `format` holding `meta` (as JSON under `megagraph`) and
/// `tensors`, as the [module docs](crate::checkpoint) lay it out; `path` names it in errors.
pub(super) fn encode_file(
    path: &Path,
    format: &str,
    meta: &impl Serialize,
    tensors: &[StateTensor],
) -> Result<Vec<u8>, CheckpointError> {
    let invalid = |reason: String| CheckpointError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let mut names = HashSet::new();
    for t in tensors {
        let elements: usize = t.shape.iter().product();
        if elements != t.values.len() {
            return Err(invalid(format!(
                "tensor {} has shape {:?} ({elements} elements) but {} values",
                t.name,
                t.shape,
                t.values.len()
            )));
        }
        if t.name == "__metadata__" || !names.insert(t.name.as_str()) {
            return Err(invalid(format!(
                "tensor name {:?} is reserved or used twice",
                t.name
            )));
        }
    }
    let json = |e: serde_json::Error| invalid(format!("metadata does not serialise: {e}"));
    let meta = serde_json::to_string(meta).map_err(json)?;
    let entries: Vec<Entry> = (tensors.iter())
        .map(|t| Entry {
            name: t.name.clone(),
            shape: t.shape.clone(),
        })
        .collect();
    let listed = serde_json::to_string(&entries).map_err(json)?;

    // safetensors lays tensors of one dtype out by name: hand them over in that order, so the
    // checksum can be taken before the header that holds it is written.
    let mut sorted: Vec<&StateTensor> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let bytes: Vec<Vec<u8>> = (sorted.iter())
        .map(|t| t.values.iter().flat_map(|v| v.to_le_bytes()).collect())
        .collect();
    let crc = checksum(bytes.iter().map(Vec::as_slice), &meta, &listed);
    let views = (sorted.iter().zip(&bytes))
        .map(|(t, b)| {
            let view = TensorView::new(Dtype::F32, t.shape.clone(), b)
                .expect("the shape was checked against the values");
            (t.name.as_str(), view)
        })
        .collect::<Vec<_>>();
    let metadata = HashMap::from([
        ("format".to_string(), format.to_string()),
        ("version".to_string(), VERSION.to_string()),
        ("megagraph".to_string(), meta.clone()),
        ("tensors".to_string(), listed.clone()),
        ("crc32".to_string(), crc.to_string()),
    ]);
    let file = safetensors::serialize(views, Some(metadata))
        .map_err(|e| invalid(format!("safetensors refused it: {e}")))?;
    let (n, _) = SafeTensors::read_metadata(&file).expect("safetensors reads what it wrote");
    assert_eq!(
        checksum([&file[PREFIX + n..]], &meta, &listed),
        crc,
        "safetensors lays the data section out by name"
    );
    Ok(file)
}

/// The `format` key of a file's metadata, if it is a safetensors file that has one.
pub(super) fn format_of(file: &[u8]) -> Option<String> {
    let (_, header) = SafeTensors::read_metadata(file).ok()?;
    header.metadata().as_ref()?.get("format").cloned()
}

/// The metadata (from JSON) and tensors of `file` (the contents of `path`), a file of kind
/// `format`, verified.
pub(super) fn decode_file<M: DeserializeOwned>(
    path: &Path,
    file: &[u8],
    format: &str,
) -> Result<(M, Vec<StateTensor>), CheckpointError> {
    let corrupt = |reason: String| CheckpointError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let (n, header) = SafeTensors::read_metadata(file).map_err(|e| {
        corrupt(format!(
            "not a complete safetensors file ({e}); it may be truncated"
        ))
    })?;
    let empty = HashMap::new();
    let metadata = header.metadata().as_ref().unwrap_or(&empty);
    let key = |k: &str| metadata.get(k).map(String::as_str);
    let kind = format.strip_prefix("megagraph-").unwrap_or(format);
    if key("format") != Some(format) {
        return Err(corrupt(format!(
            "not a megagraph {kind} (its metadata lacks format = {format})"
        )));
    }
    match key("version") {
        Some(VERSION) => {}
        version => {
            return Err(corrupt(format!(
                "unsupported {kind} version {} (this build reads version {VERSION})",
                version.unwrap_or("(none)")
            )));
        }
    }
    let (Some(meta), Some(tensors), Some(crc)) = (key("megagraph"), key("tensors"), key("crc32"))
    else {
        return Err(corrupt(
            "its metadata lacks one of the keys megagraph, tensors, crc32".into(),
        ));
    };
    let stored: u32 = crc
        .parse()
        .map_err(|_| corrupt(format!("crc32 {crc:?} is not a 32-bit decimal number")))?;
    let data = &file[PREFIX + n..];
    let computed = checksum([data], meta, tensors);
    if stored != computed {
        return Err(corrupt(format!(
            "checksum mismatch: stored CRC-32 {stored}, computed {computed} (the file is damaged)"
        )));
    }
    let meta: M = serde_json::from_str(meta)
        .map_err(|e| corrupt(format!("bad megagraph metadata JSON: {e}")))?;
    let entries: Vec<Entry> = serde_json::from_str(tensors)
        .map_err(|e| corrupt(format!("bad tensors metadata JSON: {e}")))?;
    let listed: HashSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let held = header.tensors().len();
    if listed.len() != entries.len() || held != entries.len() {
        return Err(corrupt(format!(
            "it holds {held} tensors but its metadata lists {} ({} distinct)",
            entries.len(),
            listed.len()
        )));
    }
    let tensors = (entries.into_iter())
        .map(|Entry { name, shape }| {
            let info = header
                .info(&name)
                .ok_or_else(|| corrupt(format!("listed tensor {name} is missing")))?;
            if info.dtype != Dtype::F32 {
                return Err(corrupt(format!(
                    "tensor {name} is {:?}, not F32",
                    info.dtype
                )));
            }
            let (start, end) = info.data_offsets;
            let elements: usize = shape.iter().product();
            if info.shape != shape || end - start != 4 * elements {
                return Err(corrupt(format!(
                    "tensor {name} has shape {:?} and {} bytes but is listed with shape {shape:?} ({} bytes)",
                    info.shape,
                    end - start,
                    4 * elements
                )));
            }
            let values = (data[start..end].chunks_exact(4))
                .map(|b| f32::from_le_bytes(b.try_into().expect("chunks of 4")))
                .collect();
            Ok(StateTensor {
                name,
                shape,
                values,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((meta, tensors))
}

/// Reads and verifies one checkpoint file (safetensors parse, format/version keys, CRC-32, f32
/// dtype, shapes); the tensors come back in the order they were written.
pub fn read_checkpoint(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let file = std::fs::read(path).map_err(CheckpointError::io(path))?;
    decode(path, &file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::testutil::sample;

    /// Every value's bits, tensor by tensor, with names and shapes.
    fn bits(c: &Checkpoint) -> Vec<(String, Vec<usize>, Vec<u32>)> {
        (c.tensors.iter())
            .map(|t| {
                let bits = t.values.iter().map(|v| v.to_bits()).collect();
                (t.name.clone(), t.shape.clone(), bits)
            })
            .collect()
    }

    #[test]
    fn round_trip_keeps_order_and_bits() -> Result<(), CheckpointError> {
        let path = Path::new("step-00000007.safetensors");
        let written = sample(7);
        let read = decode(path, &encode(path, &written)?)?;
        assert_eq!(read.meta, written.meta);
        assert_eq!(bits(&read), bits(&written));
        Ok(())
    }

    #[test]
    fn the_file_is_plain_safetensors() -> Result<(), Box<dyn std::error::Error>> {
        let file = encode(Path::new("x"), &sample(3))?;
        let st = SafeTensors::deserialize(&file)?;
        let t = st.tensor("adam.moment_1.0001")?;
        assert_eq!((t.dtype(), t.shape()), (Dtype::F32, &[4][..]));
        assert_eq!(&t.data()[..4], &0.5f32.to_le_bytes());
        let (_, header) = SafeTensors::read_metadata(&file)?;
        let metadata = header.metadata().clone().unwrap_or_default();
        assert_eq!(metadata["format"], FORMAT);
        assert_eq!(metadata["version"], VERSION);
        let meta: serde_json::Value = serde_json::from_str(&metadata["megagraph"])?;
        assert_eq!(meta["step"], 3);
        Ok(())
    }

    #[test]
    fn every_truncation_is_refused_naming_the_file() -> Result<(), CheckpointError> {
        let path = Path::new("/ckpt/step-00000001.safetensors");
        let file = encode(path, &sample(1))?;
        for len in [0, 5, 8, 40, file.len() - 4, file.len() - 1] {
            let err = decode(path, &file[..len]).expect_err("a truncated file is refused");
            assert!(
                matches!(&err, CheckpointError::Corrupt { path: p, .. } if p == path),
                "{err}"
            );
            assert!(
                err.to_string().contains("step-00000001.safetensors"),
                "{err}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_flipped_data_byte_fails_the_checksum() -> Result<(), CheckpointError> {
        let path = Path::new("step-00000002.safetensors");
        let mut file = encode(path, &sample(2))?;
        let last = file.len() - 1;
        file[last] ^= 0x10;
        let err = decode(path, &file).expect_err("a damaged file is refused");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        Ok(())
    }

    #[test]
    fn a_changed_step_in_the_metadata_fails_the_checksum() -> Result<(), CheckpointError> {
        let path = Path::new("step-00000005.safetensors");
        let mut file = encode(path, &sample(5))?;
        let needle = br#"\"step\":5"#;
        let at = (file.windows(needle.len()))
            .position(|w| w == needle)
            .expect("the step is in the header");
        file[at + needle.len() - 1] = b'6';
        let err = decode(path, &file).expect_err("a damaged file is refused");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        Ok(())
    }

    #[test]
    fn foreign_and_future_files_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let path = Path::new("step-00000001.safetensors");
        let data = [0u8; 8];
        let view = TensorView::new(Dtype::F32, vec![2], &data)?;
        let plain = safetensors::serialize([("w", view.clone())], None)?;
        let err = decode(path, &plain).expect_err("not ours");
        assert!(
            err.to_string().contains("not a megagraph checkpoint"),
            "{err}"
        );
        let future = HashMap::from([
            ("format".to_string(), FORMAT.to_string()),
            ("version".to_string(), "2".to_string()),
        ]);
        let future = safetensors::serialize([("w", view)], Some(future))?;
        let err = decode(path, &future).expect_err("a later version");
        assert!(
            err.to_string().contains("unsupported checkpoint version 2"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn inconsistent_tensors_are_not_written() {
        let path = Path::new("step-00000001.safetensors");
        let mut bad = sample(1);
        bad.tensors[0].values.pop();
        let err = encode(path, &bad).expect_err("shape and values disagree");
        assert!(matches!(err, CheckpointError::Invalid { .. }), "{err}");
        let mut twice = sample(1);
        twice.tensors[1].name = twice.tensors[0].name.clone();
        assert!(encode(path, &twice).is_err(), "a name used twice");
        let mut nan = sample(1);
        nan.meta.step_losses.push(f64::NAN);
        assert!(encode(path, &nan).is_err(), "a NaN loss");
    }
}
