//! `megagraph bench attention --scope hops:K`: the hops-scope kernels over the near pairs of an
//! R-MAT graph of S nodes, forward + backward, with time, peak device memory, the pairs, and,
//! where they fit on the adapter, the dense fused kernels over all S² pairs and the plain-op
//! reference over the same near pairs beside them; with `--variants`, every team of the hops
//! kernels the adapter runs.

use std::path::Path;

use burn::{
    backend::wgpu::WgpuDevice,
    tensor::{Distribution, Tensor},
};
use serde::Serialize;

use super::{BUDGET_SECONDS, matmul_gflops};
use crate::{
    EngineError,
    device::{
        AdapterSelector, CpuBackend, MemoryProbe, WgpuAutodiff, WgpuBackend, describe_adapter,
        open_wgpu,
    },
    graph::{NearLimits, NearPairs, RmatParams, rmat},
    kernels::{
        HopsIndex, HopsPattern, PairBuckets, biased_attention,
        hops::reference,
        hops_attention,
        plan::MAX_FUSED_HEAD_DIM,
        tuning::{hops_candidates_on, last_hops_teams, select_hops_team},
    },
    timing::best_seconds_within,
};

/// Distance buckets of the benchmark's bias table: 0..=5 and far, as the model's defaults.
const BUCKETS: usize = 7;

/// Edges generated per node of the benchmark's R-MAT graph (Graph500 quadrants): about 12
/// near pairs per node at one hop once duplicates are merged and hubs capped.
const EDGE_FACTOR: usize = 8;

/// Shape of one hops benchmark.
#[derive(Debug, Clone, Copy)]
pub struct HopsBench {
    /// Nodes S of the sequence: a power of two (the R-MAT graph's size).
    pub nodes: usize,
    /// Attention heads.
    pub heads: usize,
    /// Head dimension (a multiple of 4).
    pub head_dim: usize,
    /// Hops K.
    pub hops: u8,
    /// Most pairs per row.
    pub max_pairs: usize,
    /// Run the dense fused kernels over all S² pairs too, where S is at most this.
    pub dense_up_to: usize,
    /// Run the plain-op reference over the same pairs too (where its gathers fit).
    pub with_reference: bool,
    /// Time every team of the hops kernels that the adapter runs, each in turn.
    pub with_variants: bool,
}

/// Forward + backward of the hops kernels with one team.
#[derive(Debug, Clone, Serialize)]
pub struct HopsTeamTiming {
    /// The team, as `team:SIZE[:subgroups]`.
    pub team: String,
    /// Milliseconds, best of up to 3 after a warm-up.
    pub forward_backward_ms: f64,
}

/// What the hops benchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct HopsBenchReport {
    /// Nodes S.
    pub nodes: usize,
    /// Heads.
    pub heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// The scope, `hops:K:MAX`.
    pub scope: String,
    /// Near pairs in all.
    pub pairs: usize,
    /// Near pairs per node.
    pub pairs_per_node: f64,
    /// Seconds the host took to build the near pairs and their transposed index.
    pub build_seconds: f64,
    /// Heads per launch: all of them unless one `[heads, S, head_dim]` tensor exceeds the
    /// adapter's binding limit, then the heads run in blocks of this many.
    pub heads_per_block: usize,
    /// The teams the hops kernels ran with, forward and backward (`team:1` on software
    /// adapters; chosen by timing on hardware ones from 2^22 pair scores).
    pub chosen_teams: [String; 2],
    /// Hops kernels forward + backward, best of up to 3 after a warm-up, milliseconds.
    pub hops_ms: f64,
    /// Peak bytes reserved by the hops run's device memory pool.
    pub hops_peak_bytes: u64,
    /// Hops GFLOP/s, counting 4·h·pairs·d forward and 10·h·pairs·d backward.
    pub hops_gflops: f64,
    /// Dense fused kernels over all S² pairs, milliseconds (where run).
    pub dense_ms: Option<f64>,
    /// Peak bytes of the dense run's pool.
    pub dense_peak_bytes: Option<u64>,
    /// The plain-op reference over the near pairs, milliseconds (where run).
    pub reference_ms: Option<f64>,
    /// Peak bytes of the reference run's pool.
    pub reference_peak_bytes: Option<u64>,
    /// The best of burn's f32 matmuls on the same adapter, GFLOP/s.
    pub matmul_peak_gflops: f64,
    /// burn's ndarray matmul on the host CPU, GFLOP/s.
    pub host_matmul_gflops: f64,
    /// With `--variants`: every team the adapter runs, forward + backward (empty otherwise).
    pub team_variants: Vec<HopsTeamTiming>,
}

