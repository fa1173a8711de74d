//! `megagraph bench attention`: fused attention against the reference composition on the same
//! adapter, forward + backward, with time, peak device memory and GFLOP/s beside the device's
//! measured matmul GFLOP/s.

use burn::{
    backend::wgpu::WgpuDevice,
    tensor::{Distribution, Tensor, backend::Backend},
};
use serde::Serialize;

use crate::{
    EngineError,
    device::{CpuBackend, MemoryProbe, WgpuAutodiff, WgpuBackend, list_adapters, open_wgpu},
    kernels::{PairBuckets, biased_attention, reference},
    timing::best_seconds,
};

/// Shape of one attention benchmark.
#[derive(Debug, Clone, Copy)]
pub struct AttentionBench {
    /// Sequence length S.
    pub nodes: usize,
    /// Attention heads.
    pub heads: usize,
    /// Head dimension (a multiple of 4).
    pub head_dim: usize,
}

/// What the benchmark measured. `reference_*` are `None` where the reference cannot allocate
/// its S×S tensors on this adapter.
#[derive(Debug, Clone, Serialize)]
pub struct AttentionBenchReport {
    /// Sequence length.
    pub nodes: usize,
    /// Heads.
    pub heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Fused forward + backward, best of 3 after a warm-up, milliseconds.
    pub fused_ms: f64,
    /// Reference forward + backward, milliseconds.
    pub reference_ms: Option<f64>,
    /// Peak bytes reserved by the fused run's device memory pool.
    pub fused_peak_bytes: u64,
    /// Peak bytes reserved by the reference run's device memory pool.
    pub reference_peak_bytes: Option<u64>,
    /// Bytes of one `[heads, S, S]` f32 tensor, against the adapter's binding limit.
    pub square_tensor_bytes: u64,
    /// Fused GFLOP/s, counting 4·h·S²·d forward and 10·h·S²·d backward.
    pub fused_gflops: f64,
    /// burn's f32 matmul on the same adapter (512³), GFLOP/s: the bound.
    pub matmul_peak_gflops: f64,
    /// burn's ndarray matmul on the host CPU (512³), GFLOP/s, for comparison.
    pub host_matmul_gflops: f64,
}

fn matmul_gflops<B: Backend>(device: &B::Device) -> f64 {
    let n = 512;
    let a = Tensor::<B, 2>::random([n, n], Distribution::Default, device);
    let seconds = best_seconds(|| {
        let _ = a.clone().matmul(a.clone()).slice([0..1, 0..1]).into_data();
    });
    2.0 * (n * n * n) as f64 / seconds / 1e9
}

/// Runs forward + backward of one attention implementation on a fresh device and returns
/// (best seconds, peak reserved bytes).
fn run(shape: AttentionBench, fused: bool, device: &WgpuDevice) -> (f64, u64) {
    let AttentionBench {
        nodes: s,
        heads: h,
        head_dim: d,
    } = shape;
    let random = || {
        Tensor::<WgpuAutodiff, 3>::random([h, s, d], Distribution::Uniform(-1.0, 1.0), device)
            .require_grad()
    };
    let (q, k, v) = (random(), random(), random());
    let table = Tensor::<WgpuAutodiff, 2>::zeros([h, 7], device).require_grad();
    let buckets: Vec<u8> = (0..s * s).map(|p| (p % 7) as u8).collect();
    let pairs = PairBuckets::<WgpuAutodiff>::new(&buckets, s, device);
    let seconds = best_seconds(|| {
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
        let grads = out.slice([0..h, 0..s, 0..1]).sum().backward();
        let _ = table.grad(&grads).map(|g| g.into_data());
    });
    let peak = WgpuAutodiff::reserved_bytes(device).unwrap_or(0);
    (seconds, peak)
}

/// Benchmarks fused against reference attention on adapter `adapter` (default 0), each on its
/// own device so that each memory pool's high-water mark is its own.
pub fn bench_attention(
    shape: AttentionBench,
    adapter: Option<usize>,
) -> Result<AttentionBenchReport, EngineError> {
    if shape.nodes == 0
        || shape.heads == 0
        || shape.head_dim == 0
        || !shape.head_dim.is_multiple_of(4)
    {
        return Err(EngineError::InvalidOptions(format!(
            "--nodes ({}), --heads ({}) must be positive and --head-dim ({}) a positive multiple of 4",
            shape.nodes, shape.heads, shape.head_dim
        )));
    }
    let index = adapter.unwrap_or(0);
    let limit = list_adapters()
        .get(index)
        .map(|a| a.max_storage_buffer_binding_size.min(a.max_buffer_size))
        .ok_or(EngineError::NoAdapter)?;
    let square_tensor_bytes = (shape.heads * shape.nodes * shape.nodes * 4) as u64;
    let fused_device = open_wgpu(Some(index))?;
    let (fused_seconds, fused_peak_bytes) = run(shape, true, &fused_device);
    let reference = (square_tensor_bytes <= limit).then(|| {
        let device = open_wgpu(Some(index))?;
        Ok::<_, EngineError>(run(shape, false, &device))
    });
    let reference = reference.transpose()?;
    let flops = 14.0 * (shape.heads * shape.nodes * shape.nodes * shape.head_dim) as f64;
    Ok(AttentionBenchReport {
        nodes: shape.nodes,
        heads: shape.heads,
        head_dim: shape.head_dim,
        fused_ms: fused_seconds * 1e3,
        reference_ms: reference.map(|(s, _)| s * 1e3),
        fused_peak_bytes,
        reference_peak_bytes: reference.map(|(_, b)| b),
        square_tensor_bytes,
        fused_gflops: flops / fused_seconds / 1e9,
        matmul_peak_gflops: matmul_gflops::<WgpuBackend>(&fused_device),
        host_matmul_gflops: matmul_gflops::<CpuBackend>(&Default::default()),
    })
}
