//! One pre-LayerNorm Graph Transformer layer: biased attention and a local message-passing
//! branch side by side (GraphGPS-style), then a feed-forward block.

use burn::{
    module::Module,
    nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig},
    tensor::{Tensor, activation::gelu, backend::Backend},
};

use super::{
    BiasedAttention, DropoutSite, ModelBackend, ModelConfig, SequenceTensors, dropout, propagate,
};

/// A Graph Transformer layer.
#[derive(Module, Debug)]
pub struct GraphTransformerLayer<B: Backend> {
    norm_mix: LayerNorm<B>,
    attention: BiasedAttention<B>,
    local: Linear<B>,
    norm_ffn: LayerNorm<B>,
    ffn_in: Linear<B>,
    ffn_out: Linear<B>,
    dropout: Dropout,
}

impl<B: Backend> GraphTransformerLayer<B> {
    /// A new layer shaped by `config`.
    pub fn new(config: &ModelConfig, device: &B::Device) -> Self {
        let hidden = config.hidden;
        Self {
            norm_mix: LayerNormConfig::new(hidden).init(device),
            attention: BiasedAttention::new(hidden, config.heads, config.attention, device),
            local: LinearConfig::new(hidden, hidden).init(device),
            norm_ffn: LayerNormConfig::new(hidden).init(device),
            ffn_in: LinearConfig::new(hidden, config.ffn_hidden).init(device),
            ffn_out: LinearConfig::new(config.ffn_hidden, hidden).init(device),
            dropout: DropoutConfig::new(config.dropout).init(),
        }
    }
}

impl<B: ModelBackend> GraphTransformerLayer<B> {
    /// Applies the layer to `x` (`[rows + G, hidden]`: the sequence's rows, or this shard's,
    /// then the G global tokens), with the spatial-bias `table`. Attention keys and
    /// message-passing sources come from the key table (the whole sequence, or this shard's
    /// rows and halo), assembled from the shards. `index` is the layer's place in the model,
    /// which its dropout masks depend on.
    pub fn forward(
        &self,
        x: Tensor<B, 2>,
        table: Tensor<B, 2>,
        seq: &SequenceTensors<B>,
        index: usize,
    ) -> Tensor<B, 2> {
        let [count, hidden] = x.dims();
        let rows = seq.nodes;
        let h = self.norm_mix.forward(x.clone());
        let (h, tokens) = if count > rows {
            (
                h.clone().slice([0..rows, 0..hidden]),
                Some(h.slice([rows..count, 0..hidden])),
            )
        } else {
            (h, None)
        };
        // The rows' copy for the key exchange starts first; their queries, keys and values,
        // which need no other shard, are computed while the exchange travels.
        let started = seq.start_gather(&h);
        let own = self.attention.project_own(h.clone());
        let keys = seq.gather_started(h, started);
        let kernel = self.attention.kernel();
        let local = self
            .local
            .forward(propagate(keys.clone(), &seq.adjacency, kernel));
        let attended = self.attention.forward(own, tokens, keys, table, seq);
        // The global tokens take no part in message passing.
        let local = if count > rows {
            Tensor::cat(
                vec![local, Tensor::zeros([count - rows, hidden], &x.device())],
                0,
            )
        } else {
            local
        };
        let p = self.dropout.prob;
        let x = x
            + dropout(attended, p, seq, DropoutSite::Attention(index), 0)
            + dropout(local, p, seq, DropoutSite::Local(index), 0);
        let f = self.feed_forward(self.norm_ffn.forward(x.clone()), seq, index);
        x + dropout(f, p, seq, DropoutSite::FeedForwardOutput(index), 0)
    }

