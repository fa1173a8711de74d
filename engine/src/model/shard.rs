//! The host side of a sequence: its nodes, induced adjacency and attention pairs (dense
//! buckets or near pairs), and the plan of one context-parallel shard of it — its rows, the
//! key table it reads (the whole sequence, or its rows and its halo), and the tensors it
//! uploads.

use std::ops::Range;
use std::sync::Arc;

use burn::tensor::backend::Backend;

use super::sequence::{AttentionPairs, KeyExchange, SequenceInput};
use super::{AttentionScope, ModelConfig, SequenceTensors};
use crate::comm::{Communicator, HaloExchange, Rank, RowExchange};
use crate::graph::{
    Csr, Graph, NearLimits, NearPairs, distance_buckets, gcn_normalized_edges, induced_subgraph,
};
use crate::kernels::{CsrIndex, DropoutStreams, HopsIndex, HopsPattern, PairBuckets, SparseMatrix};

/// The pairs a sequence's attention reads.
#[derive(Debug, Clone)]
pub enum SequencePairs {
    /// Full scope: one bucket byte per ordered pair, row-major `S × S`.
    Dense(Vec<u8>),
    /// Hops scope: the near pairs of every node.
    Near(NearPairs),
}

impl SequencePairs {
    /// Bytes held on the host.
    pub fn host_bytes(&self) -> usize {
        match self {
            SequencePairs::Dense(buckets) => buckets.len(),
            SequencePairs::Near(near) => near.host_bytes(),
        }
    }
}

/// Host-side data of one sequence, computed once (the BFS is the costly part).
#[derive(Debug, Clone)]
pub struct HostSequence {
    /// Global ids of the nodes, in sequence order.
    pub nodes: Vec<u32>,
    /// Adjacency induced on the sequence (local indices).
    pub adjacency: Csr,
    /// The attention pairs of the model's scope.
    pub pairs: SequencePairs,
}

impl HostSequence {
    /// Bytes held on the host: the node ids, the induced adjacency and the attention pairs.
    pub fn host_bytes(&self) -> usize {
        size_of_val(self.nodes.as_slice())
            + size_of_val(self.adjacency.indptr())
            + size_of_val(self.adjacency.indices())
            + self.pairs.host_bytes()
    }
}

/// One shard of a context-parallel group as the host plans it: every shard's rows (consecutive
/// blocks in shard order), which of them this is, and the group's ranks with this shard's
/// communicator (`None` when one device holds the whole sequence).
#[derive(Debug, Clone)]
pub struct ShardSpec {
    /// Rows of each shard.
    pub ranges: Vec<Range<usize>>,
    /// This shard's position in `ranges`.
    pub position: usize,
    /// This shard's communicator and the group's ranks in shard order.
    pub group: Option<(Arc<dyn Communicator>, Vec<Rank>)>,
    /// Whether the device runs the embedding (the first pipeline stage) and so needs the rows'
    /// features and degrees.
    pub embeds: bool,
    /// Whether the shard's layers start their key exchanges before computing what does not
    /// need them ([`SequenceTensors::overlap_exchange`]).
    pub overlap: bool,
}

impl ShardSpec {
    /// The whole sequence of `nodes` rows on one device.
    pub fn whole(nodes: usize) -> Self {
        Self {
            ranges: vec![0..nodes],
            position: 0,
            group: None,
            embeds: true,
            overlap: false,
        }
    }

    /// This shard's rows.
    pub fn rows(&self) -> Range<usize> {
        self.ranges[self.position].clone()
    }
}

impl HostSequence {
    /// Builds the sequence of `nodes` of `graph` with the pairs of `config`'s scope.
    pub fn new(graph: &Graph, nodes: Vec<u32>, config: &ModelConfig) -> Self {
        let adjacency = induced_subgraph(graph.adjacency(), &nodes);
        let pairs = match config.scope {
            AttentionScope::Full => {
                SequencePairs::Dense(distance_buckets(&adjacency, config.max_distance))
            }
            AttentionScope::Hops { hops, max_pairs } => SequencePairs::Near(NearPairs::build(
                &adjacency,
                NearLimits {
                    hops,
                    max_pairs,
                    max_distance: config.max_distance,
                },
            )),
        };
        Self {
            nodes,
            adjacency,
            pairs,
        }
    }

