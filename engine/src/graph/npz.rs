//! Loader for the `.npz` layout of `shchur/gnn-benchmark` and PyTorch Geometric's
//! CitationFull/Amazon/Coauthor datasets.
//!
//! Arrays read: `adj_indices`, `adj_indptr`, `adj_shape` (and `adj_data` if present:
//! entries stored as 0 are not edges); node features either in CSR form
//! (`attr_data`, `attr_indices`, `attr_indptr`, `attr_shape`) or dense as
//! `attr_matrix`; `labels` (1-D); and, when present, `node_names` (one string per node)
//! and `class_names` (one per class; more names than labelled classes make more classes).
//! Indices and labels may be of any integer dtype, feature values of any float, integer or
//! bool dtype, names `<U` or `|S` strings. Other arrays are never opened.
//!
//! Nothing is read before it is checked: every array's header shape is held against the
//! graph (`adj_shape`, the row pointers) before its data is, every array's declared size
//! against the memory available, and the whole graph's size, from the headers alone, before
//! any large array.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use npyz::{DType, NpyFile, Order, TypeChar};
use zip::ZipArchive;
use zip::result::ZipError;

use super::csr::{Csr, node_index};
use super::dataset::{Graph, labels_from_raw};
use super::error::{GraphError, ResultExt};
use super::sparse::{SparseMatrix, feature_column, validate_indptr};
use crate::memory::{Bytes, GraphSize, available_host_bytes, check_host};

/// Loads a graph from an `.npz` archive (see the module documentation for the layout).
pub fn load_npz(path: &Path) -> Result<Graph, GraphError> {
    let file = File::open(path).at(path, None)?;
    let zip =
        ZipArchive::new(BufReader::new(file)).map_err(|_| GraphError::NotZip.at(path, None))?;
    let name = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    read_graph(&mut Npz { zip }, name).at(path, None)
}

/// An open archive from which arrays are read by name.
struct Npz<R> {
    zip: ZipArchive<R>,
}

/// One array read from an archive: its shape and elements in row-major order.
struct Array<T> {
    shape: Vec<u64>,
    data: Vec<T>,
}

/// A check of an array's shape (from its header), run before its data is read.
type ShapeCheck<'a> = &'a dyn Fn(&[u64]) -> Result<(), GraphError>;

