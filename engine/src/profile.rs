//! Measuring devices into a planner [`ClusterSpec`]: fused-attention, matmul (FFN) and
//! embedding-gather throughput, memory bandwidth, and the host-staged copy link between
//! devices.

use std::{cell::RefCell, collections::HashMap};

use burn::optim::{
    AdamConfig, GradientsAccumulator, GradientsParams, Optimizer, decay::WeightDecayConfig,
};
use burn::tensor::{
    Distribution, Int, Tensor, TensorData,
    backend::{AutodiffBackend, Backend},
};
use megagraph_planner::{
    ClusterSpec, DeviceSpec, Link, ModelSpec, Overhead, ParallelConfig, SCHEMA_VERSION,
    StepOverhead, predict,
};
use serde::{Deserialize, Serialize};

use burn::backend::wgpu::WgpuDevice;

use crate::{
    EngineError,
    device::{
        AdapterSelector, AdapterSummary, WgpuAutodiff, WgpuBackend, declare_adapters,
        describe_adapter, list_adapters, open_wgpu,
    },
    graph::{Graph, SbmParams, induced_subgraph, sbm},
    kernels::{AttentionBackwardBackend, AttentionInputs, BiasedAttentionBackend, PairBuckets},
    model::{GraphTransformer, HostSequence, ModelConfig, ModelOptimizer, SequenceTensors},
    timing::{agreeing_best_seconds_after, best_seconds},
};

mod contention;

pub use contention::{SharedOverhead, shared_overhead};

/// Which devices to measure and what to assume where wgpu reports nothing.
#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// The adapters to measure, one device each (empty: every adapter of the process's list).
    pub adapters: Vec<AdapterSelector>,
    /// Measure this many logical devices on the first adapter (of `adapters`, or of the list)
    /// instead of one device per adapter.
    pub logical_devices: Option<usize>,
    /// Memory of each device in bytes; wgpu does not report it for GPUs.
    pub device_memory: Option<u64>,
    /// Leave the model's overheads unmeasured (timing the model takes minutes in a debug
    /// build): the cluster then records none, and the planner counts arithmetic and transfers
    /// only.
    pub skip_overheads: bool,
    /// The sequence length the cluster will be planned for: the model's overheads are timed
    /// there (clamped to 64–2,048 nodes), so the planner interpolates its overhead line at
    /// the run's own length instead of extrapolating it (`None`: timed at 256 nodes).
    pub seq_len: Option<usize>,
}

/// A throughput measured at one problem size.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SizedRate {
    /// The size that varies: sequence length, matmul rows or gathered rows.
    pub size: usize,
    /// FLOP/s or bytes/s.
    pub rate: f64,
}

/// The highest rate of a series.
fn best(rates: &[SizedRate]) -> f64 {
    rates.iter().map(|r| r.rate).fold(0.0, f64::max)
}

/// What was measured of one device, beside the figures the planner reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceMeasurement {
    /// Device name (adapter name, with the logical index when several share one adapter).
    pub name: String,
    /// Fused attention forward + backward, FLOP/s, per sequence length (the best is the
    /// planner's `flops`).
    pub attention_flops: Vec<SizedRate>,
    /// f32 matmul shaped as in the FFN (rows × 64 × 128), FLOP/s, per row count.
    pub matmul_flops: Vec<SizedRate>,
    /// Embedding-row gathers (64 floats a row), bytes/s, per number of rows gathered.
    pub embedding_bytes_per_second: Vec<SizedRate>,
    /// Elementwise read + write, bytes/s (the planner's `mem_bandwidth`).
    pub mem_bandwidth: f64,
    /// What a transformer layer's forward and backward over one sequence cost beyond their
    /// arithmetic, fixed and per row (the planner's `layer_overhead`; see `overheads`);
    /// `None` when the options skip it.
    pub layer_overhead: Option<Overhead>,
    /// The same for the embedding and head together (the planner's `end_overhead`).
    pub end_overhead: Option<Overhead>,
    /// What an optimizer step costs beyond Adam's arithmetic, per layer and for the ends (the
    /// planner's `step_overhead`; see `step_overhead`).
    #[serde(default)]
    pub step_overhead: Option<StepOverhead>,
    /// The two sequence lengths the layer and end overheads were timed at (`None` when the
    /// options skip them).
    #[serde(default)]
    pub overhead_nodes: Option<[usize; 2]>,
    /// Attention FLOP/s at S = 1024 while every logical device of the adapter runs it at once
    /// (they share the adapter's compute), the mean over them. The planner's `flops` is the
    /// rate of a device alone on the adapter, which it divides among the devices a plan keeps
    /// busy: the lower of the device's best alone and their summed rate at once. `None` for a
    /// lone device.
    pub shared_attention_flops: Option<f64>,
    /// The model timed alone and with every logical device of the adapter running it at once,
    /// at a shard's rows (its contention is the planner's `overhead_contention`). `None` for
    /// a lone device, or when the options skip the overheads.
    #[serde(default)]
    pub shared_overhead: Option<SharedOverhead>,
}