    /// Nodes of the sequence.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the sequence has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Uploads the whole sequence to `device`.
    pub fn to_device<B: Backend>(
        &self,
        graph: &Graph,
        config: &ModelConfig,
        device: &B::Device,
    ) -> SequenceTensors<B> {
        self.shard_to_device(graph, config, &ShardSpec::whole(self.len()), device)
    }

    /// The rows outside `range` that the rows of `range` read: their near pairs' keys and
    /// their message-passing neighbours (hops scope), ascending; empty under the full scope,
    /// whose shards read the whole sequence.
    pub fn halo(&self, range: &Range<usize>) -> Vec<u32> {
        let SequencePairs::Near(near) = &self.pairs else {
            return Vec::new();
        };
        let mut marked = vec![false; self.len()];
        for i in range.clone() {
            let reached = near.row(i).0.iter().chain(self.adjacency.neighbors(i));
            for &j in reached {
                if !range.contains(&(j as usize)) {
                    marked[j as usize] = true;
                }
            }
        }
        (0..self.len() as u32)
            .filter(|&j| marked[j as usize])
            .collect()
    }

    /// The largest buffers a device allocates for the rows `range` of this sequence, bytes, by
    /// what they hold: each must fit the device's largest buffer.
    pub fn largest_buffers(
        &self,
        config: &ModelConfig,
        range: &Range<usize>,
    ) -> Vec<(&'static str, u64)> {
        let f32s = |n: usize| 4 * n as u64;
        let tokens = config.global_tokens;
        let rows = range.len();
        // The feed-forward block runs in row blocks within the limit (`GraphTransformerLayer`),
        // so a shard's widest row-major buffer is its node states or its logits.
        let node_state = (rows + tokens) * config.hidden.max(config.classes);
        let mut buffers = vec![("node-state", f32s(node_state))];
        match &self.pairs {
            SequencePairs::Dense(_) => {
                buffers.push(("pair-bucket row", self.len() as u64));
                buffers.push(("key/value", f32s(self.len() * config.hidden)));
                if config.attention == super::AttentionKernel::Reference {
                    buffers.push(("attention-score", f32s(config.heads * rows * self.len())));
                }
            }
            SequencePairs::Near(near) => {
                let pairs: usize = range.clone().map(|i| near.row(i).0.len() + tokens).sum();
                let keys = rows + self.halo(range).len() + tokens;
                buffers.push(("near-pair", f32s(pairs)));
                buffers.push(("token-pair", f32s(rows * tokens)));
                buffers.push(("key/value", f32s(keys * config.hidden)));
                buffers.push((
                    "bias-gradient",
                    f32s(config.heads * rows * config.bias_buckets()),
                ));
                if config.attention == super::AttentionKernel::Reference {
                    buffers.push(("gathered pair", f32s(pairs * config.hidden)));
                }
            }
        }
        buffers
    }

    /// Uploads shard `shard` of the sequence to `device`: its rows' features and degrees (where
    /// the shard embeds), its attention pairs over its key table, the normalised message-passing edges into its
    /// rows, and how it exchanges rows with the other shards.
    pub fn shard_to_device<B: Backend>(
        &self,
        graph: &Graph,
        config: &ModelConfig,
        shard: &ShardSpec,
        device: &B::Device,
    ) -> SequenceTensors<B> {
        let rows = shard.rows();
        assert!(
            rows.start < rows.end && rows.end <= self.len(),
            "shard rows {rows:?} must be a non-empty range within the {} nodes",
            self.len()
        );
        let table = KeyTable::new(self, shard);
        let pairs = match &self.pairs {
            SequencePairs::Dense(buckets) => AttentionPairs::Dense(PairBuckets::new(
                &buckets[rows.start * self.len()..rows.end * self.len()],
                self.len(),
                device,
            )),
            SequencePairs::Near(near) => {
                let (nodes, tokens) = hops_indices(near, &table, config);
                AttentionPairs::Hops {
                    nodes: HopsPattern::new(&nodes, device),
                    tokens: tokens.map(|t| HopsPattern::new(&t, device)),
                }
            }
        };
        let exchange = self.exchange(shard, &table);
        let token_exchange = match (&shard.group, config.global_tokens) {
            (Some((comm, group)), tokens) if tokens > 0 => Some(RowExchange {
                comm: comm.clone(),
                group: group.clone(),
                rows: vec![1; group.len()],
            }),
            _ => None,
        };
        SequenceTensors {
            nodes: rows.len(),
            keys: table.len(),
            exchange,
            overlap_exchange: shard.overlap,
            input: shard.embeds.then(|| SequenceInput {
                features: self.features(graph, &rows, device),
                degrees: self.degrees(graph, config.max_degree, &rows, device),
            }),
            pairs,
            adjacency: self.propagation(&table, device),
            token_exchange,
            first_row: rows.start,
            sequence_nodes: self.len(),
            first_feature_entry: self.feature_entries_before(graph, rows.start),
            dropout: DropoutStreams::default(),
        }
    }

