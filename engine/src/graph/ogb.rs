//! Loader for OGB-style raw CSV directories (`edge.csv`, `node-feat.csv`,
//! `node-label.csv`, each optionally gzipped as OGB's `raw/` folder ships them).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use flate2::read::MultiGzDecoder;

use super::csr::{Csr, node_index};
use super::dataset::{Graph, labels_from_raw};
use super::error::{GraphError, ResultExt};
use super::sparse::SparseMatrix;

/// Loads a graph from a directory holding `node-feat.csv` (one row of comma-separated
/// floats per node), `node-label.csv` (one integer per line) and `edge.csv` (`src,dst`
/// per line, no header); each may instead be gzipped (`edge.csv.gz`, ...). Blank lines
/// are skipped. The graph's name is the directory's (its parent's for a `raw/` folder).
pub fn load_ogb_dir(dir: &Path) -> Result<Graph, GraphError> {
    let (feat_path, feat_reader) = open_table(dir, "node-feat")?;
    let features = read_features(&feat_path, feat_reader)?;
    let nodes = features.rows();
    if nodes == 0 {
        return Err(GraphError::EmptyGraph.at(&feat_path, None));
    }

    let (label_path, label_reader) = open_table(dir, "node-label")?;
    let mut raw_labels = Vec::with_capacity(nodes);
    for_each_line(&label_path, label_reader, |line| {
        raw_labels.push(parse_field(line.trim(), "a label")?);
        Ok(())
    })?;
    let (labels, num_classes) = labels_from_raw(&raw_labels, nodes).at(&label_path, None)?;

    let (edge_path, edge_reader) = open_table(dir, "edge")?;
    let mut edges = Vec::new();
    for_each_line(&edge_path, edge_reader, |line| {
        let mut fields = line.split(',');
        let (Some(src), Some(dst), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(GraphError::FieldCount {
                found: line.split(',').count(),
                expected: 2,
            });
        };
        let src = node_index(parse_field(src.trim(), "a node index")?, nodes)?;
        let dst = node_index(parse_field(dst.trim(), "a node index")?, nodes)?;
        edges.push((src, dst));
        Ok(())
    })?;
    let adjacency = Csr::from_edges(nodes, &edges).at(&edge_path, None)?;

    Graph::new(adjacency, features, labels, num_classes, dataset_name(dir)).at(dir, None)
}

/// Opens `{stem}.csv.gz` or else `{stem}.csv` in `dir`, decompressing as needed.
fn open_table(dir: &Path, stem: &str) -> Result<(PathBuf, Box<dyn BufRead>), GraphError> {
    let gz = dir.join(format!("{stem}.csv.gz"));
    if gz.is_file() {
        let file = File::open(&gz).at(&gz, None)?;
        return Ok((gz, Box::new(BufReader::new(MultiGzDecoder::new(file)))));
    }
    let plain = dir.join(format!("{stem}.csv"));
    if plain.is_file() {
        let file = File::open(&plain).at(&plain, None)?;
        return Ok((plain, Box::new(BufReader::new(file))));
    }
    Err(GraphError::MissingFile(format!("{stem}.csv (or {stem}.csv.gz)")).at(dir, None))
}

/// Calls `f` on every non-blank line (without its line ending), attaching the line
/// number to any error.
fn for_each_line(
    path: &Path,
    mut reader: Box<dyn BufRead>,
    mut f: impl FnMut(&str) -> Result<(), GraphError>,
) -> Result<(), GraphError> {
    let mut buf = String::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        line_no += 1;
        if reader.read_line(&mut buf).at(path, Some(line_no))? == 0 {
            return Ok(());
        }
        let line = buf.trim_end_matches(['\n', '\r']);
        if !line.trim().is_empty() {
            f(line).at(path, Some(line_no))?;
        }
    }
}

/// Parses one field, naming what was expected on failure.
fn parse_field<T: FromStr>(text: &str, expected: &'static str) -> Result<T, GraphError> {
    text.parse().map_err(|_| GraphError::Parse {
        text: text.to_string(),
        expected,
    })
}

/// Reads the dense feature table, one row per line, all rows of one width.
fn read_features(path: &Path, reader: Box<dyn BufRead>) -> Result<SparseMatrix, GraphError> {
    let mut dim = None;
    let mut rows = 0;
    let mut data = Vec::new();
    for_each_line(path, reader, |line| {
        let before = data.len();
        for field in line.split(',') {
            data.push(parse_field::<f32>(field.trim(), "a feature value")?);
        }
        let width = data.len() - before;
        match dim {
            None => dim = Some(width),
            Some(expected) if expected != width => {
                return Err(GraphError::RaggedFeatures {
                    found: width,
                    expected,
                });
            }
            Some(_) => {}
        }
        rows += 1;
        Ok(())
    })?;
    SparseMatrix::from_dense(rows, dim.unwrap_or(0), &data).at(path, None)
}

