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

/// Bytes of host sequence data (pair buckets or near pairs) kept for reuse. A sequence in use
/// is kept whatever its size; the least recently used others are dropped beyond this.
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
        cache.bytes += host.pairs.host_bytes();
        cache.held.insert(index, host.clone());
        cache.order.push(index);
        while cache.bytes > HOST_CACHE_BYTES && cache.order.len() > 1 {
            let oldest = cache.order.remove(0);
            if let Some(dropped) = cache.held.remove(&oldest) {
                cache.bytes -= dropped.pairs.host_bytes();
            }
        }
        self.built.notify_all();
        host
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
        cache: Mutex::default(),
        built: Condvar::new(),
    })
}
