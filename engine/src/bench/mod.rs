//! `megagraph bench attention`: fused attention against the reference composition on the same
//! adapter, forward + backward, with time, peak device memory and GFLOP/s beside the device's
//! best measured matmul GFLOP/s.
//!
//! Where one `[heads, S, S]` f32 tensor exceeds the adapter's binding limit, the reference runs
//! the same math in chunks that fit: one head at a time, and if `[1, S, S]` is still too large,
//! blocks of query rows of one head against all keys (times add up; the peak is the largest
//! chunk's). The report says which ([`ReferenceMode`]).

mod hops;

pub use hops::{HopsBench, HopsBenchReport, bench_hops_attention, bench_pairs, export_pairs};

use std::ops::Range;

use burn::{
    backend::wgpu::WgpuDevice,
    tensor::{Distribution, Tensor, backend::Backend},
};
use serde::Serialize;

use crate::{
    EngineError,
    device::{
        AdapterSelector, CpuBackend, MemoryProbe, WgpuAutodiff, WgpuBackend, describe_adapter,
        open_wgpu,
    },
    kernels::{
        PairBuckets, biased_attention,
        plan::MAX_FUSED_HEAD_DIM,
        reference,
        tuning::{self, Pass, Selection},
    },
    timing::{best_seconds, best_seconds_within},
};

/// Distance buckets of the benchmark's bias table.
const BUCKETS: usize = 7;

/// Measured seconds after which a case stops repeating (a warm-up and one or two runs).
pub(crate) const BUDGET_SECONDS: f64 = 60.0;

/// Shape of one attention benchmark.
#[derive(Debug, Clone, Copy)]
pub struct AttentionBench {
    /// Sequence length S.
    pub nodes: usize,
    /// Attention heads.
    pub heads: usize,
    /// Head dimension (a multiple of 4).
    pub head_dim: usize,
    /// Whether to run the reference too (else only the fused kernels).
    pub with_reference: bool,
    /// Whether to time every kernel shape that fits the adapter too.
    pub with_variants: bool,
}

/// How the reference was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceMode {
    /// All heads at once, as the model runs it.
    Full,
    /// One head at a time: `[heads, S, S]` exceeds the binding limit, `[1, S, S]` does not.
    PerHead,
    /// One head and a block of query rows at a time: `[1, S, S]` exceeds the binding limit too.
    PerHeadRowBlocks,
}

/// What the benchmark measured. `reference_*` are `None` where the reference was not run or
/// cannot allocate even one row block on this adapter.
#[derive(Debug, Clone, Serialize)]
pub struct AttentionBenchReport {
    /// Sequence length.
    pub nodes: usize,
    /// Heads.
    pub heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Fused forward + backward, best of up to 3 after a warm-up, milliseconds.
    pub fused_ms: f64,
    /// Reference forward + backward (all its chunks), milliseconds.
    pub reference_ms: Option<f64>,
    /// Peak bytes reserved by the fused run's device memory pool.
    pub fused_peak_bytes: u64,
    /// Peak bytes reserved by the reference run's device memory pool.
    pub reference_peak_bytes: Option<u64>,
    /// How the reference was run.
    pub reference_mode: Option<ReferenceMode>,
    /// Query rows per chunk of the reference (S unless it ran in row blocks).
    pub reference_rows_per_chunk: Option<usize>,
    /// Bytes of one `[heads, S, S]` f32 tensor, against the adapter's binding limit.
    pub square_tensor_bytes: u64,
    /// The adapter's largest buffer binding, bytes.
    pub binding_limit_bytes: u64,
    /// Fused GFLOP/s, counting 4·h·S²·d forward and 10·h·S²·d backward.
    pub fused_gflops: f64,
    /// Reference GFLOP/s, counted the same way.
    pub reference_gflops: Option<f64>,
    /// The best of burn's f32 matmuls (512³, 1024³) on the same adapter, GFLOP/s: the bound.
    pub matmul_peak_gflops: f64,
    /// burn's ndarray matmul on the host CPU (best of 512³, 1024³), GFLOP/s, for comparison.
    pub host_matmul_gflops: f64,
    /// The kernels the fused run chose on this adapter for the forward and the backward
    /// (`registers` or `tiled:TEAM:ROWS:TILE`).
    pub chosen_kernels: [String; 2],
    /// Every kernel shape that fits the adapter, timed side by side with both passes pinned to
    /// it (empty unless asked for).
    pub kernel_variants: Vec<KernelVariantTiming>,
}