/// The directory's name, or its parent's when it is OGB's `raw` folder.
fn dataset_name(dir: &Path) -> String {
    let dir = if dir.file_name().is_some_and(|n| n == "raw") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    dir.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const FEAT: &str = "0.5,0,1\n0,0,0\n1.25,-2,0\n0,0,3\n";
    const LABEL: &str = "0\n2\n1\n1\n";
    const EDGE: &str = "0,1\n1,2\n2,1\n3,3\n2,3\n";

    /// Writes the three tables into `dir`, gzipping those named in `gzipped`.
    fn write_tables(dir: &Path, tables: [(&str, &str); 3], gzipped: &[&str]) -> TestResult {
        for (stem, text) in tables {
            if gzipped.contains(&stem) {
                let mut enc = GzEncoder::new(
                    File::create(dir.join(format!("{stem}.csv.gz")))?,
                    Compression::default(),
                );
                enc.write_all(text.as_bytes())?;
                enc.finish()?;
            } else {
                std::fs::write(dir.join(format!("{stem}.csv")), text)?;
            }
        }
        Ok(())
    }

    fn load_tables(
        feat: &str,
        label: &str,
        edge: &str,
    ) -> Result<(tempfile::TempDir, Result<Graph, GraphError>), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        write_tables(
            dir.path(),
            [("node-feat", feat), ("node-label", label), ("edge", edge)],
            &[],
        )?;
        let graph = load_ogb_dir(dir.path());
        Ok((dir, graph))
    }

    fn check_tiny(graph: &Graph) {
        assert_eq!(graph.num_nodes(), 4);
        assert_eq!(graph.feature_dim(), 3);
        assert_eq!(graph.num_classes(), 3);
        assert_eq!(graph.adjacency().num_edges(), 3);
        assert_eq!(graph.adjacency().neighbors(2), &[1, 3]);
        assert_eq!(
            graph.features().to_dense(),
            [0.5, 0., 1., 0., 0., 0., 1.25, -2., 0., 0., 0., 3.]
        );
        assert_eq!(graph.labels(), &[0, 2, 1, 1]);
    }

    #[test]
    fn loads_plain_csv() -> TestResult {
        let (_dir, graph) = load_tables(FEAT, LABEL, EDGE)?;
        check_tiny(&graph?);
        Ok(())
    }

    #[test]
    fn loads_gzipped_csv_from_raw_folder() -> TestResult {
        let root = tempfile::tempdir()?;
        let raw = root.path().join("ogbn-tiny").join("raw");
        std::fs::create_dir_all(&raw)?;
        write_tables(
            &raw,
            [("node-feat", FEAT), ("node-label", LABEL), ("edge", EDGE)],
            &["node-feat", "edge"],
        )?;
        let graph = load_ogb_dir(&raw)?;
        check_tiny(&graph);
        assert_eq!(graph.name(), "ogbn-tiny");
        Ok(())
    }

    #[test]
    fn reports_edge_out_of_range_with_line() -> TestResult {
        let (dir, graph) = load_tables(FEAT, LABEL, "0,1\n1,2\n\n2,4\n")?;
        let err = graph.unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::EdgeOutOfRange { index: 4, nodes: 4 }
        ));
        let expected = format!(
            "{}: node index 4 out of range (graph has 4 nodes)",
            dir.path().join("edge.csv line 4").display()
        );
        assert_eq!(err.to_string(), expected);
        Ok(())
    }

    #[test]
    fn reports_bad_lines() -> TestResult {
        let (_dir, graph) = load_tables(FEAT, LABEL, "0,1\n1;2\n")?;
        assert!(matches!(
            graph.unwrap_err().root(),
            GraphError::FieldCount {
                found: 1,
                expected: 2
            }
        ));
        let (_dir, graph) = load_tables(FEAT, LABEL, "0,x\n")?;
        assert!(
            graph
                .unwrap_err()
                .to_string()
                .ends_with("edge.csv line 1: cannot parse 'x' as a node index")
        );
        let (_dir, graph) = load_tables("1,2\n3\n", "0\n0\n", "")?;
        assert!(matches!(
            graph.unwrap_err().root(),
            GraphError::RaggedFeatures {
                found: 1,
                expected: 2
            }
        ));
        Ok(())
    }

    #[test]
    fn rejects_bad_labels_features_and_empty_graph() -> TestResult {
        let (_dir, graph) = load_tables(FEAT, "0\n1\n1\n", EDGE)?;
        assert!(matches!(
            graph.unwrap_err().root(),
            GraphError::LabelCount { found: 3, nodes: 4 }
        ));
        let (_dir, graph) = load_tables(FEAT, "0\n1\n-1\n1\n", EDGE)?;
        assert!(matches!(
            graph.unwrap_err().root(),
            GraphError::NegativeLabel { node: 2, label: -1 }
        ));
        let (_dir, graph) = load_tables("1,2\n3,nan\n", "0\n1\n", "")?;
        let err = graph.unwrap_err();
        assert!(matches!(
            err.root(),
            GraphError::NonFiniteFeature { row: 1, col: 1, .. }
        ));
        assert!(
            err.to_string()
                .ends_with("node-feat.csv: feature (1, 1) is NaN"),
            "{err}"
        );
        let (_dir, graph) = load_tables("", "", "")?;
        assert!(matches!(graph.unwrap_err().root(), GraphError::EmptyGraph));
        Ok(())
    }

    #[test]
    fn reports_missing_table() -> TestResult {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("node-feat.csv"), FEAT)?;
        let err = load_ogb_dir(dir.path()).unwrap_err();
        assert!(
            matches!(err.root(), GraphError::MissingFile(name) if name.starts_with("node-label.csv"))
        );
        Ok(())
    }
}