/// The near pairs of the benchmark's graph: R-MAT of `log2 S` levels, its nodes in their own
/// order (one sequence).
pub fn bench_pairs(shape: &HopsBench) -> Result<(HopsIndex, f64), EngineError> {
    if !shape.nodes.is_power_of_two() || shape.nodes < 2 {
        return Err(EngineError::InvalidOptions(format!(
            "--nodes {} under --scope hops: the benchmark's R-MAT graph needs a power of two of at least 2",
            shape.nodes
        )));
    }
    let start = std::time::Instant::now();
    let graph = rmat(&RmatParams {
        features: 1,
        classes: 1,
        words_per_node: 1,
        ..RmatParams::new(shape.nodes.trailing_zeros(), EDGE_FACTOR, 1)
    })?;
    let near = NearPairs::build(
        graph.adjacency(),
        NearLimits {
            hops: shape.hops,
            max_pairs: shape.max_pairs,
            max_distance: (BUCKETS - 2) as u8,
        },
    );
    let index = HopsIndex::new(
        near.rows(),
        (0..near.rows()).map(|i| {
            let (keys, buckets) = near.row(i);
            keys.iter()
                .copied()
                .zip(buckets.iter().copied())
                .collect::<Vec<_>>()
        }),
    );
    Ok((index, start.elapsed().as_secs_f64()))
}

/// Writes the benchmark's pairs as an `.npz` of `offsets` (int64, `[S + 1]`), `keys` (int32,
/// `[pairs]`) and `buckets` (uint8 as int32, `[pairs]`), for a peer implementation to run the
/// same attention.
pub fn export_pairs(index: &HopsIndex, path: &Path) -> Result<(), EngineError> {
    let fail = |e: &dyn std::fmt::Display| {
        EngineError::InvalidOptions(format!("cannot write {}: {e}", path.display()))
    };
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut zip = zip::ZipWriter::new(file);
    let offsets: Vec<i64> = index.row_offsets().iter().map(|&o| i64::from(o)).collect();
    let buckets: Vec<i32> = index.pair_buckets().iter().map(|&b| i32::from(b)).collect();
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("offsets.npy", options)
        .map_err(|e| fail(&e))?;
    write_npy(&mut zip, &offsets).map_err(|e| fail(&e))?;
    for (name, values) in [("keys", index.pair_keys()), ("buckets", &buckets[..])] {
        zip.start_file(format!("{name}.npy"), options)
            .map_err(|e| fail(&e))?;
        write_npy(&mut zip, values).map_err(|e| fail(&e))?;
    }
    zip.finish().map_err(|e| fail(&e))?;
    Ok(())
}

/// Writes `values` as a one-dimensional `.npy` array.
fn write_npy<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
    out: &mut impl std::io::Write,
    values: &[T],
) -> std::io::Result<()> {
    use npyz::WriterBuilder;
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(&[values.len() as u64])
        .writer(out)
        .begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()
}

/// Forward + backward of the hops kernels (or the reference) over `pattern` on `device`:
/// (best seconds, peak reserved bytes). The heads run in blocks of `heads_per_block` (their own
/// tensors, each within the adapter's binding limit: heads are independent, so this is the same
/// attention), which is what lets S = 2^20 run where one `[heads, S, head_dim]` tensor does not
/// fit a binding.
fn run_hops(
    shape: &HopsBench,
    index: &HopsIndex,
    kernels: bool,
    heads_per_block: usize,
    device: &WgpuDevice,
) -> (f64, u64) {
    let (s, d) = (shape.nodes, shape.head_dim);
    let blocks: Vec<_> = (0..shape.heads)
        .step_by(heads_per_block)
        .map(|first| {
            let h = heads_per_block.min(shape.heads - first);
            let random = || {
                Tensor::<WgpuAutodiff, 3>::random(
                    [h, s, d],
                    Distribution::Uniform(-1.0, 1.0),
                    device,
                )
                .require_grad()
            };
            let table = Tensor::<WgpuAutodiff, 2>::zeros([h, BUCKETS], device).require_grad();
            (random(), random(), random(), table)
        })
        .collect();
    let pattern = HopsPattern::<WgpuAutodiff>::new(index, device);
    let seconds = best_seconds_within(BUDGET_SECONDS, || {
        let loss = blocks
            .iter()
            .map(|(q, k, v, t)| {
                let (q, k, v, t) = (q.clone(), k.clone(), v.clone(), t.clone());
                let h = q.dims()[0];
                let out = if kernels {
                    hops_attention(q, k, v, t, &pattern)
                } else {
                    reference::attention(q, k, v, t, &pattern).0
                };
                out.slice([0..h, 0..s, 0..1]).sum()
            })
            .reduce(|a, b| a + b)
            .expect("at least one head");
        let grads = loss.backward();
        for (_, _, _, table) in &blocks {
            let _ = table.grad(&grads).map(|g| g.into_data());
        }
    });
    (seconds, WgpuAutodiff::reserved_bytes(device).unwrap_or(0))
}

