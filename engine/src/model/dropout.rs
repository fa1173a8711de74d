//! Where the model drops: each dropout site has its own stream of counter-based masks
//! ([`crate::kernels::dropout`]), numbered by the rows of the whole sequence, so every plan
//! draws what the one-device run draws.

use burn::tensor::Tensor;

use super::{ModelBackend, SequenceTensors};
use crate::kernels::{DropoutMask, RowNumbering, counter_dropout};

/// A place in the model that applies dropout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropoutSite {
    /// The values of the sparse input features.
    Features,
    /// The input embedding.
    Embedding,
    /// Layer `l`'s attention output.
    Attention(usize),
    /// Layer `l`'s message-passing output.
    Local(usize),
    /// Layer `l`'s feed-forward hidden activation.
    FeedForwardHidden(usize),
    /// Layer `l`'s feed-forward output.
    FeedForwardOutput(usize),
}

impl DropoutSite {
    /// The site's number in the stream key: distinct for every site of every layer.
    fn number(self) -> u32 {
        let (layer, kind) = match self {
            DropoutSite::Features => return 0,
            DropoutSite::Embedding => return 1,
            DropoutSite::Attention(l) => (l, 0),
            DropoutSite::Local(l) => (l, 1),
            DropoutSite::FeedForwardHidden(l) => (l, 2),
            DropoutSite::FeedForwardOutput(l) => (l, 3),
        };
        2 + 4 * u32::try_from(layer).expect("layers fit in 32 bits") + kind
    }
}

/// `x` (`[rows, width]`: this shard's node rows, then any global tokens, from its row `shift`
/// on) with dropout of probability `prob` at `site`, while training (autodiff on); `x` itself
/// otherwise or at probability 0.
pub fn dropout<B: ModelBackend>(
    x: Tensor<B, 2>,
    prob: f64,
    seq: &SequenceTensors<B>,
    site: DropoutSite,
    shift: usize,
) -> Tensor<B, 2> {
    if prob == 0.0 || !B::ad_enabled(&x.device()) {
        return x;
    }
    // This shard's node rows, then its global tokens, numbered as in the whole sequence.
    let rows = RowNumbering {
        shift: row_u32(shift),
        nodes: row_u32(seq.nodes),
        first_node: row_u32(seq.first_row),
        first_token: row_u32(seq.sequence_nodes),
    };
    counter_dropout(
        x,
        &DropoutMask::new(seq.dropout.site(site.number()), prob, rows),
    )
}

/// The values of the shard's sparse input features (`[nnz]`) with dropout of probability
/// `prob`, numbered by their entry in the whole sequence's feature matrix.
pub fn feature_dropout<B: ModelBackend>(
    values: Tensor<B, 1>,
    prob: f64,
    seq: &SequenceTensors<B>,
) -> Tensor<B, 1> {
    let [entries] = values.dims();
    if prob == 0.0 || entries == 0 || !B::ad_enabled(&values.device()) {
        return values;
    }
    let rows = RowNumbering {
        shift: 0,
        nodes: row_u32(entries),
        first_node: row_u32(seq.first_feature_entry),
        first_token: 0,
    };
    let stream = seq.dropout.site(DropoutSite::Features.number());
    counter_dropout(
        values.reshape([entries, 1]),
        &DropoutMask::new(stream, prob, rows),
    )
    .reshape([entries])
}

/// A row number as the 32-bit counter the masks hash.
fn row_u32(row: usize) -> u32 {
    u32::try_from(row).expect("sequence rows are numbered in 32 bits")
}

#[cfg(test)]
mod tests {
    use super::DropoutSite;

    #[test]
    fn every_site_of_every_layer_has_its_own_number() {
        let mut numbers: Vec<u32> = [DropoutSite::Features, DropoutSite::Embedding]
            .into_iter()
            .chain((0..4).flat_map(|l| {
                [
                    DropoutSite::Attention(l),
                    DropoutSite::Local(l),
                    DropoutSite::FeedForwardHidden(l),
                    DropoutSite::FeedForwardOutput(l),
                ]
            }))
            .map(DropoutSite::number)
            .collect();
        let count = numbers.len();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), count);
    }
}
