//! The host side of a sparse matrix: its CSR and the column index of the transposed product.

/// The pattern of a sparse `[rows, cols]` matrix as the kernels read it, as 32-bit integers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsrIndex {
    rows: usize,
    cols: usize,
    row_offsets: Vec<i32>,
    entry_rows: Vec<i32>,
    entry_cols: Vec<i32>,
    col_offsets: Vec<i32>,
    col_entries: Vec<i32>,
}

impl CsrIndex {
    /// The index of a CSR with `offsets.len() - 1` rows (row `r` holds the entries
    /// `offsets[r]..offsets[r + 1]` of `indices`) and `cols` columns.
    ///
    /// Panics on a malformed CSR (offsets not starting at 0, decreasing, or not ending at
    /// `indices.len()`; a column out of range; 2^31 entries or more): callers pass validated
    /// graph data.
    pub fn new(cols: usize, offsets: &[usize], indices: &[u32]) -> Self {
        let nnz = indices.len();
        let rows = offsets
            .len()
            .checked_sub(1)
            .expect("offsets hold rows + 1 entries");
        assert!(
            offsets[0] == 0 && offsets[rows] == nnz && offsets.is_sorted(),
            "CSR offsets must run from 0 to {nnz} without decreasing"
        );
        assert!(
            nnz < i32::MAX as usize && cols < i32::MAX as usize,
            "{nnz} entries and {cols} columns must fit 31 bits"
        );
        let mut entry_rows = Vec::with_capacity(nnz);
        for (row, span) in offsets.windows(2).enumerate() {
            entry_rows.extend(std::iter::repeat_n(row as i32, span[1] - span[0]));
        }
        let mut col_offsets = vec![0i32; cols + 1];
        for &c in indices {
            assert!(
                (c as usize) < cols,
                "column {c} out of range for {cols} columns"
            );
            col_offsets[c as usize + 1] += 1;
        }
        for c in 0..cols {
            col_offsets[c + 1] += col_offsets[c];
        }
        let mut next = col_offsets.clone();
        let mut col_entries = vec![0i32; nnz];
        for (entry, &c) in indices.iter().enumerate() {
            col_entries[next[c as usize] as usize] = entry as i32;
            next[c as usize] += 1;
        }
        Self {
            rows,
            cols,
            row_offsets: offsets.iter().map(|&o| o as i32).collect(),
            entry_rows,
            entry_cols: indices.iter().map(|&c| c as i32).collect(),
            col_offsets,
            col_entries,
        }
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the matrix.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.entry_cols.len()
    }

    /// Entries of row `r` are `row_offsets[r]..row_offsets[r + 1]`.
    pub fn row_offsets(&self) -> &[i32] {
        &self.row_offsets
    }

    /// Row of each entry.
    pub fn entry_rows(&self) -> &[i32] {
        &self.entry_rows
    }

    /// Column of each entry.
    pub fn entry_cols(&self) -> &[i32] {
        &self.entry_cols
    }

    /// Entries of column `c` are `col_entries[col_offsets[c]..col_offsets[c + 1]]`.
    pub fn col_offsets(&self) -> &[i32] {
        &self.col_offsets
    }

    /// Entry numbers grouped by column, ascending within a column.
    pub fn col_entries(&self) -> &[i32] {
        &self.col_entries
    }
}

#[cfg(test)]
mod tests {
    use super::CsrIndex;

    #[test]
    fn groups_entries_by_column_in_entry_order() {
        // Rows: [c2, c0], [], [c2, c2, c1] over 4 columns (column 3 empty, a duplicate in row 2).
        let index = CsrIndex::new(4, &[0, 2, 2, 5], &[2, 0, 2, 2, 1]);
        assert_eq!((index.rows(), index.cols(), index.nnz()), (3, 4, 5));
        assert_eq!(index.entry_rows(), &[0, 0, 2, 2, 2]);
        assert_eq!(index.entry_cols(), &[2, 0, 2, 2, 1]);
        assert_eq!(index.col_offsets(), &[0, 1, 2, 5, 5]);
        assert_eq!(index.col_entries(), &[1, 4, 0, 2, 3]);
    }

    #[test]
    fn an_empty_matrix_has_empty_columns() {
        let index = CsrIndex::new(3, &[0, 0], &[]);
        assert_eq!(index.col_offsets(), &[0, 0, 0, 0]);
        assert!(index.col_entries().is_empty() && index.entry_rows().is_empty());
    }

    #[test]
    #[should_panic(expected = "column 5 out of range")]
    fn rejects_a_column_out_of_range() {
        CsrIndex::new(5, &[0, 1], &[5]);
    }
}
