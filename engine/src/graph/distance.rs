//! Shortest-path distance buckets of a sequence, one byte per ordered node pair.

use super::csr::Csr;

/// Sequences at least this long compute their rows on all available cores.
const PARALLEL_FROM: usize = 256;

/// Shortest-path distances between all node pairs of `adj`, truncated at
/// `max_distance`: row-major `S × S` bytes, entry `i * S + j` is the hop distance from
/// `i` to `j` when it is at most `max_distance`, else `max_distance + 1` ("far", also
/// for unreachable pairs); 0 on the diagonal. One BFS per source, stopped at depth
/// `max_distance`, each row doubling as its BFS's visited set.
///
/// # Panics
/// If `max_distance` is 255 (the far bucket would not fit in a byte).
pub fn distance_buckets(adj: &Csr, max_distance: u8) -> Vec<u8> {
    assert!(
        max_distance < u8::MAX,
        "max_distance must be below 255 to leave room for the far bucket"
    );
    let s = adj.num_nodes();
    let mut buckets = vec![max_distance + 1; s * s];
    if s == 0 {
        return buckets;
    }
    let threads = if s >= PARALLEL_FROM {
        std::thread::available_parallelism().map_or(1, |t| t.get())
    } else {
        1
    };
    let rows_per_thread = s.div_ceil(threads);
    std::thread::scope(|scope| {
        for (chunk_index, chunk) in buckets.chunks_mut(rows_per_thread * s).enumerate() {
            scope.spawn(move || {
                let mut queue = Vec::with_capacity(s);
                for (k, row) in chunk.chunks_mut(s).enumerate() {
                    bfs_row(
                        adj,
                        chunk_index * rows_per_thread + k,
                        max_distance,
                        row,
                        &mut queue,
                    );
                }
            });
        }
    });
    buckets
}

/// Fills `row` (all "far" on entry) with the truncated BFS distances from `source`.
fn bfs_row(adj: &Csr, source: usize, max_distance: u8, row: &mut [u8], queue: &mut Vec<u32>) {
    queue.clear();
    queue.push(source as u32);
    row[source] = 0;
    let mut head = 0;
    while let Some(&u) = queue.get(head) {
        head += 1;
        let d = row[u as usize];
        if d == max_distance {
            continue;
        }
        for &v in adj.neighbors(u as usize) {
            if row[v as usize] > max_distance {
                row[v as usize] = d + 1;
                queue.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testutil::cora;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn path_graph_distances_with_far_bucket() -> TestResult {
        let path = Csr::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 4)])?;
        let b = distance_buckets(&path, 2);
        #[rustfmt::skip]
        let expected = [
            0, 1, 2, 3, 3,
            1, 0, 1, 2, 3,
            2, 1, 0, 1, 2,
            3, 2, 1, 0, 1,
            3, 3, 2, 1, 0,
        ];
        assert_eq!(b, expected);
        assert_eq!(
            distance_buckets(&path, 0),
            [
                0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0
            ]
        );
        Ok(())
    }

    #[test]
    fn disconnected_pairs_are_far() -> TestResult {
        let adj = Csr::from_edges(4, &[(0, 1), (2, 3)])?;
        assert_eq!(
            distance_buckets(&adj, 5),
            [0, 1, 6, 6, 1, 0, 6, 6, 6, 6, 0, 1, 6, 6, 1, 0]
        );
        assert!(distance_buckets(&Csr::from_edges(0, &[])?, 3).is_empty());
        Ok(())
    }

    #[test]
    fn cora_buckets_are_symmetric_and_match_neighbours() -> TestResult {
        let graph = cora()?;
        let adj = graph.adjacency();
        let s = adj.num_nodes();
        let start = std::time::Instant::now();
        let b = distance_buckets(adj, 6);
        eprintln!(
            "BFS buckets for S = {s} (max distance 6): {:?}",
            start.elapsed()
        );
        for i in (0..s).step_by(97) {
            assert_eq!(b[i * s + i], 0);
            for &j in adj.neighbors(i) {
                assert_eq!(b[i * s + j as usize], 1);
            }
            for j in 0..s {
                assert_eq!(b[i * s + j], b[j * s + i]);
                assert!(b[i * s + j] <= 7);
            }
        }
        Ok(())
    }
}
