//! Seeded train/validation/test splits of a graph's nodes.

use std::fmt;
use std::str::FromStr;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::dataset::Graph;
use super::error::GraphError;

/// Validation and test sizes of the Planetoid protocol, used by [`SplitSpec::PerClass`].
const PLANETOID_VAL: usize = 500;
const PLANETOID_TEST: usize = 1000;

/// How to split the nodes; text forms `random:TRAIN:VAL` and `per-class:K`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitSpec {
    /// Fractions of the nodes for training and validation (each in (0, 1), summing to
    /// less than 1); the rest is the test set.
    Random {
        /// Fraction of nodes to train on.
        train: f64,
        /// Fraction of nodes to validate on.
        val: f64,
    },
    /// The Planetoid protocol: `per_class` training nodes of every class, then 500
    /// validation and 1000 test nodes from the rest. When fewer than 1500 nodes remain,
    /// a third of them validate and the others test.
    PerClass {
        /// Training nodes per class.
        per_class: usize,
    },
}

impl Default for SplitSpec {
    /// `random:0.6:0.2`.
    fn default() -> Self {
        SplitSpec::Random {
            train: 0.6,
            val: 0.2,
        }
    }
}

/// Disjoint sets of node ids, each in ascending order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Nodes whose labels train the model.
    pub train: Vec<u32>,
    /// Nodes for model selection.
    pub val: Vec<u32>,
    /// Nodes for the final evaluation.
    pub test: Vec<u32>,
}

impl Split {
    /// No node in any set (inference, which predicts every node).
    pub fn none() -> Self {
        Self {
            train: Vec::new(),
            val: Vec::new(),
            test: Vec::new(),
        }
    }
}

/// Splits the nodes of `graph` by `spec`, shuffled by `seed`; equal inputs give equal splits.
/// Fails if a set would be empty or (per class) a class has fewer than `K` nodes.
pub fn split(graph: &Graph, spec: &SplitSpec, seed: u64) -> Result<Split, GraphError> {
    let n = graph.num_nodes();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let (train, rest) = match *spec {
        SplitSpec::Random { train, .. } => {
            let count = ((train * n as f64).round() as usize).min(n);
            let rest = order.split_off(count);
            (order, rest)
        }
        SplitSpec::PerClass { per_class } => per_class_train(graph, &order, per_class)?,
    };
    let val_count = match *spec {
        SplitSpec::Random { val, .. } => ((val * n as f64).round() as usize).min(rest.len()),
        SplitSpec::PerClass { .. } if rest.len() >= PLANETOID_VAL + PLANETOID_TEST => PLANETOID_VAL,
        SplitSpec::PerClass { .. } => rest.len() / 3,
    };
    let test_count = match *spec {
        SplitSpec::PerClass { .. } => (rest.len() - val_count).min(PLANETOID_TEST),
        SplitSpec::Random { .. } => rest.len() - val_count,
    };
    let sets = [train.len(), val_count, test_count];
    if sets.contains(&0) {
        return Err(GraphError::Split(format!(
            "{spec} of {n} nodes gives {} train, {} validation and {} test nodes; each set needs at least one",
            sets[0], sets[1], sets[2]
        )));
    }
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v
    };
    Ok(Split {
        train: sorted(train),
        val: sorted(rest[..val_count].to_vec()),
        test: sorted(rest[val_count..val_count + test_count].to_vec()),
    })
}

/// Takes the first `k` nodes of each class in `order`; returns them and the other
/// nodes, both in `order`'s order.
fn per_class_train(
    graph: &Graph,
    order: &[u32],
    k: usize,
) -> Result<(Vec<u32>, Vec<u32>), GraphError> {
    let mut taken = vec![0usize; graph.num_classes()];
    let (mut train, mut rest) = (Vec::new(), Vec::new());
    for &node in order {
        let class = graph.labels()[node as usize] as usize;
        if taken[class] < k {
            taken[class] += 1;
            train.push(node);
        } else {
            rest.push(node);
        }
    }
    if let Some((class, &count)) = taken.iter().enumerate().find(|&(_, &c)| c < k) {
        return Err(GraphError::Split(format!(
            "class {class} has {count} nodes, fewer than the {k} training nodes per class"
        )));
    }
    Ok((train, rest))
}

impl FromStr for SplitSpec {
    type Err = GraphError;