/// Number of elements of an array of `shape` (saturating: headers are untrusted).
fn elements(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

impl<R: Read + Seek> Npz<R> {
    /// Whether the archive holds an array called `name`.
    fn has(&self, name: &str) -> bool {
        self.zip.index_for_name(&entry_name(name)).is_some()
    }

    /// The header of array `name`: its entry opened and the `.npy` header parsed, no data read.
    fn open(&mut self, name: &str) -> Result<NpyFile<impl Read + '_>, GraphError> {
        let bad = |problem: String| GraphError::BadArray {
            name: name.to_string(),
            problem,
        };
        let entry = self.zip.by_name(&entry_name(name)).map_err(|e| match e {
            ZipError::FileNotFound => GraphError::MissingArray(name.to_string()),
            other => bad(format!("cannot be read ({other})")),
        })?;
        NpyFile::new(entry).map_err(|e| bad(format!("has a bad header ({e})")))
    }

    /// The shape array `name` declares in its header, without reading its data.
    fn shape(&mut self, name: &str) -> Result<Vec<u64>, GraphError> {
        Ok(self.open(name)?.shape().to_vec())
    }

    /// Reads array `name` as integers of any width and signedness (or bool), after `check`
    /// accepted its shape.
    fn ints(&mut self, name: &str, check: ShapeCheck<'_>) -> Result<Array<i64>, GraphError> {
        self.read(name, "integers", check, |v| v, None::<fn(f64) -> i64>)
    }

    /// Reads array `name` as f32 values (from float, integer or bool elements), after `check`
    /// accepted its shape.
    fn floats(&mut self, name: &str, check: ShapeCheck<'_>) -> Result<Array<f32>, GraphError> {
        let float = Some(|v: f64| v as f32);
        self.read(name, "numbers", check, |v| v as f32, float)
    }

    /// Reads the 1-D string array `name` (`<U` or `|S` dtype), after `check` accepted its
    /// shape; `None` when its dtype is not a string type or its header does not parse (as
    /// that of a pickled object array does not).
    fn strings(
        &mut self,
        name: &str,
        check: ShapeCheck<'_>,
    ) -> Result<Option<Vec<String>>, GraphError> {
        let file = match self.open(name) {
            Ok(file) => file,
            // npyz does not parse the header of an object (pickled) array.
            Err(GraphError::BadArray { .. }) => return Ok(None),
            Err(other) => return Err(other),
        };
        let bad = |problem: String| GraphError::BadArray {
            name: name.to_string(),
            problem,
        };
        let shape = file.shape().to_vec();
        if shape.len() != 1 {
            return Err(bad(format!("has shape {shape:?}, expected 1 dimension")));
        }
        check(&shape)?;
        let dtype = file.dtype();
        let DType::Plain(ty) = &dtype else {
            return Ok(None);
        };
        let item = match ty.type_char() {
            TypeChar::UnicodeStr => 4,
            TypeChar::ByteStr => 1,
            _ => return Ok(None),
        };
        let size = item * ty.size_field();
        fits_memory(
            name,
            &shape,
            size.max(1) + std::mem::size_of::<String>() as u64,
        )?;
        let strings = file
            .data::<String>()
            .map_err(|e| bad(format!("has dtype {} ({e})", dtype.descr())))?;
        let strings = strings
            .collect::<std::io::Result<Vec<String>>>()
            .map_err(|e| bad(format!("is truncated or corrupt ({e})")))?;
        Ok(Some(strings))
    }

    /// Reads array `name`, making each element with `from_int` (integer and bool
    /// dtypes) or `from_float` (float dtypes; `None` refuses them); `expected` names
    /// the dtypes taken, for the error message. `check` and the memory available judge the
    /// header's shape before any data is read. Fortran-ordered 2-D arrays are transposed to
    /// row-major.
    fn read<T: Copy>(
        &mut self,
        name: &str,
        expected: &str,
        check: ShapeCheck<'_>,
        from_int: impl Fn(i64) -> T,
        from_float: Option<impl Fn(f64) -> T>,
    ) -> Result<Array<T>, GraphError> {
        let bad = |problem: String| GraphError::BadArray {
            name: name.to_string(),
            problem,
        };
        let file = self.open(name)?;
        let shape = file.shape().to_vec();
        check(&shape)?;
        fits_memory(name, &shape, std::mem::size_of::<T>() as u64)?;
        let order = file.order();
        let dtype = file.dtype();
        let wrong_dtype = || bad(format!("has dtype {}, expected {expected}", dtype.descr()));
        let DType::Plain(ty) = &dtype else {
            return Err(wrong_dtype());
        };
        let int = &from_int;
        let data = match (ty.type_char(), ty.size_field(), &from_float) {
            (TypeChar::Int, 1, _) => collect(file, |v: i8| int(i64::from(v))),
            (TypeChar::Int, 2, _) => collect(file, |v: i16| int(i64::from(v))),
            (TypeChar::Int, 4, _) => collect(file, |v: i32| int(i64::from(v))),
            (TypeChar::Int, 8, _) => collect(file, |v: i64| int(v)),
            (TypeChar::Uint, 1, _) => collect(file, |v: u8| int(i64::from(v))),
            (TypeChar::Uint, 2, _) => collect(file, |v: u16| int(i64::from(v))),
            (TypeChar::Uint, 4, _) => collect(file, |v: u32| int(i64::from(v))),
            (TypeChar::Uint, 8, _) => collect(file, |v: u64| int(v.try_into().unwrap_or(i64::MAX))),
            (TypeChar::Bool, 1, _) => collect(file, |v: bool| int(i64::from(v))),
            (TypeChar::Float, 4, Some(float)) => collect(file, |v: f32| float(f64::from(v))),
            (TypeChar::Float, 8, Some(float)) => collect(file, |v: f64| float(v)),
            _ => return Err(wrong_dtype()),
        }
        .map_err(|e| bad(format!("is truncated or corrupt ({e})")))?;
        let data = match (order, shape.as_slice()) {
            (Order::Fortran, &[rows, cols]) => transpose(&data, cols as usize, rows as usize),
            _ => data,
        };
        Ok(Array { shape, data })
    }
}

