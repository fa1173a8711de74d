//! Graph-aware sequences: METIS partitioning of a graph into clusters of bounded size.

use std::sync::{Mutex, PoisonError};

use super::csr::Csr;
use super::error::GraphError;

/// Serialises calls into METIS, whose `GKlib` random number generator is a C global.
static METIS_LOCK: Mutex<()> = Mutex::new(());

/// Partitions the nodes of `adj` into sequences of at most `seq_len` nodes, each a
/// well-connected cluster, every node in exactly one sequence.
///
/// A graph of at most `seq_len` nodes is one sequence of all nodes (none for an empty
/// graph). Otherwise METIS (multilevel k-way, seeded with `seed`) cuts the `m` nodes
/// that have edges into `ceil(m / seq_len)` parts, allowed just the imbalance that
/// keeps parts within `seq_len`, and any part that still came out larger (METIS
/// balances approximately) is partitioned again the same way on its induced
/// subgraph. Isolated nodes (which METIS cannot coarsen, and which make it slow) then
/// fill the room left in the sequences, the rest forming sequences of their own.
/// Within a sequence, nodes are in cluster order ([`cluster_order`]): a context-parallel
/// shard, a block of consecutive nodes, is then a well-connected cluster too, and its halo
/// follows the cut. Calls into METIS are serialised process-wide (its random state is global),
/// so concurrent callers wait in turn.
pub fn partition_sequences(
    adj: &Csr,
    seq_len: usize,
    seed: u64,
) -> Result<Vec<Vec<u32>>, GraphError> {
    if seq_len == 0 {
        return Err(GraphError::InvalidParameter(
            "sequence length must be at least 1".into(),
        ));
    }
    let all: Vec<u32> = (0..adj.num_nodes() as u32).collect();
    let seed = metis_seed(seed);
    let sequences = partition_nodes(adj, &all, seq_len, seed)?;
    sequences
        .into_iter()
        .map(|mut sequence| {
            sequence.sort_unstable();
            cluster_order(&induced_subgraph(adj, &sequence), &sequence, seed)
        })
        .collect()
}

/// Nodes per block below which [`cluster_order`] stops bisecting.
const ORDER_LEAF: usize = 256;

/// The nodes `ids` of the graph `adj` (local node `i` is `ids[i]`) in cluster order: split in
/// two by METIS, each half ordered the same way in turn, until blocks of [`ORDER_LEAF`] nodes
/// (in ascending order); nodes without edges go last. Any block of consecutive nodes then
/// follows the bisection tree, so that splitting the order into shards cuts few edges.
fn cluster_order(adj: &Csr, ids: &[u32], seed: i32) -> Result<Vec<u32>, GraphError> {
    if ids.len() <= ORDER_LEAF {
        return Ok(ids.to_vec());
    }
    let (linked, isolated): (Vec<u32>, Vec<u32>) =
        (0..ids.len() as u32).partition(|&i| adj.degree(i as usize) > 0);
    let mut order = Vec::with_capacity(ids.len());
    if isolated.is_empty() {
        let halves = metis_bisect(adj, seed)?;
        if halves.iter().any(Vec::is_empty) {
            return Ok(ids.to_vec());
        }
        for half in halves {
            let half_ids: Vec<u32> = half.iter().map(|&i| ids[i as usize]).collect();
            order.extend(cluster_order(
                &induced_subgraph(adj, &half),
                &half_ids,
                seed,
            )?);
        }
    } else {
        let linked_ids: Vec<u32> = linked.iter().map(|&i| ids[i as usize]).collect();
        order.extend(cluster_order(
            &induced_subgraph(adj, &linked),
            &linked_ids,
            seed,
        )?);
    }
    order.extend(isolated.iter().map(|&i| ids[i as usize]));
    Ok(order)
}

/// The two halves (local nodes, ascending) of METIS's bisection of `adj` (no isolated nodes).
fn metis_bisect(adj: &Csr, seed: i32) -> Result<[Vec<u32>; 2], GraphError> {
    let part = metis_kway(adj, 2, 30, seed)?;
    let mut halves = [Vec::new(), Vec::new()];
    for (node, &side) in part.iter().enumerate() {
        halves[usize::from(side != 0)].push(node as u32);
    }
    Ok(halves)
}

