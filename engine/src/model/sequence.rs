//! A graph-aware sequence of nodes, uploaded to a device for one forward pass.

use burn::tensor::{Int, Tensor, TensorData, backend::Backend};

use crate::graph::{Csr, Graph, distance_buckets, gcn_normalized_edges, induced_subgraph};
use crate::kernels::pairs_tensor;

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
    /// Local row of each non-zero input feature.
    pub feature_rows: Tensor<B, 1, Int>,
    /// Feature column of each non-zero.
    pub feature_cols: Tensor<B, 1, Int>,
    /// Value of each non-zero, shape `[nnz, 1]`.
    pub feature_values: Tensor<B, 2>,
    /// Degree of each node in the whole graph, clamped to the model's `max_degree`.
    pub degrees: Tensor<B, 1, Int>,
    /// Distance bucket of every ordered node pair, row-major, packed four one-byte buckets
    /// per word (see [`pack_buckets`](crate::kernels::pack_buckets)): `[ceil(S² / 4)]`.
    pub buckets: Tensor<B, 1, Int>,
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
        let mut rows = Vec::new();
        let mut cols = Vec::new();
        let mut values = Vec::new();
        for (local, &node) in self.nodes.iter().enumerate() {
            let (c, v) = features.row(node as usize);
            rows.extend(std::iter::repeat_n(local as i32, c.len()));
            cols.extend(c.iter().map(|&c| c as i32));
            values.extend_from_slice(v);
        }
        let degrees: Vec<i32> = self
            .nodes
            .iter()
            .map(|&n| graph.adjacency().degree(n as usize).min(max_degree) as i32)
            .collect();
        let (dst, src, weight) = gcn_normalized_edges(&self.adjacency);
        let edge_count = weight.len();
        SequenceTensors {
            nodes: self.nodes.len(),
            feature_rows: int_tensor(rows, device),
            feature_cols: int_tensor(cols, device),
            feature_values: column_tensor(values, device),
            degrees: int_tensor(degrees, device),
            buckets: pairs_tensor(&self.buckets, device),
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

/// A `[n, 1]` float tensor from host values.
fn column_tensor<B: Backend>(values: Vec<f32>, device: &B::Device) -> Tensor<B, 2> {
    let len = values.len();
    Tensor::from_data(TensorData::new(values, [len, 1]), device)
}