/// Refuses array `name` of `shape` when its elements, `bytes` each once read, exceed the
/// memory available.
fn fits_memory(name: &str, shape: &[u64], bytes: u64) -> Result<(), GraphError> {
    let needed = elements(shape).saturating_mul(bytes);
    match available_host_bytes() {
        Some(available) if needed > available => Err(GraphError::BadArray {
            name: name.to_string(),
            problem: format!(
                "declares shape {shape:?}, about {} once read, but {} of memory are available",
                Bytes(needed),
                Bytes(available)
            ),
        }),
        _ => Ok(()),
    }
}

/// A check that a 1-D array has `len` elements, with the error `wrong(found)` otherwise.
fn length<'a>(
    len: usize,
    wrong: impl Fn(usize) -> GraphError + 'a,
) -> impl Fn(&[u64]) -> Result<(), GraphError> + 'a {
    move |shape| {
        let found = elements(shape);
        if found == len as u64 {
            Ok(())
        } else {
            Err(wrong(usize::try_from(found).unwrap_or(usize::MAX)))
        }
    }
}

/// Name of the zip entry holding array `name`.
fn entry_name(name: &str) -> String {
    format!("{name}.npy")
}

/// Reads every element as `T` and converts it.
fn collect<R: Read, T: npyz::Deserialize, U>(
    file: NpyFile<R>,
    convert: impl Fn(T) -> U,
) -> std::io::Result<Vec<U>> {
    file.data::<T>()
        .map_err(std::io::Error::other)?
        .map(|v| v.map(&convert))
        .collect()
}

/// Transposes a row-major `rows × cols` table.
fn transpose<T: Copy>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| data[r * cols + c]))
        .collect()
}

/// Reads a `(rows, cols)` shape vector such as `adj_shape`.
fn shape_pair<R: Read + Seek>(npz: &mut Npz<R>, name: &str) -> Result<(usize, usize), GraphError> {
    let two = |found| GraphError::BadArray {
        name: name.to_string(),
        problem: format!("has {found} entries, expected two sizes"),
    };
    let shape = npz.ints(name, &length(2, two))?;
    match *shape.data.as_slice() {
        [rows, cols] if rows >= 0 && cols >= 0 => Ok((rows as usize, cols as usize)),
        _ => Err(GraphError::BadArray {
            name: name.to_string(),
            problem: format!("is {:?}, expected two sizes", shape.data),
        }),
    }
}

/// Reads the arrays of a CSR matrix `prefix_{indptr,indices}` with `rows` rows, each checked
/// from its header first (`rows + 1` row pointers, as many indices as the last one says),
/// then the row pointers themselves; returns them with the raw column indices.
fn csr_arrays<R: Read + Seek>(
    npz: &mut Npz<R>,
    prefix: &str,
    matrix: &'static str,
    rows: usize,
) -> Result<(Vec<usize>, Vec<i64>), GraphError> {
    let pointers = length(rows.saturating_add(1), |found| GraphError::IndptrLength {
        matrix,
        found,
        rows,
    });
    let indptr = npz.ints(&format!("{prefix}_indptr"), &pointers)?.data;
    let (first, last) = (indptr[0], indptr[rows]);
    let indices = npz.ints(&format!("{prefix}_indices"), &|shape: &[u64]| {
        let nnz = elements(shape);
        if u64::try_from(last).ok() == Some(nnz) {
            return Ok(());
        }
        Err(GraphError::IndptrEnds {
            matrix,
            first,
            last,
            nnz: usize::try_from(nnz).unwrap_or(usize::MAX),
        })
    })?;
    validate_indptr(matrix, &indptr, rows, indices.data.len())?;
    Ok((
        indptr.into_iter().map(|p| p as usize).collect(),
        indices.data,
    ))
}

/// A check that a value array has one entry per index.
fn one_per_index(name: &str, indices: usize) -> impl Fn(&[u64]) -> Result<(), GraphError> + '_ {
    length(indices, move |values| GraphError::BadArray {
        name: name.to_string(),
        problem: format!("has {values} entries but there are {indices} indices"),
    })
}

/// Reads `adj_shape`: the number of nodes of a square adjacency.
fn read_nodes<R: Read + Seek>(npz: &mut Npz<R>) -> Result<usize, GraphError> {
    let (nodes, cols) = shape_pair(npz, "adj_shape")?;
    if nodes != cols {
        return Err(GraphError::BadArray {
            name: "adj_shape".into(),
            problem: format!("is [{nodes}, {cols}], expected a square matrix"),
        });
    }
    Ok(nodes)
}

