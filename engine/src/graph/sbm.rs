//! Stochastic block model generator with class-correlated sparse binary features.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::csr::Csr;
use super::dataset::Graph;
use super::error::GraphError;
use super::sparse::SparseMatrix;

/// Parameters of [`sbm`].
#[derive(Debug, Clone, PartialEq)]
pub struct SbmParams {
    /// Number of nodes.
    pub nodes: usize,
    /// Number of classes (blocks), of near-equal sizes.
    pub classes: usize,
    /// Feature dimension (vocabulary size); each class owns `features / classes` topic words.
    pub features: usize,
    /// Expected degree before self-loops and repeats are dropped.
    pub avg_degree: f64,
    /// Expected number of intra-class edges per inter-class edge (4.0: 80% of edges stay
    /// inside a class, about Cora's homophily).
    pub intra_inter_ratio: f64,
    /// Words drawn per node (repeats merge, so rows have at most this many ones).
    pub words_per_node: usize,
    /// Probability that a word is drawn from the node's class topic words rather than
    /// uniformly from the whole vocabulary.
    pub signal: f64,
    /// Seed of the generator; equal parameters give equal graphs.
    pub seed: u64,
}

impl SbmParams {
    /// Defaults (500 features, degree 5, 80% intra-class edges, 20 words of which 15%
    /// on-topic) tuned so that, at 5 classes, word votes of a node alone classify about
    /// 64% of nodes and votes summed over its 2-hop neighbourhood about 94%.
    pub fn new(nodes: usize, classes: usize, seed: u64) -> Self {
        Self {
            nodes,
            classes,
            features: 500,
            avg_degree: 5.0,
            intra_inter_ratio: 4.0,
            words_per_node: 20,
            signal: 0.15,
            seed,
        }
    }

    /// Checks every parameter's domain.
    fn validate(&self) -> Result<(), GraphError> {
        let fail = |what: String| Err(GraphError::InvalidParameter(what));
        if self.nodes == 0 || self.classes == 0 || self.classes > self.nodes {
            return fail(format!(
                "sbm needs 1 <= classes <= nodes, got {} classes and {} nodes",
                self.classes, self.nodes
            ));
        }
        if self.features < self.classes {
            return fail(format!(
                "sbm needs at least one feature per class, got {} features for {} classes",
                self.features, self.classes
            ));
        }
        if !(self.avg_degree.is_finite() && self.avg_degree >= 0.0) {
            return fail(format!(
                "sbm average degree must be >= 0, got {}",
                self.avg_degree
            ));
        }
        if !(self.intra_inter_ratio.is_finite() && self.intra_inter_ratio > 0.0) {
            return fail(format!(
                "sbm intra/inter ratio must be > 0, got {}",
                self.intra_inter_ratio
            ));
        }
        if !(0.0..=1.0).contains(&self.signal) {
            return fail(format!(
                "sbm feature signal must be in [0, 1], got {}",
                self.signal
            ));
        }
        Ok(())
    }
}