/// Sequences of the graph `adj`, whose local node `i` is node `ids[i]` of the original graph.
fn partition_nodes(
    adj: &Csr,
    ids: &[u32],
    seq_len: usize,
    seed: i32,
) -> Result<Vec<Vec<u32>>, GraphError> {
    if ids.len() <= seq_len {
        return Ok(if ids.is_empty() {
            Vec::new()
        } else {
            vec![ids.to_vec()]
        });
    }
    let (linked, isolated): (Vec<u32>, Vec<u32>) =
        (0..ids.len() as u32).partition(|&i| adj.degree(i as usize) > 0);
    let mut sequences = if isolated.is_empty() {
        metis_split(adj, ids, seq_len, seed)?
    } else if linked.is_empty() {
        Vec::new()
    } else {
        let linked_ids: Vec<u32> = linked.iter().map(|&i| ids[i as usize]).collect();
        partition_nodes(&induced_subgraph(adj, &linked), &linked_ids, seq_len, seed)?
    };
    let mut isolated = isolated.iter().map(|&i| ids[i as usize]);
    for sequence in &mut sequences {
        let room = seq_len - sequence.len();
        sequence.extend(isolated.by_ref().take(room));
    }
    let rest: Vec<u32> = isolated.collect();
    sequences.extend(rest.chunks(seq_len).map(<[u32]>::to_vec));
    Ok(sequences)
}

/// Sequences of `adj` (more than `seq_len` nodes, none isolated) by METIS, with
/// oversize parts partitioned again.
fn metis_split(
    adj: &Csr,
    ids: &[u32],
    seq_len: usize,
    seed: i32,
) -> Result<Vec<Vec<u32>>, GraphError> {
    let n = ids.len();
    let parts = n.div_ceil(seq_len);
    // METIS's imbalance tolerance in thousandths: parts of up to (1 + u/1000) n / parts nodes.
    let ufactor = ((seq_len * parts * 1000 / n).saturating_sub(1000)).max(1);
    let assignment = metis_kway(adj, parts, ufactor, seed)?;
    let mut groups = vec![Vec::new(); parts];
    for (local, &part) in assignment.iter().enumerate() {
        groups[part as usize].push(local as u32);
    }
    groups.retain(|g| !g.is_empty());
    if groups.len() < 2 {
        return Err(GraphError::Partitioner(format!(
            "put all {n} nodes in one of {parts} parts"
        )));
    }
    let mut sequences = Vec::with_capacity(groups.len());
    for group in groups {
        let group_ids: Vec<u32> = group.iter().map(|&local| ids[local as usize]).collect();
        if group.len() <= seq_len {
            sequences.push(group_ids);
        } else {
            sequences.extend(partition_nodes(
                &induced_subgraph(adj, &group),
                &group_ids,
                seq_len,
                seed,
            )?);
        }
    }
    Ok(sequences)
}

/// METIS's seed option from ours (METIS takes a non-negative 32-bit seed).
fn metis_seed(seed: u64) -> i32 {
    (seed % i32::MAX as u64) as i32
}

/// Runs METIS multilevel k-way partitioning with imbalance tolerance `ufactor`
/// (thousandths); returns the part of each node.
fn metis_kway(adj: &Csr, parts: usize, ufactor: usize, seed: i32) -> Result<Vec<i32>, GraphError> {
    let too_large = || {
        GraphError::Partitioner(format!(
            "{} adjacency entries exceed 32-bit METIS",
            adj.indices().len()
        ))
    };
    let xadj = adj
        .indptr()
        .iter()
        .map(|&p| i32::try_from(p).map_err(|_| too_large()))
        .collect::<Result<Vec<i32>, _>>()?;
    let adjncy: Vec<i32> = adj.indices().iter().map(|&v| v as i32).collect();
    let mut part = vec![0; adj.num_nodes()];
    let nparts = i32::try_from(parts).map_err(|_| too_large())?;
    // METIS keeps its random state in C globals: one call at a time in the process.
    let _only_caller = METIS_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    metis::Graph::new(1, nparts, &xadj, &adjncy)
        .map_err(|e| GraphError::Partitioner(format!("{e:?}")))?
        .set_option(metis::option::Seed(seed))
        .set_option(metis::option::UFactor(ufactor.min(i32::MAX as usize) as i32))
        .part_kway(&mut part)
        .map_err(|e| GraphError::Partitioner(e.to_string()))?;
    Ok(part)
}