/// Refuses, from the headers alone, a graph of `nodes` nodes whose adjacency and features
/// would not fit in the memory available.
fn check_size<R: Read + Seek>(npz: &mut Npz<R>, nodes: usize) -> Result<(), GraphError> {
    let edges = elements(&npz.shape("adj_indices")?);
    let features = if npz.has("attr_data") {
        elements(&npz.shape("attr_indices")?)
    } else if npz.has("attr_matrix") {
        elements(&npz.shape("attr_matrix")?)
    } else {
        0
    };
    let size = GraphSize {
        nodes: nodes as u64,
        edges,
        feature_nonzeros: features,
    };
    let what = format!("a graph of {nodes} nodes, {edges} edges and {features} feature values");
    Ok(check_host(what, size.host_bytes())?)
}

/// Reads the adjacency (`adj_*` arrays) of `nodes` nodes.
fn read_adjacency<R: Read + Seek>(npz: &mut Npz<R>, nodes: usize) -> Result<Csr, GraphError> {
    let (indptr, indices) = csr_arrays(npz, "adj", "adjacency", nodes)?;
    let weights = if npz.has("adj_data") {
        Some(
            npz.floats("adj_data", &one_per_index("adj_data", indices.len()))?
                .data,
        )
    } else {
        None
    };
    let mut edges = Vec::with_capacity(indices.len());
    for row in 0..nodes {
        for k in indptr[row]..indptr[row + 1] {
            if weights.as_ref().is_none_or(|w| w[k] != 0.0) {
                edges.push((row as u32, node_index(indices[k], nodes)?));
            }
        }
    }
    Csr::from_edges(nodes, &edges)
}

/// Reads the features of `nodes` nodes, CSR (`attr_*`) or dense (`attr_matrix`).
fn read_features<R: Read + Seek>(
    npz: &mut Npz<R>,
    nodes: usize,
) -> Result<SparseMatrix, GraphError> {
    if npz.has("attr_data") {
        let (rows, dim) = shape_pair(npz, "attr_shape")?;
        if rows != nodes {
            return Err(GraphError::FeatureRows { rows, nodes });
        }
        let (indptr, raw_cols) = csr_arrays(npz, "attr", "features", rows)?;
        let values = npz.floats("attr_data", &one_per_index("attr_data", raw_cols.len()))?;
        let mut cols = Vec::with_capacity(raw_cols.len());
        for row in 0..rows {
            for &c in &raw_cols[indptr[row]..indptr[row + 1]] {
                cols.push(feature_column(row, c, dim)?);
            }
        }
        SparseMatrix::new(rows, dim, indptr, cols, values.data)
    } else if npz.has("attr_matrix") {
        let dense = npz.floats("attr_matrix", &|shape: &[u64]| match *shape {
            [rows, _] if rows == nodes as u64 => Ok(()),
            [rows, _] => Err(GraphError::FeatureRows {
                rows: rows as usize,
                nodes,
            }),
            _ => Err(GraphError::BadArray {
                name: "attr_matrix".into(),
                problem: format!("has shape {shape:?}, expected 2 dimension(s)"),
            }),
        })?;
        let cols = dense.shape[1] as usize;
        SparseMatrix::from_dense(nodes, cols, &dense.data)
    } else {
        Err(GraphError::MissingArray(
            "attr_data (or attr_matrix)".into(),
        ))
    }
}

/// Reads the optional string array `name` when the archive has it in a string dtype
/// (names pickled as Python objects cannot be read and are left out), checking its length
/// with `check` first.
fn read_names<R: Read + Seek>(
    npz: &mut Npz<R>,
    name: &str,
    check: ShapeCheck<'_>,
) -> Result<Option<Vec<String>>, GraphError> {
    if !npz.has(name) {
        return Ok(None);
    }
    npz.strings(name, check)
}

