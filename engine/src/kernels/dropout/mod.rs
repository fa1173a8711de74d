//! Counter-based dropout: whether an element is kept is a hash of (the run's seed, the step, the
//! sequence, the dropout site, the element's row in the whole sequence, its column), not a draw
//! from a device's generator.
//!
//! Two things follow. The mask never needs storing: the backward recomputes it (dropout is
//! linear, so its backward is the same masking of the gradient), which saves a float tensor per
//! dropout site and layer that burn's dropout keeps. And every plan draws the same masks: a
//! context-parallel shard, a feed-forward row block or a pipeline stage computes the bits the
//! one-device run computes for the same rows, so results do not depend on the plan with dropout
//! on.
//!
//! [`CounterDropoutBackend`] is implemented by the wgpu backend (`shaders/dropout.wgsl`), by
//! burn's CPU backend on the host ([`DropoutMask::apply`], the reference), and by `Autodiff<B>`.

mod autodiff;
mod wgpu;

use burn::tensor::{Tensor, TensorData, TensorPrimitive, backend::Backend, ops::FloatTensor};

use crate::{device::CpuBackend, host::host_f32};

/// Where the rows of a tensor sit in the whole sequence: local row `r` is the shard's row
/// `r + shift`; shard rows below `nodes` are nodes, numbered from `first_node` in the sequence;
/// the rows after them are global tokens, numbered from `first_token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowNumbering {
    /// The tensor's first row among the shard's rows (a row block's start).
    pub shift: u32,
    /// Node rows of the shard; later rows are global tokens.
    pub nodes: u32,
    /// Number in the sequence of the shard's first node row.
    pub first_node: u32,
    /// Number of the first global token (after every node of the sequence).
    pub first_token: u32,
}

impl RowNumbering {
    /// The counter row of local row `row`.
    pub fn counter_row(&self, row: u32) -> u32 {
        let shard_row = row.wrapping_add(self.shift);
        if shard_row < self.nodes {
            self.first_node.wrapping_add(shard_row)
        } else {
            self.first_token.wrapping_add(shard_row - self.nodes)
        }
    }

    /// The same rows starting `rows` further in (a row block's numbering).
    pub fn shifted(self, rows: u32) -> Self {
        Self {
            shift: self.shift + rows,
            ..self
        }
    }
}

/// One dropout: the stream of its (seed, step, sequence, site), the drop probability and where
/// its rows sit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DropoutMask {
    /// The hash of the run's seed, the step, the sequence and the site.
    pub stream: u32,
    /// Elements whose hash is below this are dropped: the probability times 2^32.
    pub threshold: u32,
    /// What kept elements are multiplied by: 1 / (1 − probability).
    pub scale: f32,
    /// Where the tensor's rows sit in the sequence.
    pub rows: RowNumbering,
}

impl DropoutMask {
    /// Dropout with probability `prob` (in `[0, 1)`) on the stream `stream`.
    pub fn new(stream: u32, prob: f64, rows: RowNumbering) -> Self {
        assert!((0.0..1.0).contains(&prob), "dropout probability {prob}");
        Self {
            stream,
            threshold: (prob * 4_294_967_296.0).round().min(u32::MAX as f64) as u32,
            scale: (1.0 / (1.0 - prob)) as f32,
            rows,
        }
    }

    /// Whether element (`row`, `col`) of the tensor is kept: the hash `shaders/dropout.wgsl`
    /// computes.
    pub fn keeps(&self, row: u32, col: u32) -> bool {
        let counter = self.rows.counter_row(row);
        let column = col.wrapping_mul(0x9e37_79b9).wrapping_add(0x7f4a_7c15);
        fmix(fmix(self.stream ^ counter) ^ column) >= self.threshold
    }

    /// The masked `[rows, width]` row-major `values`, on the host: the reference.
    pub fn apply(&self, values: &[f32], width: usize) -> Vec<f32> {
        values
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let (row, col) = ((i / width) as u32, (i % width) as u32);
                if self.keeps(row, col) {
                    x * self.scale
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// MurmurHash3's 32-bit finaliser, as in the shader.
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// SplitMix64's finaliser, for the 64-bit stream key.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The dropout streams of one forward pass: the run's seed, the optimizer step and the sequence
/// fix them, so a resumed run, and any plan, draws the masks of the uninterrupted one-device run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropoutStreams {
    key: u64,
}

impl DropoutStreams {
    /// The streams of sequence `sequence` at step `step` of a run seeded with `seed`.
    pub fn new(seed: u64, step: usize, sequence: usize) -> Self {
        let key = mix64(mix64(mix64(seed) ^ step as u64) ^ sequence as u64);
        Self { key }
    }

    /// The stream of dropout site `site` (each place in the model that drops has its own).
    pub fn site(&self, site: u32) -> u32 {
        let z = mix64(self.key ^ u64::from(site).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        (z ^ (z >> 32)) as u32
    }
}

/// A backend that applies a [`DropoutMask`].
pub trait CounterDropoutBackend: Backend {
    /// `x` (`[rows, width]`) with the elements `mask` drops zeroed and the rest scaled.
    fn counter_dropout(x: FloatTensor<Self>, mask: &DropoutMask) -> FloatTensor<Self>;
}

/// `x` (`[rows, width]`) through `mask`: differentiable, and nothing is saved for the backward.
pub fn counter_dropout<B: CounterDropoutBackend>(
    x: Tensor<B, 2>,
    mask: &DropoutMask,
) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::counter_dropout(
        x.into_primitive().tensor(),
        mask,
    )))
}

