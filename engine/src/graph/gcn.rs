//! The symmetric-normalised adjacency with self-loops used by the message-passing branch.

use super::csr::Csr;

/// Edges of `D^-1/2 (A + I) D^-1/2` in COO form, grouped by destination (each node's
/// self-loop first, then its neighbours in order): `(dst, src, weight)` with
/// `weight = 1 / sqrt((d_dst + 1) (d_src + 1))`, `d` the degree in `adj`.
pub fn gcn_normalized_edges(adj: &Csr) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let n = adj.num_nodes();
    let inv_sqrt: Vec<f64> = adj
        .degrees()
        .iter()
        .map(|&d| 1.0 / f64::from(d + 1).sqrt())
        .collect();
    let len = n + adj.indices().len();
    let (mut dst, mut src, mut weight) = (
        Vec::with_capacity(len),
        Vec::with_capacity(len),
        Vec::with_capacity(len),
    );
    for i in 0..n {
        for j in std::iter::once(i as u32).chain(adj.neighbors(i).iter().copied()) {
            dst.push(i as u32);
            src.push(j);
            weight.push((inv_sqrt[i] * inv_sqrt[j as usize]) as f32);
        }
    }
    (dst, src, weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn star_graph_weights() -> TestResult {
        // Centre 0 with leaves 1, 2, 3, and isolated node 4.
        let adj = Csr::from_edges(5, &[(0, 1), (0, 2), (3, 0)])?;
        let (dst, src, w) = gcn_normalized_edges(&adj);
        assert_eq!(dst, [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4]);
        assert_eq!(src, [0, 1, 2, 3, 1, 0, 2, 0, 3, 0, 4]);
        let leaf_centre = 1.0 / (2.0f32 * 4.0).sqrt();
        let expected = [
            0.25,
            leaf_centre,
            leaf_centre,
            leaf_centre,
            0.5,
            leaf_centre,
            0.5,
            leaf_centre,
            0.5,
            leaf_centre,
            1.0,
        ];
        for (got, want) in w.iter().zip(expected) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
        Ok(())
    }
}