/// Sequence length of the concurrent attention measurement.
const SHARED_SEQ: usize = 1024;

/// Attention FLOP/s of each device while all of them run at once.
fn concurrent_attention_flops(devices: &[WgpuDevice]) -> Vec<f64> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .map(|device| scope.spawn(move || attention_flops(device, SHARED_SEQ)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a profiling thread does not panic"))
            .collect()
    })
}

/// Measures `rate(size)` at each size.
fn series(sizes: &[usize], rate: impl Fn(usize) -> f64) -> Vec<SizedRate> {
    sizes
        .iter()
        .map(|&size| SizedRate {
            size,
            rate: rate(size),
        })
        .collect()
}

/// A measured cluster: the spec for the planner and the measurements behind it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// The spec `megagraph plan` reads.
    pub cluster: ClusterSpec,
    /// Per-device figures.
    pub measurements: Vec<DeviceMeasurement>,
}

/// Fused attention forward + backward: 4·h·S²·d FLOP forward, 10·h·S²·d backward (with
/// the recomputation of the scores).
fn attention_flops(device: &WgpuDevice, seq: usize) -> f64 {
    let (heads, head_dim, buckets) = (4, 16, 7);
    let random = |shape: [usize; 3]| {
        Tensor::<WgpuBackend, 3>::random(shape, Distribution::Uniform(-1.0, 1.0), device)
    };
    let (q, k, v, d_out) = (
        random([heads, seq, head_dim]),
        random([heads, seq, head_dim]),
        random([heads, seq, head_dim]),
        random([heads, seq, head_dim]),
    );
    let table = Tensor::<WgpuBackend, 2>::zeros([heads, buckets], device);
    let pairs = PairBuckets::<WgpuBackend>::new(&vec![1u8; seq * seq], seq, device);
    let inputs = AttentionInputs::from_tensors(q, k, v, table, pairs);
    let seconds = best_seconds(|| {
        let saved = WgpuBackend::biased_attention(inputs.clone());
        let grads = WgpuBackend::biased_attention_backward(
            inputs.clone(),
            saved,
            d_out.clone().into_primitive().tensor(),
        );
        let d_table: Tensor<WgpuBackend, 2> =
            Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(grads.table));
        let _ = d_table.into_data();
    });
    14.0 * (heads * seq * seq * head_dim) as f64 / seconds
}

fn matmul_flops(device: &WgpuDevice, m: usize) -> f64 {
    let (k, n) = (64, 128);
    let a = Tensor::<WgpuBackend, 2>::random([m, k], Distribution::Default, device);
    let b = Tensor::<WgpuBackend, 2>::random([k, n], Distribution::Default, device);
    let seconds = best_seconds(|| {
        let _ = a.clone().matmul(b.clone()).slice([0..1, 0..1]).into_data();
    });
    2.0 * (m * k * n) as f64 / seconds
}

fn embedding_bytes_per_second(device: &WgpuDevice, lookups: usize) -> f64 {
    let (rows, width): (usize, usize) = (4096, 64);
    let table = Tensor::<WgpuBackend, 2>::random([rows, width], Distribution::Default, device);
    let indices: Vec<i32> = (0..lookups).map(|i| ((i * 7919) % rows) as i32).collect();
    let indices =
        Tensor::<WgpuBackend, 1, Int>::from_data(TensorData::new(indices, [lookups]), device);
    let seconds = best_seconds(|| {
        let _ = table
            .clone()
            .select(0, indices.clone())
            .slice([0..1, 0..1])
            .into_data();
    });
    (lookups * width * 4) as f64 / seconds
}

