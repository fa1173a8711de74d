//! Helpers shared by the graph module's tests: the Cora file and an `.npz` writer.

use std::io::Write;
use std::path::{Path, PathBuf};

use npyz::{AutoSerialize, DType, Order, Serialize, WriterBuilder};
use zip::write::SimpleFileOptions;

use super::dataset::Graph;
use super::npz::load_npz;

/// Path of `shared/data/cora.npz`, which sits beside the repository (or inside it).
pub fn cora_path() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("../shared/data/cora.npz"),
        manifest.join("../../shared/data/cora.npz"),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| candidates[1].clone())
}

/// Loads Cora.
pub fn cora() -> Result<Graph, Box<dyn std::error::Error>> {
    Ok(load_npz(&cora_path())?)
}

/// An array to write into a test archive: data and shape.
#[derive(Debug, Clone)]
pub enum NpzArray {
    /// `<i4`, row-major.
    I32(Vec<i32>, Vec<u64>),
    /// `<i8`, row-major.
    I64(Vec<i64>, Vec<u64>),
    /// `|u1`, row-major.
    U8(Vec<u8>, Vec<u64>),
    /// `<f4`, row-major.
    F32(Vec<f32>, Vec<u64>),
    /// `<f8`, column-major (data given in column-major order).
    F64Fortran(Vec<f64>, Vec<u64>),
    /// `<U8` strings, 1-D.
    Unicode(Vec<String>),
    /// A raw `.npy`: a header of dtype `descr` declaring `shape`, then `data` as given
    /// (which need not hold what the header declares).
    Raw(&'static str, Vec<u64>, Vec<u8>),
}

/// Writes `arrays` as an `.npz` (deflate-compressed, as `np.savez_compressed` does).
pub fn write_npz(
    path: &Path,
    arrays: &[(&str, NpzArray)],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path)?);
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, array) in arrays {
        zip.start_file(format!("{name}.npy"), options)?;
        match array {
            NpzArray::I32(d, s) => write_array(&mut zip, d, s, Order::C)?,
            NpzArray::I64(d, s) => write_array(&mut zip, d, s, Order::C)?,
            NpzArray::U8(d, s) => write_array(&mut zip, d, s, Order::C)?,
            NpzArray::F32(d, s) => write_array(&mut zip, d, s, Order::C)?,
            NpzArray::F64Fortran(d, s) => write_array(&mut zip, d, s, Order::Fortran)?,
            NpzArray::Unicode(strings) => {
                let mut writer = npyz::WriteOptions::<str>::new()
                    .dtype(DType::new_scalar("<U8".parse()?))
                    .shape(&[strings.len() as u64])
                    .writer(&mut zip)
                    .begin_nd()?;
                for s in strings {
                    writer.push(s.as_str())?;
                }
                writer.finish()?;
            }
            NpzArray::Raw(descr, shape, data) => {
                let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
                let mut header = format!(
                    "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}",
                    dims.join(" ")
                );
                while (10 + header.len() + 1) % 64 != 0 {
                    header.push(' ');
                }
                header.push('\n');
                zip.write_all(b"\x93NUMPY\x01\x00")?;
                zip.write_all(&(header.len() as u16).to_le_bytes())?;
                zip.write_all(header.as_bytes())?;
                zip.write_all(data)?;
            }
        }
    }
    zip.finish()?.flush()?;
    Ok(())
}

/// Writes one numeric array.
fn write_array<T: Serialize + AutoSerialize + Copy>(
    out: &mut impl Write,
    data: &[T],
    shape: &[u64],
    order: Order,
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .order(order)
        .writer(out)
        .begin_nd()?;
    writer.extend(data.iter().copied())?;
    writer.finish()
}
