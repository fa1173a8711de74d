//! A graph-aware sequence of nodes, uploaded to a device for one forward pass.

use std::ops::Range;

use burn::tensor::{Int, Tensor, TensorData, backend::Backend};

use crate::comm::{RowExchange, RowExchangeBackend, gather_rows};
use crate::graph::{Csr, Graph, distance_buckets, gcn_normalized_edges, induced_subgraph};
use crate::kernels::{CsrIndex, PairBuckets, SparseMatrix};

/// The normalised message-passing edges into a sequence's rows (self-loops included).
#[derive(Debug, Clone)]
pub struct EdgeTensors<B: Backend> {
    /// Destination of each edge: a row of this shard (`0..nodes`).
    pub dst: Tensor<B, 1, Int>,
    /// Source of each edge: a node of the whole sequence (`0..keys`).
    pub src: Tensor<B, 1, Int>,
    /// Symmetric normalisation weight of each edge, shape `[edges, 1]`.
    pub weight: Tensor<B, 2>,
}

/// Everything the model reads about one sequence, or about one context-parallel shard of it
/// (a block of consecutive rows), on one device.
#[derive(Debug, Clone)]
pub struct SequenceTensors<B: Backend> {
    /// Rows held here: the nodes S of the sequence, or the shard's block of them.
    pub nodes: usize,
    /// Nodes S of the whole sequence (the attention keys).
    pub keys: usize,
    /// How the shards exchange rows; `None` when one device holds the whole sequence.
    pub exchange: Option<RowExchange>,
    /// The sparse input features of the rows held here, `[nodes, features]`.
    pub features: SparseMatrix<B>,
    /// The degree of each row's node in the whole graph, clamped to the model's `max_degree`,
    /// as a one-hot `[nodes, max_degree + 1]` matrix (times the degree-embedding table: the
    /// lookup).
    pub degrees: SparseMatrix<B>,
    /// Distance bucket of every (row, key) pair, row-major, one byte each, packed as the
    /// attention kernels read them (`nodes × keys`).
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

    /// Uploads the whole sequence to `device`.
    pub fn to_device<B: Backend>(
        &self,
        graph: &Graph,
        max_degree: usize,
        device: &B::Device,
    ) -> SequenceTensors<B> {
        self.shard_to_device(graph, max_degree, 0..self.nodes.len(), None, device)
    }

    /// Uploads the rows `rows` of the sequence to `device`: their features, degrees, their
    /// row block of the pair buckets and the edges into them; `exchange` connects the shards.
    pub fn shard_to_device<B: Backend>(
        &self,
        graph: &Graph,
        max_degree: usize,
        rows: Range<usize>,
        exchange: Option<RowExchange>,
        device: &B::Device,
    ) -> SequenceTensors<B> {
        let keys = self.nodes.len();
        assert!(
            rows.start < rows.end && rows.end <= keys,
            "shard rows {rows:?} must be a non-empty range within the {keys} nodes"
        );
        let first = rows.start;
        let shard_nodes = &self.nodes[rows.clone()];
        let features = graph.features();
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        let mut values = Vec::new();
        for &node in shard_nodes {
            let (c, v) = features.row(node as usize);
            cols.extend_from_slice(c);
            values.extend_from_slice(v);
            offsets.push(cols.len());
        }
        let degrees: Vec<u32> = shard_nodes
            .iter()
            .map(|&n| graph.adjacency().degree(n as usize).min(max_degree) as u32)
            .collect();
        let (all_dst, all_src, all_weight) = gcn_normalized_edges(&self.adjacency);
        let (mut dst, mut src, mut weight) = (Vec::new(), Vec::new(), Vec::new());
        for ((d, s), w) in all_dst.into_iter().zip(all_src).zip(all_weight) {
            if rows.contains(&(d as usize)) {
                dst.push((d as usize - first) as i32);
                src.push(s as i32);
                weight.push(w);
            }
        }
        let edge_count = weight.len();
        SequenceTensors {
            nodes: rows.len(),
            keys,
            exchange,
            features: SparseMatrix::new(
                &CsrIndex::new(features.cols(), &offsets, &cols),
                values,
                device,
            ),
            degrees: SparseMatrix::one_hot(&degrees, max_degree + 1, device),
            buckets: PairBuckets::new(&self.buckets[first * keys..rows.end * keys], keys, device),
            edges: EdgeTensors {
                dst: int_tensor(dst, device),
                src: int_tensor(src, device),
                weight: Tensor::from_data(TensorData::new(weight, [edge_count, 1]), device),
            },
        }
    }
}

impl<B: RowExchangeBackend> SequenceTensors<B> {
    /// The rows of the whole sequence (`[keys, C]`) from this shard's rows (`[nodes, C]`):
    /// `x` itself on one device, an all-gather over the shards under context parallelism.
    pub fn gather(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.exchange {
            None => x,
            Some(exchange) => gather_rows(x, exchange),
        }
    }
}

/// A 1-D integer tensor from host values.
fn int_tensor<B: Backend>(values: Vec<i32>, device: &B::Device) -> Tensor<B, 1, Int> {
    let len = values.len();
    Tensor::from_data(TensorData::new(values, [len]), device)
}