fn mem_bandwidth(device: &WgpuDevice) -> f64 {
    let len = 1 << 22;
    let a = Tensor::<WgpuBackend, 1>::random([len], Distribution::Default, device);
    let seconds = best_seconds(|| {
        let _ = (a.clone() * 2.0).slice(0..1).into_data();
    });
    (2 * len * 4) as f64 / seconds
}

/// Sequence lengths at which [`overheads`] times the model by default, far apart so that the
/// part that grows with the rows stands out of the timing noise. A profile for a known
/// sequence length ([`ProfileOptions::seq_len`]) times the longer one at that length, within
/// [`OVERHEAD_NODES_RANGE`].
const OVERHEAD_NODES: [usize; 2] = [32, 256];

/// The longer overhead length a profile may take from [`ProfileOptions::seq_len`]: at least
/// twice the shorter (so the two stay apart), at most 2,048 rows (longer sequences extrapolate:
/// timing a dense model there takes tens of seconds and S² memory).
const OVERHEAD_NODES_RANGE: std::ops::RangeInclusive<usize> = 2 * OVERHEAD_NODES[0]..=2048;

/// The longer sequence length at which [`overheads`] times the model for `seq_len`.
fn overhead_long_nodes(seq_len: Option<usize>) -> usize {
    seq_len.map_or(OVERHEAD_NODES[1], |len| {
        len.clamp(*OVERHEAD_NODES_RANGE.start(), *OVERHEAD_NODES_RANGE.end())
    })
}

/// Seconds of timed runs after which [`overheads`] takes the best so far at one size even if
/// no two runs agree yet (a debug build's runs are slow, and the profile runs in the tests).
const OVERHEAD_BUDGET_SECONDS: f64 = 2.0;

/// Layer counts at which [`overheads`] times the model: a layer is the difference over
/// their difference.
const OVERHEAD_LAYERS: [usize; 2] = [1, 3];

/// What the engine's model costs on `device` beyond what the planner's cost model predicts
/// of it, per transformer layer and for the embedding and head together (forward and
/// backward over one sequence): kernel dispatch, autodiff bookkeeping and burn's small
/// element-wise kernels, on the host and on the device. Timed on the model itself at the
/// default width (`ModelConfig::new`: hidden 64, 4 heads, dropout on as in training), at 1
/// and 3 layers (a layer is half the difference, the ends the rest of the 1-layer time) and
/// at two sequence lengths, 32 rows and `long` (fixed part and part per row). What the
/// planner predicts of the same runs on a device of `flops` and `mem_bandwidth` alone is
/// taken off, so a one-device prediction at this width and length adds up to the measurement
/// by construction. (The overhead hardly depends on the width from 16 to 128, but a width-8
/// model showed a third of it: models far narrower than the default are predicted slower
/// than they run.)
fn overheads(
    device: &WgpuDevice,
    flops: f64,
    mem_bandwidth: f64,
    long: usize,
) -> (Overhead, Overhead) {
    let short = OVERHEAD_NODES[0];
    let [few, _] = OVERHEAD_LAYERS;
    let graph = sbm(&SbmParams::new(long, 3, 0)).expect("a small SBM graph always generates");
    let config = |layers: usize| default_model(&graph, layers);
    let time = |nodes: &[u32], layers: usize| {
        let config = config(layers);
        let host = HostSequence::new(&graph, nodes.to_vec(), &config);
        let seq = host.to_device::<WgpuAutodiff>(&graph, &config, device);
        let model = GraphTransformer::<WgpuAutodiff>::new(&config, device);
        agreeing_best_seconds_after(
            OVERHEAD_BUDGET_SECONDS,
            || (),
            |()| {
                forward_backward(&model, &seq, device);
            },
        )
    };
    let cluster = alone(flops, mem_bandwidth);
    // (per layer, ends) beyond the prediction at `nodes`.
    let split = |count: usize| {
        let nodes: Vec<u32> = (0..count as u32).collect();
        let (layer, ends) = per_layer_and_ends(|layers| time(&nodes, layers));
        let predicted = predicted_passes(&cluster, &graph, &nodes, &config(few));
        (
            (layer - predicted.layer).max(0.0),
            (ends - predicted.ends).max(0.0),
        )
    };
    let (at_short, at_long) = (split(short), split(long));
    let line = |a: f64, b: f64| {
        let per_row = ((b - a) / (long - short) as f64).max(0.0);
        Overhead {
            fixed: (a - per_row * short as f64).max(0.0),
            per_row,
        }
    };
    (line(at_short.0, at_long.0), line(at_short.1, at_long.1))
}

