//! The near pairs of a sequence for the `hops:K` attention scope: per query node, the nodes
//! within K hops of it (itself included), at most MAX of them (nearest first, ties by node
//! order), as a CSR of sorted key ids with one distance-bucket byte each. O(S·k̄) bytes, where
//! the dense scope keeps S² of them.

use super::csr::Csr;

/// Sequences at least this long build their rows on all available cores.
const PARALLEL_FROM: usize = 4096;

/// The near pairs of every node of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearPairs {
    /// Pairs of row `i` are `offsets[i]..offsets[i + 1]`; `[S + 1]`.
    offsets: Vec<usize>,
    /// Key node of each pair, ascending within a row; `[pairs]`.
    keys: Vec<u32>,
    /// Distance bucket of each pair: the hop distance, or `max_distance + 1` ("far") when it
    /// exceeds the model's `max_distance`; `[pairs]`.
    buckets: Vec<u8>,
}

/// How far and how many: the `hops:K[:MAX]` scope as the builder reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NearLimits {
    /// Hops K (at least 1).
    pub hops: u8,
    /// Most pairs of one row (at least 1; the row's own node is always the first kept).
    pub max_pairs: usize,
    /// Distances above this share the far bucket `max_distance + 1`.
    pub max_distance: u8,
}

impl NearPairs {
    /// The near pairs of every node of `adj` within `limits`, by truncated BFS.
    ///
    /// # Panics
    /// If `limits.hops` or `limits.max_pairs` is 0, or `max_distance` is 255 (callers validate
    /// the scope first).
    pub fn build(adj: &Csr, limits: NearLimits) -> Self {
        assert!(
            limits.hops >= 1 && limits.max_pairs >= 1,
            "hops and max pairs must be at least 1, got {limits:?}"
        );
        assert!(
            limits.max_distance < u8::MAX,
            "max_distance must leave room for the far bucket"
        );
        let s = adj.num_nodes();
        let threads = if s >= PARALLEL_FROM {
            std::thread::available_parallelism().map_or(1, |t| t.get())
        } else {
            1
        };
        let rows_per_thread = s.div_ceil(threads).max(1);
        let chunks: Vec<(Vec<usize>, Vec<u32>, Vec<u8>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..s)
                .step_by(rows_per_thread)
                .map(|start| {
                    let end = (start + rows_per_thread).min(s);
                    scope.spawn(move || build_rows(adj, start..end, limits))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a near-pair builder thread panicked"))
                .collect()
        });
        let pairs: usize = chunks.iter().map(|c| c.1.len()).sum();
        let mut offsets = Vec::with_capacity(s + 1);
        offsets.push(0);
        let (mut keys, mut buckets) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
        for (lengths, k, b) in chunks {
            for len in lengths {
                offsets.push(offsets.last().copied().unwrap_or(0) + len);
            }
            keys.extend(k);
            buckets.extend(b);
        }
        Self {
            offsets,
            keys,
            buckets,
        }
    }

    /// Query rows (nodes of the sequence).
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Pairs in all.
    pub fn pairs(&self) -> usize {
        self.keys.len()
    }

    /// The key nodes of row `i`, ascending, and their buckets.
    pub fn row(&self, i: usize) -> (&[u32], &[u8]) {
        let span = self.offsets[i]..self.offsets[i + 1];
        (&self.keys[span.clone()], &self.buckets[span])
    }

    /// Bytes held on the host.
    pub fn host_bytes(&self) -> usize {
        self.offsets.len() * size_of::<usize>() + self.keys.len() * 5
    }
}

