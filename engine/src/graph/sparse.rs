//! Sparse f32 matrices in CSR form, used for node features.

use super::error::GraphError;

/// A validated `rows × cols` f32 matrix in compressed sparse row form.
///
/// Invariants: `indptr` has `rows + 1` entries running monotonically from 0 to
/// `nnz`, every column index is below `cols`, every value is finite. Column
/// indices of a row are in storage order; a repeated column adds up.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseMatrix {
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
}

impl SparseMatrix {
    /// Builds a matrix from CSR arrays, checking every invariant.
    pub fn new(
        rows: usize,
        cols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, GraphError> {
        if values.len() != indices.len() {
            return Err(GraphError::BadArray {
                name: "features".into(),
                problem: format!(
                    "has {} values but {} column indices",
                    values.len(),
                    indices.len()
                ),
            });
        }
        validate_indptr("features", &indptr, rows, indices.len())?;
        for row in 0..rows {
            for k in indptr[row]..indptr[row + 1] {
                let col = feature_column(row, i64::from(indices[k]), cols)?;
                check_finite(row, col as usize, values[k])?;
            }
        }
        Ok(Self {
            rows,
            cols,
            indptr,
            indices,
            values,
        })
    }

    /// Builds a matrix from a dense row-major table, keeping the non-zero entries.
    ///
    /// # Panics
    /// If `data.len() != rows * cols`.
    pub fn from_dense(rows: usize, cols: usize, data: &[f32]) -> Result<Self, GraphError> {
        assert_eq!(data.len(), rows * cols, "dense table of the wrong size");
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut indices = Vec::new();
        let mut values = Vec::new();
        indptr.push(0);
        for (row, chunk) in data.chunks(cols.max(1)).take(rows).enumerate() {
            for (col, &value) in chunk.iter().enumerate() {
                check_finite(row, col, value)?;
                if value != 0.0 {
                    indices.push(col as u32);
                    values.push(value);
                }
            }
            indptr.push(indices.len());
        }
        indptr.resize(rows + 1, indices.len());
        Ok(Self {
            rows,
            cols,
            indptr,
            indices,
            values,
        })
    }

    /// Builds a 0/1 matrix whose row `r` has ones at the columns `fill(r, buf)` pushes
    /// into `buf` (any order, repeats allowed; they are sorted and deduplicated).
    ///
    /// # Panics
    /// If `fill` pushes a column `>= cols`.
    pub(crate) fn binary_from_fn(
        rows: usize,
        cols: usize,
        mut fill: impl FnMut(usize, &mut Vec<u32>),
    ) -> Self {
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut indices = Vec::new();
        let mut row_buf = Vec::new();
        indptr.push(0);
        for row in 0..rows {
            row_buf.clear();
            fill(row, &mut row_buf);
            row_buf.sort_unstable();
            row_buf.dedup();
            assert!(
                row_buf.last().is_none_or(|&c| (c as usize) < cols),
                "generated feature column out of range"
            );
            indices.extend_from_slice(&row_buf);
            indptr.push(indices.len());
        }
        let values = vec![1.0; indices.len()];
        Self {
            rows,
            cols,
            indptr,
            indices,
            values,
        }
    }

    /// Number of rows (nodes).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns (feature dimension).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// Row pointers: row `r` is stored at `indptr[r]..indptr[r + 1]`.
    pub fn indptr(&self) -> &[usize] {
        &self.indptr
    }

    /// Column index of each stored entry.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Value of each stored entry.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Column indices and values of row `r`.
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let span = self.indptr[r]..self.indptr[r + 1];
        (&self.indices[span.clone()], &self.values[span])
    }

    /// The matrix as a dense row-major table of `rows * cols` values.
    pub fn to_dense(&self) -> Vec<f32> {
        let mut dense = vec![0.0; self.rows * self.cols];
        for r in 0..self.rows {
            let (cols, values) = self.row(r);
            for (&c, &v) in cols.iter().zip(values) {
                dense[r * self.cols + c as usize] += v;
            }
        }
        dense
    }
}

