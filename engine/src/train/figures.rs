//! What the planner needs to know of a run's sequences beyond their length, measured from the
//! graph under the model's scope: attention pairs and message-passing edges per node, and the
//! halo a context-parallel shard reads.

use crate::{
    EngineError,
    graph::{Graph, induced_subgraph, partition_sequences},
    model::{HostSequence, ModelConfig, SequencePairs},
    parallel::split_rows,
};

/// Figures of the sequences of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceFigures {
    /// Mean near pairs per node (hops scope; 0 under the full scope).
    pub pairs_per_node: f64,
    /// Mean message-passing edges per node, its self-loop included.
    pub edges_per_node: f64,
    /// Per CP degree: the mean over shards of a shard's halo rows, as a fraction of its
    /// sequence, when every sequence is split into that many equal shards (hops scope), weighted
    /// by the sequences' nodes.
    pub halo: Vec<(usize, f64)>,
}

/// Measures the sequences `graph` is cut into at `seq_len` nodes (with `seed`, as training
/// cuts them) under `config`'s scope, with the halos of the CP degrees `cp_degrees`. Builds
/// one sequence's near pairs at a time (none under the full scope).
pub fn measure_sequences(
    graph: &Graph,
    seq_len: usize,
    seed: u64,
    config: &ModelConfig,
    cp_degrees: &[usize],
) -> Result<SequenceFigures, EngineError> {
    let task = crate::progress::task(format!(
        "measuring the sequences of {} nodes (partition, pairs, halos)",
        graph.num_nodes()
    ));
    let parts = partition_sequences(graph.adjacency(), seq_len, seed)?;
    let (mut nodes, mut pairs, mut edges) = (0usize, 0usize, 0usize);
    let mut halo = vec![0f64; cp_degrees.len()];
    let total = parts.len() as u64;
    for (done, part) in parts.into_iter().enumerate() {
        task.advance(done as u64, total);
        let s = part.len();
        nodes += s;
        if !config.scope.is_hops() {
            // The full scope's pairs are every pair: only the edges are measured.
            edges += s + 2 * induced_subgraph(graph.adjacency(), &part).num_edges();
            continue;
        }
        let host = HostSequence::new(graph, part, config);
        edges += s + 2 * host.adjacency.num_edges();
        let SequencePairs::Near(near) = &host.pairs else {
            unreachable!("a hops scope builds near pairs");
        };
        pairs += near.pairs();
        for (sum, &cp) in halo.iter_mut().zip(cp_degrees) {
            if cp < 2 || cp > s {
                continue;
            }
            let rows = split_rows(s, &vec![1.0; cp]);
            let mut start = 0;
            let mut rows_read = 0usize;
            for count in rows {
                rows_read += host.halo(&(start..start + count)).len();
                start += count;
            }
            // Mean over the shards of halo / S, times S (the weight): rows_read / cp.
            *sum += rows_read as f64 / cp as f64;
        }
    }
    let per_node = |x: f64| if nodes == 0 { 0.0 } else { x / nodes as f64 };
    Ok(SequenceFigures {
        pairs_per_node: per_node(pairs as f64),
        edges_per_node: per_node(edges as f64),
        halo: cp_degrees
            .iter()
            .zip(halo)
            .filter(|(cp, _)| **cp >= 2 && config.scope.is_hops())
            .map(|(&cp, rows)| (cp, per_node(rows)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Csr, SparseMatrix};
    use crate::model::AttentionScope;

    #[test]
    fn a_path_split_in_two_reads_one_row_across_the_cut_per_hop()
    -> Result<(), Box<dyn std::error::Error>> {
        // A path of 10 nodes as one sequence: under hops:2 each half's halo is the two nodes
        // beyond the cut, and every node has itself and up to two on each side.
        let path = Csr::from_edges(10, &(0..9).map(|i| (i, i + 1)).collect::<Vec<_>>())?;
        let features = SparseMatrix::from_dense(10, 1, &[1.0; 10])?;
        let graph = Graph::new(path, features, vec![0; 10], 1, "path")?;
        let config = ModelConfig {
            scope: "hops:2".parse::<AttentionScope>()?,
            ..ModelConfig::new(1, 1)
        };
        let figures = measure_sequences(&graph, 10, 0, &config, &[2, 5])?;
        assert_eq!(
            figures.pairs_per_node,
            (3 + 4 + 5 * 6 + 4 + 3) as f64 / 10.0
        );
        assert_eq!(figures.edges_per_node, (10 + 18) as f64 / 10.0);
        // cp2: 2 rows each of 2 shards, over 10 nodes; cp5: shards of 2 rows, the ends read
        // 2, the middle ones 4: (2 + 4 + 4 + 4 + 2) / 5 / 10.
        assert_eq!(figures.halo, vec![(2, 0.2), (5, 16.0 / 5.0 / 10.0)]);
        let full = measure_sequences(&graph, 10, 0, &ModelConfig::new(1, 1), &[2])?;
        assert_eq!((full.pairs_per_node, full.halo.len()), (0.0, 0));
        Ok(())
    }
}