    /// Entries of the sequence's feature matrix in its first `rows` rows.
    fn feature_entries_before(&self, graph: &Graph, rows: usize) -> usize {
        let features = graph.features();
        self.nodes[..rows]
            .iter()
            .map(|&node| features.row(node as usize).0.len())
            .sum()
    }

    /// How the shard reads rows of the others: an all-gather (full scope), a halo exchange
    /// (hops scope), or nothing on one device.
    fn exchange(&self, shard: &ShardSpec, table: &KeyTable) -> KeyExchange {
        let Some((comm, group)) = &shard.group else {
            return KeyExchange::None;
        };
        match self.pairs {
            SequencePairs::Dense(_) => KeyExchange::Gather(RowExchange {
                comm: comm.clone(),
                group: group.clone(),
                rows: shard.ranges.iter().map(|r| r.len()).collect(),
            }),
            SequencePairs::Near(_) => {
                let mine = shard.rows();
                let send = shard
                    .ranges
                    .iter()
                    .enumerate()
                    .map(|(q, theirs)| {
                        if q == shard.position {
                            return Vec::new();
                        }
                        self.halo(theirs)
                            .into_iter()
                            .filter(|&j| mine.contains(&(j as usize)))
                            .map(|j| j - mine.start as u32)
                            .collect()
                    })
                    .collect();
                let receive = shard
                    .ranges
                    .iter()
                    .map(|theirs| {
                        table
                            .halo
                            .iter()
                            .filter(|&&j| theirs.contains(&(j as usize)))
                            .count()
                    })
                    .collect();
                KeyExchange::Halo(HaloExchange {
                    comm: comm.clone(),
                    group: group.clone(),
                    rows: mine.len(),
                    send,
                    receive,
                })
            }
        }
    }

    /// The sparse input features of `rows`, `[rows, features]`.
    fn features<B: Backend>(
        &self,
        graph: &Graph,
        rows: &Range<usize>,
        device: &B::Device,
    ) -> SparseMatrix<B> {
        let features = graph.features();
        let mut offsets = vec![0];
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for &node in &self.nodes[rows.clone()] {
            let (c, v) = features.row(node as usize);
            cols.extend_from_slice(c);
            values.extend_from_slice(v);
            offsets.push(cols.len());
        }
        SparseMatrix::new(
            &CsrIndex::new(features.cols(), &offsets, &cols),
            values,
            device,
        )
    }

    /// The one-hot degrees (in the whole graph, clamped to `max_degree`) of `rows`.
    fn degrees<B: Backend>(
        &self,
        graph: &Graph,
        max_degree: usize,
        rows: &Range<usize>,
        device: &B::Device,
    ) -> SparseMatrix<B> {
        let degrees: Vec<u32> = self.nodes[rows.clone()]
            .iter()
            .map(|&n| graph.adjacency().degree(n as usize).min(max_degree) as u32)
            .collect();
        SparseMatrix::one_hot(&degrees, max_degree + 1, device)
    }

    /// The normalised message-passing matrix `D^-1/2 (A + I) D^-1/2` restricted to the shard's
    /// rows, over its key table: `[rows, keys]`.
    fn propagation<B: Backend>(&self, table: &KeyTable, device: &B::Device) -> SparseMatrix<B> {
        let (dst, src, weight) = gcn_normalized_edges(&self.adjacency);
        let mut offsets = vec![0];
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        // Edges come grouped by destination, in row order.
        let mut row = table.own.start;
        for ((d, s), w) in dst.into_iter().zip(src).zip(weight) {
            let d = d as usize;
            if !table.own.contains(&d) {
                continue;
            }
            while row < d {
                offsets.push(cols.len());
                row += 1;
            }
            cols.push(table.index(s));
            values.push(w);
        }
        while row < table.own.end {
            offsets.push(cols.len());
            row += 1;
        }
        SparseMatrix::new(&CsrIndex::new(table.len(), &offsets, &cols), values, device)
    }
}

