//! The host side of a sparse attention pattern: the pairs of every query row (CSR: key and
//! bucket per pair) and, built once here, the same pairs grouped by key (CSC: query row and
//! bucket per pair) for the key-side backward, which then needs no atomics; and the order in
//! which the kernels take the rows and the keys.

/// The pairs of `rows` query rows over `keys` keys, in both orientations, as the kernels read
/// them (32-bit offsets and ids, one byte per bucket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopsIndex {
    rows: usize,
    keys: usize,
    row_offsets: Vec<i32>,
    pair_keys: Vec<i32>,
    pair_rows: Vec<i32>,
    pair_buckets: Vec<u8>,
    col_offsets: Vec<i32>,
    col_rows: Vec<i32>,
    col_buckets: Vec<u8>,
    row_order: Vec<i32>,
    key_order: Vec<i32>,
    max_bucket: u8,
}

/// The items `0..counts.len()` by count, most first, ties by index: the order in which the
/// kernels hand items to invocations. Neighbouring invocations run in lock step as the lanes
/// of one SIMD group (llvmpipe) or warp (GPUs), so each waits for the longest loop among them;
/// on an R-MAT graph's near pairs, taking rows in their own order makes 8 lanes do 5× the pairs
/// they need, and this order 1.001×.
fn by_count_descending(counts: impl Iterator<Item = i32>) -> Vec<i32> {
    let mut order: Vec<(i32, i32)> = counts
        .enumerate()
        .map(|(item, count)| (count, item as i32))
        .collect();
    order.sort_unstable_by_key(|&(count, item)| (std::cmp::Reverse(count), item));
    order.into_iter().map(|(_, item)| item).collect()
}