/// What an optimizer step costs on `device` beyond what the planner predicts of it (Adam's
/// arithmetic and memory traffic): gradient bookkeeping and Adam's small kernels on every
/// parameter tensor, which no forward or backward shows. Timed as the engine's worker runs a
/// step (gradients accumulated, then Adam with weight decay) on the default-width model at 1
/// and 3 layers, after a forward and backward outside the timing; a layer is half the
/// difference, the ends the rest of the 1-layer time.
fn step_overhead(device: &WgpuDevice, flops: f64, mem_bandwidth: f64) -> StepOverhead {
    let nodes: Vec<u32> = (0..OVERHEAD_NODES[0] as u32).collect();
    let graph = sbm(&SbmParams::new(nodes.len(), 3, 0)).expect("a small SBM graph generates");
    let cluster = alone(flops, mem_bandwidth);
    let beyond_prediction = |layers: usize| {
        let config = default_model(&graph, layers);
        let host = HostSequence::new(&graph, nodes.clone(), &config);
        let seq = host.to_device::<WgpuAutodiff>(&graph, &config, device);
        let model = RefCell::new(GraphTransformer::<WgpuAutodiff>::new(&config, device));
        let mut optimizer: ModelOptimizer<WgpuAutodiff> = AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(1e-4)))
            .init();
        let gradients = || forward_backward(&model.borrow(), &seq, device);
        let measured = agreeing_best_seconds_after(OVERHEAD_BUDGET_SECONDS, gradients, |grads| {
            let mut accumulator = GradientsAccumulator::<GraphTransformer<WgpuAutodiff>>::new();
            let stepped = model.borrow().clone();
            accumulator.accumulate(&stepped, GradientsParams::from_grads(grads, &stepped));
            *model.borrow_mut() = optimizer.step(1e-3, stepped, accumulator.grads());
            let _ = WgpuBackend::sync(device);
        });
        let spec = model_spec(&graph, &nodes, &config);
        let predicted = predict(&cluster, &spec, &ParallelConfig::one_device(layers)).devices[0]
            .time
            .optimizer;
        measured - predicted
    };
    let (layer, ends) = per_layer_and_ends(beyond_prediction);
    let per_layer = layer.max(0.0);
    // The ends are the shallower run less its layers at the clamped per-layer figure.
    let ends = ends + OVERHEAD_LAYERS[0] as f64 * (layer - per_layer);
    StepOverhead {
        per_layer,
        ends: ends.max(0.0),
    }
}

/// The gradients of one forward and backward of `model` over `seq`, with `device` synced after
/// them so that a timer around the call sees the work done. For timing only: a failed sync
/// surfaces in the training that follows.
fn forward_backward(
    model: &GraphTransformer<WgpuAutodiff>,
    seq: &SequenceTensors<WgpuAutodiff>,
    device: &WgpuDevice,
) -> <WgpuAutodiff as AutodiffBackend>::Gradients {
    let gradients = model.forward(seq).sum().backward();
    let _ = WgpuBackend::sync(device);
    gradients
}

/// The default model (`ModelConfig::new`) for `graph` with `layers` transformer layers.
fn default_model(graph: &Graph, layers: usize) -> ModelConfig {
    ModelConfig {
        layers,
        ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
    }
}

/// Seconds per layer and for the rest, from `seconds` at the two [`OVERHEAD_LAYERS`] depths: a
/// layer is the difference over the depths' difference, the rest what the shallower run
/// leaves.
fn per_layer_and_ends(mut seconds: impl FnMut(usize) -> f64) -> (f64, f64) {
    let [few, many] = OVERHEAD_LAYERS;
    let (one, more) = (seconds(few), seconds(many));
    let layer = (more - one) / (many - few) as f64;
    (layer, one - few as f64 * layer)
}

