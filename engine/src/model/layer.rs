//! One pre-LayerNorm Graph Transformer layer: biased attention and a local message-passing
//! branch side by side (GraphGPS-style), then a feed-forward block.

use burn::{
    module::Module,
    nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig},
    tensor::{Tensor, activation::gelu, backend::Backend},
};

use super::ModelBackend;
use super::{BiasedAttention, ModelConfig, SequenceTensors, propagate};

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
    /// rows and halo), assembled from the shards.
    pub fn forward(
        &self,
        x: Tensor<B, 2>,
        table: Tensor<B, 2>,
        seq: &SequenceTensors<B>,
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
        let keys = seq.gather(h.clone());
        let kernel = self.attention.kernel();
        let local = self
            .local
            .forward(propagate(keys.clone(), &seq.adjacency, kernel));
        let attended = self.attention.forward(h, tokens, keys, table, seq);
        // The global tokens take no part in message passing.
        let local = if count > rows {
            Tensor::cat(
                vec![local, Tensor::zeros([count - rows, hidden], &x.device())],
                0,
            )
        } else {
            local
        };
        let x = x + self.dropout.forward(attended) + self.dropout.forward(local);
        let f = self.feed_forward(self.norm_ffn.forward(x.clone()));
        x + self.dropout.forward(f)
    }

    /// The feed-forward block over `f` (`[count, hidden]`), in blocks of rows whose
    /// `[rows, ffn_hidden]` activation fits the device's largest buffer: a context-parallel
    /// shard of a million-node sequence has more rows than one such buffer holds. Rows are
    /// independent here: without dropout the blocks compute exactly what one pass would; with
    /// it, each block draws its own masks.
    fn feed_forward(&self, f: Tensor<B, 2>) -> Tensor<B, 2> {
        let block = ffn_block_rows(
            B::max_buffer_bytes(&f.device()),
            self.ffn_in.weight.val().dims()[1],
        );
        self.feed_forward_in_blocks(f, block)
    }

    /// The feed-forward block over `f`, `block` rows at a time.
    fn feed_forward_in_blocks(&self, f: Tensor<B, 2>, block: usize) -> Tensor<B, 2> {
        let [count, hidden] = f.dims();
        let run = |f: Tensor<B, 2>| {
            self.ffn_out
                .forward(self.dropout.forward(gelu(self.ffn_in.forward(f))))
        };
        if count <= block {
            return run(f);
        }
        let blocks = (0..count)
            .step_by(block)
            .map(|start| {
                run(f
                    .clone()
                    .slice([start..(start + block).min(count), 0..hidden]))
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
    use crate::{device::CpuBackend, model::ModelConfig};

    #[test]
    fn the_feed_forward_block_in_row_blocks_equals_one_pass() {
        let device = Default::default();
        let config = ModelConfig {
            hidden: 8,
            heads: 2,
            ffn_hidden: 16,
            dropout: 0.0,
            ..ModelConfig::new(4, 2)
        };
        let layer = GraphTransformerLayer::<CpuBackend>::new(&config, &device);
        let f = Tensor::<CpuBackend, 2>::random([10, 8], Distribution::Default, &device);
        let whole = layer.feed_forward_in_blocks(f.clone(), usize::MAX);
        let blocks = layer.feed_forward_in_blocks(f, 3);
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