impl HopsIndex {
    /// The index of the pairs produced by `row_pairs`, which yields, for each query row in
    /// order, its `(key, bucket)` pairs (keys below `keys`, in the order the kernels visit
    /// them).
    ///
    /// Panics on a key out of range or 2^31 pairs or more: callers build patterns from
    /// validated sequences and check the size first.
    pub fn new<I, P>(keys: usize, row_pairs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: IntoIterator<Item = (u32, u8)>,
    {
        let mut row_offsets = vec![0i32];
        let (mut pair_keys, mut pair_rows, mut pair_buckets) = (Vec::new(), Vec::new(), Vec::new());
        let mut max_bucket = 0u8;
        for (row, pairs) in row_pairs.into_iter().enumerate() {
            for (key, bucket) in pairs {
                assert!(
                    (key as usize) < keys,
                    "key {key} of row {row} is out of range for {keys} keys"
                );
                pair_keys.push(key as i32);
                pair_rows.push(row as i32);
                pair_buckets.push(bucket);
                max_bucket = max_bucket.max(bucket);
            }
            let count = i32::try_from(pair_keys.len()).expect("fewer than 2^31 pairs");
            row_offsets.push(count);
        }
        let rows = row_offsets.len() - 1;
        assert!(
            keys < i32::MAX as usize && rows < i32::MAX as usize,
            "{rows} rows and {keys} keys must fit 31 bits"
        );
        let mut col_offsets = vec![0i32; keys + 1];
        for &key in &pair_keys {
            col_offsets[key as usize + 1] += 1;
        }
        for k in 0..keys {
            col_offsets[k + 1] += col_offsets[k];
        }
        let mut next = col_offsets.clone();
        let pairs = pair_keys.len();
        let (mut col_rows, mut col_buckets) = (vec![0i32; pairs], vec![0u8; pairs]);
        for pair in 0..pairs {
            let slot = &mut next[pair_keys[pair] as usize];
            col_rows[*slot as usize] = pair_rows[pair];
            col_buckets[*slot as usize] = pair_buckets[pair];
            *slot += 1;
        }
        let row_order = by_count_descending(row_offsets.windows(2).map(|w| w[1] - w[0]));
        let key_order = by_count_descending(col_offsets.windows(2).map(|w| w[1] - w[0]));
        Self {
            rows,
            keys,
            row_order,
            key_order,
            row_offsets,
            pair_keys,
            pair_rows,
            pair_buckets,
            col_offsets,
            col_rows,
            col_buckets,
            max_bucket,
        }
    }

    /// Query rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Keys.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// Pairs in all.
    pub fn pairs(&self) -> usize {
        self.pair_keys.len()
    }

    /// The largest bucket of any pair (0 without pairs).
    pub fn max_bucket(&self) -> u8 {
        self.max_bucket
    }

    /// Pairs of row `r` are `row_offsets[r]..row_offsets[r + 1]`.
    pub fn row_offsets(&self) -> &[i32] {
        &self.row_offsets
    }

    /// Key of each pair, in row order.
    pub fn pair_keys(&self) -> &[i32] {
        &self.pair_keys
    }

    /// Query row of each pair, in row order.
    pub fn pair_rows(&self) -> &[i32] {
        &self.pair_rows
    }

    /// Bucket of each pair, in row order.
    pub fn pair_buckets(&self) -> &[u8] {
        &self.pair_buckets
    }

    /// Pairs of key `k` are `col_offsets[k]..col_offsets[k + 1]` of the key-ordered arrays.
    pub fn col_offsets(&self) -> &[i32] {
        &self.col_offsets
    }

    /// Query row of each pair, grouped by key, rows ascending within a key.
    pub fn col_rows(&self) -> &[i32] {
        &self.col_rows
    }

    /// Bucket of each pair, grouped by key like [`col_rows`](Self::col_rows).
    pub fn col_buckets(&self) -> &[u8] {
        &self.col_buckets
    }

    /// The rows in the order the kernels take them: by pair count, most first, ties by row.
    pub fn row_order(&self) -> &[i32] {
        &self.row_order
    }

    /// The keys in the order the key-side backward takes them: by pair count, most first,
    /// ties by key.
    pub fn key_order(&self) -> &[i32] {
        &self.key_order
    }

    /// Bytes the pattern takes on a device: offsets, ids, rows and orders as 32-bit words,
    /// buckets packed four to a word, in both orientations.
    pub fn device_bytes(&self) -> u64 {
        let words = self.row_offsets.len()
            + self.col_offsets.len()
            + 3 * self.pairs()
            + self.rows
            + self.keys;
        (4 * words + 2 * 4 * self.pairs().div_ceil(4)) as u64
    }

    /// The largest single buffer of the pattern on a device, bytes (a pair-indexed array).
    pub fn largest_buffer_bytes(&self) -> u64 {
        4 * (self.pairs().max(self.rows + 1).max(self.keys + 1)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::HopsIndex;

    #[test]
    fn groups_pairs_by_key_with_rows_ascending() {
        // Row 0: keys 2, 0; row 1: none; row 2: keys 2, 1; over 4 keys (key 3 unused).
        let rows: Vec<Vec<(u32, u8)>> = vec![vec![(2, 1), (0, 0)], vec![], vec![(2, 5), (1, 2)]];
        let index = HopsIndex::new(4, rows);
        assert_eq!((index.rows(), index.keys(), index.pairs()), (3, 4, 4));
        assert_eq!(index.row_offsets(), &[0, 2, 2, 4]);
        assert_eq!(index.pair_keys(), &[2, 0, 2, 1]);
        assert_eq!(index.pair_rows(), &[0, 0, 2, 2]);
        assert_eq!(index.col_offsets(), &[0, 1, 2, 4, 4]);
        assert_eq!(index.col_rows(), &[0, 2, 0, 2]);
        assert_eq!(index.col_buckets(), &[0, 2, 1, 5]);
        assert_eq!(index.max_bucket(), 5);
        // Rows by pair count (2, 0, 2), keys by pair count (1, 1, 2, 0): most first, ties by id.
        assert_eq!(index.row_order(), &[0, 2, 1]);
        assert_eq!(index.key_order(), &[2, 0, 1, 3]);
    }

    #[test]
    #[should_panic(expected = "key 4 of row 0 is out of range")]
    fn refuses_a_key_out_of_range() {
        HopsIndex::new(4, vec![vec![(4u32, 0u8)]]);
    }
}