/// One kernel shape's times in the benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct KernelVariantTiming {
    /// `registers` or `tiled:TEAM:ROWS:TILE`.
    pub kernel: String,
    /// Forward only, best of up to 3 after a warm-up, milliseconds.
    pub forward_ms: f64,
    /// Forward + backward, best of up to 3 after a warm-up, milliseconds.
    pub forward_backward_ms: f64,
}

/// The best GFLOP/s of square f32 matmuls of side 512 and 1024 on `device`.
pub(crate) fn matmul_gflops<B: Backend>(device: &B::Device) -> f64 {
    [512, 1024]
        .into_iter()
        .map(|n| {
            let a = Tensor::<B, 2>::random([n, n], Distribution::Default, device);
            let seconds = best_seconds(|| {
                let _ = a.clone().matmul(a.clone()).slice([0..1, 0..1]).into_data();
            });
            2.0 * (n * n * n) as f64 / seconds / 1e9
        })
        .fold(0.0, f64::max)
}

/// One piece of the work: some heads, some query rows, against all S keys.
#[derive(Debug, Clone)]
struct Chunk {
    heads: usize,
    rows: Range<usize>,
}

/// The chunks of the reference: the whole problem if one `[heads, S, S]` tensor fits `limit`
/// bytes, else one head at a time in blocks of as many query rows as fit.
fn reference_chunks(shape: AttentionBench, limit: u64) -> Option<(ReferenceMode, Vec<Chunk>)> {
    let (s, h) = (shape.nodes, shape.heads);
    let row_bytes = (s * size_of::<f32>()) as u64;
    if h as u64 * s as u64 * row_bytes <= limit {
        return Some((
            ReferenceMode::Full,
            vec![Chunk {
                heads: h,
                rows: 0..s,
            }],
        ));
    }
    let rows = usize::try_from(limit / row_bytes).unwrap_or(s).min(s);
    if rows == 0 {
        return None;
    }
    let mode = if rows == s {
        ReferenceMode::PerHead
    } else {
        ReferenceMode::PerHeadRowBlocks
    };
    let blocks = (0..s)
        .step_by(rows)
        .map(|start| start..(start + rows).min(s));
    let chunks = (0..h)
        .flat_map(|_| blocks.clone().map(|rows| Chunk { heads: 1, rows }))
        .collect();
    Some((mode, chunks))
}

/// The benchmark's bucket of pair `(i, j)`.
fn bucket(seq: usize, i: usize, j: usize) -> u8 {
    ((i * seq + j) % BUCKETS) as u8
}