/// A cluster of one device with these rates, no overheads and memory to spare: what the
/// planner would predict of a device measured alone, before its overheads are known.
fn alone(flops: f64, mem_bandwidth: f64) -> ClusterSpec {
    ClusterSpec {
        schema_version: SCHEMA_VERSION,
        devices: vec![DeviceSpec::new("measured", f64::MAX, flops, mem_bandwidth)],
        link: Link {
            bandwidth: mem_bandwidth,
            latency: 0.0,
        },
        links: Vec::new(),
    }
}

/// Seconds of one forward and backward of a sequence, as the planner predicts them.
struct PredictedPasses {
    /// Per transformer layer: attention, message passing and FFN.
    layer: f64,
    /// The embedding and head together.
    ends: f64,
}

/// What the planner predicts of one forward and backward of `config` over the sequence of
/// `graph`'s `nodes` on `cluster`'s one device.
fn predicted_passes(
    cluster: &ClusterSpec,
    graph: &Graph,
    nodes: &[u32],
    config: &ModelConfig,
) -> PredictedPasses {
    let model = model_spec(graph, nodes, config);
    let time = predict(cluster, &model, &ParallelConfig::one_device(config.layers)).devices[0].time;
    PredictedPasses {
        layer: (time.attention + time.message_passing + time.ffn) / config.layers as f64,
        ends: time.embedding + time.head,
    }
}

/// The planner's view of `config` over the one sequence of `graph`'s `nodes`.
fn model_spec(graph: &Graph, nodes: &[u32], config: &ModelConfig) -> ModelSpec {
    let edges = nodes.len() + 2 * induced_subgraph(graph.adjacency(), nodes).num_edges();
    ModelSpec {
        edges_per_node: edges as f64 / nodes.len() as f64,
        feature_entries_per_node: graph.feature_entries_per_node(),
        ..config.planner_spec(nodes.len())
    }
}

/// What a measured device shares with the others (the planner divides its rates among the
/// busy devices that name the same): its adapter, for logical devices of one adapter; the
/// host's CPU, for a software adapter beside other software adapters; nothing otherwise.
fn shared_hardware(
    adapter: &AdapterSummary,
    measured: usize,
    software: usize,
    options: &ProfileOptions,
) -> Option<String> {
    if options.logical_devices.is_some() && measured > 1 {
        Some(adapter.id.clone())
    } else if adapter.device_type == "Cpu" && software > 1 {
        Some("host CPU".to_string())
    } else {
        None
    }
}

/// The rates and overheads of `device`, named `name` (the overheads as `options` ask).
fn measure(device: &WgpuDevice, name: &str, options: &ProfileOptions) -> DeviceMeasurement {
    let attention = series(&[256, 1024], |seq| attention_flops(device, seq));
    let bandwidth = mem_bandwidth(device);
    let (layer_overhead, end_overhead, step_overhead, overhead_nodes) = if options.skip_overheads {
        (None, None, None, None)
    } else {
        let flops = best(&attention);
        let long = overhead_long_nodes(options.seq_len);
        let (layer, ends) = overheads(device, flops, bandwidth, long);
        (
            Some(layer),
            Some(ends),
            Some(step_overhead(device, flops, bandwidth)),
            Some([OVERHEAD_NODES[0], long]),
        )
    };
    DeviceMeasurement {
        name: name.to_string(),
        attention_flops: attention,
        matmul_flops: series(&[512, 4096], |rows| matmul_flops(device, rows)),
        embedding_bytes_per_second: series(&[1 << 12, 1 << 16], |n| {
            embedding_bytes_per_second(device, n)
        }),
        mem_bandwidth: bandwidth,
        layer_overhead,
        end_overhead,
        step_overhead,
        overhead_nodes,
        shared_attention_flops: None,
        shared_overhead: None,
    }
}

/// Host-staged copy from `from` to `to`: latency and bandwidth from a small and a large copy.
fn host_staged_link(from: &WgpuDevice, to: &WgpuDevice) -> Link {
    let copy_seconds = |len: usize| {
        let t = Tensor::<WgpuBackend, 1>::random([len], Distribution::Default, from);
        best_seconds(|| {
            let moved = Tensor::<WgpuBackend, 1>::from_data(t.clone().into_data(), to);
            let _ = moved.slice(0..1).into_data();
        })
    };
    let (small, large) = (1usize << 8, 1usize << 20);
    let (t_small, t_large) = (copy_seconds(small), copy_seconds(large));
    let bandwidth = ((large - small) * 4) as f64 / (t_large - t_small).max(1e-9);
    let latency = (t_small - (small * 4) as f64 / bandwidth).max(0.0);
    Link { bandwidth, latency }
}

