//! Multi-head self-attention over a sequence with an additive spatial bias.

use burn::{
    module::Module,
    nn::{Dropout, DropoutConfig, Linear, LinearConfig},
    tensor::{Tensor, activation::softmax, backend::Backend},
};

/// Multi-head attention whose scores get a per-head `[S, S]` bias added before the softmax.
#[derive(Module, Debug)]
pub struct BiasedAttention<B: Backend> {
    qkv: Linear<B>,
    output: Linear<B>,
    dropout: Dropout,
    heads: usize,
}

impl<B: Backend> BiasedAttention<B> {
    /// A new attention block of width `hidden` with `heads` heads.
    pub fn new(hidden: usize, heads: usize, dropout: f64, device: &B::Device) -> Self {
        Self {
            qkv: LinearConfig::new(hidden, 3 * hidden).init(device),
            output: LinearConfig::new(hidden, hidden).init(device),
            dropout: DropoutConfig::new(dropout).init(),
            heads,
        }
    }

    /// Attends `x` (`[S, hidden]`) to itself with `bias` (`[heads, S, S]`) added to the scores.
    pub fn forward(&self, x: Tensor<B, 2>, bias: Tensor<B, 3>) -> Tensor<B, 2> {
        let [nodes, hidden] = x.dims();
        let head_dim = hidden / self.heads;
        // [S, 3·hidden] → [3, heads, S, head_dim]
        let qkv = self
            .qkv
            .forward(x)
            .reshape([nodes, 3, self.heads, head_dim])
            .permute([1, 2, 0, 3]);
        let mut parts = qkv.chunk(3, 0).into_iter();
        let mut next = || {
            parts
                .next()
                .expect("chunk(3) yields three parts")
                .reshape([self.heads, nodes, head_dim])
        };
        let (q, k, v) = (next(), next(), next());
        let scale = (head_dim as f64).sqrt().recip();
        let scores = q.matmul(k.swap_dims(1, 2)) * scale + bias;
        let probabilities = self.dropout.forward(softmax(scores, 2));
        let context = probabilities
            .matmul(v)
            .swap_dims(0, 1)
            .reshape([nodes, hidden]);
        self.output.forward(context)
    }
}