impl CounterDropoutBackend for CpuBackend {
    fn counter_dropout(x: FloatTensor<Self>, mask: &DropoutMask) -> FloatTensor<Self> {
        let x: Tensor<Self, 2> = Tensor::from_primitive(TensorPrimitive::Float(x));
        let [rows, width] = x.dims();
        let device = x.device();
        let values = host_f32(x);
        let masked = mask.apply(&values, width);
        Tensor::<Self, 2>::from_data(TensorData::new(masked, [rows, width]), &device)
            .into_primitive()
            .tensor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbering() -> RowNumbering {
        RowNumbering {
            shift: 0,
            nodes: 1000,
            first_node: 0,
            first_token: 1000,
        }
    }

    #[test]
    fn the_kept_fraction_is_one_minus_the_probability() {
        for prob in [0.1, 0.5, 0.9] {
            let mask = DropoutMask::new(DropoutStreams::new(7, 3, 1).site(2), prob, numbering());
            let kept = (0..1000)
                .flat_map(|r| (0..128).map(move |c| (r, c)))
                .filter(|&(r, c)| mask.keeps(r, c))
                .count() as f64
                / 128_000.0;
            assert!((kept - (1.0 - prob)).abs() < 0.01, "p {prob}: kept {kept}");
        }
        let none = DropoutMask::new(5, 0.0, numbering());
        assert!((0..100).all(|r| none.keeps(r, 3)), "p = 0 keeps everything");
    }

    #[test]
    fn masks_depend_on_every_part_of_the_key_and_on_nothing_else() {
        let mask = |seed, step, sequence, site| {
            let m = DropoutMask::new(
                DropoutStreams::new(seed, step, sequence).site(site),
                0.5,
                numbering(),
            );
            (0..64).map(|r| m.keeps(r, r % 7)).collect::<Vec<_>>()
        };
        let base = mask(1, 2, 3, 4);
        assert_eq!(base, mask(1, 2, 3, 4));
        for other in [
            mask(2, 2, 3, 4),
            mask(1, 3, 3, 4),
            mask(1, 2, 4, 4),
            mask(1, 2, 3, 5),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn a_shard_or_block_draws_the_rows_the_whole_sequence_draws() {
        // The whole sequence: 10 nodes and 2 tokens on one device.
        let whole = RowNumbering {
            shift: 0,
            nodes: 10,
            first_node: 0,
            first_token: 10,
        };
        let stream = DropoutStreams::new(0, 0, 0).site(1);
        let full = DropoutMask::new(stream, 0.5, whole);
        // Shard rows 6..10 with the tokens after them, in blocks of 3 rows.
        let shard = RowNumbering {
            shift: 0,
            nodes: 4,
            first_node: 6,
            first_token: 10,
        };
        for block in [0, 3] {
            let part = DropoutMask::new(stream, 0.5, shard.shifted(block));
            for local in 0..3 {
                let shard_row = local + block;
                let whole_row = if shard_row < 4 {
                    6 + shard_row
                } else {
                    10 + shard_row - 4
                };
                for col in 0..5 {
                    assert_eq!(part.keeps(local, col), full.keeps(whole_row, col));
                }
            }
        }
    }

    #[test]
    fn the_cpu_backend_masks_like_the_reference() {
        let device = Default::default();
        let mask = DropoutMask::new(99, 0.3, numbering());
        let values: Vec<f32> = (0..60).map(|i| i as f32 - 30.0).collect();
        let x =
            Tensor::<CpuBackend, 2>::from_data(TensorData::new(values.clone(), [10, 6]), &device);
        let got = counter_dropout(x, &mask)
            .into_data()
            .to_vec::<f32>()
            .expect("f32");
        assert_eq!(got, mask.apply(&values, 6));
        assert!(got.iter().any(|&v| v == 0.0) && got.iter().any(|&v| v != 0.0));
    }
}
