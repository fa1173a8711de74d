//! The graph cut into graph-aware sequences, each knowing which of its nodes are labelled for
//! training, validation or test, with their host data (induced adjacency, attention pairs)
//! built on first use and kept within a byte budget.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::{
    EngineError,
    graph::{Graph, Split, partition_sequences},
    model::{HostSequence, ModelConfig},
};

/// Bytes of host sequence data (node ids, adjacency, pair buckets or near pairs) kept for
/// reuse. A sequence in use is kept whatever its size; the least recently used others are
/// dropped beyond this.
pub const HOST_CACHE_BYTES: usize = 2 << 30;

/// The part a node plays in the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A training node: its label enters the loss.
    Train = 0,
    /// A validation node: early stopping watches its accuracy.
    Val = 1,
    /// A test node: reported at the end.
    Test = 2,
}

/// A sequence with the split's roles of its nodes.
#[derive(Debug, Clone)]
pub struct LabelledSequence {
    /// Global ids of the nodes, in sequence order.
    pub nodes: Vec<u32>,
    /// Role of each node of the sequence, by position; `None` for unlabelled nodes.
    pub roles: Vec<Option<Role>>,
    /// Positions (within the sequence) of the training nodes.
    pub train: Vec<u32>,
}

/// The sequences of a run, and their host data built lazily for the run's model.
#[derive(Debug)]
pub struct Sequences {
    list: Vec<LabelledSequence>,
    config: ModelConfig,
    cache_budget: usize,
    cache: Mutex<HostCache>,
    built: Condvar,
}

/// Built host sequences, least recently used first.
#[derive(Debug, Default)]
struct HostCache {
    held: HashMap<usize, Arc<HostSequence>>,
    order: Vec<usize>,
    bytes: usize,
    building: Vec<usize>,
}

impl Sequences {
    /// The sequences.
    pub fn list(&self) -> &[LabelledSequence] {
        &self.list
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sequence `index`.
    pub fn get(&self, index: usize) -> &LabelledSequence {
        &self.list[index]
    }

    /// The host data of sequence `index` of `graph` (the graph the sequences were cut from):
    /// built now if no other caller has it, shared otherwise.
    pub fn host(&self, index: usize, graph: &Graph) -> Arc<HostSequence> {
        let mut cache = self.lock();
        loop {
            if let Some(host) = cache.held.get(&index).cloned() {
                cache.order.retain(|&i| i != index);
                cache.order.push(index);
                return host;
            }
            if !cache.building.contains(&index) {
                break;
            }
            cache = self.built.wait(cache).unwrap_or_else(|e| e.into_inner());
        }
        cache.building.push(index);
        drop(cache);
        let host = Arc::new(HostSequence::new(
            graph,
            self.list[index].nodes.clone(),
            &self.config,
        ));
        let mut cache = self.lock();
        cache.building.retain(|&i| i != index);
        cache.bytes += host.host_bytes();
        cache.held.insert(index, host.clone());
        cache.order.push(index);
        while cache.bytes > self.cache_budget && cache.order.len() > 1 {
            let oldest = cache.order.remove(0);
            if let Some(dropped) = cache.held.remove(&oldest) {
                cache.bytes -= dropped.host_bytes();
            }
        }
        self.built.notify_all();
        host
    }

    /// The same sequences with a host cache of `bytes` instead of [`HOST_CACHE_BYTES`].
    pub fn with_cache_budget(self, bytes: usize) -> Self {
        Self {
            cache_budget: bytes,
            ..self
        }
    }

    fn lock(&self) -> MutexGuard<'_, HostCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Partitions `graph` into sequences of at most `seq_len` nodes and labels their nodes; their
/// host data follows `config` (its scope and distances) when first asked for.
pub fn build(
    graph: &Graph,
    split: &Split,
    seq_len: usize,
    config: &ModelConfig,
    seed: u64,
) -> Result<Sequences, EngineError> {
    let mut role_of = vec![None; graph.num_nodes()];
    for (role, nodes) in [
        (Role::Train, &split.train),
        (Role::Val, &split.val),
        (Role::Test, &split.test),
    ] {
        for &n in nodes {
            role_of[n as usize] = Some(role);
        }
    }
    let parts = partition_sequences(graph.adjacency(), seq_len, seed)?;
    let list = parts
        .into_iter()
        .map(|nodes| {
            let roles: Vec<Option<Role>> = nodes.iter().map(|&n| role_of[n as usize]).collect();
            let train = roles
                .iter()
                .enumerate()
                .filter(|(_, r)| **r == Some(Role::Train))
                .map(|(p, _)| p as u32)
                .collect();
            LabelledSequence {
                nodes,
                roles,
                train,
            }
        })
        .collect();
    Ok(Sequences {
        list,
        config: config.clone(),
        cache_budget: HOST_CACHE_BYTES,
        cache: Mutex::default(),
        built: Condvar::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{SplitSpec, SyntheticSpec, split};

    /// Four sequences of 100 nodes of an SBM graph, for the model's default full scope.
    fn four_sequences() -> (Graph, Sequences) {
        let graph = "sbm:400:4"
            .parse::<SyntheticSpec>()
            .and_then(|s| Ok(s.generate(1)?))
            .expect("an SBM graph");
        let spec: SplitSpec = "random:0.6:0.2".parse().expect("a split");
        let split = split(&graph, &spec, 1).expect("split");
        let config = ModelConfig::new(graph.feature_dim(), graph.num_classes());
        let sequences = build(&graph, &split, 100, &config, 1).expect("sequences");
        assert_eq!(sequences.len(), 4);
        (graph, sequences)
    }

    #[test]
    fn a_sequence_is_built_once_and_shared_while_it_fits() {
        let (graph, sequences) = four_sequences();
        let first = sequences.host(0, &graph);
        assert!(first.host_bytes() >= 100 * 100, "pair buckets of 100 × 100");
        assert!(Arc::ptr_eq(&first, &sequences.host(0, &graph)));
        // Built by several threads at once: one build, one shared result.
        let built: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| sequences.host(2, &graph)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a thread"))
                .collect()
        });
        assert!(built.iter().all(|h| Arc::ptr_eq(h, &built[0])));
    }

    #[test]
    fn beyond_the_budget_the_least_recently_used_sequence_is_dropped() {
        let (graph, sequences) = four_sequences();
        let one = sequences.host(0, &graph).host_bytes();
        // Room for two sequences of about this size.
        let sequences = sequences.with_cache_budget(2 * one + one / 2);
        let first = sequences.host(0, &graph);
        let second = sequences.host(1, &graph);
        assert!(
            Arc::ptr_eq(&first, &sequences.host(0, &graph)),
            "0 used last"
        );
        sequences.host(2, &graph);
        // 1 was the least recently used: rebuilt; 0 still held.
        assert!(Arc::ptr_eq(&first, &sequences.host(0, &graph)));
        assert!(!Arc::ptr_eq(&second, &sequences.host(1, &graph)));
        assert_eq!(
            sequences.host(1, &graph).nodes,
            second.nodes,
            "the same data"
        );
        let held = sequences.lock().bytes;
        assert!(held <= 2 * one + one / 2 + one / 4, "{held} bytes held");
    }
}