    fn from_str(spec: &str) -> Result<Self, GraphError> {
        let invalid = |problem: &str| GraphError::InvalidSpec {
            what: "split",
            spec: spec.to_string(),
            problem: problem.to_string(),
        };
        let random_form = "expected random:TRAIN:VAL with fractions in (0, 1) and TRAIN + VAL < 1, e.g. random:0.6:0.2";
        let fields: Vec<&str> = spec.split(':').collect();
        match fields[..] {
            ["random", train, val] => match (train.parse::<f64>(), val.parse::<f64>()) {
                (Ok(train), Ok(val)) if train > 0.0 && val > 0.0 && train + val < 1.0 => {
                    Ok(SplitSpec::Random { train, val })
                }
                _ => Err(invalid(random_form)),
            },
            ["random", ..] => Err(invalid(random_form)),
            ["per-class", k] => match k.parse::<usize>() {
                Ok(per_class) if per_class > 0 => Ok(SplitSpec::PerClass { per_class }),
                _ => Err(invalid(
                    "expected per-class:K with K >= 1, e.g. per-class:20",
                )),
            },
            _ => Err(invalid(
                "expected random:TRAIN:VAL (e.g. random:0.6:0.2) or per-class:K (e.g. per-class:20)",
            )),
        }
    }
}

impl fmt::Display for SplitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitSpec::Random { train, val } => write!(f, "random:{train}:{val}"),
            SplitSpec::PerClass { per_class } => write!(f, "per-class:{per_class}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::sbm::{SbmParams, sbm};
    use crate::graph::testutil::cora;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn assert_disjoint(s: &Split, n: usize) {
        let mut seen = vec![false; n];
        for &v in s.train.iter().chain(&s.val).chain(&s.test) {
            assert!(!seen[v as usize], "node {v} in two sets");
            seen[v as usize] = true;
        }
    }

    #[test]
    fn random_split_sizes_disjointness_and_determinism() -> TestResult {
        let graph = cora()?;
        let spec: SplitSpec = "random:0.6:0.2".parse()?;
        let s = split(&graph, &spec, 3)?;
        assert_eq!((s.train.len(), s.val.len(), s.test.len()), (1625, 542, 541));
        assert_disjoint(&s, 2708);
        assert_eq!(s, split(&graph, &spec, 3)?);
        assert_ne!(s, split(&graph, &spec, 4)?);
        Ok(())
    }

    #[test]
    fn per_class_split_follows_planetoid() -> TestResult {
        let graph = cora()?;
        let s = split(&graph, &"per-class:20".parse()?, 0)?;
        assert_eq!((s.train.len(), s.val.len(), s.test.len()), (140, 500, 1000));
        assert_disjoint(&s, 2708);
        for class in 0..7 {
            let count = s
                .train
                .iter()
                .filter(|&&v| graph.labels()[v as usize] == class)
                .count();
            assert_eq!(count, 20, "class {class}");
        }
        assert_eq!(s, split(&graph, &SplitSpec::PerClass { per_class: 20 }, 0)?);
        Ok(())
    }

    #[test]
    fn per_class_split_of_a_small_graph_shares_the_rest() -> TestResult {
        let graph = sbm(&SbmParams::new(200, 4, 0))?;
        let s = split(&graph, &SplitSpec::PerClass { per_class: 5 }, 1)?;
        assert_eq!((s.train.len(), s.val.len(), s.test.len()), (20, 60, 120));
        assert_disjoint(&s, 200);
        Ok(())
    }

    #[test]
    fn empty_sets_and_small_classes_are_errors() -> TestResult {
        let graph = sbm(&SbmParams::new(10, 2, 0))?;
        let err = split(&graph, &"random:0.5:0.45".parse()?, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot split: random:0.5:0.45 of 10 nodes gives 5 train, 5 validation and 0 test nodes; each set needs at least one"
        );
        let err = split(&graph, &SplitSpec::PerClass { per_class: 6 }, 0).unwrap_err();
        assert!(
            err.to_string()
                .contains("fewer than the 6 training nodes per class"),
            "{err}"
        );
        assert!(matches!(
            split(&graph, &SplitSpec::PerClass { per_class: 5 }, 0),
            Err(GraphError::Split(_))
        ));
        Ok(())
    }

    #[test]
    fn parses_and_rejects_specs() -> TestResult {
        assert_eq!(
            "random:0.6:0.2".parse::<SplitSpec>()?,
            SplitSpec::Random {
                train: 0.6,
                val: 0.2
            }
        );
        assert_eq!(
            "per-class:20".parse::<SplitSpec>()?.to_string(),
            "per-class:20"
        );
        assert_eq!(
            "random:0.6:0.2".parse::<SplitSpec>()?.to_string(),
            "random:0.6:0.2"
        );
        for bad in [
            "random:0.6",
            "random:0.8:0.2",
            "random:0:0.5",
            "random:a:b",
            "per-class:0",
            "per-class:x",
            "planetoid",
        ] {
            assert!(
                matches!(
                    bad.parse::<SplitSpec>(),
                    Err(GraphError::InvalidSpec { .. })
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
