//! The graph cut into graph-aware sequences, each knowing which of its nodes are labelled for
//! training, validation or test.

use crate::{
    EngineError,
    graph::{Graph, Split, partition_sequences},
    model::HostSequence,
};

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
    /// The nodes, their induced adjacency and distance buckets.
    pub host: HostSequence,
    /// Role of each node of the sequence, by position; `None` for unlabelled nodes.
    pub roles: Vec<Option<Role>>,
    /// Positions (within the sequence) of the training nodes.
    pub train: Vec<u32>,
}

/// Partitions `graph` into sequences of at most `seq_len` nodes and labels their nodes.
pub fn build(
    graph: &Graph,
    split: &Split,
    seq_len: usize,
    max_distance: u8,
    seed: u64,
) -> Result<Vec<LabelledSequence>, EngineError> {
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
    Ok(parts
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
                host: HostSequence::new(graph, nodes, max_distance),
                roles,
                train,
            }
        })
        .collect())
}
