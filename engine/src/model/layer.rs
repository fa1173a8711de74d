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
        let f = self.norm_ffn.forward(x.clone());
        let f = self
            .ffn_out
            .forward(self.dropout.forward(gelu(self.ffn_in.forward(f))));
        x + self.dropout.forward(f)
    }
}
