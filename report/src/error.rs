//! Errors of writing a report.

use std::path::PathBuf;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The report directory could not be created.
    #[error("{}: cannot create the report directory: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file of the report could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Plotting a picture failed.
    #[error("{file}: cannot draw: {message}")]
    Draw {
        /// The picture's file name.
        file: &'static str,
        /// What plotters said.
        message: String,
    },
    /// There is nothing to draw.
    #[error("{file}: nothing to draw: {reason}")]
    Empty {
        /// The picture's file name.
        file: &'static str,
        /// What is missing.
        reason: String,
    },
}
