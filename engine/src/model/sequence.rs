//! A graph-aware sequence of nodes, or one context-parallel shard of it, on a device: what one
//! forward pass reads.

use std::ops::Range;

use burn::tensor::{Int, Tensor, backend::AutodiffBackend, backend::Backend};

use crate::comm::{
    HaloExchange, RowExchange, StartedExchange, exchange_started_rows, start_exchange,
};
use crate::kernels::{DropoutStreams, HopsPattern, PairBuckets, SparseMatrix};

use super::ModelBackend;

/// The attention pairs of a shard.
#[derive(Debug, Clone)]
pub enum AttentionPairs<B: Backend> {
    /// Full scope: the bucket of every (row, key) pair, packed, `rows × keys`.
    Dense(PairBuckets<B>),
    /// Hops scope: the shard's rows over its key table (near pairs and global tokens) and,
    /// with global tokens, the tokens' rows over the shard's own rows.
    Hops {
        /// The node rows' pairs.
        nodes: HopsPattern<B>,
        /// The global tokens' pairs.
        tokens: Option<HopsPattern<B>>,
    },
}

/// How a shard reads the rows of the other shards of its group.
#[derive(Debug, Clone)]
pub enum KeyExchange {
    /// One device holds the whole sequence.
    None,
    /// Full scope: every shard's rows, all-gathered.
    Gather(RowExchange),
    /// Hops scope: the halo rows, point to point.
    Halo(HaloExchange),
}

/// The rows' inputs to the embedding, held only by a device that runs the first layer.
#[derive(Debug, Clone)]
pub struct SequenceInput<B: Backend> {
    /// The sparse input features of the rows held here, `[nodes, features]`.
    pub features: SparseMatrix<B>,
    /// The degree of each row's node in the whole graph, clamped to the model's `max_degree`,
    /// as a one-hot `[nodes, max_degree + 1]` matrix (times the degree-embedding table: the
    /// lookup).
    pub degrees: SparseMatrix<B>,
}

/// Everything the model reads about one sequence, or about one context-parallel shard of it
/// (a block of consecutive rows), on one device.
#[derive(Debug, Clone)]
pub struct SequenceTensors<B: Backend> {
    /// Rows held here: the nodes S of the sequence, or the shard's block of them.
    pub nodes: usize,
    /// Node rows of the key table the attention and the message passing read: the whole
    /// sequence (full scope), or this shard's rows followed by its halo (hops scope).
    pub keys: usize,
    /// How the key table is assembled from the shards.
    pub exchange: KeyExchange,
    /// Whether a layer starts its key exchange before computing what does not need it
    /// ([`Self::start_gather`]), so that the rows travel meanwhile; otherwise it waits for
    /// the exchange where it needs the table (the baseline the overlap is measured against).
    pub overlap_exchange: bool,
    /// The rows' features and degrees: `None` on a pipeline stage after the first, which
    /// never embeds.
    pub input: Option<SequenceInput<B>>,
    /// The attention pairs.
    pub pairs: AttentionPairs<B>,
    /// The normalised message-passing matrix of the rows held here over the key table,
    /// `[nodes, keys]`.
    pub adjacency: SparseMatrix<B>,
    /// How the global tokens' partial attentions over the shards combine (one row per shard);
    /// `None` on one device or without tokens.
    pub token_exchange: Option<RowExchange>,
    /// Position in the sequence of the first row held here.
    pub first_row: usize,
    /// Nodes of the whole sequence (the global tokens are numbered after them).
    pub sequence_nodes: usize,
    /// Entries of the sequence's feature matrix in the rows before `first_row`.
    pub first_feature_entry: usize,
    /// The dropout masks of the pass these tensors go through (see [`Self::with_dropout`]).
    pub dropout: DropoutStreams,
}

impl<B: ModelBackend> SequenceTensors<B> {
    /// The key table (`[keys, C]`) from this shard's rows (`[nodes, C]`): `x` itself on one
    /// device, an all-gather over the shards (full scope), or `x` and its halo (hops scope).
    pub fn gather(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.gather_started(x, None)
    }

    /// Starts the key exchange of this shard's rows `x`, where there is one and these tensors
    /// overlap it ([`Self::overlap_exchange`]): their copy to the host is enqueued now, before
    /// the caller enqueues the work that does not need the key table, and
    /// [`Self::gather_started`] finishes it.
    pub fn start_gather(&self, x: &Tensor<B, 2>) -> Option<StartedExchange> {
        let exchanges = !matches!(self.exchange, KeyExchange::None);
        (exchanges && self.overlap_exchange).then(|| start_exchange(x))
    }