/// Reads the whole graph from an open archive.
fn read_graph<R: Read + Seek>(npz: &mut Npz<R>, name: String) -> Result<Graph, GraphError> {
    let nodes = read_nodes(npz)?;
    check_size(npz, nodes)?;
    let adjacency = read_adjacency(npz, nodes)?;
    let features = read_features(npz, nodes)?;
    let labels = npz.ints("labels", &|shape: &[u64]| match shape {
        [found] if *found == nodes as u64 => Ok(()),
        [found] => Err(GraphError::LabelCount {
            found: usize::try_from(*found).unwrap_or(usize::MAX),
            nodes,
        }),
        _ => Err(GraphError::BadArray {
            name: "labels".into(),
            problem: format!("has shape {shape:?}, expected 1 dimension(s)"),
        }),
    })?;
    let (labels, labelled_classes) = labels_from_raw(&labels.data, nodes)?;
    let one_per_node = length(nodes, |found| GraphError::BadArray {
        name: "node_names".into(),
        problem: format!("has {found} entries but the graph has {nodes} nodes"),
    });
    let node_names = read_names(npz, "node_names", &one_per_node)?;
    let class_names = read_names(npz, "class_names", &|shape: &[u64]| {
        if elements(shape) >= labelled_classes as u64 {
            return Ok(());
        }
        Err(GraphError::BadArray {
            name: "class_names".into(),
            problem: format!(
                "has {} entries but the labels have {labelled_classes} classes",
                elements(shape)
            ),
        })
    })?;
    let classes = class_names
        .as_ref()
        .map_or(0, Vec::len)
        .max(labelled_classes);
    Graph::new(adjacency, features, labels, classes, name)?.with_names(node_names, class_names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testutil::{NpzArray, cora_path, write_npz};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Arrays of a 4-node path graph 0-1-2-3 with 3 features, given as directed
    /// edges 0→1, 2→1, 2→3 and a self-loop 3→3.
    fn path_arrays() -> Vec<(&'static str, NpzArray)> {
        vec![
            ("adj_data", NpzArray::F32(vec![1.0; 4], vec![4])),
            ("adj_indices", NpzArray::I64(vec![1, 1, 3, 3], vec![4])),
            ("adj_indptr", NpzArray::I64(vec![0, 1, 1, 3, 4], vec![5])),
            ("adj_shape", NpzArray::I64(vec![4, 4], vec![2])),
            ("attr_data", NpzArray::F32(vec![1.0, 2.0, 3.0], vec![3])),
            ("attr_indices", NpzArray::I32(vec![0, 2, 1], vec![3])),
            ("attr_indptr", NpzArray::I32(vec![0, 1, 2, 2, 3], vec![5])),
            ("attr_shape", NpzArray::I64(vec![4, 3], vec![2])),
            ("labels", NpzArray::U8(vec![0, 1, 1, 2], vec![4])),
            (
                "node_names",
                NpzArray::Unicode(vec!["a".into(), "b".into(), "c".into(), "d".into()]),
            ),
        ]
    }

    /// Writes `arrays` to `name` in a temporary directory and loads it.
    fn load_arrays(
        arrays: &[(&str, NpzArray)],
    ) -> Result<Result<Graph, GraphError>, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("tiny.npz");
        write_npz(&path, arrays)?;
        Ok(load_npz(&path))
    }

    fn replace(name: &str, array: NpzArray) -> Vec<(&'static str, NpzArray)> {
        path_arrays()
            .into_iter()
            .map(|(n, a)| {
                if n == name {
                    (n, array.clone())
                } else {
                    (n, a)
                }
            })
            .collect()
    }

    #[test]
    fn loads_cora() -> TestResult {
        let start = std::time::Instant::now();
        let graph = load_npz(&cora_path())?;
        eprintln!("cora loaded in {:?}", start.elapsed());
        assert_eq!(graph.name(), "cora");
        assert_eq!(graph.num_nodes(), 2708);
        assert_eq!(graph.feature_dim(), 1433);
        assert_eq!(graph.num_classes(), 7);
        assert_eq!(graph.adjacency().num_edges(), 5278);
        assert_eq!(graph.features().nnz(), 49216);
        assert_eq!(graph.labels().len(), 2708);
        assert_eq!(graph.node_names().map(<[String]>::len), Some(2708));
        let classes = graph.class_names().ok_or("cora has class names")?;
        assert_eq!(classes.len(), 7);
        assert!(classes.iter().all(|c| !c.is_empty()), "{classes:?}");
        Ok(())
    }

    #[test]
    fn loads_names_and_takes_classes_from_class_names() -> TestResult {
        let mut arrays = path_arrays();
        let names = ["zero", "one", "two", "three"].map(String::from).to_vec();
        arrays.push(("class_names", NpzArray::Unicode(names.clone())));
        let graph = load_arrays(&arrays)??;
        let nodes: Vec<&str> = graph
            .node_names()
            .ok_or("names")?
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(nodes, ["a", "b", "c", "d"]);
        assert_eq!(graph.class_names(), Some(&names[..]));
        assert_eq!(
            graph.num_classes(),
            4,
            "a named class without nodes is a class"
        );
        let short = replace("node_names", NpzArray::Unicode(vec!["a".into()]));
        let err = load_arrays(&short)?.unwrap_err();
        assert!(
            err.to_string()
                .ends_with("array 'node_names' has 1 entries but the graph has 4 nodes"),
            "{err}"
        );
        let pickled = replace("node_names", NpzArray::Raw("|O", vec![4], vec![0; 8]));
        assert_eq!(
            load_arrays(&pickled)??.node_names(),
            None,
            "object arrays are left out"
        );
        Ok(())
    }

    #[test]
    fn a_header_declaring_too_many_labels_is_refused_before_its_data_is_read() -> TestResult {
        // 250 million i64 labels declared, 16 bytes present: the header alone refuses it.
        let start = std::time::Instant::now();
        let huge = replace(
            "labels",
            NpzArray::Raw("<i8", vec![250_000_000], vec![0; 16]),
        );
        let err = load_arrays(&huge)?.unwrap_err();
        assert!(
            matches!(
                err.root(),
                GraphError::LabelCount {
                    found: 250_000_000,
                    nodes: 4
                }
            ),
            "{err}"
        );
        let indptr = replace(
            "adj_indptr",
            NpzArray::Raw("<i8", vec![1 << 40], vec![0; 8]),
        );
        let err = load_arrays(&indptr)?.unwrap_err();
        assert!(
            matches!(err.root(), GraphError::IndptrLength { rows: 4, .. }),
            "{err}"
        );
        let indices = replace(
            "adj_indices",
            NpzArray::Raw("<i8", vec![1 << 40], vec![0; 8]),
        );
        let err = load_arrays(&indices)?.unwrap_err();
        assert!(err.to_string().contains("needs about"), "{err}");
        assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        Ok(())
    }

    #[test]
    fn loads_csr_layout_with_mixed_dtypes() -> TestResult {
        let graph = load_arrays(&path_arrays())??;
        let adj = graph.adjacency();
        assert_eq!(adj.num_edges(), 3);
        assert_eq!(adj.neighbors(1), &[0, 2]);
        assert_eq!(adj.neighbors(3), &[2]);
        assert_eq!(
            graph.features().to_dense(),
            [1., 0., 0., 0., 0., 2., 0., 0., 0., 0., 3., 0.]
        );
        assert_eq!(graph.labels(), &[0, 1, 1, 2]);
        assert_eq!(graph.num_classes(), 3);
        Ok(())
    }

    #[test]
    fn loads_dense_fortran_attr_matrix_and_zero_weight_entries() -> TestResult {
        let mut arrays: Vec<_> = path_arrays()
            .into_iter()
            .filter(|(n, _)| !n.starts_with("attr_"))
            .collect();
        // Column-major 4×2 table [[1,0],[0,1],[0,0],[5,0]]; f64, stored Fortran-order.
        arrays.push((
            "attr_matrix",
            NpzArray::F64Fortran(vec![1., 0., 0., 5., 0., 1., 0., 0.], vec![4, 2]),
        ));
        arrays[0] = ("adj_data", NpzArray::F32(vec![1.0, 0.0, 1.0, 1.0], vec![4]));
        let graph = load_arrays(&arrays)??;
        assert_eq!(
            graph.features().to_dense(),
            [1., 0., 0., 1., 0., 0., 5., 0.]
        );
        assert_eq!(
            graph.adjacency().num_edges(),
            2,
            "the 2→1 entry has weight 0"
        );
        Ok(())
    }

    #[test]
    fn rejects_missing_array() -> TestResult {
        let arrays: Vec<_> = path_arrays()
            .into_iter()
            .filter(|(n, _)| *n != "adj_indptr")
            .collect();
        let err = load_arrays(&arrays)?.unwrap_err();
        assert!(matches!(err.root(), GraphError::MissingArray(name) if name == "adj_indptr"));
        assert!(
            err.to_string()
                .ends_with("tiny.npz: missing array 'adj_indptr'"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn rejects_wrong_label_count() -> TestResult {
        let err =
            load_arrays(&replace("labels", NpzArray::I64(vec![0, 1, 1], vec![3])))?.unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::LabelCount { found: 3, nodes: 4 }
        ));
        assert!(
            err.to_string()
                .ends_with("tiny.npz: labels have 3 entries but the graph has 4 nodes"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn rejects_negative_label() -> TestResult {
        let err = load_arrays(&replace(
            "labels",
            NpzArray::I64(vec![0, -1, 1, 0], vec![4]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::NegativeLabel { node: 1, label: -1 }
        ));
        Ok(())
    }

    #[test]
    fn rejects_edge_out_of_range() -> TestResult {
        let err = load_arrays(&replace(
            "adj_indices",
            NpzArray::I64(vec![1, 1, 3, 4], vec![4]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::EdgeOutOfRange { index: 4, nodes: 4 }
        ));
        Ok(())
    }

    #[test]
    fn rejects_bad_indptr() -> TestResult {
        let err = load_arrays(&replace(
            "adj_indptr",
            NpzArray::I64(vec![0, 1, 3], vec![3]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::IndptrLength {
                matrix: "adjacency",
                found: 3,
                rows: 4
            }
        ));
        let err = load_arrays(&replace(
            "attr_indptr",
            NpzArray::I32(vec![0, 2, 1, 2, 3], vec![5]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::IndptrNotMonotone {
                matrix: "features",
                position: 2,
                ..
            }
        ));
        Ok(())
    }

    #[test]
    fn rejects_nan_feature_and_bad_column() -> TestResult {
        let err = load_arrays(&replace(
            "attr_data",
            NpzArray::F32(vec![1.0, f32::NAN, 3.0], vec![3]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::NonFiniteFeature { row: 1, col: 2, .. }
        ));
        assert!(err.to_string().ends_with("feature (1, 2) is NaN"), "{err}");
        let err = load_arrays(&replace(
            "attr_indices",
            NpzArray::I32(vec![0, 3, 1], vec![3]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::FeatureColumnOutOfRange {
                row: 1,
                col: 3,
                dim: 3
            }
        ));
        let err = load_arrays(&replace(
            "attr_indices",
            NpzArray::I32(vec![0, -2, 1], vec![3]),
        ))?
        .unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::FeatureColumnOutOfRange {
                row: 1,
                col: -2,
                dim: 3
            }
        ));
        Ok(())
    }

    #[test]
    fn rejects_unsupported_dtype() -> TestResult {
        let err =
            load_arrays(&replace("labels", NpzArray::F32(vec![0.0; 4], vec![4])))?.unwrap_err();
        assert!(
            err.to_string()
                .ends_with("array 'labels' has dtype '<f4', expected integers"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn rejects_empty_graph() -> TestResult {
        let arrays = vec![
            ("adj_indices", NpzArray::I64(vec![], vec![0])),
            ("adj_indptr", NpzArray::I64(vec![0], vec![1])),
            ("adj_shape", NpzArray::I64(vec![0, 0], vec![2])),
            ("attr_matrix", NpzArray::F64Fortran(vec![], vec![0, 3])),
            ("labels", NpzArray::I64(vec![], vec![0])),
        ];
        let err = load_arrays(&arrays)?.unwrap_err();
        assert!(matches!(err.root(), GraphError::EmptyGraph));
        Ok(())
    }

    #[test]
    fn rejects_non_zip_and_truncated_files() -> TestResult {
        let dir = tempfile::tempdir()?;
        let text = dir.path().join("x.npz");
        std::fs::write(&text, "this is not a zip archive")?;
        let err = load_npz(&text).unwrap_err();
        assert!(matches!(err.root(), GraphError::NotZip));
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a zip archive (truncated or not an .npz)",
                text.display()
            )
        );

        let bytes = std::fs::read(cora_path())?;
        let truncated = dir.path().join("cut.npz");
        std::fs::write(&truncated, &bytes[..bytes.len() / 2])?;
        assert!(matches!(
            load_npz(&truncated).unwrap_err().root(),
            GraphError::NotZip
        ));

        let missing = dir.path().join("absent.npz");
        assert!(matches!(
            load_npz(&missing).unwrap_err().root(),
            GraphError::Io(_)
        ));
        Ok(())
    }
}
