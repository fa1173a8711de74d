//! The sparse WGSL kernels (sparse-feature projection, embedding gather and their transposed
//! products) on wgpu against the plain-op reference on the CPU backend: the output, the
//! gradient of the dense operand (the feature weight, the embedding table), and the transposed
//! product with its own gradient.
//!
//! Tolerance: per tensor, max |fused − reference| ≤ 1e-4 · max |reference| + 1e-6 (f32).

use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    burn::tensor::{Tensor, TensorData, backend::AutodiffBackend},
    device::{CpuAutodiff, WgpuAutodiff},
    kernels::{CsrIndex, SparseMatmulBackend, SparseMatrix, sparse::reference},
};
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::common::{TestResult, assert_close, gl_device, wgpu_device};

/// A sparse `[rows, cols]` matrix on the host, times dense operands of `width` columns.
struct Case {
    name: &'static str,
    cols: usize,
    width: usize,
    offsets: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
}

impl Case {
    fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Rows of random length from `lengths`, with random columns (duplicates allowed) and values.
    fn random(name: &'static str, cols: usize, width: usize, lengths: &[usize], seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut offsets = vec![0];
        let mut indices = Vec::new();
        for &len in lengths {
            indices.extend((0..len).map(|_| rng.random_range(0..cols as u32)));
            offsets.push(indices.len());
        }
        let values = (0..indices.len())
            .map(|_| rng.random::<f32>() * 2.0 - 1.0)
            .collect();
        Self {
            name,
            cols,
            width,
            offsets,
            indices,
            values,
        }
    }

    /// A one-hot matrix: the lookup of `indices` in a table of `cols` rows.
    fn one_hot(name: &'static str, cols: usize, width: usize, indices: Vec<u32>) -> Self {
        Self {
            name,
            cols,
            width,
            offsets: (0..=indices.len()).collect(),
            values: vec![1.0; indices.len()],
            indices,
        }
    }
}

/// `x · w` and `xᵀ · g` with the gradients of `w` and `g` under the weighted sums
/// `Σ out ⊙ a` and `Σ outᵀ ⊙ b`: out, dW, outᵀ, dG.
fn run<B: AutodiffBackend + SparseMatmulBackend>(
    case: &Case,
    dense: &[Vec<f32>; 4],
    fused: bool,
    device: &B::Device,
) -> [Vec<f32>; 4] {
    let (rows, cols, width) = (case.rows(), case.cols, case.width);
    let x = SparseMatrix::<B>::new(
        &CsrIndex::new(cols, &case.offsets, &case.indices),
        case.values.clone(),
        device,
    );
    let tensor = |v: &Vec<f32>, shape: [usize; 2]| {
        Tensor::<B, 2>::from_data(TensorData::new(v.clone(), shape), device)
    };
    let w = tensor(&dense[0], [cols, width]).require_grad();
    let g = tensor(&dense[1], [rows, width]).require_grad();
    let (out, out_t) = if fused {
        (
            B::sparse_matmul(x.clone(), w.clone()),
            B::sparse_matmul_transposed(x, g.clone()),
        )
    } else {
        (
            reference::sparse_matmul(x.clone(), w.clone()),
            reference::sparse_matmul_transposed(x, g.clone()),
        )
    };
    let loss = (out.clone() * tensor(&dense[2], [rows, width])).sum()
        + (out_t.clone() * tensor(&dense[3], [cols, width])).sum();
    let grads = loss.backward();
    let host = |t: Tensor<B::InnerBackend, 2>| t.into_data().to_vec::<f32>().expect("f32");
    // Without entries the products do not depend on w and g: no gradient is a zero gradient.
    let grad = |t: &Tensor<B, 2>| match t.grad(&grads) {
        Some(grad) => host(grad),
        None => vec![0.0; t.dims().iter().product()],
    };
    [host(out.inner()), grad(&w), host(out_t.inner()), grad(&g)]
}

fn check(case: &Case, seed: u64, device: &WgpuDevice) -> TestResult {
    let mut rng = StdRng::seed_from_u64(seed);
    let (rows, cols, width) = (case.rows(), case.cols, case.width);
    let mut uniform =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect() };
    let dense = [
        uniform(cols * width),
        uniform(rows * width),
        uniform(rows * width),
        uniform(cols * width),
    ];
    let fused = run::<WgpuAutodiff>(case, &dense, true, device);
    let oracle = run::<CpuAutodiff>(case, &dense, false, &Default::default());
    let empty = case.indices.is_empty();
    for (what, (f, r)) in ["X·W", "dW", "Xᵀ·G", "dG"]
        .iter()
        .zip(fused.iter().zip(&oracle))
    {
        assert_close(&format!("{}: {what}", case.name), f, r, !empty)?;
    }
    Ok(())
}

#[test]
fn sparse_kernels_match_the_reference() -> TestResult {
    let Some(device) = wgpu_device("sparse_kernels_match_the_reference")? else {
        return Ok(());
    };
    sparse_kernels_on(&device)
}

#[test]
fn sparse_kernels_match_the_reference_on_gl() -> TestResult {
    let Some(gl) = gl_device("sparse_kernels_match_the_reference_on_gl")? else {
        return Ok(());
    };
    let device = gl.device.clone();
    sparse_kernels_on(&device)
}

/// The sparse products of every case on `device` against the reference.
fn sparse_kernels_on(device: &WgpuDevice) -> TestResult {
    let mut lengths: Vec<usize> = (0..40).map(|r| [0, 1, 3, 7, 0, 12][r % 6]).collect();
    lengths[17] = 600;
    let cases = [
        Case::random(
            "features: empty rows, a long row, 37 columns",
            37,
            13,
            &lengths,
            1,
        ),
        Case::random("features: 1433 columns, width 64", 1433, 64, &[18; 70], 2),
        Case::random("a single entry", 1, 1, &[0, 1, 0], 3),
        Case::random("no entries", 5, 8, &[0, 0, 0, 0], 4),
        Case::one_hot(
            "degree lookup: repeated and unused rows",
            64,
            16,
            (0..300).map(|i| ((i * i) % 41) as u32).collect(),
        ),
    ];
    for (seed, case) in cases.iter().enumerate() {
        check(case, seed as u64, device)?;
    }
    Ok(())
}

#[test]
fn the_product_spans_more_workgroups_than_one_dispatch_dimension() -> TestResult {
    let Some(device) =
        wgpu_device("the_product_spans_more_workgroups_than_one_dispatch_dimension")?
    else {
        return Ok(());
    };
    // 70 000 rows × 64 columns = 70 000 workgroups of 64: more than 65 535 along x.
    let case = Case::one_hot(
        "70 000 lookups",
        10,
        64,
        (0..70_000).map(|i| i % 10).collect(),
    );
    check(&case, 9, &device)
}