/// The subgraph induced by `nodes` (distinct, each `< adj.num_nodes()`), with local
/// node `i` standing for `nodes[i]`.
///
/// # Panics
/// If `nodes` repeats a node or names one outside the graph.
pub fn induced_subgraph(adj: &Csr, nodes: &[u32]) -> Csr {
    let mut by_id: Vec<(u32, u32)> = nodes
        .iter()
        .enumerate()
        .map(|(local, &g)| (g, local as u32))
        .collect();
    by_id.sort_unstable();
    assert!(
        by_id.windows(2).all(|w| w[0].0 != w[1].0),
        "induced_subgraph: repeated node"
    );
    let local_of = |g: u32| {
        by_id
            .binary_search_by_key(&g, |&(id, _)| id)
            .ok()
            .map(|k| by_id[k].1)
    };
    let mut indptr = Vec::with_capacity(nodes.len() + 1);
    let mut indices = Vec::new();
    indptr.push(0);
    for &g in nodes {
        indices.extend(
            adj.neighbors(g as usize)
                .iter()
                .filter_map(|&h| local_of(h)),
        );
        indptr.push(indices.len());
    }
    Csr::from_symmetric_rows(indptr, indices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::sbm::{SbmParams, sbm};
    use crate::graph::testutil::cora;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Checks that `sequences` cover `n` nodes exactly once, each at most `seq_len`
    /// long; returns the fraction of edges cut between sequences.
    fn check_cover(adj: &Csr, sequences: &[Vec<u32>], seq_len: usize) -> f64 {
        let mut owner = vec![usize::MAX; adj.num_nodes()];
        for (s, seq) in sequences.iter().enumerate() {
            assert!(
                !seq.is_empty() && seq.len() <= seq_len,
                "sequence of {} nodes",
                seq.len()
            );
            for &v in seq {
                assert_eq!(owner[v as usize], usize::MAX, "node {v} in two sequences");
                owner[v as usize] = s;
            }
        }
        assert!(
            owner.iter().all(|&o| o != usize::MAX),
            "a node is in no sequence"
        );
        let cut = (0..adj.num_nodes())
            .flat_map(|u| adj.neighbors(u).iter().map(move |&v| (u, v as usize)))
            .filter(|&(u, v)| owner[u] != owner[v])
            .count();
        cut as f64 / adj.indices().len().max(1) as f64
    }

    #[test]
    fn partitions_cora_into_bounded_clusters() -> TestResult {
        let graph = cora()?;
        let start = std::time::Instant::now();
        let sequences = partition_sequences(graph.adjacency(), 512, 0)?;
        let elapsed = start.elapsed();
        let cut = check_cover(graph.adjacency(), &sequences, 512);
        let sizes: Vec<usize> = sequences.iter().map(Vec::len).collect();
        eprintln!(
            "cora at seq_len 512: {} parts {sizes:?}, edge cut {cut:.3}, {elapsed:?}",
            sizes.len()
        );
        assert!(sequences.len() >= 6);
        assert!(cut < 0.2, "edge cut {cut}");
        assert_eq!(sequences, partition_sequences(graph.adjacency(), 512, 0)?);
        Ok(())
    }

    #[test]
    fn partitions_sbm_with_oversize_parts_split_again() -> TestResult {
        let graph = sbm(&SbmParams::new(3000, 6, 2))?;
        // 3000 / 500 = 6 parts with no slack; at 7, METIS overshoots some parts (8 nodes),
        // which are partitioned again.
        for seq_len in [500, 128, 7] {
            let sequences = partition_sequences(graph.adjacency(), seq_len, 1)?;
            let cut = check_cover(graph.adjacency(), &sequences, seq_len);
            assert!(sequences.len() >= 3000usize.div_ceil(seq_len));
            eprintln!(
                "sbm 3000 at seq_len {seq_len}: {} parts, edge cut {cut:.3}",
                sequences.len()
            );
        }
        Ok(())
    }

    #[test]
    fn handles_small_graphs_isolated_nodes_and_no_edges() -> TestResult {
        let path = Csr::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 4)])?;
        assert_eq!(partition_sequences(&path, 5, 0)?, vec![vec![0, 1, 2, 3, 4]]);
        assert_eq!(
            partition_sequences(&Csr::from_edges(0, &[])?, 4, 0)?,
            Vec::<Vec<u32>>::new()
        );

        // Two triangles and six isolated nodes.
        let mixed = Csr::from_edges(12, &[(0, 1), (1, 2), (2, 0), (5, 6), (6, 7), (7, 5)])?;
        for seq_len in [1, 3, 4, 11] {
            check_cover(&mixed, &partition_sequences(&mixed, seq_len, 0)?, seq_len);
        }
        assert_eq!(
            partition_sequences(&mixed, 12, 0)?[0],
            (0..12).collect::<Vec<u32>>()
        );
        let sequences = partition_sequences(&mixed, 3, 0)?;
        assert!(
            sequences.contains(&vec![0, 1, 2]) && sequences.contains(&vec![5, 6, 7]),
            "{sequences:?}"
        );

        let empty = Csr::from_edges(10, &[])?;
        let sequences = partition_sequences(&empty, 4, 0)?;
        assert_eq!(sequences.len(), 3);
        check_cover(&empty, &sequences, 4);

        assert!(matches!(
            partition_sequences(&path, 0, 0),
            Err(GraphError::InvalidParameter(_))
        ));
        Ok(())
    }

    #[test]
    fn cluster_order_puts_communities_in_consecutive_blocks() -> TestResult {
        // Four communities of 300 nodes whose ids interleave: in id order every block mixes
        // them; in cluster order each half is (nearly) two whole communities.
        let graph = sbm(&SbmParams::new(1200, 4, 7))?;
        let adj = graph.adjacency();
        let sequences = partition_sequences(adj, 1200, 0)?;
        assert_eq!(sequences.len(), 1);
        let order = &sequences[0];
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..1200).collect::<Vec<u32>>(),
            "a permutation of every node"
        );
        let cut_of_halves = |order: &[u32]| {
            let mut half = vec![0u8; 1200];
            for &v in &order[600..] {
                half[v as usize] = 1;
            }
            (0..1200)
                .flat_map(|u| adj.neighbors(u).iter().map(move |&v| (u, v as usize)))
                .filter(|&(u, v)| half[u] != half[v])
                .count()
        };
        let by_id: Vec<u32> = (0..1200).collect();
        let (clustered, plain) = (cut_of_halves(order), cut_of_halves(&by_id));
        eprintln!("edges cut between the halves: cluster order {clustered}, id order {plain}");
        assert!(
            2 * clustered < plain,
            "cluster order cuts {clustered} edges, id order {plain}"
        );
        Ok(())
    }

    #[test]
    fn induced_subgraph_uses_local_indices_in_order() -> TestResult {
        // Path 0-1-2-3-4 plus chord 0-3.
        let adj = Csr::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 4), (0, 3)])?;
        let sub = induced_subgraph(&adj, &[3, 0, 4]);
        assert_eq!(sub.num_nodes(), 3);
        assert_eq!(sub.neighbors(0), &[1, 2]);
        assert_eq!(sub.neighbors(1), &[0]);
        assert_eq!(sub.neighbors(2), &[0]);
        assert_eq!(induced_subgraph(&adj, &[]).num_nodes(), 0);
        Ok(())
    }
}