/// Runs forward + backward over `chunks` with the fused kernels or the reference on `device`
/// and returns (best seconds, peak reserved bytes).
fn run(shape: AttentionBench, chunks: &[Chunk], fused: bool, device: &WgpuDevice) -> (f64, u64) {
    let (s, d) = (shape.nodes, shape.head_dim);
    let random = |heads: usize, rows: usize| {
        Tensor::<WgpuAutodiff, 3>::random(
            [heads, rows, d],
            Distribution::Uniform(-1.0, 1.0),
            device,
        )
        .require_grad()
    };
    let inputs: Vec<_> = chunks
        .iter()
        .map(|c| {
            let buckets: Vec<u8> = c
                .rows
                .clone()
                .flat_map(|i| (0..s).map(move |j| bucket(s, i, j)))
                .collect();
            (
                random(c.heads, c.rows.len()),
                random(c.heads, s),
                random(c.heads, s),
                Tensor::<WgpuAutodiff, 2>::zeros([c.heads, BUCKETS], device).require_grad(),
                PairBuckets::<WgpuAutodiff>::new(&buckets, s, device),
            )
        })
        .collect();
    let seconds = best_seconds_within(BUDGET_SECONDS, || {
        for (q, k, v, table, pairs) in &inputs {
            let (q, k, v, t, p) = (
                q.clone(),
                k.clone(),
                v.clone(),
                table.clone(),
                pairs.clone(),
            );
            let out = if fused {
                biased_attention(q, k, v, t, p)
            } else {
                reference::attention(q, k, v, t, p)
            };
            let [heads, rows, _] = out.dims();
            let grads = out.slice([0..heads, 0..rows, 0..1]).sum().backward();
            let _ = table.grad(&grads).map(|g| g.into_data());
        }
    });
    let peak = WgpuAutodiff::reserved_bytes(device).unwrap_or(0);
    (seconds, peak)
}

/// Times each kernel shape that fits `device`, pinned in turn for both passes (the device's own
/// choice afterwards): the forward alone, then forward + backward over all S keys.
fn time_kernel_variants(shape: AttentionBench, device: &WgpuDevice) -> Vec<KernelVariantTiming> {
    let (s, h, d) = (shape.nodes, shape.heads, shape.head_dim);
    let random = || {
        Tensor::<WgpuAutodiff, 3>::random([h, s, d], Distribution::Uniform(-1.0, 1.0), device)
            .require_grad()
    };
    let (q, k, v) = (random(), random(), random());
    let table = Tensor::<WgpuAutodiff, 2>::zeros([h, BUCKETS], device).require_grad();
    let buckets: Vec<u8> = (0..s)
        .flat_map(|i| (0..s).map(move |j| bucket(s, i, j)))
        .collect();
    let pairs = PairBuckets::<WgpuAutodiff>::new(&buckets, s, device);
    let forward = || {
        biased_attention(
            q.clone(),
            k.clone(),
            v.clone(),
            table.clone(),
            pairs.clone(),
        )
    };
    let timings = tuning::candidates_on(device, d)
        .into_iter()
        .map(|kernel| {
            tuning::select_kernels(device, Selection::Pinned(kernel));
            let forward_seconds = best_seconds_within(BUDGET_SECONDS / 8.0, || {
                let _ = forward().slice([0..1, 0..1, 0..1]).inner().into_data();
            });
            let both_seconds = best_seconds_within(BUDGET_SECONDS / 8.0, || {
                let grads = forward().slice([0..h, 0..s, 0..1]).sum().backward();
                let _ = table.grad(&grads).map(|g| g.into_data());
            });
            KernelVariantTiming {
                kernel: kernel.to_string(),
                forward_ms: forward_seconds * 1e3,
                forward_backward_ms: both_seconds * 1e3,
            }
        })
        .collect();
    tuning::select_kernels(device, Selection::Automatic);
    timings
}

