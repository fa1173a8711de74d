//! Picks the loader for a path.

use std::path::Path;

use super::dataset::Graph;
use super::error::GraphError;
use super::npz::load_npz;
use super::ogb::load_ogb_dir;

/// Loads a graph: a directory as OGB CSV tables, a `*.npz` file as the gnn-benchmark layout.
pub fn load_graph(path: &Path) -> Result<Graph, GraphError> {
    if !path.exists() {
        let missing =
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory");
        return Err(GraphError::Io(missing).at(path, None));
    }
    if path.is_dir() {
        load_ogb_dir(path)
    } else if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npz"))
    {
        load_npz(path)
    } else {
        Err(GraphError::UnknownFormat.at(path, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testutil::cora_path;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn dispatches_by_kind_of_path() -> TestResult {
        assert_eq!(load_graph(&cora_path())?.num_nodes(), 2708);
        let dir = tempfile::tempdir()?;
        let err = load_graph(dir.path()).unwrap_err();
        assert!(matches!(err.root(), GraphError::MissingFile(_)), "{err}");
        let other = dir.path().join("graph.txt");
        std::fs::write(&other, "")?;
        assert!(matches!(
            load_graph(&other).unwrap_err().root(),
            GraphError::UnknownFormat
        ));
        Ok(())
    }
}