/// Checks that `indptr` has `rows + 1` entries, starts at 0, ends at `nnz` and never decreases.
pub(crate) fn validate_indptr<T: Copy + TryInto<i64>>(
    matrix: &'static str,
    indptr: &[T],
    rows: usize,
    nnz: usize,
) -> Result<(), GraphError> {
    if indptr.len() != rows + 1 {
        return Err(GraphError::IndptrLength {
            matrix,
            found: indptr.len(),
            rows,
        });
    }
    let as_i64 = |v: T| v.try_into().unwrap_or(i64::MAX);
    let (first, last) = (as_i64(indptr[0]), as_i64(indptr[rows]));
    if first != 0 || usize::try_from(last).ok() != Some(nnz) {
        return Err(GraphError::IndptrEnds {
            matrix,
            first,
            last,
            nnz,
        });
    }
    for (position, pair) in indptr.windows(2).enumerate() {
        let (previous, value) = (as_i64(pair[0]), as_i64(pair[1]));
        if value < previous {
            return Err(GraphError::IndptrNotMonotone {
                matrix,
                position: position + 1,
                value,
                previous,
            });
        }
    }
    Ok(())
}

/// Checks a feature column index against the dimension and narrows it.
pub(crate) fn feature_column(row: usize, col: i64, dim: usize) -> Result<u32, GraphError> {
    match usize::try_from(col) {
        Ok(c) if c < dim => Ok(c as u32),
        _ => Err(GraphError::FeatureColumnOutOfRange { row, col, dim }),
    }
}

/// Rejects NaN and infinite feature values.
fn check_finite(row: usize, col: usize, value: f32) -> Result<(), GraphError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(GraphError::NonFiniteFeature { row, col, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn csr_round_trips_through_dense() -> TestResult {
        let dense = [0.0, 1.5, 0.0, 2.0, 0.0, 0.0];
        let m = SparseMatrix::from_dense(2, 3, &dense)?;
        assert_eq!(m.nnz(), 2);
        assert_eq!(m.row(0), (&[1u32][..], &[1.5f32][..]));
        assert_eq!(m.row(1), (&[0u32][..], &[2.0f32][..]));
        let again = SparseMatrix::new(
            2,
            3,
            m.indptr().to_vec(),
            m.indices().to_vec(),
            m.values().to_vec(),
        )?;
        assert_eq!(again.to_dense(), dense);
        Ok(())
    }

    #[test]
    fn rejects_bad_csr() {
        let err = SparseMatrix::new(2, 3, vec![0, 1], vec![0], vec![1.0]).unwrap_err();
        assert!(matches!(
            err,
            GraphError::IndptrLength {
                found: 2,
                rows: 2,
                ..
            }
        ));
        let err = SparseMatrix::new(2, 3, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]).unwrap_err();
        assert!(matches!(
            err,
            GraphError::IndptrEnds {
                last: 1,
                nnz: 2,
                ..
            }
        ));
        let err = SparseMatrix::new(2, 3, vec![0, 2, 1, 2], vec![0, 1], vec![1.0, 1.0]);
        assert!(matches!(err, Err(GraphError::IndptrLength { .. })));
        let err =
            SparseMatrix::new(3, 3, vec![0, 2, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap_err();
        assert!(matches!(
            err,
            GraphError::IndptrNotMonotone {
                position: 2,
                value: 1,
                previous: 2,
                ..
            }
        ));
        let err = SparseMatrix::new(1, 3, vec![0, 1], vec![3], vec![1.0]).unwrap_err();
        assert!(matches!(
            err,
            GraphError::FeatureColumnOutOfRange {
                row: 0,
                col: 3,
                dim: 3
            }
        ));
        let err = SparseMatrix::from_dense(1, 2, &[0.0, f32::NAN]).unwrap_err();
        assert_eq!(err.to_string(), "feature (0, 1) is NaN");
        let err = SparseMatrix::from_dense(1, 1, &[f32::INFINITY]).unwrap_err();
        assert_eq!(err.to_string(), "feature (0, 0) is inf");
    }

    #[test]
    fn binary_rows_are_sorted_and_deduplicated() {
        let m = SparseMatrix::binary_from_fn(2, 4, |r, buf| buf.extend([3, 1, 3, r as u32]));
        assert_eq!(m.row(0).0, &[0, 1, 3]);
        assert_eq!(m.row(1).0, &[1, 3]);
        assert!(m.values().iter().all(|&v| v == 1.0));
    }
}