/// Forward + backward of the dense fused kernels over all S² pairs (buckets of the benchmark's
/// pattern where near, far elsewhere).
fn run_dense(shape: &HopsBench, index: &HopsIndex, device: &WgpuDevice) -> (f64, u64) {
    let (h, s, d) = (shape.heads, shape.nodes, shape.head_dim);
    let mut buckets = vec![(BUCKETS - 1) as u8; s * s];
    for row in 0..s {
        let span = index.row_offsets()[row] as usize..index.row_offsets()[row + 1] as usize;
        for pair in span {
            buckets[row * s + index.pair_keys()[pair] as usize] = index.pair_buckets()[pair];
        }
    }
    let pairs = PairBuckets::<WgpuAutodiff>::new(&buckets, s, device);
    drop(buckets);
    let random = || {
        Tensor::<WgpuAutodiff, 3>::random([h, s, d], Distribution::Uniform(-1.0, 1.0), device)
            .require_grad()
    };
    let (q, k, v) = (random(), random(), random());
    let table = Tensor::<WgpuAutodiff, 2>::zeros([h, BUCKETS], device).require_grad();
    let seconds = best_seconds_within(BUDGET_SECONDS, || {
        let out = biased_attention(
            q.clone(),
            k.clone(),
            v.clone(),
            table.clone(),
            pairs.clone(),
        );
        let grads = out.slice([0..h, 0..s, 0..1]).sum().backward();
        let _ = table.grad(&grads).map(|g| g.into_data());
    });
    (seconds, WgpuAutodiff::reserved_bytes(device).unwrap_or(0))
}

/// Benchmarks the hops kernels on the adapter `adapter` names (default: the first), each implementation on its
/// own device so that each memory pool's high-water mark is its own; writes the pairs to
/// `export` first when given.
pub fn bench_hops_attention(
    shape: HopsBench,
    adapter: Option<&AdapterSelector>,
    export: Option<&Path>,
) -> Result<HopsBenchReport, EngineError> {
    if shape.heads == 0
        || shape.head_dim == 0
        || !shape.head_dim.is_multiple_of(4)
        || shape.head_dim > MAX_FUSED_HEAD_DIM
    {
        return Err(EngineError::InvalidOptions(format!(
            "--heads ({}) must be positive and --head-dim ({}) a positive multiple of 4 up to {MAX_FUSED_HEAD_DIM}",
            shape.heads, shape.head_dim
        )));
    }
    let described = describe_adapter(adapter)?;
    let limit = described
        .max_storage_buffer_binding_size
        .min(described.max_buffer_size);
    let (index, build_seconds) = bench_pairs(&shape)?;
    if let Some(path) = export {
        export_pairs(&index, path)?;
    }
    let (h, s, d) = (shape.heads, shape.nodes, shape.head_dim);
    let per_head = (4 * s * d) as u64;
    let largest = (4 * index.pairs() as u64).max(per_head);
    if largest > limit {
        return Err(EngineError::InvalidOptions(format!(
            "S = {s} needs a {largest}-byte buffer, beyond the adapter's {limit}-byte binding limit"
        )));
    }
    let heads_per_block = usize::try_from(limit / per_head).unwrap_or(h).clamp(1, h);
    let device = open_wgpu(adapter)?;
    let (hops_seconds, hops_peak_bytes) = run_hops(&shape, &index, true, heads_per_block, &device);
    let dense = (s <= shape.dense_up_to).then(|| {
        let device = open_wgpu(adapter)?;
        Ok::<_, EngineError>(run_dense(&shape, &index, &device))
    });
    let dense = dense.transpose()?;
    // The reference gathers [heads of a block, pairs, head_dim] floats per operand.
    let reference_fits = (4 * heads_per_block * index.pairs() * d) as u64 <= limit;
    let reference = (shape.with_reference && reference_fits).then(|| {
        let device = open_wgpu(adapter)?;
        Ok::<_, EngineError>(run_hops(&shape, &index, false, heads_per_block, &device))
    });
    let reference = reference.transpose()?;
    let team_variants = if shape.with_variants {
        let device = open_wgpu(adapter)?;
        hops_candidates_on(&device)
            .into_iter()
            .map(|team| {
                select_hops_team(&device, team);
                let (seconds, _) = run_hops(&shape, &index, true, heads_per_block, &device);
                HopsTeamTiming {
                    team: team.to_string(),
                    forward_backward_ms: seconds * 1e3,
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let flops = 14.0 * (h * index.pairs() * d) as f64;
    Ok(HopsBenchReport {
        nodes: s,
        heads: h,
        head_dim: d,
        scope: format!("hops:{}:{}", shape.hops, shape.max_pairs),
        pairs: index.pairs(),
        pairs_per_node: index.pairs() as f64 / s as f64,
        build_seconds,
        heads_per_block,
        chosen_teams: last_hops_teams(&device)
            .map(|team| team.map_or_else(|| "none".to_string(), |t| t.to_string())),
        hops_ms: hops_seconds * 1e3,
        hops_peak_bytes,
        hops_gflops: flops / hops_seconds / 1e9,
        dense_ms: dense.map(|(seconds, _)| seconds * 1e3),
        dense_peak_bytes: dense.map(|(_, bytes)| bytes),
        reference_ms: reference.map(|(seconds, _)| seconds * 1e3),
        reference_peak_bytes: reference.map(|(_, bytes)| bytes),
        matmul_peak_gflops: matmul_gflops::<WgpuBackend>(&device),
        host_matmul_gflops: matmul_gflops::<CpuBackend>(&Default::default()),
        team_variants,
    })
}
