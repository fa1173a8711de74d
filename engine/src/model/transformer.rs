//! The whole model: graph embeddings, transformer layers, classification head and logit
//! propagation.

use burn::{
    module::{Module, Param},
    nn::{
        Dropout, DropoutConfig, Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear,
        LinearConfig,
    },
    tensor::{Tensor, backend::Backend},
};

use super::{AttentionKernel, GraphTransformerLayer, ModelConfig, SequenceTensors, propagate};
use crate::kernels::{BiasedAttentionBackend, SparseMatrix, sparse};

/// A Graph Transformer for node classification.
#[derive(Module, Debug)]
pub struct GraphTransformer<B: Backend> {
    /// Sparse-feature projection (its weight is `[features, hidden]`).
    input: Linear<B>,
    degree: Embedding<B>,
    /// One learnable scalar per head per distance bucket, shared by all layers: `[heads, buckets]`.
    spatial_bias: Param<Tensor<B, 2>>,
    layers: Vec<GraphTransformerLayer<B>>,
    norm_out: LayerNorm<B>,
    head: Linear<B>,
    input_dropout: Dropout,
    dropout: Dropout,
    heads: usize,
    propagation_steps: usize,
    teleport: f64,
    /// Fused kernels for the embedding too, or plain burn ops everywhere.
    kernel: AttentionKernel,
}

impl<B: Backend> GraphTransformer<B> {
    /// A freshly initialised model (PyTorch-style uniform ±1/√fan_in linear weights, zero bias
    /// table), drawn from the backend's seeded generator.
    pub fn new(config: &ModelConfig, device: &B::Device) -> Self {
        Self {
            input: LinearConfig::new(config.features, config.hidden).init(device),
            degree: EmbeddingConfig::new(config.max_degree + 1, config.hidden).init(device),
            spatial_bias: Param::from_tensor(Tensor::zeros(
                [config.heads, config.distance_buckets()],
                device,
            )),
            layers: (0..config.layers)
                .map(|_| GraphTransformerLayer::new(config, device))
                .collect(),
            norm_out: LayerNormConfig::new(config.hidden).init(device),
            head: LinearConfig::new(config.hidden, config.classes).init(device),
            input_dropout: DropoutConfig::new(config.input_dropout).init(),
            dropout: DropoutConfig::new(config.dropout).init(),
            heads: config.heads,
            propagation_steps: config.propagation_steps,
            teleport: config.teleport,
            kernel: config.attention,
        }
    }
}

impl<B: BiasedAttentionBackend> GraphTransformer<B> {
    /// Class logits `[S, classes]` for every node of `seq`.
    pub fn forward(&self, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let mut x = self.dropout.forward(self.embed(seq));
        for layer in &self.layers {
            x = layer.forward(x, self.spatial_bias.val(), seq);
        }
        let logits = self.head.forward(self.norm_out.forward(x));
        self.propagate_logits(logits, seq)
    }

    /// Input embedding: sparse features × weight (+ bias), plus the degree embedding; both
    /// are sparse products, by the fused kernels or by the plain-op reference.
    fn embed(&self, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let product = |x: SparseMatrix<B>, w: Tensor<B, 2>| match self.kernel {
            AttentionKernel::Fused => B::sparse_matmul(x, w),
            AttentionKernel::Reference => sparse::reference::sparse_matmul(x, w),
        };
        let features = seq
            .features
            .clone()
            .map_values(|values| self.input_dropout.forward(values));
        let projected = product(features, self.input.weight.val());
        let projected = match &self.input.bias {
            Some(bias) => projected + bias.val().unsqueeze_dim(0),
            None => projected,
        };
        projected + product(seq.degrees.clone(), self.degree.weight.val())
    }

    /// Personalised-PageRank smoothing of the logits over the sequence's edges (APPNP).
    fn propagate_logits(&self, logits: Tensor<B, 2>, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let mut z = logits.clone();
        for _ in 0..self.propagation_steps {
            z = propagate(z, &seq.edges) * (1.0 - self.teleport) + logits.clone() * self.teleport;
        }
        z
    }
}