/// Benchmarks fused against reference attention on the adapter `adapter` names (default: the first), each on its
/// own device so that each memory pool's high-water mark is its own.
pub fn bench_attention(
    shape: AttentionBench,
    adapter: Option<&AdapterSelector>,
) -> Result<AttentionBenchReport, EngineError> {
    if shape.nodes == 0
        || shape.heads == 0
        || shape.head_dim == 0
        || !shape.head_dim.is_multiple_of(4)
        || shape.head_dim > MAX_FUSED_HEAD_DIM
    {
        return Err(EngineError::InvalidOptions(format!(
            "--nodes ({}), --heads ({}) must be positive and --head-dim ({}) a positive multiple of 4 up to {MAX_FUSED_HEAD_DIM}",
            shape.nodes, shape.heads, shape.head_dim
        )));
    }
    let described = describe_adapter(adapter)?;
    let limit = described
        .max_storage_buffer_binding_size
        .min(described.max_buffer_size);
    let (s, h) = (shape.nodes, shape.heads);
    let whole = [Chunk {
        heads: h,
        rows: 0..s,
    }];
    let fused_device = open_wgpu(adapter)?;
    let (fused_seconds, fused_peak_bytes) = run(shape, &whole, true, &fused_device);
    let chosen_kernels = [Pass::Forward, Pass::Backward].map(|pass| {
        tuning::last_kernel(&fused_device, pass)
            .map_or_else(|| "none".to_string(), |kernel| kernel.to_string())
    });
    let kernel_variants = if shape.with_variants {
        time_kernel_variants(shape, &fused_device)
    } else {
        Vec::new()
    };
    let plan = reference_chunks(shape, limit).filter(|_| shape.with_reference);
    let reference = match &plan {
        Some((_, chunks)) => {
            let device = open_wgpu(adapter)?;
            Some(run(shape, chunks, false, &device))
        }
        None => None,
    };
    let flops = 14.0 * (h * s * s * shape.head_dim) as f64;
    Ok(AttentionBenchReport {
        nodes: s,
        heads: h,
        head_dim: shape.head_dim,
        fused_ms: fused_seconds * 1e3,
        reference_ms: reference.map(|(seconds, _)| seconds * 1e3),
        fused_peak_bytes,
        reference_peak_bytes: reference.map(|(_, bytes)| bytes),
        reference_mode: plan.as_ref().map(|(mode, _)| *mode),
        reference_rows_per_chunk: plan.as_ref().map(|(_, chunks)| chunks[0].rows.len()),
        square_tensor_bytes: (h * s * s * size_of::<f32>()) as u64,
        binding_limit_bytes: limit,
        fused_gflops: flops / fused_seconds / 1e9,
        reference_gflops: reference.map(|(seconds, _)| flops / seconds / 1e9),
        matmul_peak_gflops: matmul_gflops::<WgpuBackend>(&fused_device),
        host_matmul_gflops: matmul_gflops::<CpuBackend>(&Default::default()),
        chosen_kernels,
        kernel_variants,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: usize, heads: usize) -> AttentionBench {
        AttentionBench {
            nodes,
            heads,
            head_dim: 32,
            with_reference: true,
            with_variants: false,
        }
    }

    const LIMIT: u64 = 128 << 20;

    #[test]
    fn the_reference_runs_whole_when_the_square_tensor_fits() {
        let (mode, chunks) = reference_chunks(shape(2048, 4), LIMIT).expect("fits");
        assert_eq!(mode, ReferenceMode::Full);
        assert_eq!(
            (chunks.len(), chunks[0].heads, chunks[0].rows.clone()),
            (1, 4, 0..2048)
        );
    }

    #[test]
    fn the_reference_runs_per_head_then_in_row_blocks() {
        let (mode, chunks) = reference_chunks(shape(4096, 4), LIMIT).expect("fits per head");
        assert_eq!(mode, ReferenceMode::PerHead);
        assert_eq!(chunks.len(), 4);
        assert!(chunks.iter().all(|c| c.heads == 1 && c.rows == (0..4096)));

        let (mode, chunks) = reference_chunks(shape(8192, 4), LIMIT).expect("fits in blocks");
        assert_eq!(mode, ReferenceMode::PerHeadRowBlocks);
        assert_eq!(chunks.len(), 8, "two blocks of 4096 rows per head");
        assert_eq!(chunks[1].rows, 4096..8192);

        let (_, chunks) = reference_chunks(shape(5000, 1), 4 * 5000 * 2000).expect("blocks");
        let rows: Vec<_> = chunks.iter().map(|c| c.rows.clone()).collect();
        assert_eq!(rows, vec![0..2000, 2000..4000, 4000..5000]);
    }

    #[test]
    fn the_reference_cannot_run_when_one_row_exceeds_the_limit() {
        assert!(reference_chunks(shape(1 << 20, 1), 1 << 20).is_none());
    }
}