/// Measures the devices and returns the cluster spec with the measurements behind it.
///
/// Memory: `device_memory` when given; for software (CPU) adapters the host's memory shared
/// evenly; otherwise an error, since wgpu does not report a GPU's memory.
pub fn profile(options: &ProfileOptions) -> Result<Profile, EngineError> {
    let adapters: Vec<AdapterSummary> = if options.adapters.is_empty() {
        list_adapters()
    } else {
        options
            .adapters
            .iter()
            .map(|selector| describe_adapter(Some(selector)))
            .collect::<Result<_, _>>()?
    };
    if adapters.is_empty() {
        return Err(EngineError::NoAdapter);
    }
    let targets: Vec<(&AdapterSummary, String)> = match options.logical_devices {
        Some(0) => {
            return Err(EngineError::InvalidOptions(
                "--devices must be at least 1".into(),
            ));
        }
        Some(_) if adapters.len() > 1 && !options.adapters.is_empty() => {
            return Err(EngineError::InvalidOptions(
                "--devices N measures logical devices of one adapter: name one --adapter".into(),
            ));
        }
        Some(n) => (0..n)
            .map(|i| (&adapters[0], format!("{} #{i}", adapters[0].name)))
            .collect(),
        None => adapters
            .iter()
            .map(|a| (a, format!("{} ({})", a.name, a.backend)))
            .collect(),
    };
    let ids: Vec<String> = targets.iter().map(|(a, _)| a.id.clone()).collect();
    let software = (targets.iter())
        .filter(|(a, _)| a.device_type == "Cpu")
        .count();
    declare_adapters(&ids)?;
    let task = crate::progress::task(format!("profiling {} device(s)", targets.len()));
    let devices = targets
        .iter()
        .map(|(adapter, _)| open_wgpu(Some(&adapter.selector())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut specs = Vec::new();
    let mut measurements = Vec::new();
    let mut measured_of: HashMap<String, DeviceMeasurement> = HashMap::new();
    for (done, ((adapter, name), device)) in targets.iter().zip(&devices).enumerate() {
        task.advance(done as u64, targets.len() as u64);
        let memory = match options.device_memory {
            Some(bytes) => bytes,
            None if adapter.device_type == "Cpu" => {
                crate::memory::total_host_bytes().ok_or_else(|| {
                    EngineError::InvalidOptions(
                        "cannot read /proc/meminfo; pass --device-memory".into(),
                    )
                })? / targets.len() as u64
            }
            None => {
                return Err(EngineError::InvalidOptions(format!(
                    "wgpu does not report the memory of \"{name}\"; pass --device-memory BYTES"
                )));
            }
        };
        // Measured once per adapter: logical devices of one adapter run the same code on the
        // same hardware, and a second measurement would only add noise between them (noise
        // the planner would take for a difference in speed, and balance shares by).
        let measured = match measured_of.get(&adapter.id) {
            Some(first) => DeviceMeasurement {
                name: name.clone(),
                ..DeviceMeasurement::clone(first)
            },
            None => {
                let measured = measure(device, name, options);
                measured_of.insert(adapter.id.clone(), measured.clone());
                measured
            }
        };
        specs.push(DeviceSpec {
            name: name.clone(),
            memory_bytes: memory as f64,
            flops: best(&measured.attention_flops),
            mem_bandwidth: measured.mem_bandwidth,
            process: 0,
            adapter: Some(adapter.id.clone()),
            max_buffer_bytes: Some(
                adapter
                    .max_storage_buffer_binding_size
                    .min(adapter.max_buffer_size) as f64,
            ),
            hardware: shared_hardware(adapter, targets.len(), software, options),
            layer_overhead: measured.layer_overhead,
            end_overhead: measured.end_overhead,
            step_overhead: measured.step_overhead,
            overhead_contention: None,
        });
        measurements.push(measured);
    }
    drop(task);
    if options.logical_devices.is_some_and(|n| n > 1) {
        let _task = crate::progress::task(format!(
            "profiling {} devices running at once",
            devices.len()
        ));
        // Logical devices of one adapter, alike: each takes the mean of what they did at once.
        let at_once: f64 = concurrent_attention_flops(&devices).iter().sum();
        let each = at_once / devices.len() as f64;
        // And the overheads at the rows of a shard of the run over all of them.
        let shard_nodes =
            (overhead_long_nodes(options.seq_len) / devices.len()).max(OVERHEAD_NODES[0]);
        let shared_overhead =
            (!options.skip_overheads).then(|| contention::shared_overhead(&devices, shard_nodes));
        for (spec, measured) in specs.iter_mut().zip(&mut measurements) {
            spec.flops = spec.flops.min(at_once);
            spec.overhead_contention = shared_overhead.map(|s| s.contention());
            measured.shared_attention_flops = Some(each);
            measured.shared_overhead = shared_overhead;
        }
    }
    let link = match devices.as_slice() {
        [first, second, ..] => host_staged_link(first, second),
        _ => Link {
            bandwidth: measurements[0].mem_bandwidth,
            latency: 0.0,
        },
    };
    let cluster = ClusterSpec {
        schema_version: SCHEMA_VERSION,
        devices: specs,
        link,
        links: Vec::new(),
    };
    cluster
        .validate()
        .map_err(|e| EngineError::InvalidOptions(format!("measured cluster is invalid: {e}")))?;
    Ok(Profile {
        cluster,
        measurements,
    })
}

/// Profiles every process's devices under MPI into one cluster spec, on process 0 (`None`
/// on the others): each process measures its own devices as [`profile`] does, the processes
/// measure the link between every two of them (ping-pong), and process 0 lists every
/// process's devices in process order with their `process`, the links between devices of
/// different processes as per-pair links, and its own devices' link as the default. Called by
/// every process.
#[cfg(feature = "mpi")]
pub fn profile_processes(
    runtime: &crate::comm::MpiRuntime,
    options: &ProfileOptions,
) -> Result<Option<Profile>, EngineError> {
    let local = profile(options)?;
    let links = crate::comm::measure_process_links(runtime);
    let bytes = serde_json::to_vec(&local).expect("a profile serializes");
    let parts = runtime.all_gather_bytes(&bytes);
    if runtime.process() != 0 {
        return Ok(None);
    }
    let mut devices = Vec::new();
    let mut measurements = Vec::new();
    for (process, part) in parts.iter().enumerate() {
        let theirs: Profile = serde_json::from_slice(part).map_err(|e| {
            EngineError::InvalidOptions(format!(
                "process {process} sent an unreadable profile: {e}"
            ))
        })?;
        devices.extend(theirs.cluster.devices.into_iter().map(|d| DeviceSpec {
            name: format!("{} (process {process})", d.name),
            process,
            ..d
        }));
        measurements.extend(theirs.measurements);
    }
    let mut pairs = Vec::new();
    for a in 0..devices.len() {
        for b in a + 1..devices.len() {
            let (pa, pb) = (devices[a].process, devices[b].process);
            if let Some(link) = links
                .iter()
                .find(|l| (l.a, l.b) == (pa.min(pb), pa.max(pb)))
            {
                pairs.push(megagraph_planner::PairLink {
                    a,
                    b,
                    bandwidth: link.bandwidth,
                    latency: link.latency,
                });
            }
        }
    }
    let cluster = ClusterSpec {
        schema_version: SCHEMA_VERSION,
        devices,
        link: local.cluster.link,
        links: pairs,
    };
    cluster
        .validate()
        .map_err(|e| EngineError::InvalidOptions(format!("measured cluster is invalid: {e}")))?;
    Ok(Some(Profile {
        cluster,
        measurements,
    }))
}

#[cfg(test)]
mod tests {
    use super::overhead_long_nodes;

    #[test]
    fn overheads_are_timed_at_the_planned_length_within_range() {
        assert_eq!(overhead_long_nodes(None), 256);
        assert_eq!(overhead_long_nodes(Some(512)), 512);
        assert_eq!(
            overhead_long_nodes(Some(8)),
            64,
            "twice the short length at least"
        );
        assert_eq!(overhead_long_nodes(Some(100_000)), 2048);
    }
}