/// Generates a planted-partition graph: `nodes * avg_degree / 2` edges, each from a
/// uniform node to a uniform member of its own class with probability
/// `ratio / (1 + ratio)`, else to a uniform member of a uniformly chosen other class.
/// Features: each node draws `words_per_node` words, each from its class's topic words
/// with probability `signal`, else from the whole vocabulary.
pub fn sbm(params: &SbmParams) -> Result<Graph, GraphError> {
    params.validate()?;
    let (n, k) = (params.nodes, params.classes);
    let mut rng = StdRng::seed_from_u64(params.seed);

    let mut labels: Vec<u32> = (0..n).map(|i| (i % k) as u32).collect();
    labels.shuffle(&mut rng);
    let mut members = vec![Vec::with_capacity(n / k + 1); k];
    for (node, &label) in labels.iter().enumerate() {
        members[label as usize].push(node as u32);
    }

    let p_intra = params.intra_inter_ratio / (1.0 + params.intra_inter_ratio);
    let num_edges = (n as f64 * params.avg_degree / 2.0).round() as usize;
    let mut edges = Vec::with_capacity(num_edges);
    for _ in 0..num_edges {
        let u = rng.random_range(0..n);
        let own = labels[u] as usize;
        let class = if k == 1 || rng.random_bool(p_intra) {
            own
        } else {
            // A uniform class other than `own`.
            let c = rng.random_range(0..k - 1);
            if c >= own { c + 1 } else { c }
        };
        let block = &members[class];
        edges.push((u as u32, block[rng.random_range(0..block.len())]));
    }
    let adjacency = Csr::from_edges(n, &edges)?;

    let mut vocabulary: Vec<u32> = (0..params.features as u32).collect();
    vocabulary.shuffle(&mut rng);
    let topic_size = params.features / k;
    let features = SparseMatrix::binary_from_fn(n, params.features, |node, words| {
        let topic = &vocabulary[labels[node] as usize * topic_size..][..topic_size];
        for _ in 0..params.words_per_node {
            words.push(if rng.random_bool(params.signal) {
                topic[rng.random_range(0..topic_size)]
            } else {
                rng.random_range(0..params.features as u32)
            });
        }
    });

    Graph::new(adjacency, features, labels, k, format!("sbm:{n}:{k}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Accuracy of predicting each node's class from word counts summed over the node
    /// (and, `with_neighbors`, its neighbours), each word voting for the class it is most
    /// frequent in: a probe of how much signal features and graph carry.
    fn vote_accuracy(graph: &Graph, with_neighbors: bool) -> f64 {
        let (n, k, f) = (graph.num_nodes(), graph.num_classes(), graph.feature_dim());
        let mut counts = vec![0usize; f * k];
        for node in 0..n {
            for &w in graph.features().row(node).0 {
                counts[w as usize * k + graph.labels()[node] as usize] += 1;
            }
        }
        let word_class: Vec<usize> = (0..f)
            .map(|w| (0..k).max_by_key(|&c| counts[w * k + c]).unwrap_or(0))
            .collect();
        let correct = (0..n)
            .filter(|&node| {
                let mut votes = vec![0usize; k];
                let adj = graph.adjacency();
                let neighbors = if with_neighbors {
                    adj.neighbors(node)
                } else {
                    &[]
                };
                for &v in std::iter::once(&(node as u32)).chain(neighbors) {
                    for &w in graph.features().row(v as usize).0 {
                        votes[word_class[w as usize]] += 1;
                    }
                }
                let best = (0..k).max_by_key(|&c| votes[c]).unwrap_or(0);
                best == graph.labels()[node] as usize
            })
            .count();
        correct as f64 / n as f64
    }

    #[test]
    fn is_deterministic_and_has_the_requested_shape() -> TestResult {
        let params = SbmParams::new(2000, 5, 7);
        let a = sbm(&params)?;
        assert_eq!(a, sbm(&params)?);
        assert_ne!(
            a,
            sbm(&SbmParams {
                seed: 8,
                ..params.clone()
            })?
        );
        assert_eq!(
            (a.num_nodes(), a.num_classes(), a.feature_dim()),
            (2000, 5, 500)
        );
        assert_eq!(a.name(), "sbm:2000:5");
        let mean_degree = 2.0 * a.adjacency().num_edges() as f64 / 2000.0;
        assert!(
            (4.5..=5.0).contains(&mean_degree),
            "mean degree {mean_degree}"
        );
        for c in 0..5 {
            assert_eq!(a.labels().iter().filter(|&&l| l == c).count(), 400);
        }
        let intra = (0..2000)
            .flat_map(|u| {
                a.adjacency()
                    .neighbors(u)
                    .iter()
                    .map(move |&v| (u, v as usize))
            })
            .filter(|&(u, v)| a.labels()[u] == a.labels()[v])
            .count();
        let homophily = intra as f64 / a.adjacency().indices().len() as f64;
        assert!((0.77..0.83).contains(&homophily), "homophily {homophily}");
        Ok(())
    }

    #[test]
    fn graph_helps_but_features_alone_do_not_suffice() -> TestResult {
        let graph = sbm(&SbmParams::new(2000, 5, 1))?;
        let alone = vote_accuracy(&graph, false);
        let with_graph = vote_accuracy(&graph, true);
        eprintln!("sbm vote accuracy: features alone {alone:.3}, with neighbours {with_graph:.3}");
        assert!((0.35..0.75).contains(&alone), "features alone {alone}");
        assert!(with_graph > alone + 0.15, "with neighbours {with_graph}");
        Ok(())
    }

    #[test]
    fn rejects_bad_parameters() {
        for params in [
            SbmParams::new(0, 1, 0),
            SbmParams::new(3, 4, 0),
            SbmParams {
                features: 2,
                ..SbmParams::new(10, 3, 0)
            },
            SbmParams {
                signal: 1.5,
                ..SbmParams::new(10, 3, 0)
            },
            SbmParams {
                intra_inter_ratio: 0.0,
                ..SbmParams::new(10, 3, 0)
            },
        ] {
            assert!(
                matches!(sbm(&params), Err(GraphError::InvalidParameter(_))),
                "{params:?}"
            );
        }
    }
}
