//! A graph-aware sequence of nodes, uploaded to a device for one forward pass.

use burn::tensor::{Int, Tensor, TensorData, backend::Backend};

use crate::graph::{Csr, Graph, distance_buckets, gcn_normalized_edges, induced_subgraph};
use crate::kernels::{CsrIndex, PairBuckets, SparseMatrix};

/// The normalised message-passing edges of a sequence (self-loops included).
#[derive(Debug, Clone)]
pub struct EdgeTensors<B: Backend> {
    /// Destination (local) node of each edge.
    pub dst: Tensor<B, 1, Int>,
    /// Source (local) node of each edge.
    pub src: Tensor<B, 1, Int>,
    /// Symmetric normalisation weight of each edge, shape `[edges, 1]`.
    pub weight: Tensor<B, 2>,
}

/// Everything the model reads about one sequence, on one device.
#[derive(Debug, Clone)]
pub struct SequenceTensors<B: Backend> {
    /// Number of nodes S in the sequence.
    pub nodes: usize,
    /// The sparse input features, `[S, features]`.
    pub features: SparseMatrix<B>,
    /// The degree of each node in the whole graph, clamped to the model's `max_degree`, as a
    /// one-hot `[S, max_degree + 1]` matrix (times the degree-embedding table: the lookup).
    pub degrees: SparseMatrix<B>,
    /// Distance bucket of every ordered node pair, row-major, one byte each, packed as the
    /// attention kernels read them.
    pub buckets: PairBuckets<B>,
    /// Message-passing edges inside the sequence.
    pub edges: EdgeTensors<B>,
}

/// Host-side data of one sequence: computed once (the BFS buckets are the costly part) and
/// uploaded at every step that uses it.
#[derive(Debug, Clone)]
pub struct HostSequence {
    /// Global ids of the nodes, in sequence order.
    pub nodes: Vec<u32>,
    /// Adjacency induced on the sequence (local indices).
    pub adjacency: Csr,
    /// One byte per ordered pair: shortest-path distance, or `max_distance + 1` for "far".
    pub buckets: Vec<u8>,
}

impl HostSequence {
    /// Builds the sequence of `nodes` of `graph`, with distances truncated at `max_distance`.
    pub fn new(graph: &Graph, nodes: Vec<u32>, max_distance: u8) -> Self {
        let adjacency = induced_subgraph(graph.adjacency(), &nodes);
        let buckets = distance_buckets(&adjacency, max_distance);
        Self {
            nodes,
            adjacency,
            buckets,
        }
    }

    /// Uploads the sequence to `device`.
    pub fn to_device<B: Backend>(
        &self,
        graph: &Graph,
        max_degree: usize,
        device: &B::Device,
    ) -> SequenceTensors<B> {
        let features = graph.features();
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        let mut values = Vec::new();
        for &node in &self.nodes {
            let (c, v) = features.row(node as usize);
            cols.extend_from_slice(c);
            values.extend_from_slice(v);
            offsets.push(cols.len());
        }
        let degrees: Vec<u32> = self
            .nodes
            .iter()
            .map(|&n| graph.adjacency().degree(n as usize).min(max_degree) as u32)
            .collect();
        let (dst, src, weight) = gcn_normalized_edges(&self.adjacency);
        let edge_count = weight.len();
        SequenceTensors {
            nodes: self.nodes.len(),
            features: SparseMatrix::new(
                &CsrIndex::new(features.cols(), &offsets, &cols),
                values,
                device,
            ),
            degrees: SparseMatrix::one_hot(&degrees, max_degree + 1, device),
            buckets: PairBuckets::new(&self.buckets, self.nodes.len(), device),
            edges: EdgeTensors {
                dst: int_tensor(dst.into_iter().map(|v| v as i32).collect(), device),
                src: int_tensor(src.into_iter().map(|v| v as i32).collect(), device),
                weight: Tensor::from_data(TensorData::new(weight, [edge_count, 1]), device),
            },
        }
    }
}

/// A 1-D integer tensor from host values.
pub(crate) fn int_tensor<B: Backend>(values: Vec<i32>, device: &B::Device) -> Tensor<B, 1, Int> {
    let len = values.len();
    Tensor::from_data(TensorData::new(values, [len]), device)
}
