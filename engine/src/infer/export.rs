//! Writing predictions and embeddings: CSV with a row per node, or NumPy arrays.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use npyz::WriterBuilder;
use zip::write::SimpleFileOptions;

use super::{InferError, Inference};
use crate::graph::Graph;

/// What kind of file an output path asks for, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `.csv`: a header row, then per node `node, name, predicted, predicted_name, p_0…`.
    Csv,
    /// `.npy`: one array.
    Npy,
    /// `.npz`: named arrays.
    Npz,
}

impl Output {
    /// The kind `path` asks for; `allowed` lists the kinds taken, for the error message.
    pub fn of(path: &Path, allowed: &[Output]) -> Result<Self, InferError> {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let kind = match extension.to_ascii_lowercase().as_str() {
            "csv" => Some(Output::Csv),
            "npy" => Some(Output::Npy),
            "npz" => Some(Output::Npz),
            _ => None,
        };
        kind.filter(|k| allowed.contains(k))
            .ok_or_else(|| InferError::OutputFormat {
                path: path.to_path_buf(),
                expected: match allowed {
                    [Output::Npy] => ".npy",
                    _ => ".csv, .npy or .npz",
                },
            })
    }
}

/// An error writing `path`.
fn failed(path: &Path) -> impl Fn(String) -> InferError + '_ {
    move |reason| InferError::Write {
        path: path.to_path_buf(),
        reason,
    }
}

/// Writes every node's prediction to `path`: CSV (node, its name where the data has names,
/// predicted class and its name, then each class's probability `p_<class>`), `.npy` (the
/// `nodes × classes` probabilities) or `.npz` (`probabilities` and `predicted`).
pub fn write_predictions(path: &Path, graph: &Graph, out: &Inference) -> Result<(), InferError> {
    let fail = failed(path);
    match Output::of(path, &[Output::Csv, Output::Npy, Output::Npz])? {
        Output::Csv => {
            let file = File::create(path).map_err(|e| fail(e.to_string()))?;
            predictions_csv(file, graph, out).map_err(|e| match e {
                InferError::Write { reason, .. } => fail(reason),
                other => other,
            })
        }
        Output::Npy => {
            let shape = [out.predicted.len() as u64, out.classes as u64];
            write_npy(path, &shape, &out.probabilities).map_err(|e| fail(e.to_string()))
        }
        Output::Npz => write_npz(path, out).map_err(fail),
    }
}

/// Writes `data` as the `.npy` file `path`, row-major with `shape`.
fn write_npy(path: &Path, shape: &[u64], data: &[f32]) -> std::io::Result<()> {
    let mut file = BufWriter::new(File::create(path)?);
    write_array(&mut file, shape, data)?;
    file.flush()
}

/// Writes every node's final hidden state to `path` (`.npy`, `nodes × hidden`).
pub fn write_embeddings(path: &Path, out: &Inference) -> Result<(), InferError> {
    Output::of(path, &[Output::Npy])?;
    let shape = [out.predicted.len() as u64, out.hidden as u64];
    write_npy(path, &shape, &out.hidden_states).map_err(|e| failed(path)(e.to_string()))
}

/// Writes the CSV of [`write_predictions`] to `to` (standard output, say).
pub fn predictions_csv(to: impl Write, graph: &Graph, out: &Inference) -> Result<(), InferError> {
    write_csv(to, graph, out).map_err(|e| InferError::Write {
        path: "the CSV output".into(),
        reason: e.to_string(),
    })
}

/// The CSV of [`write_predictions`].
fn write_csv(to: impl Write, graph: &Graph, out: &Inference) -> Result<(), csv::Error> {
    let mut writer = csv::Writer::from_writer(to);
    let mut header = vec!["node".to_string(), "name".into(), "predicted".into()];
    header.push("predicted_name".into());
    header.extend((0..out.classes).map(|c| format!("p_{c}")));
    writer.write_record(&header)?;
    let name = |names: Option<&[String]>, i: usize| {
        names.and_then(|n| n.get(i)).cloned().unwrap_or_default()
    };
    for (node, &class) in out.predicted.iter().enumerate() {
        let mut row = vec![node.to_string(), name(graph.node_names(), node)];
        row.push(class.to_string());
        row.push(name(graph.class_names(), class as usize));
        let probabilities = &out.probabilities[node * out.classes..(node + 1) * out.classes];
        row.extend(probabilities.iter().map(f32::to_string));
        writer.write_record(&row)?;
    }
    writer.flush()?;
    Ok(())
}

/// The `.npz` of [`write_predictions`].
fn write_npz(path: &Path, out: &Inference) -> Result<(), String> {
    let file = File::create(path).map_err(|e| e.to_string())?;
    let mut zip = zip::ZipWriter::new(BufWriter::new(file));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let nodes = out.predicted.len() as u64;
    zip.start_file("probabilities.npy", options)
        .map_err(|e| e.to_string())?;
    write_array(&mut zip, &[nodes, out.classes as u64], &out.probabilities)
        .map_err(|e| e.to_string())?;
    zip.start_file("predicted.npy", options)
        .map_err(|e| e.to_string())?;
    let predicted: Vec<i64> = out.predicted.iter().map(|&c| i64::from(c)).collect();
    write_array(&mut zip, &[nodes], &predicted).map_err(|e| e.to_string())?;
    zip.finish()
        .map_err(|e| e.to_string())?
        .flush()
        .map_err(|e| e.to_string())
}

/// Writes `data` as a row-major `.npy` array of `shape`.
fn write_array<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
    out: impl Write,
    shape: &[u64],
    data: &[T],
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(out)
        .begin_nd()?;
    writer.extend(data.iter().copied())?;
    writer.finish()
}
