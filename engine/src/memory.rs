//! Memory estimates: the host bytes of a graph and of its sequences, and the device bytes of
//! one sequence's inputs, checked against what the machine has before anything is built, so
//! that a graph too large for the machine is refused in one line instead of aborting in an
//! allocation.

use std::fmt;

/// A byte count as people read it: `4.00 TB`, `512 MB`, `12.0 kB`, `300 bytes` (decimal units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
        if self.0 < 1000 {
            return write!(f, "{} bytes", self.0);
        }
        let mut value = self.0 as f64 / 1000.0;
        let mut unit = 0;
        while value >= 1000.0 && unit + 1 < UNITS.len() {
            value /= 1000.0;
            unit += 1;
        }
        let digits = if value < 10.0 {
            2
        } else if value < 100.0 {
            1
        } else {
            0
        };
        write!(f, "{value:.digits$} {}", UNITS[unit])
    }
}

/// More memory asked for than the machine has available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} needs about {} of host memory, but {} are available",
    Bytes(*needed),
    Bytes(*available)
)]
pub struct OutOfMemory {
    /// What would have taken it, e.g. `--synthetic sbm:1000000000000:4`.
    pub what: String,
    /// The estimate, bytes.
    pub needed: u64,
    /// What the machine has available, bytes.
    pub available: u64,
}

/// Bytes the host has available for new allocations now (`MemAvailable` of `/proc/meminfo`),
/// or `None` where the system does not say.
pub fn available_host_bytes() -> Option<u64> {
    meminfo("MemAvailable:")
}

/// Bytes of the host's memory (`MemTotal` of `/proc/meminfo`), or `None` where the system
/// does not say.
pub fn total_host_bytes() -> Option<u64> {
    meminfo("MemTotal:")
}

/// The `/proc/meminfo` figure of `key`, in bytes.
fn meminfo(key: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuses `needed` bytes of `what` beyond the host's available memory (nothing is refused
/// where the system does not say how much that is).
pub fn check_host(what: impl Into<String>, needed: u64) -> Result<(), OutOfMemory> {
    check(what, needed, available_host_bytes())
}

/// Refuses `needed` bytes of `what` beyond `available` (none when unknown).
fn check(what: impl Into<String>, needed: u64, available: Option<u64>) -> Result<(), OutOfMemory> {
    match available {
        Some(available) if needed > available => Err(OutOfMemory {
            what: what.into(),
            needed,
            available,
        }),
        _ => Ok(()),
    }
}

/// What a graph holds, as far as its memory goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphSize {
    /// Nodes.
    pub nodes: u64,
    /// Undirected edges (each stored in both directions), before duplicates are merged.
    pub edges: u64,
    /// Stored (non-zero) feature values.
    pub feature_nonzeros: u64,
}

/// `a · b + c`, saturating at `u64::MAX` (sizes come from user input).
fn mul_add(a: u64, b: u64, c: u64) -> u64 {
    a.saturating_mul(b).saturating_add(c)
}

impl GraphSize {
    /// The size of a graph already built.
    pub fn of(graph: &crate::graph::Graph) -> Self {
        Self {
            nodes: graph.num_nodes() as u64,
            edges: graph.adjacency().num_edges() as u64,
            feature_nonzeros: graph.features().nnz() as u64,
        }
    }

    /// Host bytes of the graph while it is built: the CSR adjacency (8-byte row pointers,
    /// 4-byte neighbour ids in both directions), the edge list it is built from (8 bytes an
    /// edge), the CSR features (8-byte row pointers, 4-byte columns and 4-byte values) and
    /// 4-byte labels.
    pub fn host_bytes(&self) -> u64 {
        let pointers = mul_add(2 * 8, self.nodes.saturating_add(1), 0);
        let adjacency = mul_add(8 + 8, self.edges, pointers);
        let features = mul_add(8, self.feature_nonzeros, adjacency);
        mul_add(4, self.nodes, features)
    }
}

/// The memory of a graph's sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceMemory {
    /// Host bytes of all sequences: node ids, roles, induced adjacency and the pair buckets
    /// (one byte a pair), kept for the whole run.
    pub host: u64,
    /// Device bytes of the largest sequence's inputs (features, one-hot degrees, edges, pair
    /// buckets), activations aside.
    pub device: u64,
}

/// The bytes of one node's attention pairs, and how many of them the host keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairBytes {
    /// Host bytes of one node's pairs: a bucket byte for each node of its sequence under full
    /// attention (`S`), a 4-byte key and a bucket byte for each of its near pairs under a
    /// `hops` scope.
    pub host_per_row: u64,
    /// Device bytes of one node's pairs (a `hops` scope holds them by row and by key).
    pub device_per_row: u64,
    /// Most host bytes of pairs kept at once: sequences are built when first used and the
    /// least recently used dropped beyond this (one sequence is always kept whole).
    pub host_cache: u64,
}

