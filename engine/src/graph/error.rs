//! The error type of the graph module.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in the input a problem was found: a file, and a line of it for text files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the caller named it.
    pub path: PathBuf,
    /// 1-based line number, for line-oriented text files.
    pub line: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, " line {line}")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong building, loading, generating, splitting or
/// partitioning a graph. `Display` is one line with the numbers involved.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A problem found at a place in an input file; `inner` says what.
    #[error("{location}: {inner}")]
    At {
        /// The file (and line) where the problem is.
        location: Location,
        /// The problem itself.
        inner: Box<GraphError>,
    },
    /// The operating system refused a read.
    #[error("cannot read ({0})")]
    Io(#[from] std::io::Error),
    /// A required file of a dataset directory is absent.
    #[error("missing {0}")]
    MissingFile(String),
    /// The path is neither an `.npz` file nor a dataset directory.
    #[error("unknown graph format (expected an .npz file or a directory with edge.csv)")]
    UnknownFormat,
    /// The file is not a readable zip archive.
    #[error("not a zip archive (truncated or not an .npz)")]
    NotZip,
    /// A required array is absent from an `.npz` archive.
    #[error("missing array '{0}'")]
    MissingArray(String),
    /// An array is present but cannot be used (bad header, dtype or shape, short data).
    #[error("array '{name}' {problem}")]
    BadArray {
        /// The array's name in the archive.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A text field could not be parsed.
    #[error("cannot parse '{text}' as {expected}")]
    Parse {
        /// The offending text.
        text: String,
        /// What was expected there, e.g. "a node index".
        expected: &'static str,
    },
    /// A line of a text file has the wrong number of fields.
    #[error("{found} fields where {expected} were expected")]
    FieldCount {
        /// Fields found on the line.
        found: usize,
        /// Fields expected on the line.
        expected: usize,
    },
    /// The graph has no nodes.
    #[error("the graph has no nodes")]
    EmptyGraph,
    /// The graph has more nodes than 32-bit node ids can address.
    #[error("{0} nodes exceed the limit of 2^32 - 1")]
    TooManyNodes(u64),
    /// An edge endpoint is not a node of the graph.
    #[error("node index {index} out of range (graph has {nodes} nodes)")]
    EdgeOutOfRange {
        /// The endpoint as stored.
        index: i64,
        /// Number of nodes of the graph.
        nodes: usize,
    },
    /// A CSR row-pointer array has the wrong length.
    #[error("{matrix} indptr has {found} entries but {rows} rows need {}", rows + 1)]
    IndptrLength {
        /// Which matrix ("adjacency" or "features").
        matrix: &'static str,
        /// Entries found.
        found: usize,
        /// Rows of the matrix.
        rows: usize,
    },
    /// A CSR row-pointer array decreases somewhere.
    #[error("{matrix} indptr is not monotone: entry {position} is {value} after {previous}")]
    IndptrNotMonotone {
        /// Which matrix ("adjacency" or "features").
        matrix: &'static str,
        /// Index of the offending entry.
        position: usize,
        /// Its value.
        value: i64,
        /// The entry before it.
        previous: i64,
    },
    /// A CSR row-pointer array does not run from 0 to the number of stored entries.
    #[error("{matrix} indptr runs from {first} to {last} but there are {nnz} entries")]
    IndptrEnds {
        /// Which matrix ("adjacency" or "features").
        matrix: &'static str,
        /// Its first entry.
        first: i64,
        /// Its last entry.
        last: i64,
        /// Number of stored entries of the matrix.
        nnz: usize,
    },
    /// A feature column index is not below the feature dimension.
    #[error("feature ({row}, {col}) is outside the feature dimension {dim}")]
    FeatureColumnOutOfRange {
        /// Row (node) of the entry.
        row: usize,
        /// Column as stored.
        col: i64,
        /// Feature dimension.
        dim: usize,
    },
    /// A feature value is NaN or infinite.
    #[error("feature ({row}, {col}) is {value}")]
    NonFiniteFeature {
        /// Row (node) of the entry.
        row: usize,
        /// Column of the entry.
        col: usize,
        /// The value (NaN, inf or -inf).
        value: f32,
    },
    /// The feature matrix has a different number of rows than the graph has nodes.
    #[error("features have {rows} rows but the graph has {nodes} nodes")]
    FeatureRows {
        /// Rows of the feature matrix.
        rows: usize,
        /// Nodes of the graph.
        nodes: usize,
    },
    /// Rows of a dense feature table differ in width.
    #[error("row has {found} features but the first row has {expected}")]
    RaggedFeatures {
        /// Width of this row.
        found: usize,
        /// Width of the first row.
        expected: usize,
    },
    /// The label array has a different length than the graph has nodes.
    #[error("labels have {found} entries but the graph has {nodes} nodes")]
    LabelCount {
        /// Labels found.
        found: usize,
        /// Nodes of the graph.
        nodes: usize,
    },
    /// A label is negative.
    #[error("label of node {node} is {label}, labels must be 0 or more")]
    NegativeLabel {
        /// The node.
        node: usize,
        /// Its label.
        label: i64,
    },
    /// A label is not below the number of classes.
    #[error("label of node {node} is {label} but there are {classes} classes")]
    LabelOutOfRange {
        /// The node.
        node: usize,
        /// Its label.
        label: u64,
        /// Number of classes.
        classes: usize,
    },
    /// A list of node or class names is not one per node or class.
    #[error("{found} names given for {expected} {what}")]
    NameCount {
        /// "nodes" or "classes".
        what: &'static str,
        /// Names given.
        found: usize,
        /// Nodes or classes.
        expected: usize,
    },
    /// A textual spec (synthetic graph, split) is malformed.
    #[error("invalid {what} '{spec}': {problem}")]
    InvalidSpec {
        /// Kind of spec, e.g. "split".
        what: &'static str,
        /// The text given.
        spec: String,
        /// What is wrong, including the expected form.
        problem: String,
    },
    /// A generator or partitioner parameter is out of its domain.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// A split would leave one of its sets empty, or a class lacks nodes.
    #[error("cannot split: {0}")]
    Split(String),
    /// The graph would take more memory than the machine has.
    #[error(transparent)]
    OutOfMemory(#[from] crate::memory::OutOfMemory),
    /// The METIS library reported a failure.
    #[error("METIS failed: {0}")]
    Partitioner(String),
}

impl GraphError {
    /// Attaches a file location to this error.
    pub fn at(self, path: &Path, line: Option<u64>) -> GraphError {
        GraphError::At {
            location: Location {
                path: path.to_path_buf(),
                line,
            },
            inner: Box::new(self),
        }
    }

    /// The problem itself, with any file locations peeled off.
    pub fn root(&self) -> &GraphError {
        match self {
            GraphError::At { inner, .. } => inner.root(),
            other => other,
        }
    }
}

/// Attaches a file location to the error of a result.
pub(crate) trait ResultExt<T> {
    /// Wraps an error with `path` (and `line`).
    fn at(self, path: &Path, line: Option<u64>) -> Result<T, GraphError>;
}

impl<T, E: Into<GraphError>> ResultExt<T> for Result<T, E> {
    fn at(self, path: &Path, line: Option<u64>) -> Result<T, GraphError> {
        self.map_err(|e| e.into().at(path, line))
    }
}
