//! The distance buckets of a block of query–key pairs as the attention kernels read them: one
//! byte per pair, packed four to a 32-bit word, split into blocks of whole query rows so that no
//! block exceeds a storage binding (at S = 32768 the S² bytes are 1 GiB; WebGPU guarantees
//! bindings of 128 MiB).

use burn::tensor::{Int, Tensor, TensorData, backend::AutodiffBackend, backend::Backend};

/// Bytes per block by default: WebGPU's default (and minimum) `max_storage_buffer_binding_size`.
pub const MAX_BLOCK_BYTES: usize = 128 << 20;

/// The buckets of `rows × cols` pairs (query rows × keys), in blocks of `block_rows` query rows
/// (the last block may have fewer). Block `b` holds rows `b·block_rows..`, row-major, pair
/// `(i, j)` of the block in byte `(i·cols + j) mod 4` of word `(i·cols + j) / 4`, little-endian.
#[derive(Debug, Clone)]
pub struct PairBuckets<B: Backend> {
    /// Query rows.
    pub rows: usize,
    /// Keys: bytes per row.
    pub cols: usize,
    /// Query rows per block.
    pub block_rows: usize,
    /// The largest bucket of any pair (0 when there are none): the kernels refuse a bias table
    /// without a column for it.
    pub max_bucket: u8,
    /// The packed blocks, `[ceil(rows_in_block · cols / 4)]` each.
    pub blocks: Vec<Tensor<B, 1, Int>>,
}

impl<B: Backend> PairBuckets<B> {
    /// The row-major `buckets` of `buckets.len() / cols` rows on `device`, in blocks of at most
    /// [`MAX_BLOCK_BYTES`].
    pub fn new(buckets: &[u8], cols: usize, device: &B::Device) -> Self {
        Self::with_block_bytes(buckets, cols, MAX_BLOCK_BYTES, device)
    }

    /// Like [`new`](Self::new) with blocks of at most `block_bytes` (at least one row each):
    /// the binding limit of the adapter, or a small one to test the blocking.
    pub fn with_block_bytes(
        buckets: &[u8],
        cols: usize,
        block_bytes: usize,
        device: &B::Device,
    ) -> Self {
        assert!(
            cols > 0 && buckets.len().is_multiple_of(cols),
            "{} buckets are not whole rows of {cols}",
            buckets.len()
        );
        let rows = buckets.len() / cols;
        let block_rows = (block_bytes / cols).clamp(1, rows.max(1));
        let blocks = buckets
            .chunks(block_rows * cols)
            .map(|block| {
                let words = pack_buckets(block);
                let len = words.len();
                Tensor::from_data(TensorData::new(words, [len]), device)
            })
            .collect();
        Self {
            rows,
            cols,
            block_rows,
            max_bucket: buckets.iter().copied().max().unwrap_or(0),
            blocks,
        }
    }

    /// The query rows of block `b`.
    pub fn block_range(&self, b: usize) -> std::ops::Range<usize> {
        let start = b * self.block_rows;
        start..(start + self.block_rows).min(self.rows)
    }
}

/// Panics, with the numbers, when a pair's bucket `max_bucket` has no column in a bias table of
/// `buckets` columns: the fused kernels would read another head's bias or write past an array,
/// and the reference would silently give it no bias. The model sizes its table from the same
/// maximum distance as the buckets, so this is a broken invariant, not bad input.
pub(crate) fn assert_in_table(max_bucket: u8, buckets: usize) {
    assert!(
        usize::from(max_bucket) < buckets,
        "a pair has bucket {max_bucket}, outside the bias table of {buckets} buckets"
    );
}

impl<B: AutodiffBackend> PairBuckets<B> {
    /// The same buckets on the inner backend.
    pub fn inner(self) -> PairBuckets<B::InnerBackend> {
        PairBuckets {
            rows: self.rows,
            cols: self.cols,
            block_rows: self.block_rows,
            max_bucket: self.max_bucket,
            blocks: self.blocks.into_iter().map(Tensor::inner).collect(),
        }
    }
}

/// Packs one-byte buckets four to a 32-bit word, little-endian, the last word zero-padded.
pub(crate) fn pack_buckets(buckets: &[u8]) -> Vec<i32> {
    buckets
        .chunks(4)
        .map(|chunk| {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            i32::from_le_bytes(word)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuBackend;

    #[test]
    fn packs_little_endian_and_pads_the_last_word() {
        let packed = pack_buckets(&[1, 2, 3, 255, 7]);
        assert_eq!(packed, vec![i32::from_le_bytes([1, 2, 3, 255]), 7]);
    }

    #[test]
    fn splits_into_blocks_of_whole_rows() {
        let buckets: Vec<u8> = (0..5 * 3).map(|b| b as u8).collect();
        let pairs =
            PairBuckets::<CpuBackend>::with_block_bytes(&buckets, 3, 7, &Default::default());
        assert_eq!((pairs.rows, pairs.cols, pairs.block_rows), (5, 3, 2));
        assert_eq!(pairs.max_bucket, 14, "the largest bucket is recorded");
        assert_eq!(pairs.blocks.len(), 3);
        assert_eq!(pairs.block_range(2), 4..5);
        let last = pairs.blocks[2].clone().into_data().convert::<i32>();
        let last: Vec<i32> = last.to_vec().expect("i32 after convert");
        assert_eq!(last, vec![i32::from_le_bytes([12, 13, 14, 0])]);
        let whole = PairBuckets::<CpuBackend>::new(&buckets, 3, &Default::default());
        assert_eq!((whole.blocks.len(), whole.block_rows), (1, 5));
    }
}
