//! The validated adjacency structure: symmetric CSR without self-loops or duplicate edges.

use super::error::GraphError;

/// Undirected graph adjacency in compressed sparse row form.
///
/// Invariants: symmetric (`j` is a neighbour of `i` iff `i` is a neighbour of `j`),
/// no self-loops, no duplicate edges, each neighbour list sorted ascending,
/// fewer than 2^32 nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    indptr: Vec<usize>,
    indices: Vec<u32>,
}

impl Csr {
    /// Builds the adjacency of `num_nodes` nodes from (possibly directed, repeated,
    /// self-looped) edges: each edge is taken in both directions, self-loops are
    /// dropped and duplicates merged.
    pub fn from_edges(num_nodes: usize, edges: &[(u32, u32)]) -> Result<Self, GraphError> {
        if u32::try_from(num_nodes).is_err() {
            return Err(GraphError::TooManyNodes(num_nodes as u64));
        }
        // Counting sort by source of both directions, then sort and dedupe each row.
        let mut counts = vec![0usize; num_nodes + 1];
        for &(src, dst) in edges {
            node_index(i64::from(src), num_nodes)?;
            node_index(i64::from(dst), num_nodes)?;
            if src != dst {
                counts[src as usize + 1] += 1;
                counts[dst as usize + 1] += 1;
            }
        }
        for i in 0..num_nodes {
            counts[i + 1] += counts[i];
        }
        let mut cursor = counts.clone();
        let mut indices = vec![0u32; counts[num_nodes]];
        for &(src, dst) in edges {
            if src != dst {
                indices[cursor[src as usize]] = dst;
                cursor[src as usize] += 1;
                indices[cursor[dst as usize]] = src;
                cursor[dst as usize] += 1;
            }
        }
        drop(cursor);
        Ok(Self::compact_rows(counts, indices))
    }

    /// Sorts and dedupes every row of a CSR pattern in place, closing the gaps.
    fn compact_rows(mut indptr: Vec<usize>, mut indices: Vec<u32>) -> Self {
        let mut write = 0;
        let mut start = 0;
        for i in 0..indptr.len() - 1 {
            let end = indptr[i + 1];
            let row = &mut indices[start..end];
            row.sort_unstable();
            let mut last = None;
            for k in start..end {
                let v = indices[k];
                if last != Some(v) {
                    indices[write] = v;
                    write += 1;
                    last = Some(v);
                }
            }
            start = end;
            indptr[i + 1] = write;
        }
        indices.truncate(write);
        indices.shrink_to_fit();
        Self { indptr, indices }
    }

    /// Builds from rows of neighbours already known to be symmetric and loop-free
    /// (each row is sorted here).
    pub(crate) fn from_symmetric_rows(indptr: Vec<usize>, indices: Vec<u32>) -> Self {
        let csr = Self::compact_rows(indptr, indices);
        debug_assert!(csr.is_symmetric_without_loops());
        csr
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of undirected edges (each stored twice).
    pub fn num_edges(&self) -> usize {
        self.indices.len() / 2
    }

    /// Sorted neighbours of node `i`.
    pub fn neighbors(&self, i: usize) -> &[u32] {
        &self.indices[self.indptr[i]..self.indptr[i + 1]]
    }

    /// Number of neighbours of node `i`.
    pub fn degree(&self, i: usize) -> usize {
        self.indptr[i + 1] - self.indptr[i]
    }

    /// Degree of every node.
    pub fn degrees(&self) -> Vec<u32> {
        self.indptr
            .windows(2)
            .map(|w| (w[1] - w[0]) as u32)
            .collect()
    }

    /// Row pointers: the neighbours of `i` are `indices()[indptr()[i]..indptr()[i + 1]]`.
    pub fn indptr(&self) -> &[usize] {
        &self.indptr
    }

    /// Concatenated neighbour lists (each undirected edge appears twice).
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Whether the stored pattern meets the type's invariants (used by debug assertions).
    fn is_symmetric_without_loops(&self) -> bool {
        (0..self.num_nodes()).all(|i| {
            let row = self.neighbors(i);
            row.windows(2).all(|w| w[0] < w[1])
                && row.iter().all(|&j| {
                    j as usize != i
                        && self
                            .neighbors(j as usize)
                            .binary_search(&(i as u32))
                            .is_ok()
                })
        })
    }
}

/// Checks a node index read from input against the number of nodes and narrows it.
pub(crate) fn node_index(index: i64, nodes: usize) -> Result<u32, GraphError> {
    match usize::try_from(index) {
        Ok(i) if i < nodes => Ok(i as u32),
        _ => Err(GraphError::EdgeOutOfRange { index, nodes }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn symmetrises_drops_self_loops_and_dedupes() -> TestResult {
        let csr = Csr::from_edges(4, &[(0, 1), (1, 0), (0, 1), (2, 2), (3, 1), (1, 2)])?;
        assert_eq!(csr.num_nodes(), 4);
        assert_eq!(csr.num_edges(), 3);
        assert_eq!(csr.neighbors(0), &[1]);
        assert_eq!(csr.neighbors(1), &[0, 2, 3]);
        assert_eq!(csr.neighbors(2), &[1]);
        assert_eq!(csr.neighbors(3), &[1]);
        assert_eq!(csr.degrees(), vec![1, 3, 1, 1]);
        assert_eq!(csr.degree(1), 3);
        assert!(csr.is_symmetric_without_loops());
        Ok(())
    }

    #[test]
    fn isolated_nodes_and_empty_edge_lists() -> TestResult {
        let csr = Csr::from_edges(3, &[])?;
        assert_eq!(csr.num_edges(), 0);
        assert_eq!(csr.degrees(), vec![0, 0, 0]);
        let empty = Csr::from_edges(0, &[])?;
        assert_eq!(empty.num_nodes(), 0);
        Ok(())
    }

    #[test]
    fn rejects_out_of_range_endpoint() {
        let err = Csr::from_edges(3, &[(0, 1), (1, 3)]).unwrap_err();
        assert!(matches!(
            err,
            GraphError::EdgeOutOfRange { index: 3, nodes: 3 }
        ));
        assert_eq!(
            err.to_string(),
            "node index 3 out of range (graph has 3 nodes)"
        );
    }
}
