//! The whole model: graph embeddings, transformer layers, classification head and logit
//! propagation.

use burn::{
    module::{Initializer, Module, Param},
    nn::{
        Dropout, DropoutConfig, Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear,
        LinearConfig,
    },
    tensor::{Tensor, backend::Backend},
};

use std::ops::Range;

use super::{
    AttentionKernel, DropoutSite, GraphTransformerLayer, ModelBackend, ModelConfig,
    SequenceTensors, dropout, feature_dropout, propagate,
};
use crate::kernels::{SparseMatrix, sparse};

/// A Graph Transformer for node classification.
#[derive(Module, Debug)]
pub struct GraphTransformer<B: Backend> {
    /// Sparse-feature projection (its weight is `[features, hidden]`).
    pub(super) input: Linear<B>,
    pub(super) degree: Embedding<B>,
    /// One learnable scalar per head per distance bucket, shared by all layers: `[heads, buckets]`.
    pub(super) spatial_bias: Param<Tensor<B, 2>>,
    pub(super) layers: Vec<GraphTransformerLayer<B>>,
    pub(super) norm_out: LayerNorm<B>,
    pub(super) head: Linear<B>,
    input_dropout: Dropout,
    dropout: Dropout,
    heads: usize,
    propagation_steps: usize,
    teleport: f64,
    /// Fused kernels for the embedding too, or plain burn ops everywhere.
    kernel: AttentionKernel,
    /// The learned initial states of the global tokens, `[G, hidden]` (hops scope); last, so
    /// that a model without them draws the same initial values as before they existed.
    pub(super) tokens: Option<Param<Tensor<B, 2>>>,
}

impl<B: Backend> GraphTransformer<B> {
    /// A freshly initialised model (PyTorch-style uniform ±1/√fan_in linear weights, zero bias
    /// table), drawn from the backend's seeded generator.
    pub fn new(config: &ModelConfig, device: &B::Device) -> Self {
        Self {
            input: LinearConfig::new(config.features, config.hidden).init(device),
            degree: EmbeddingConfig::new(config.max_degree + 1, config.hidden).init(device),
            spatial_bias: Param::from_tensor(Tensor::zeros(
                [config.heads, config.bias_buckets()],
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
            tokens: (config.global_tokens > 0).then(|| {
                let bound = (config.hidden as f64).sqrt().recip();
                Initializer::Uniform {
                    min: -bound,
                    max: bound,
                }
                .init([config.global_tokens, config.hidden], device)
            }),
        }
    }
}

impl<B: ModelBackend> GraphTransformer<B> {
    /// Class logits `[rows, classes]` for every row of `seq` (the whole sequence, or one
    /// context-parallel shard of it).
    pub fn forward(&self, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let x = self.forward_embedding(seq);
        let x = self.forward_layers(x, 0..self.layers.len(), seq);
        self.forward_output(x, seq)
    }

    /// The first pipeline stage's part before its layers: the input embedding of the rows,
    /// then the global tokens' states, `[rows + G, hidden]`.
    pub fn forward_embedding(&self, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let x = dropout(
            self.embed(seq),
            self.dropout.prob,
            seq,
            DropoutSite::Embedding,
            0,
        );
        match &self.tokens {
            Some(tokens) => Tensor::cat(vec![x, tokens.val()], 0),
            None => x,
        }
    }

    /// Transformer layers `layers` applied to `x` (`[rows + G, hidden]`).
    pub fn forward_layers(
        &self,
        mut x: Tensor<B, 2>,
        layers: Range<usize>,
        seq: &SequenceTensors<B>,
    ) -> Tensor<B, 2> {
        for (index, layer) in layers.clone().zip(&self.layers[layers]) {
            x = layer.forward(x, self.spatial_bias.val(), seq, index);
        }
        x
    }

    /// The last pipeline stage's part after its layers: output norm, classification head and
    /// logit propagation of the rows (the global tokens dropped), `[rows, classes]`.
    pub fn forward_output(&self, x: Tensor<B, 2>, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let [_, hidden] = x.dims();
        let x = x.slice([0..seq.nodes, 0..hidden]);
        let logits = self.head.forward(self.norm_out.forward(x));
        self.propagate_logits(logits, seq)
    }

    /// Number of transformer layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// Input embedding: sparse features × weight (+ bias), plus the degree embedding; both
    /// are sparse products, by the fused kernels or by the plain-op reference.
    fn embed(&self, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let product = |x: SparseMatrix<B>, w: Tensor<B, 2>| match self.kernel {
            AttentionKernel::Fused => B::sparse_matmul(x, w),
            AttentionKernel::Reference => sparse::reference::sparse_matmul(x, w),
        };
        let input = (seq.input.as_ref())
            .expect("the embedding runs on the first stage, whose sequences carry their input");
        let features = (input.features.clone())
            .map_values(|values| feature_dropout(values, self.input_dropout.prob, seq));
        let projected = product(features, self.input.weight.val());
        let projected = match &self.input.bias {
            Some(bias) => projected + bias.val().unsqueeze_dim(0),
            None => projected,
        };
        projected + product(input.degrees.clone(), self.degree.weight.val())
    }

    /// Personalised-PageRank smoothing of the logits over the sequence's edges (APPNP); each
    /// step gathers the whole sequence's logits from the shards.
    fn propagate_logits(&self, logits: Tensor<B, 2>, seq: &SequenceTensors<B>) -> Tensor<B, 2> {
        let mut z = logits.clone();
        for _ in 0..self.propagation_steps {
            z = propagate(seq.gather(z), &seq.adjacency, self.kernel) * (1.0 - self.teleport)
                + logits.clone() * self.teleport;
        }
        z
    }
}