    /// The feed-forward block over `f` (`[count, hidden]`), in blocks of rows whose
    /// `[rows, ffn_hidden]` activation fits the device's largest buffer: a context-parallel
    /// shard of a million-node sequence has more rows than one such buffer holds. Rows are
    /// independent here, and a block's dropout masks are those of its rows in one pass, so the
    /// blocks compute exactly what one pass would.
    fn feed_forward(
        &self,
        f: Tensor<B, 2>,
        seq: &SequenceTensors<B>,
        index: usize,
    ) -> Tensor<B, 2> {
        let block = ffn_block_rows(
            B::max_buffer_bytes(&f.device()),
            self.ffn_in.weight.val().dims()[1],
        );
        let p = self.dropout.prob;
        let hidden_dropout = |h: Tensor<B, 2>, start: usize| {
            dropout(h, p, seq, DropoutSite::FeedForwardHidden(index), start)
        };
        self.feed_forward_in_blocks(f, block, &hidden_dropout)
    }

    /// The feed-forward block over `f`, `block` rows at a time; `hidden_dropout` drops from
    /// the hidden activation of the rows from a given row on.
    fn feed_forward_in_blocks(
        &self,
        f: Tensor<B, 2>,
        block: usize,
        hidden_dropout: &dyn Fn(Tensor<B, 2>, usize) -> Tensor<B, 2>,
    ) -> Tensor<B, 2> {
        let [count, hidden] = f.dims();
        let run = |f: Tensor<B, 2>, start: usize| {
            self.ffn_out
                .forward(hidden_dropout(gelu(self.ffn_in.forward(f)), start))
        };
        if count <= block {
            return run(f, 0);
        }
        let blocks = (0..count)
            .step_by(block)
            .map(|start| {
                let rows = start..(start + block).min(count);
                run(f.clone().slice([rows, 0..hidden]), start)
            })
            .collect();
        Tensor::cat(blocks, 0)
    }
}

/// Rows per feed-forward block: as many `ffn_hidden`-wide f32 rows as one buffer of
/// `max_buffer_bytes` holds (all rows where the device has no such limit).
fn ffn_block_rows(max_buffer_bytes: Option<u64>, ffn_hidden: usize) -> usize {
    max_buffer_bytes.map_or(usize::MAX, |limit| {
        usize::try_from(limit / (4 * ffn_hidden.max(1) as u64))
            .unwrap_or(usize::MAX)
            .max(1)
    })
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Distribution, Tensor};

    use super::{GraphTransformerLayer, ffn_block_rows};
    use crate::{
        device::CpuAutodiff,
        kernels::{DropoutMask, RowNumbering, counter_dropout},
        model::ModelConfig,
    };

    #[test]
    fn the_feed_forward_block_in_row_blocks_equals_one_pass_dropout_included() {
        let device = Default::default();
        let config = ModelConfig {
            hidden: 8,
            heads: 2,
            ffn_hidden: 16,
            ..ModelConfig::new(4, 2)
        };
        let layer = GraphTransformerLayer::<CpuAutodiff>::new(&config, &device);
        // Ten shard rows: eight nodes (rows 100..108 of the sequence), then two tokens.
        let rows = RowNumbering {
            shift: 0,
            nodes: 8,
            first_node: 100,
            first_token: 500,
        };
        let drop = |h: Tensor<CpuAutodiff, 2>, start: usize| {
            counter_dropout(h, &DropoutMask::new(17, 0.5, rows.shifted(start as u32)))
        };
        let f = Tensor::<CpuAutodiff, 2>::random([10, 8], Distribution::Default, &device);
        let whole = layer.feed_forward_in_blocks(f.clone(), usize::MAX, &drop);
        let blocks = layer.feed_forward_in_blocks(f, 3, &drop);
        assert_eq!(blocks.dims(), [10, 8]);
        whole
            .into_data()
            .assert_approx_eq::<f32>(&blocks.into_data(), Default::default());
    }

    #[test]
    fn feed_forward_blocks_fit_the_buffer_limit() {
        // 128 MiB over 128 floats of 4 bytes: 262144 rows; a shard of 276763 rows needs two.
        assert_eq!(ffn_block_rows(Some(1 << 27), 128), 262_144);
        assert_eq!(ffn_block_rows(Some(1 << 27), 3 << 20), 10);
        assert_eq!(ffn_block_rows(Some(100), 128), 1);
        assert_eq!(ffn_block_rows(None, 128), usize::MAX);
    }
}