/// The node rows a shard's attention and message passing read: its own rows, then its halo
/// (ascending, hence grouped by owning shard in shard order); the whole sequence under the
/// full scope.
struct KeyTable {
    own: Range<usize>,
    halo: Vec<u32>,
    /// Rows of the table.
    len: usize,
    /// Position in the table of each node of the sequence (`u32::MAX`: not in it).
    index_of: Vec<u32>,
}

impl KeyTable {
    fn new(sequence: &HostSequence, shard: &ShardSpec) -> Self {
        let own = shard.rows();
        if matches!(sequence.pairs, SequencePairs::Dense(_)) {
            return Self {
                own,
                halo: Vec::new(),
                len: sequence.len(),
                index_of: (0..sequence.len() as u32).collect(),
            };
        }
        let halo = sequence.halo(&own);
        let mut index_of = vec![u32::MAX; sequence.len()];
        for (i, j) in own.clone().enumerate() {
            index_of[j] = i as u32;
        }
        for (i, &j) in halo.iter().enumerate() {
            index_of[j as usize] = (own.len() + i) as u32;
        }
        Self {
            len: own.len() + halo.len(),
            own,
            halo,
            index_of,
        }
    }

    /// Rows of the table.
    fn len(&self) -> usize {
        self.len
    }

    /// Position in the table of node `j` of the sequence.
    fn index(&self, j: u32) -> u32 {
        let at = self.index_of[j as usize];
        assert!(at != u32::MAX, "node {j} is outside the shard's key table");
        at
    }
}

/// The hops patterns of a shard: its rows over the key table (near pairs, then the global
/// tokens, which follow the table's node rows) and, with global tokens, the tokens' rows over
/// the shard's own rows.
fn hops_indices(
    near: &NearPairs,
    table: &KeyTable,
    config: &ModelConfig,
) -> (HopsIndex, Option<HopsIndex>) {
    let tokens = config.global_tokens;
    let node_keys = table.len();
    let global = config.global_bucket();
    let rows = table.own.clone().map(|i| {
        let (keys, buckets) = near.row(i);
        let near_pairs: Vec<(u32, u8)> = keys
            .iter()
            .zip(buckets)
            .map(|(&j, &b)| (table.index(j), b))
            .collect();
        let token_pairs = global
            .into_iter()
            .flat_map(move |g| (0..tokens).map(move |t| ((node_keys + t) as u32, g)));
        near_pairs.into_iter().chain(token_pairs)
    });
    let nodes = HopsIndex::new(node_keys + tokens, rows);
    let own = table.own.len() as u32;
    let token_rows = global.map(|g| {
        HopsIndex::new(
            own as usize,
            (0..tokens).map(move |_| (0..own).map(move |j| (j, g))),
        )
    });
    (nodes, token_rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;
    use crate::graph::SyntheticSpec;

    #[test]
    fn a_shard_that_does_not_embed_holds_no_features_or_degrees()
    -> Result<(), Box<dyn std::error::Error>> {
        let graph: Graph = "sbm:60:2".parse::<SyntheticSpec>()?.generate(1)?;
        let config = ModelConfig::new(graph.feature_dim(), graph.num_classes());
        let host = HostSequence::new(&graph, (0..30).collect(), &config);
        let device = Default::default();
        let first = ShardSpec::whole(host.len());
        let later = ShardSpec {
            embeds: false,
            ..first.clone()
        };
        let embedding = host.shard_to_device::<CpuBackend>(&graph, &config, &first, &device);
        let other = host.shard_to_device::<CpuBackend>(&graph, &config, &later, &device);
        let input = embedding
            .input
            .as_ref()
            .ok_or("the first stage holds its input")?;
        let feature_entries: usize = (0..30).map(|n| graph.features().row(n).0.len()).sum();
        assert_eq!(input.features.nnz(), feature_entries);
        assert_eq!(input.degrees.nnz(), 30, "one degree a row");
        assert!(other.input.is_none());
        let input_bytes = embedding.device_bytes() - other.device_bytes();
        // Row and column offsets, then entry rows, entry columns, column order and values.
        let sparse_bytes = |nnz: usize, cols: usize| 4 * (31 + (cols + 1) + 4 * nnz) as u64;
        assert_eq!(
            input_bytes,
            sparse_bytes(input.features.nnz(), graph.feature_dim())
                + sparse_bytes(30, config.max_degree + 1)
        );
        Ok(())
    }
}