    /// [`Self::gather`] of `x`, with its copy to the host taken from `started` when given
    /// ([`Self::start_gather`] of the same `x`).
    pub fn gather_started(
        &self,
        x: Tensor<B, 2>,
        started: Option<StartedExchange>,
    ) -> Tensor<B, 2> {
        match &self.exchange {
            KeyExchange::None => x,
            KeyExchange::Gather(exchange) => exchange_started_rows(x, exchange, started),
            KeyExchange::Halo(exchange) => exchange_started_rows(x, exchange, started),
        }
    }

    /// Where this shard's own rows sit in its key table: the whole table on one device, the
    /// shard's block of the sequence under the full scope, the table's first rows (the halo
    /// follows) under the hops scope.
    pub fn own_keys(&self) -> Range<usize> {
        match &self.exchange {
            KeyExchange::Gather(_) => self.first_row..self.first_row + self.nodes,
            KeyExchange::None | KeyExchange::Halo(_) => 0..self.nodes,
        }
    }
}

impl<B: Backend> SequenceTensors<B> {
    /// The same tensors for a pass whose dropout draws from `streams`.
    pub fn with_dropout(self, streams: DropoutStreams) -> Self {
        Self {
            dropout: streams,
            ..self
        }
    }

    /// The same tensors on the autodiff backend `A` over `B` (no copy; nothing is tracked).
    pub fn lift<A: AutodiffBackend<InnerBackend = B>>(self) -> SequenceTensors<A> {
        let int = |t: Tensor<B, 1, Int>| Tensor::<A, 1, Int>::from_inner(t);
        SequenceTensors {
            nodes: self.nodes,
            keys: self.keys,
            exchange: self.exchange,
            overlap_exchange: self.overlap_exchange,
            input: self.input.map(|input| SequenceInput {
                features: lift_sparse(input.features),
                degrees: lift_sparse(input.degrees),
            }),
            pairs: match self.pairs {
                AttentionPairs::Dense(buckets) => AttentionPairs::Dense(PairBuckets {
                    rows: buckets.rows,
                    cols: buckets.cols,
                    block_rows: buckets.block_rows,
                    max_bucket: buckets.max_bucket,
                    blocks: buckets.blocks.into_iter().map(int).collect(),
                }),
                AttentionPairs::Hops { nodes, tokens } => AttentionPairs::Hops {
                    nodes: nodes.map(int),
                    tokens: tokens.map(|t| t.map(int)),
                },
            },
            adjacency: lift_sparse(self.adjacency),
            token_exchange: self.token_exchange,
            first_row: self.first_row,
            sequence_nodes: self.sequence_nodes,
            first_feature_entry: self.first_feature_entry,
            dropout: self.dropout,
        }
    }

    /// Bytes of device memory the tensors hold.
    pub fn device_bytes(&self) -> u64 {
        let ints = |t: &Tensor<B, 1, Int>| 4 * t.dims()[0] as u64;
        let sparse = |m: &SparseMatrix<B>| {
            ints(&m.row_offsets)
                + ints(&m.entry_rows)
                + ints(&m.entry_cols)
                + ints(&m.col_offsets)
                + ints(&m.col_entries)
                + 4 * m.nnz() as u64
        };
        let hops = |p: &HopsPattern<B>| {
            [
                &p.row_offsets,
                &p.pair_keys,
                &p.pair_rows,
                &p.pair_buckets,
                &p.col_offsets,
                &p.col_rows,
                &p.col_buckets,
                &p.row_order,
                &p.key_order,
            ]
            .into_iter()
            .map(ints)
            .sum::<u64>()
        };
        let pairs = match &self.pairs {
            AttentionPairs::Dense(buckets) => buckets.blocks.iter().map(ints).sum(),
            AttentionPairs::Hops { nodes, tokens } => hops(nodes) + tokens.as_ref().map_or(0, hops),
        };
        let input = (self.input.as_ref())
            .map_or(0, |input| sparse(&input.features) + sparse(&input.degrees));
        input + sparse(&self.adjacency) + pairs
    }
}

/// A sparse matrix on the autodiff backend `A` over `B`.
fn lift_sparse<B: Backend, A: AutodiffBackend<InnerBackend = B>>(
    m: SparseMatrix<B>,
) -> SparseMatrix<A> {
    let int = |t: Tensor<B, 1, Int>| Tensor::<A, 1, Int>::from_inner(t);
    SparseMatrix {
        rows: m.rows,
        cols: m.cols,
        row_offsets: int(m.row_offsets),
        entry_rows: int(m.entry_rows),
        entry_cols: int(m.entry_cols),
        col_offsets: int(m.col_offsets),
        col_entries: int(m.col_entries),
        values: Tensor::from_inner(m.values),
    }
}
