//! The planner's error type: every message is one line with the numbers involved.

use std::path::PathBuf;

use thiserror::Error;

/// Bytes in one GiB, for messages.
const GIB: f64 = (1u64 << 30) as f64;

/// Everything that can go wrong reading specs and plans or searching for a plan.
#[derive(Debug, Error)]
pub enum PlannerError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its contents are bad; wraps the error and names the file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its contents.
        #[source]
        source: Box<PlannerError>,
    },
    /// The text is not JSON of the expected shape (syntax, types, unknown or missing fields).
    #[error("{what}: {source}")]
    Json {
        /// Which document: "cluster", "model" or "plan".
        what: &'static str,
        /// The parser's message, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The document's `schema_version` is not one this planner reads.
    #[error("{what}: schema_version {found} is not supported (expected {expected})")]
    SchemaVersion {
        /// Which document.
        what: &'static str,
        /// The version found.
        found: u64,
        /// The version this planner reads.
        expected: u64,
    },
    /// A measured model figure is out of range.
    #[error("model: {field} must be {rule}, got {value}")]
    ModelFigure {
        /// The field.
        field: &'static str,
        /// The rule it breaks.
        rule: &'static str,
        /// The value found.
        value: f64,
    },
    /// An attention scope's text form is malformed.
    #[error(
        "scope {text:?}: {problem}; expected full or hops:K[:MAX] with K in 1..=255 and MAX >= 1, e.g. hops:2 or hops:2:128"
    )]
    Scope {
        /// The text given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The cluster lists no devices.
    #[error("cluster: devices must not be empty")]
    NoDevices,
    /// A device figure is out of range.
    #[error("device {index} ({name:?}): {field} must be {rule}, got {value}")]
    Device {
        /// Index of the device in `devices`.
        index: usize,
        /// Its name.
        name: String,
        /// The field.
        field: &'static str,
        /// The rule it breaks, e.g. "> 0".
        rule: &'static str,
        /// The value found.
        value: f64,
    },
    /// A link figure is out of range.
    #[error("{link}: {field} must be {rule}, got {value}")]
    Link {
        /// Which link: `link` (the default) or `links[i] (a-b)`.
        link: String,
        /// The field.
        field: &'static str,
        /// The rule it breaks.
        rule: &'static str,
        /// The value found.
        value: f64,
    },
    /// A per-pair link names a device that does not exist.
    #[error("links[{index}]: device {device} out of range (the cluster has {count} devices)")]
    LinkDevice {
        /// Index of the link in `links`.
        index: usize,
        /// The device index found.
        device: usize,
        /// Number of devices.
        count: usize,
    },
    /// A per-pair link joins a device to itself.
    #[error("links[{index}]: a and b are both device {device}")]
    SelfLink {
        /// Index of the link in `links`.
        index: usize,
        /// The device.
        device: usize,
    },
    /// Two per-pair links describe the same pair.
    #[error("links[{index}]: pair ({a}, {b}) is already given by links[{first}]")]
    DuplicateLink {
        /// Index of the repeated link.
        index: usize,
        /// One end.
        a: usize,
        /// The other end.
        b: usize,
        /// Index of the first link for this pair.
        first: usize,
    },
    /// A model figure is out of range.
    #[error("model: {field} must be {rule}, got {value}")]
    Model {
        /// The field.
        field: &'static str,
        /// The rule it breaks.
        rule: &'static str,
        /// The value found.
        value: usize,
    },
    /// The number of heads does not divide the hidden width.
    #[error("model: heads ({heads}) must divide hidden ({hidden})")]
    HeadsDivideHidden {
        /// Attention heads.
        heads: usize,
        /// Hidden width.
        hidden: usize,
    },
    /// A configuration's short text form does not parse.
    #[error("config {text:?}: expected the form dpN-ppN-cpN with N >= 1")]
    ConfigText {
        /// The text given.
        text: String,
    },
    /// A parallel configuration or plan is inconsistent with itself, the cluster or the model.
    #[error("config: {0}")]
    Config(String),
    /// Degrees that the search cannot use on this cluster and model.
    #[error("{degrees}: {reason}")]
    Degrees {
        /// The degrees in text form.
        degrees: String,
        /// Why they cannot be used.
        reason: String,
    },
    /// No configuration fits in memory; names the least-overflowing one's worst device.
    #[error(
        "no configuration fits: the best needs {:.1} GiB on device {device} ({name:?}, {:.1} GiB)",
        needed_bytes / GIB,
        capacity_bytes / GIB
    )]
    NothingFits {
        /// Peak bytes the least-overflowing configuration needs on its worst device.
        needed_bytes: f64,
        /// That device.
        device: usize,
        /// Its name.
        name: String,
        /// Its memory.
        capacity_bytes: f64,
    },
    /// The least-overflowing configuration fits in memory, but one of its devices' largest
    /// buffer exceeds the device's buffer limit.
    #[error(
        "no configuration fits: the best needs a {:.1} MiB buffer on device {device} ({name:?}), which binds at most {:.1} MiB",
        needed_bytes / (1024.0 * 1024.0),
        limit_bytes / (1024.0 * 1024.0)
    )]
    BufferTooLarge {
        /// Bytes of the largest buffer.
        needed_bytes: f64,
        /// That device.
        device: usize,
        /// Its name.
        name: String,
        /// Its buffer limit.
        limit_bytes: f64,
    },
}

impl PlannerError {
    /// Wraps an error about a file's contents so that its message names the file.
    pub(crate) fn in_file(self, path: &std::path::Path) -> Self {
        PlannerError::InFile {
            path: path.to_path_buf(),
            source: Box::new(self),
        }
    }
}
