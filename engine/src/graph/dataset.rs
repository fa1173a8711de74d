//! A node-classification dataset: adjacency, node features and labels, checked together.

use super::csr::Csr;
use super::error::GraphError;
use super::sparse::SparseMatrix;

/// A validated graph with one feature row and one class label per node.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    adjacency: Csr,
    features: SparseMatrix,
    labels: Vec<u32>,
    num_classes: usize,
    name: String,
    node_names: Option<Vec<String>>,
    class_names: Option<Vec<String>>,
}

impl Graph {
    /// Puts the parts together, checking that the graph is non-empty, that features
    /// and labels have one entry per node and that every label is below `num_classes`.
    pub fn new(
        adjacency: Csr,
        features: SparseMatrix,
        labels: Vec<u32>,
        num_classes: usize,
        name: impl Into<String>,
    ) -> Result<Self, GraphError> {
        let nodes = adjacency.num_nodes();
        if nodes == 0 {
            return Err(GraphError::EmptyGraph);
        }
        if features.rows() != nodes {
            return Err(GraphError::FeatureRows {
                rows: features.rows(),
                nodes,
            });
        }
        if labels.len() != nodes {
            return Err(GraphError::LabelCount {
                found: labels.len(),
                nodes,
            });
        }
        if let Some((node, &label)) = labels
            .iter()
            .enumerate()
            .find(|&(_, &l)| l as usize >= num_classes)
        {
            return Err(GraphError::LabelOutOfRange {
                node,
                label: u64::from(label),
                classes: num_classes,
            });
        }
        Ok(Self {
            adjacency,
            features,
            labels,
            num_classes,
            name: name.into(),
            node_names: None,
            class_names: None,
        })
    }

    /// The graph with names of its nodes (one per node) and of its classes (one per class),
    /// where the data has them; a list of another length is refused.
    pub fn with_names(
        self,
        node_names: Option<Vec<String>>,
        class_names: Option<Vec<String>>,
    ) -> Result<Self, GraphError> {
        let check = |what: &'static str, names: &Option<Vec<String>>, expected: usize| match names {
            Some(names) if names.len() != expected => Err(GraphError::NameCount {
                what,
                found: names.len(),
                expected,
            }),
            _ => Ok(()),
        };
        check("nodes", &node_names, self.num_nodes())?;
        check("classes", &class_names, self.num_classes)?;
        Ok(Self {
            node_names,
            class_names,
            ..self
        })
    }

    /// The name of every node, where the data has them.
    pub fn node_names(&self) -> Option<&[String]> {
        self.node_names.as_deref()
    }

    /// The name of every class, where the data has them.
    pub fn class_names(&self) -> Option<&[String]> {
        self.class_names.as_deref()
    }

    /// The symmetric adjacency.
    pub fn adjacency(&self) -> &Csr {
        &self.adjacency
    }

    /// Node features, `num_nodes × feature_dim`.
    pub fn features(&self) -> &SparseMatrix {
        &self.features
    }

    /// Class of each node, each below `num_classes`.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// A short name (file stem, directory name or synthetic spec).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.adjacency.num_nodes()
    }

    /// Feature dimension.
    pub fn feature_dim(&self) -> usize {
        self.features.cols()
    }

    /// Mean non-zero input features per node (0 for a graph without nodes).
    pub fn feature_entries_per_node(&self) -> f64 {
        match self.num_nodes() {
            0 => 0.0,
            nodes => self.features.nnz() as f64 / nodes as f64,
        }
    }
}

/// Turns raw labels into class ids, rejecting negatives and checking the count;
/// the number of classes is the largest label plus one.
pub(crate) fn labels_from_raw(raw: &[i64], nodes: usize) -> Result<(Vec<u32>, usize), GraphError> {
    if raw.len() != nodes {
        return Err(GraphError::LabelCount {
            found: raw.len(),
            nodes,
        });
    }
    let labels = raw
        .iter()
        .enumerate()
        .map(|(node, &label)| {
            u32::try_from(label).map_err(|_| {
                if label < 0 {
                    GraphError::NegativeLabel { node, label }
                } else {
                    GraphError::LabelOutOfRange {
                        node,
                        label: label as u64,
                        classes: u32::MAX as usize,
                    }
                }
            })
        })
        .collect::<Result<Vec<u32>, _>>()?;
    let num_classes = labels.iter().max().map_or(0, |&m| m as usize + 1);
    Ok((labels, num_classes))
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn parts(nodes: usize) -> Result<(Csr, SparseMatrix), GraphError> {
        let adjacency = Csr::from_edges(nodes, &[])?;
        let features = SparseMatrix::from_dense(nodes, 1, &vec![1.0; nodes])?;
        Ok((adjacency, features))
    }

    #[test]
    fn checks_parts_against_each_other() -> TestResult {
        let (adj, feat) = parts(3)?;
        let graph = Graph::new(adj.clone(), feat.clone(), vec![0, 1, 1], 2, "tiny")?;
        assert_eq!(
            (graph.num_nodes(), graph.feature_dim(), graph.name()),
            (3, 1, "tiny")
        );

        let err = Graph::new(adj.clone(), feat.clone(), vec![0, 1], 2, "x").unwrap_err();
        assert!(matches!(err, GraphError::LabelCount { found: 2, nodes: 3 }));
        let err = Graph::new(adj.clone(), feat, vec![0, 1, 2], 2, "x").unwrap_err();
        assert!(matches!(
            err,
            GraphError::LabelOutOfRange {
                node: 2,
                label: 2,
                classes: 2
            }
        ));
        let (_, short_features) = parts(2)?;
        let err = Graph::new(adj, short_features, vec![0, 1, 1], 2, "x").unwrap_err();
        assert!(matches!(err, GraphError::FeatureRows { rows: 2, nodes: 3 }));
        let named = graph
            .clone()
            .with_names(Some(vec!["a".into(), "b".into(), "c".into()]), None)?;
        assert_eq!(named.node_names().map(<[String]>::len), Some(3));
        let err = graph.with_names(None, Some(vec!["x".into()])).unwrap_err();
        assert_eq!(err.to_string(), "1 names given for 2 classes");
        let (empty_adj, empty_feat) = parts(0)?;
        let err = Graph::new(empty_adj, empty_feat, vec![], 0, "x").unwrap_err();
        assert!(matches!(err, GraphError::EmptyGraph));
        Ok(())
    }

    #[test]
    fn raw_labels_are_checked() -> TestResult {
        assert_eq!(labels_from_raw(&[2, 0, 1], 3)?, (vec![2, 0, 1], 3));
        let err = labels_from_raw(&[0, -1], 2).unwrap_err();
        assert!(matches!(
            err,
            GraphError::NegativeLabel { node: 1, label: -1 }
        ));
        let err = labels_from_raw(&[0, 1], 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "labels have 2 entries but the graph has 3 nodes"
        );
        Ok(())
    }
}