/// The memory of the sequences of at most `seq_len` nodes that cover a graph of `graph`'s
/// size, each node holding `pairs` bytes of attention pairs: for full attention one byte for
/// each node of its sequence (`S²` bytes a sequence of S nodes).
pub fn sequence_memory(graph: &GraphSize, seq_len: u64, pairs: PairBytes) -> SequenceMemory {
    let nodes = graph.nodes.max(1);
    let rows = seq_len.clamp(1, nodes);
    let sequences = nodes.div_ceil(rows);
    // Per node: its id (4), role (1), training position (4); per sequence a row pointer (8)
    // per node and one more; per stored adjacency entry 4 bytes.
    let adjacency = mul_add(8, nodes.saturating_add(sequences), 4 * 2 * graph.edges);
    let one_sequence = rows.saturating_mul(pairs.host_per_row);
    let all_pairs = nodes.saturating_mul(pairs.host_per_row);
    let held_pairs = all_pairs.min(pairs.host_cache.max(one_sequence));
    let host = mul_add(9, nodes, adjacency).saturating_add(held_pairs);
    // A sequence's share of the graph's features and edges, in proportion to its nodes.
    let share = |total: u64| (total as f64 * rows as f64 / nodes as f64).ceil() as u64;
    let features = mul_add(8, share(graph.feature_nonzeros), 8 * (rows + 1));
    let degrees = 12 * rows;
    let edges = 12 * (share(2 * graph.edges) + rows);
    let device = mul_add(rows, pairs.device_per_row, features + degrees + edges);
    SequenceMemory { host, device }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_in_decimal_units() {
        let shown: Vec<String> = [0, 999, 1000, 12_345, 512_000_000, 4_000_000_000_000]
            .map(|b| Bytes(b).to_string())
            .into();
        assert_eq!(
            shown,
            [
                "0 bytes",
                "999 bytes",
                "1.00 kB",
                "12.3 kB",
                "512 MB",
                "4.00 TB"
            ]
        );
        assert_eq!(Bytes(u64::MAX).to_string(), "18.4 EB");
    }

    #[test]
    fn a_graph_counts_its_arrays() {
        let size = GraphSize {
            nodes: 10,
            edges: 20,
            feature_nonzeros: 30,
        };
        assert_eq!(size.host_bytes(), 16 * 11 + 16 * 20 + 8 * 30 + 4 * 10);
        let huge = GraphSize {
            nodes: u64::MAX,
            edges: u64::MAX,
            feature_nonzeros: u64::MAX,
        };
        assert_eq!(huge.host_bytes(), u64::MAX, "saturates instead of wrapping");
    }

    #[test]
    fn full_attention_buckets_are_n_times_s() {
        let graph = GraphSize {
            nodes: 100_000,
            edges: 0,
            feature_nonzeros: 0,
        };
        let dense = |s: u64| PairBytes {
            host_per_row: s,
            device_per_row: s,
            host_cache: u64::MAX,
        };
        let memory = sequence_memory(&graph, 1000, dense(1000));
        let buckets = 100_000 * 1000;
        assert!(memory.host >= buckets && memory.host < buckets + 2_000_000);
        assert!(memory.device >= 1000 * 1000 && memory.device < 1000 * 1000 + 100_000);
        // A sequence length beyond the graph is the graph.
        let whole = sequence_memory(&graph, 1 << 40, dense(100_000));
        assert!(whole.device >= 100_000 * 100_000);
    }

    #[test]
    fn the_host_keeps_pairs_within_its_cache_but_always_one_sequence() {
        let graph = GraphSize {
            nodes: 1_000_000,
            edges: 0,
            feature_nonzeros: 0,
        };
        let base = sequence_memory(
            &graph,
            1000,
            PairBytes {
                host_per_row: 0,
                device_per_row: 0,
                host_cache: 0,
            },
        );
        let cached = |cache: u64| {
            let pairs = PairBytes {
                host_per_row: 100,
                device_per_row: 200,
                host_cache: cache,
            };
            sequence_memory(&graph, 1000, pairs)
        };
        assert_eq!(cached(u64::MAX).host - base.host, 100_000_000, "every pair");
        assert_eq!(cached(5_000_000).host - base.host, 5_000_000, "the cache");
        assert_eq!(cached(0).host - base.host, 100_000, "one sequence");
        assert_eq!(cached(0).device - base.device, 200_000);
    }

    #[test]
    fn refuses_only_beyond_what_is_available() {
        assert!(check("x", 10, Some(10)).is_ok());
        assert!(check("x", 11, None).is_ok());
        let refused = check("--synthetic sbm:9:2", 11_000_000_000, Some(2_500_000_000));
        assert_eq!(
            refused.map_err(|e| e.to_string()),
            Err(
                "--synthetic sbm:9:2 needs about 11.0 GB of host memory, but 2.50 GB are available"
                    .into()
            )
        );
    }
}