/// The near pairs of rows `rows`: per row its pair count, then all keys and buckets.
fn build_rows(
    adj: &Csr,
    rows: std::ops::Range<usize>,
    limits: NearLimits,
) -> (Vec<usize>, Vec<u32>, Vec<u8>) {
    let mut seen = vec![u32::MAX; adj.num_nodes()];
    let (mut lengths, mut keys, mut buckets) = (Vec::new(), Vec::new(), Vec::new());
    let mut row: Vec<(u32, u8)> = Vec::new();
    let (mut frontier, mut next) = (Vec::new(), Vec::new());
    for source in rows {
        row.clear();
        frontier.clear();
        frontier.push(source as u32);
        seen[source] = source as u32;
        row.push((source as u32, 0));
        let mut depth = 0u8;
        while depth < limits.hops && row.len() < limits.max_pairs && !frontier.is_empty() {
            depth += 1;
            next.clear();
            for &u in &frontier {
                for &v in adj.neighbors(u as usize) {
                    if seen[v as usize] != source as u32 {
                        seen[v as usize] = source as u32;
                        next.push(v);
                    }
                }
            }
            // Ties at one distance go by node order.
            next.sort_unstable();
            let room = limits.max_pairs - row.len();
            let bucket = if depth > limits.max_distance {
                limits.max_distance + 1
            } else {
                depth
            };
            row.extend(next.iter().take(room).map(|&v| (v, bucket)));
            std::mem::swap(&mut frontier, &mut next);
        }
        row.sort_unstable_by_key(|&(key, _)| key);
        lengths.push(row.len());
        keys.extend(row.iter().map(|&(key, _)| key));
        buckets.extend(row.iter().map(|&(_, bucket)| bucket));
    }
    (lengths, keys, buckets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::distance_buckets;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn limits(hops: u8, max_pairs: usize) -> NearLimits {
        NearLimits {
            hops,
            max_pairs,
            max_distance: 5,
        }
    }

    #[test]
    fn path_graph_within_two_hops() -> TestResult {
        let path = Csr::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 4)])?;
        let near = NearPairs::build(&path, limits(2, 256));
        assert_eq!(near.rows(), 5);
        assert_eq!(near.row(0), (&[0, 1, 2][..], &[0, 1, 2][..]));
        assert_eq!(near.row(2), (&[0, 1, 2, 3, 4][..], &[2, 1, 0, 1, 2][..]));
        assert_eq!(near.pairs(), 3 + 4 + 5 + 4 + 3);
        Ok(())
    }

    #[test]
    fn a_hub_keeps_its_nearest_pairs_by_node_order() -> TestResult {
        // Star: centre 0 with leaves 1..=9; leaf 9 also reaches node 10 at distance 2 from 0.
        let mut edges: Vec<(u32, u32)> = (1..=9).map(|l| (0, l)).collect();
        edges.push((9, 10));
        let star = Csr::from_edges(11, &edges)?;
        let near = NearPairs::build(&star, limits(2, 4));
        // Itself, then the three lowest leaves; node 10 (distance 2) loses to every leaf.
        assert_eq!(near.row(0), (&[0, 1, 2, 3][..], &[0, 1, 1, 1][..]));
        // A leaf keeps itself, the centre and the two lowest leaves at distance 2.
        assert_eq!(near.row(5), (&[0, 1, 2, 5][..], &[1, 2, 2, 0][..]));
        Ok(())
    }

    #[test]
    fn an_isolated_node_has_only_itself() -> TestResult {
        let adj = Csr::from_edges(3, &[(0, 1)])?;
        let near = NearPairs::build(&adj, limits(3, 256));
        assert_eq!(near.row(2), (&[2][..], &[0][..]));
        Ok(())
    }

    #[test]
    fn distances_beyond_max_distance_are_far_and_match_the_dense_buckets() -> TestResult {
        // A 40-node cycle with chords: every pair within 12 hops is near.
        let mut edges: Vec<(u32, u32)> = (0..40).map(|i| (i, (i + 1) % 40)).collect();
        edges.extend([(0, 20), (5, 33), (11, 27)]);
        let adj = Csr::from_edges(40, &edges)?;
        let max_distance = 3;
        let near = NearPairs::build(
            &adj,
            NearLimits {
                hops: 40,
                max_pairs: 40,
                max_distance,
            },
        );
        let dense = distance_buckets(&adj, max_distance);
        assert_eq!(
            near.pairs(),
            40 * 40,
            "a connected graph: every pair is near"
        );
        for i in 0..40 {
            let (keys, buckets) = near.row(i);
            for (&k, &b) in keys.iter().zip(buckets) {
                assert_eq!(b, dense[i * 40 + k as usize], "pair ({i}, {k})");
            }
        }
        Ok(())
    }

    #[test]
    fn parallel_and_serial_builds_agree() -> TestResult {
        let n = PARALLEL_FROM as u32 + 77;
        let edges: Vec<(u32, u32)> = (0..n)
            .flat_map(|i| [(i, (i * 7 + 3) % n), (i, (i + 1) % n)])
            .filter(|(a, b)| a != b)
            .collect();
        let adj = Csr::from_edges(n as usize, &edges)?;
        let whole = NearPairs::build(&adj, limits(2, 9));
        let (lengths, keys, buckets) = build_rows(&adj, 0..n as usize, limits(2, 9));
        assert_eq!(whole.keys, keys);
        assert_eq!(whole.buckets, buckets);
        assert_eq!(
            whole
                .offsets
                .windows(2)
                .map(|w| w[1] - w[0])
                .collect::<Vec<_>>(),
            lengths
        );
        assert!(lengths.iter().all(|&l| (1..=9).contains(&l)));
        Ok(())
    }
}
