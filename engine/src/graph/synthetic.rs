//! The command-line form of a synthetic graph: `sbm:NODES:CLASSES` or `rmat:SCALE:EDGE_FACTOR`.

use std::fmt;
use std::str::FromStr;

use super::dataset::Graph;
use super::error::GraphError;
use super::rmat::{RmatParams, rmat};
use super::sbm::{SbmParams, sbm};
use crate::memory::{GraphSize, check_host};

/// A synthetic graph named by its short text form; other parameters take their defaults
/// ([`SbmParams::new`], [`RmatParams::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntheticSpec {
    /// Stochastic block model, `sbm:NODES:CLASSES`.
    Sbm {
        /// Number of nodes.
        nodes: usize,
        /// Number of classes.
        classes: usize,
    },
    /// R-MAT power-law graph, `rmat:SCALE:EDGE_FACTOR` (2^SCALE nodes).
    Rmat {
        /// log2 of the number of nodes.
        scale: u32,
        /// Generated edges per node.
        edge_factor: usize,
    },
}

impl SyntheticSpec {
    /// Generates the graph for `seed`, after refusing one whose estimated size exceeds the
    /// host's available memory or whose node ids would not fit in 32 bits.
    pub fn generate(&self, seed: u64) -> Result<Graph, GraphError> {
        let size = self.size();
        check_host(format!("--synthetic {self}"), size.host_bytes())?;
        if size.nodes > u64::from(u32::MAX) {
            return Err(GraphError::TooManyNodes(size.nodes));
        }
        match *self {
            SyntheticSpec::Sbm { nodes, classes } => sbm(&SbmParams::new(nodes, classes, seed)),
            SyntheticSpec::Rmat { scale, edge_factor } => {
                rmat(&RmatParams::new(scale, edge_factor, seed))
            }
        }
    }

    /// The size of the graph this spec generates (edges and feature values before duplicates
    /// merge: an upper bound), from the generators' default parameters.
    pub fn size(&self) -> GraphSize {
        match *self {
            SyntheticSpec::Sbm { nodes, classes } => {
                let params = SbmParams::new(nodes, classes, 0);
                let nodes = nodes as u64;
                GraphSize {
                    nodes,
                    edges: (nodes as f64 * params.avg_degree / 2.0).round() as u64,
                    feature_nonzeros: nodes.saturating_mul(params.words_per_node as u64),
                }
            }
            SyntheticSpec::Rmat { scale, edge_factor } => {
                let params = RmatParams::new(scale, edge_factor, 0);
                let nodes = 1u64 << scale;
                GraphSize {
                    nodes,
                    edges: nodes.saturating_mul(edge_factor as u64),
                    feature_nonzeros: nodes.saturating_mul(params.words_per_node as u64),
                }
            }
        }
    }
}

impl FromStr for SyntheticSpec {
    type Err = GraphError;

    fn from_str(spec: &str) -> Result<Self, GraphError> {
        let invalid = |problem: &str| GraphError::InvalidSpec {
            what: "synthetic graph",
            spec: spec.to_string(),
            problem: problem.to_string(),
        };
        let sbm_form = "expected sbm:NODES:CLASSES with 1 <= CLASSES <= NODES, e.g. sbm:2000:5";
        let rmat_form = "expected rmat:SCALE:EDGE_FACTOR with SCALE in 1..=31 and EDGE_FACTOR >= 1, e.g. rmat:20:10";
        let fields: Vec<&str> = spec.split(':').collect();
        match fields[..] {
            ["sbm", nodes, classes] => match (nodes.parse::<usize>(), classes.parse::<usize>()) {
                (Ok(nodes), Ok(classes)) if 1 <= classes && classes <= nodes => {
                    Ok(SyntheticSpec::Sbm { nodes, classes })
                }
                _ => Err(invalid(sbm_form)),
            },
            ["sbm", ..] => Err(invalid(sbm_form)),
            ["rmat", scale, edge_factor] => {
                match (scale.parse::<u32>(), edge_factor.parse::<usize>()) {
                    (Ok(scale), Ok(edge_factor))
                        if (1..=31).contains(&scale) && edge_factor >= 1 =>
                    {
                        Ok(SyntheticSpec::Rmat { scale, edge_factor })
                    }
                    _ => Err(invalid(rmat_form)),
                }
            }
            ["rmat", ..] => Err(invalid(rmat_form)),
            _ => Err(invalid(
                "expected sbm:NODES:CLASSES (e.g. sbm:2000:5) or rmat:SCALE:EDGE_FACTOR (e.g. rmat:20:10)",
            )),
        }
    }
}

impl fmt::Display for SyntheticSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyntheticSpec::Sbm { nodes, classes } => write!(f, "sbm:{nodes}:{classes}"),
            SyntheticSpec::Rmat { scale, edge_factor } => write!(f, "rmat:{scale}:{edge_factor}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn parses_and_round_trips() -> TestResult {
        for text in ["sbm:2000:5", "rmat:10:4"] {
            let spec: SyntheticSpec = text.parse()?;
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!(
            "sbm:2000:5".parse::<SyntheticSpec>()?,
            SyntheticSpec::Sbm {
                nodes: 2000,
                classes: 5
            }
        );
        let graph = "sbm:300:3".parse::<SyntheticSpec>()?.generate(1)?;
        assert_eq!((graph.num_nodes(), graph.num_classes()), (300, 3));
        assert_eq!(
            "rmat:8:4"
                .parse::<SyntheticSpec>()?
                .generate(1)?
                .num_nodes(),
            256
        );
        Ok(())
    }

    #[test]
    fn refuses_a_graph_beyond_memory_before_generating_it() -> TestResult {
        let start = std::time::Instant::now();
        let spec: SyntheticSpec = "sbm:1000000000000:4".parse()?;
        assert!(spec.size().host_bytes() > 100_000_000_000_000);
        match spec.generate(0) {
            Err(GraphError::OutOfMemory(e)) => assert!(
                e.to_string()
                    .starts_with("--synthetic sbm:1000000000000:4 needs about 2"),
                "{e}"
            ),
            // Where the system does not say how much memory is free, the node limit refuses it.
            Err(GraphError::TooManyNodes(nodes)) => assert_eq!(nodes, 1_000_000_000_000),
            other => return Err(format!("expected a refusal, got {other:?}").into()),
        }
        assert!(start.elapsed().as_secs() < 5, "refused without generating");
        Ok(())
    }

    #[test]
    fn rejects_malformed_specs() {
        for text in [
            "sbm:2000",
            "sbm:x:5",
            "sbm:5:6",
            "sbm:0:0",
            "rmat:40:2",
            "rmat:10:0",
            "er:10:2",
            "",
        ] {
            let err = text.parse::<SyntheticSpec>().unwrap_err();
            assert!(matches!(err, GraphError::InvalidSpec { .. }), "{text}");
        }
        let err = "sbm:2000".parse::<SyntheticSpec>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid synthetic graph 'sbm:2000': expected sbm:NODES:CLASSES with 1 <= CLASSES <= NODES, e.g. sbm:2000:5"
        );
    }
}
