//! The cost model: predicted time of one training step and peak memory per device, term by
//! term. The modelling conventions are documented on [`predict`].

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::balance::Affine;
use crate::cluster::{Link, Overhead};
use crate::grid::{Cell, Grid};
use crate::{AttentionScope, ClusterSpec, Degrees, ModelSpec, ParallelConfig, PlannerError};

/// Forward plus backward, the backward counted as twice the forward.
pub(crate) const PASSES: f64 = 3.0;
/// Adam FLOPs per parameter (moments, bias correction, update).
const ADAM_FLOPS: f64 = 12.0;
/// Adam memory traffic per parameter, in elements: read parameter, gradient and two
/// moments, write parameter and two moments.
const ADAM_TRAFFIC: f64 = 7.0;
/// Bytes per element of the attention log-sum-exp (always fp32).
const LSE_BYTES: f64 = 4.0;
/// Bytes of one value of the messages the engine sends (host f32 buffers).
const F32_BYTES: f64 = 4.0;
/// Bytes per node of the degree index (int32).
const DEGREE_INDEX_BYTES: f64 = 4.0;
/// Bytes per entry of a sparse matrix on a device: its row, column and place in the column
/// order (int32) and its value (f32).
const SPARSE_ENTRY_BYTES: f64 = 16.0;
/// Bytes per row of a sparse matrix on a device: its row offset (int32).
const SPARSE_OFFSET_BYTES: f64 = 4.0;
/// Bytes per near pair of the hops scope's index on a device: key, row and transposed row as
/// int32, two bucket bytes.
const PAIR_INDEX_BYTES: f64 = 14.0;
/// Bytes of a pair in the largest array of the near-pair index: its key (one u32).
const PAIR_KEY_BYTES: f64 = 4.0;
/// Steps of the engine's personalised-PageRank propagation of the logits (APPNP).
const PROPAGATION_STEPS: f64 = 10.0;
/// Relative slack when comparing a predicted peak with a device's memory, so that shares
/// balanced exactly to a memory bound are not rejected for rounding.
pub const MEMORY_TOLERANCE: f64 = 1e-9;

/// Time terms of one device's training step, seconds; they sum to its step time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeBreakdown {
    /// Attention sublayers: Q/K/V and output projections, the scores and weighted sums of the
    /// scope's pairs (`S_local × S` in the full scope, the near pairs and global tokens in the
    /// hops scope) with the spatial bias, layer norm and residual traffic.
    pub attention: f64,
    /// Message-passing branches: the normalised adjacency times the key table's states, and
    /// its linear layer.
    #[serde(default)]
    pub message_passing: f64,
    /// FFN sublayers.
    pub ffn: f64,
    /// Embedding layers (first stage): feature projection, degree embedding.
    pub embedding: f64,
    /// Final layer norm and classification head (last stage).
    pub head: f64,
    /// Context parallelism's exchanges: the normalised states of the whole sequence around the
    /// ring (full scope) or the halo rows point to point (hops scope), forward, and their
    /// gradients back in the backward; per layer and per logit-propagation step.
    pub ring_exchange: f64,
    /// Activations and their gradients to and from the neighbouring pipeline stages.
    pub stage_transfer: f64,
    /// What the device's layers, embedding and head cost beyond their FLOPs and memory
    /// traffic: its profiled overheads at its rows (kernel dispatch, autodiff bookkeeping,
    /// small element-wise kernels), forward and backward.
    #[serde(default)]
    pub overhead: f64,
    /// 1F1B fill and drain, and waiting for slower devices.
    pub pipeline_wait: f64,
    /// Gradient all-reduce over the stage's `dp · cp` devices.
    pub grad_allreduce: f64,
    /// Adam step on the stage's parameters.
    pub optimizer: f64,
}

impl TimeBreakdown {
    /// Sum of the terms.
    pub fn total(&self) -> f64 {
        self.attention
            + self.message_passing
            + self.ffn
            + self.embedding
            + self.head
            + self.ring_exchange
            + self.stage_transfer
            + self.overhead
            + self.pipeline_wait
            + self.grad_allreduce
            + self.optimizer
    }

    /// Every term multiplied by `factor`.
    fn scaled(&self, factor: f64) -> Self {
        TimeBreakdown {
            attention: self.attention * factor,
            message_passing: self.message_passing * factor,
            ffn: self.ffn * factor,
            embedding: self.embedding * factor,
            head: self.head * factor,
            ring_exchange: self.ring_exchange * factor,
            stage_transfer: self.stage_transfer * factor,
            overhead: self.overhead * factor,
            pipeline_wait: self.pipeline_wait * factor,
            grad_allreduce: self.grad_allreduce * factor,
            optimizer: self.optimizer * factor,
        }
    }
}

/// Memory terms of one device at its peak, bytes; they sum to its peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryBreakdown {
    /// The stage's parameters.
    pub parameters: f64,
    /// Their gradients.
    pub gradients: f64,
    /// Adam's two moments.
    pub optimizer_state: f64,
    /// Activations saved for the backward of the in-flight micro-batches.
    pub activations: f64,
    /// The attention pairs of the device's row block per in-flight sequence: one-byte distance
    /// buckets, `S_local × S` (full scope), or the near-pair index, 14 bytes a pair (hops).
    pub distance_buckets: f64,
    /// The sparse matrices of the device's row block per in-flight sequence: the
    /// message-passing matrix, and on the first stage the input features and one-hot degrees
    /// (where their non-zeros are measured).
    #[serde(default)]
    pub sequence_matrices: f64,
    /// The pairs and sparse matrices of the sequences the device's sequence cache holds beyond
    /// those in flight: every sequence of the graph it has uploaded, while its node share of
    /// [`SEQUENCE_CACHE_BYTES`](crate::SEQUENCE_CACHE_BYTES) has room.
    #[serde(default)]
    pub cached_sequences: f64,
}

impl MemoryBreakdown {
    /// Sum of the terms.
    pub fn total(&self) -> f64 {
        self.parameters
            + self.gradients
            + self.optimizer_state
            + self.activations
            + self.distance_buckets
            + self.sequence_matrices
            + self.cached_sequences
    }
}

/// Predicted figures of one cluster device (all zero when the configuration leaves it unused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicePrediction {
    /// The device's name.
    pub name: String,
    /// The device's memory, bytes.
    pub memory_bytes: f64,
    /// When the device finishes the step, seconds.
    pub step_seconds: f64,
    /// Predicted peak memory, bytes (rounded up).
    pub peak_bytes: u64,
    /// Step time, term by term.
    pub time: TimeBreakdown,
    /// Peak memory, term by term.
    pub memory: MemoryBreakdown,
    /// Payload bytes the device sends per step: context-parallel exchanges, pipeline
    /// transfers and gradient sums (what the engine counts as its training traffic).
    #[serde(default)]
    pub sent_bytes: f64,
    /// The largest single buffer the device allocates, bytes: a row block of distance buckets
    /// or pair keys, of input features or FFN activations, or the key table's K.
    #[serde(default)]
    pub largest_buffer_bytes: f64,
    /// The largest buffer the device can bind, bytes (from the cluster spec; absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_buffer_bytes: Option<f64>,
}

impl DevicePrediction {
    /// Whether the predicted peak fits the device's memory, and its largest buffer the
    /// device's buffer limit.
    pub fn fits(&self) -> bool {
        self.memory.total() <= self.memory_bytes * (1.0 + MEMORY_TOLERANCE)
            && self
                .max_buffer_bytes
                .is_none_or(|limit| self.largest_buffer_bytes <= limit * (1.0 + MEMORY_TOLERANCE))
    }
}

/// Predicted figures of a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The step time: the slowest device's.
    pub step_seconds: f64,
    /// Per cluster device, indexed like `ClusterSpec::devices`.
    pub devices: Vec<DevicePrediction>,
}

impl Prediction {
    /// Whether every device's peak fits its memory.
    pub fn fits(&self) -> bool {
        self.devices.iter().all(DevicePrediction::fits)
    }

    /// Peak bytes per device.
    pub fn peak_bytes(&self) -> Vec<u64> {
        self.devices.iter().map(|d| d.peak_bytes).collect()
    }

    /// The largest peak over the devices.
    pub fn max_peak_bytes(&self) -> u64 {
        self.devices.iter().map(|d| d.peak_bytes).max().unwrap_or(0)
    }

    /// The device with the largest memory-to-capacity ratio, and the ratio.
    pub(crate) fn worst_overflow(&self) -> (usize, f64) {
        self.devices
            .iter()
            .map(|d| d.memory.total() / d.memory_bytes)
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |worst, (i, r)| {
                if r > worst.1 { (i, r) } else { worst }
            })
    }

    /// The error saying this (least overflowing) configuration does not fit.
    pub(crate) fn nothing_fits(&self) -> PlannerError {
        let (device, ratio) = self.worst_overflow();
        let over_limit = self.devices.iter().enumerate().find(|(_, d)| {
            d.max_buffer_bytes
                .is_some_and(|limit| d.largest_buffer_bytes > limit * (1.0 + MEMORY_TOLERANCE))
        });
        if let (true, Some((device, d))) = (ratio <= 1.0 + MEMORY_TOLERANCE, over_limit) {
            return PlannerError::BufferTooLarge {
                needed_bytes: d.largest_buffer_bytes,
                device,
                name: d.name.clone(),
                limit_bytes: d.max_buffer_bytes.unwrap_or_default(),
            };
        }
        let worst = &self.devices[device];
        PlannerError::NothingFits {
            needed_bytes: worst.memory.total(),
            device,
            name: worst.name.clone(),
            capacity_bytes: worst.memory_bytes,
        }
    }
}

/// Predicts per-device step time, peak memory and their breakdowns.
///
/// Conventions (`S` nodes per sequence, `S_local = share · S` on a device):
/// - A matmul `m×k · k×n` is `2·m·n·k` FLOPs forward; a backward pass is twice its forward,
///   so every compute and ring term is charged `PASSES = 3` times its forward.
/// - A compute term takes `flops / device.flops + bytes / device.mem_bandwidth`: the sum,
///   not the roofline max (compute and memory traffic are assumed not to overlap). The sum
///   keeps every term affine in the device's node share, which makes share balancing exact.
/// - A message takes `latency + bytes / bandwidth` on the per-pair link if given, else the
///   default link. Communication does not overlap compute.
/// - Attention is a fused FlashAttention-style kernel: it saves `O(S_local · hidden)`
///   activations and the per-row log-sum-exp, never an `S × S` matrix; the spatial bias is
///   read from one-byte distance buckets (`S_local × S` bytes per sequence).
/// - 1F1B: the step is `(m + pp − 1) · t_max + max_i post_i`, where `t_max` is the slowest
///   device's forward + backward of one micro-batch and `post_i` its gradient all-reduce and
///   optimizer step; stage `s` keeps `min(m, pp − s)` micro-batches of activations.
/// - Memory: parameters, gradients (1×), Adam state (2×), saved activations of in-flight
///   micro-batches, distance buckets and sparse matrices (message passing; features and
///   degrees on the first stage) of in-flight sequences, and those of the sequences the
///   device's cache holds. Transient workspaces are not modelled.
/// - Gradient all-reduce over the stage's `dp · cp` devices is the engine's ring
///   reduce-scatter and all-gather: each device sends `2 (k − 1)` messages of `1/k` of the
///   gradients, at the slowest link between any two members; the optimizer is memory- and
///   FLOP-bound Adam.
/// - Devices that name the same `hardware` divide its rates: each of the `k` a configuration
///   uses computes at `1/k` of its measured FLOP/s and memory bandwidth.
///
/// # Panics
/// If `config` does not pass [`ParallelConfig::validate`] for this cluster and model.
pub fn predict(cluster: &ClusterSpec, model: &ModelSpec, config: &ParallelConfig) -> Prediction {
    let cost = CostModel::new(cluster, model);
    let pp = config.degrees.pp;
    let micro = Micro::of(config);
    struct Busy {
        device: usize,
        micro_batch: TimeBreakdown,
        post: (f64, f64),
        memory: MemoryBreakdown,
        sent_bytes: f64,
        largest_buffer: f64,
    }
    let busy: Vec<Busy> = cost
        .places(config)
        .into_iter()
        .map(|place| {
            let share = config.node_shares[place.cell.device];
            Busy {
                device: place.cell.device,
                micro_batch: cost.micro_batch_time(&place, share),
                post: cost.post_time(&place),
                memory: cost.memory(&place, share),
                largest_buffer: cost
                    .buffer_terms(&place)
                    .iter()
                    .map(|term| term.at(share))
                    .fold(0.0, f64::max),
                sent_bytes: micro.count as f64 * cost.micro_batch_sent_bytes(&place, share)
                    + cost.post_sent_bytes(&place),
            }
        })
        .collect();
    let slowest = busy
        .iter()
        .map(|b| b.micro_batch.total())
        .fold(0.0, f64::max);
    let m = micro.count as f64;
    let pipeline = (m + pp as f64 - 1.0) * slowest;
    let mut devices: Vec<DevicePrediction> = cluster
        .devices
        .iter()
        .map(|d| DevicePrediction {
            name: d.name.clone(),
            memory_bytes: d.memory_bytes,
            step_seconds: 0.0,
            peak_bytes: 0,
            time: TimeBreakdown::default(),
            memory: MemoryBreakdown::default(),
            sent_bytes: 0.0,
            largest_buffer_bytes: 0.0,
            max_buffer_bytes: d.max_buffer_bytes,
        })
        .collect();
    for b in busy {
        let (grad_allreduce, optimizer) = b.post;
        let time = TimeBreakdown {
            pipeline_wait: pipeline - m * b.micro_batch.total(),
            grad_allreduce,
            optimizer,
            ..b.micro_batch.scaled(m)
        };
        let device = &mut devices[b.device];
        device.step_seconds = time.total();
        device.peak_bytes = b.memory.total().ceil() as u64;
        device.time = time;
        device.memory = b.memory;
        device.sent_bytes = b.sent_bytes;
        device.largest_buffer_bytes = b.largest_buffer;
    }
    let step_seconds = devices.iter().map(|d| d.step_seconds).fold(0.0, f64::max);
    Prediction {
        step_seconds,
        devices,
    }
}

/// A replica's micro-batches in a step: one sequence each, as the engine runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Micro {
    /// Micro-batches (sequences) per replica per step.
    pub count: usize,
}

impl Micro {
    /// The micro-batching of a configuration.
    pub fn of(config: &ParallelConfig) -> Self {
        Micro {
            count: config.micro_batches,
        }
    }
}

/// Bandwidth and latency of a collective over a group: the slowest link between any two
/// members bounds every step of a ring over them, whatever its order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GroupLink {
    pub members: usize,
    pub bandwidth: f64,
    pub latency: f64,
}

impl GroupLink {
    /// The collective link of `members` devices whose pairs are linked by `links` (each
    /// pair's link at least once).
    pub fn over(members: usize, links: impl Iterator<Item = Link>) -> Self {
        links.fold(
            GroupLink {
                members,
                bandwidth: f64::INFINITY,
                latency: 0.0,
            },
            |group, link| GroupLink {
                bandwidth: group.bandwidth.min(link.bandwidth),
                latency: group.latency.max(link.latency),
                ..group
            },
        )
    }
}

/// One device's place in a configuration, as far as its own costs depend on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub cell: Cell,
    pub degrees: Degrees,
    /// Transformer layers of its stage.
    pub layers: usize,
    pub micro: Micro,
    /// The gradient all-reduce group of its stage.
    pub reduce: GroupLink,
    /// Devices of the configuration that share the device's hardware, itself included: it
    /// gets this fraction of its measured rates (1 for a device that shares nothing).
    pub sharing: f64,
}

impl Place {
    /// Whether the device runs the embedding layers.
    fn first_stage(&self) -> bool {
        self.cell.stage == 0
    }

    /// Whether the device runs the classification head.
    fn last_stage(&self) -> bool {
        self.cell.stage + 1 == self.degrees.pp
    }

    /// How many of the embedding and the head the device runs: 0, 1 or 2.
    fn ends(&self) -> f64 {
        f64::from(u8::from(self.first_stage()) + u8::from(self.last_stage()))
    }
}

/// A cluster and model with the link between every pair looked up once.
pub(crate) struct CostModel<'a> {
    pub cluster: &'a ClusterSpec,
    pub model: &'a ModelSpec,
    links: Vec<Link>,
    /// Each device's hardware group: the first device naming the same `hardware`, or itself.
    hardware: Vec<usize>,
}

impl<'a> CostModel<'a> {
    pub fn new(cluster: &'a ClusterSpec, model: &'a ModelSpec) -> Self {
        let devices = &cluster.devices;
        let hardware = (0..devices.len())
            .map(|d| {
                (devices[d].hardware.as_ref())
                    .and_then(|h| devices.iter().position(|x| x.hardware.as_ref() == Some(h)))
                    .unwrap_or(d)
            })
            .collect();
        CostModel {
            cluster,
            model,
            links: cluster.link_matrix(),
            hardware,
        }
    }

    /// For every device of the cluster, the divisor of its rates under `grid` with `micro`:
    /// itself (used or not), plus every other device of the grid on its hardware, weighted
    /// by how much of the time both compute at once. Devices of one stage run in lockstep
    /// (weight 1); devices of different stages overlap only while the 1F1B pipeline is full,
    /// `(m − 1) / (m + pp − 1)` of the step (none with one micro-batch, when the stages take
    /// turns).
    pub fn sharing(&self, grid: &Grid, micro: Micro) -> Vec<f64> {
        let Degrees { dp, pp, cp } = grid.degrees;
        let mut stage_of = vec![None; self.hardware.len()];
        let mut busy = vec![0usize; self.hardware.len()];
        let mut busy_in_stage = FxHashMap::<(usize, usize), usize>::default();
        for r in 0..dp {
            for s in 0..pp {
                for c in 0..cp {
                    let d = grid.at(r, s, c);
                    stage_of[d] = Some(s);
                    busy[self.hardware[d]] += 1;
                    *busy_in_stage.entry((self.hardware[d], s)).or_default() += 1;
                }
            }
        }
        let m = micro.count as f64;
        let overlap = (m - 1.0) / (m + pp as f64 - 1.0);
        (0..self.hardware.len())
            .map(|d| {
                let all = busy[self.hardware[d]] as f64;
                match stage_of[d] {
                    Some(s) => {
                        let lockstep = busy_in_stage[&(self.hardware[d], s)] as f64;
                        lockstep + overlap * (all - lockstep)
                    }
                    None => 1.0 + all,
                }
            })
            .collect()
    }

    /// Device `device`'s FLOP/s and memory bandwidth with `sharing` devices on its hardware.
    fn rates(&self, device: usize, sharing: f64) -> (f64, f64) {
        let spec = &self.cluster.devices[device];
        (spec.flops / sharing, spec.mem_bandwidth / sharing)
    }

    /// The place of every device `config` uses, stage by stage, then replica by replica,
    /// then shard by shard.
    pub fn places(&self, config: &ParallelConfig) -> Vec<Place> {
        let grid = Grid::of(config);
        let Degrees { dp, cp, .. } = config.degrees;
        let micro = Micro::of(config);
        let sharing = self.sharing(&grid, micro);
        let mut places = Vec::with_capacity(config.degrees.devices());
        for (s, stage) in config.stages.iter().enumerate() {
            let reduce = self.group_link(&grid.stage_devices(s));
            for r in 0..dp {
                for c in 0..cp {
                    let cell = grid.cell(r, s, c);
                    places.push(Place {
                        cell,
                        degrees: config.degrees,
                        layers: stage.layer_count(),
                        micro,
                        reduce,
                        sharing: sharing[cell.device],
                    });
                }
            }
        }
        places
    }

    /// The link between devices `a` and `b`.
    pub fn link(&self, a: usize, b: usize) -> Link {
        self.links[a * self.cluster.devices.len() + b]
    }

    /// The collective link of a group of devices.
    pub fn group_link(&self, devices: &[usize]) -> GroupLink {
        let pairs = devices
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| devices[i + 1..].iter().map(move |&b| (a, b)));
        GroupLink::over(devices.len(), pairs.map(|(a, b)| self.link(a, b)))
    }

    /// Parameters held by a device of the place's stage.
    fn stage_params(&self, place: &Place) -> f64 {
        let model = self.model;
        let mut params = place.layers as f64 * model.layer_params();
        if place.first_stage() {
            params += model.embedding_params();
        }
        if place.last_stage() {
            params += model.head_params();
        }
        params
    }

    /// Node rows of the key table a device with node share `share` of a `cp`-way split reads
    /// per layer: the whole sequence (full scope), or its rows and its halo (hops scope).
    fn key_rows(&self, cp: usize, share: f64) -> f64 {
        let model = self.model;
        let seq = model.seq_len as f64;
        match model.scope {
            AttentionScope::Full => seq,
            AttentionScope::Hops { .. } => share * seq + model.halo_fraction(cp) * seq,
        }
    }

    /// Rows of other shards a device receives per exchange (and, in the backward, sends back
    /// its gradient): every other shard's (full scope's all-gather) or its halo (hops scope).
    fn exchanged_rows(&self, place: &Place, share: f64) -> f64 {
        if place.degrees.cp <= 1 {
            return 0.0;
        }
        let seq = self.model.seq_len as f64;
        self.key_rows(place.degrees.cp, share) - share * seq
    }

    /// Messages one exchange takes on a device: `cp − 1` ring steps (full scope), or one
    /// from each other shard (hops scope); the backward as many.
    fn exchange_messages(&self, place: &Place) -> f64 {
        (place.degrees.cp - 1) as f64
    }

    /// Exchanges per sequence: one per layer (of hidden width), and under the last stage one
    /// per logit-propagation step (of class width); and their width summed in hidden widths.
    fn exchanges(&self, place: &Place) -> (f64, f64) {
        let model = self.model;
        let (mut count, mut widths) = (place.layers as f64, place.layers as f64);
        if place.last_stage() {
            count += PROPAGATION_STEPS;
            widths += PROPAGATION_STEPS * model.classes as f64 / model.hidden as f64;
        }
        (count, widths)
    }

    /// Forward and backward of one micro-batch on the place's device with node share
    /// `share`; the pipeline, all-reduce and optimizer terms are zero.
    pub fn micro_batch_time(&self, place: &Place, share: f64) -> TimeBreakdown {
        let model = self.model;
        let device = &self.cluster.devices[place.cell.device];
        let (rate, bandwidth) = self.rates(place.cell.device, place.sharing);
        let run = |flops: f64, bytes: f64| PASSES * (flops / rate + bytes / bandwidth);
        let seq = model.seq_len as f64;
        let rows = share * seq;
        let b = model.bytes_per_element as f64;
        let h = model.hidden as f64;
        let f = model.ffn_hidden as f64;
        let layers = place.layers as f64;
        let tokens = model.global_tokens as f64;
        let keys = self.key_rows(place.degrees.cp, share);
        let pairs = model.pairs_per_row();
        // Q and output projections of the rows and tokens, K and V of the key table (the
        // engine projects every key row on every shard), scores and weighted sums of the
        // pairs, and the tokens' attention over the device's rows.
        let attention_flops = 4.0 * h * h * (rows + tokens)
            + 4.0 * h * h * (keys + tokens)
            + 4.0 * h * rows * pairs
            + 4.0 * h * tokens * rows;
        let pair_bytes = match model.scope {
            AttentionScope::Full => rows * seq,
            // A pair reads its key's K and V rows and its index entries.
            AttentionScope::Hops { .. } => rows * pairs * (2.0 * h * b + PAIR_INDEX_BYTES),
        };
        let attention_bytes =
            b * 4.0 * h * h + b * (rows + tokens) * 8.0 * h + b * 2.0 * keys * h + pair_bytes;
        let edges = model.edges_per_node.max(1.0);
        let message_flops = rows * (2.0 * h * h + 2.0 * edges * h);
        let message_bytes = b * h * h + rows * (edges * (h * b + 8.0) + 2.0 * h * b);
        let ffn_flops = (rows + tokens) * 4.0 * h * f;
        let ffn_bytes = b * 2.0 * h * f + b * (rows + tokens) * (4.0 * h + 2.0 * f);
        let embedding = if place.first_stage() {
            let fe = model.features as f64;
            run(rows * 2.0 * fe * h, b * fe * h + b * rows * (fe + 3.0 * h))
        } else {
            0.0
        };
        let head = if place.last_stage() {
            let c = model.classes as f64;
            let propagation = PROPAGATION_STEPS * 2.0 * edges * c;
            run(
                rows * (2.0 * h * c + propagation),
                b * h * c + b * rows * (2.0 * h + 2.0 * c),
            )
        } else {
            0.0
        };
        let ring_exchange = place.cell.ring_from.map_or(0.0, |from| {
            let link = self.link(from, place.cell.device);
            let (count, widths) = self.exchanges(place);
            let bytes = widths * self.exchanged_rows(place, share) * h * b;
            let messages = count * self.exchange_messages(place);
            // Forward exchange and backward return, per sequence; and the barrier that keeps
            // the shards of a group in step before each backward (an all-gather of nothing
            // around the ring).
            let barrier = (place.degrees.cp - 1) as f64 * link.latency;
            2.0 * (messages * link.latency + bytes / link.bandwidth) + barrier
        });
        let stage_transfer = [place.cell.prev, place.cell.next]
            .into_iter()
            .flatten()
            .map(|other| {
                let link = self.link(other, place.cell.device);
                2.0 * (link.latency + (rows + tokens) * h * b / link.bandwidth)
            })
            .fold(0.0, |sum, t| sum + t);
        let ends = place.ends();
        // The overhead runs on the hardware the device shares, like its kernels.
        let slowdown = device.overhead_slowdown(place.sharing);
        let overhead = |o: Option<Overhead>| slowdown * o.map_or(0.0, |o| o.at(rows + tokens));
        TimeBreakdown {
            overhead: layers * overhead(device.layer_overhead)
                + ends / 2.0 * overhead(device.end_overhead),
            attention: layers * run(attention_flops, attention_bytes),
            message_passing: layers * run(message_flops, message_bytes),
            ffn: layers * run(ffn_flops, ffn_bytes),
            embedding,
            head,
            ring_exchange,
            stage_transfer,
            ..TimeBreakdown::default()
        }
    }

    /// Payload bytes the device sends for one micro-batch: its exchanges (forward rows and
    /// backward gradients) and its stage transfers (activations on, gradients back).
    pub fn micro_batch_sent_bytes(&self, place: &Place, share: f64) -> f64 {
        let model = self.model;
        let (b, h) = (model.bytes_per_element as f64, model.hidden as f64);
        let rows = share * model.seq_len as f64;
        let tokens = model.global_tokens as f64;
        let exchange = if place.degrees.cp > 1 {
            // Full scope: a ring all-gather forwards every shard's block but the successor's,
            // and the reduce-scatter sends every other shard its block: 2·(S − S_local) rows.
            // Hops scope: the rows the other shards' halos hold, and the halo's gradients; and
            // per layer the tokens' partial attentions (heads · G · (head_dim + 1) values) to
            // every other shard, and their gradients back.
            let others = (place.degrees.cp - 1) as f64;
            let head_dim = (model.hidden / model.heads) as f64;
            let token_partials = tokens * model.heads as f64 * (head_dim + 1.0);
            self.exchanges(place).1 * 2.0 * self.exchanged_rows(place, share) * h * b
                + place.layers as f64 * 2.0 * others * token_partials * F32_BYTES
        } else {
            0.0
        };
        let mut transfers = 0.0;
        if place.cell.next.is_some() {
            transfers += (rows + tokens) * h * b;
        }
        if place.cell.prev.is_some() {
            transfers += (rows + tokens) * h * b;
        }
        exchange + transfers
    }

    /// Gradient all-reduce over the stage's group, and optimizer step, seconds. The engine's
    /// all-reduce is a ring reduce-scatter and all-gather in a fixed order (the same bits
    /// everywhere): `2 (k − 1)` messages of `1/k` of the gradient per member.
    pub fn post_time(&self, place: &Place) -> (f64, f64) {
        let (rate, bandwidth) = self.rates(place.cell.device, place.sharing);
        let params = self.stage_params(place);
        let bytes = params * self.model.bytes_per_element as f64;
        let group = place.reduce;
        let allreduce = if group.members > 1 {
            let k = group.members as f64;
            2.0 * (k - 1.0) * (group.latency + bytes / k / group.bandwidth)
        } else {
            0.0
        };
        let device = &self.cluster.devices[place.cell.device];
        // Like the layers' overhead, it runs on the hardware the device shares.
        let overhead = device.step_overhead.map_or(0.0, |o| {
            device.overhead_slowdown(place.sharing)
                * (place.layers as f64 * o.per_layer + place.ends() / 2.0 * o.ends)
        });
        let optimizer = params * ADAM_FLOPS / rate + ADAM_TRAFFIC * bytes / bandwidth + overhead;
        (allreduce, optimizer)
    }

    /// Payload bytes the device sends per step for its gradient sums and the step's loss:
    /// the ring all-reduce's `2 (k − 1) / k` of its stage's gradients over its stage's group of
    /// `k`, and of the shared bias table and the loss (one f32) over every device of the
    /// configuration (a member's exact count differs by the rounding of the ring's chunks).
    pub fn post_sent_bytes(&self, place: &Place) -> f64 {
        let model = self.model;
        let b = model.bytes_per_element as f64;
        let ring = |members: f64| 2.0 * (members - 1.0) / members;
        let table = (model.distance_buckets() * model.heads) as f64;
        let stage = self.stage_params(place) - if place.first_stage() { table } else { 0.0 };
        let everyone = place.degrees.devices() as f64;
        ring(place.reduce.members as f64) * stage * b + ring(everyone) * (table * b + F32_BYTES)
    }

    /// Peak memory of the place's device with node share `share`.
    pub fn memory(&self, place: &Place, share: f64) -> MemoryBreakdown {
        let model = self.model;
        let b = model.bytes_per_element as f64;
        let params = self.stage_params(place) * b;
        let seq = model.seq_len as f64;
        let rows = share * seq;
        let tokens = model.global_tokens as f64;
        let sequences = place.micro.count.min(place.degrees.pp - place.cell.stage) as f64;
        let (h, f) = (model.hidden as f64, model.ffn_hidden as f64);
        // Saved per row and layer: block input, LN1 output, Q, attention output, residual sum,
        // LN2 output, the message-passing product (7·hidden), FFN pre- and post-activation
        // (2·ffn_hidden), and the log-sum-exp of each head; per key-table row its gathered
        // state, K and V (the engine keeps them for the backward: under the full scope every
        // shard holds them for the whole sequence).
        let layers = place.layers as f64;
        let keys = self.key_rows(place.degrees.cp, share);
        let per_row = layers * (b * (7.0 * h + 2.0 * f) + LSE_BYTES * model.heads as f64);
        let key_table = layers * b * h * (3.0 * keys + 2.0 * tokens);
        let mut per_node = per_row;
        if place.first_stage() && model.feature_entries_per_node == 0.0 {
            // Features of unknown sparsity: dense rows, an upper bound.
            per_node += b * model.features as f64 + DEGREE_INDEX_BYTES;
        }
        if place.last_stage() {
            per_node += b * (2.0 * h + model.classes as f64);
        }
        let pairs = match model.scope {
            AttentionScope::Full => rows * seq,
            AttentionScope::Hops { .. } => rows * model.pairs_per_row() * PAIR_INDEX_BYTES,
        };
        let matrices = rows * self.sequence_matrix_row_bytes(place);
        MemoryBreakdown {
            parameters: params,
            gradients: params,
            optimizer_state: 2.0 * params,
            activations: sequences * ((rows + tokens) * per_node + key_table),
            distance_buckets: sequences * pairs,
            sequence_matrices: sequences * matrices,
            cached_sequences: cached_sequences(
                model.graph_sequences,
                sequences,
                pairs + matrices,
                share,
            ),
        }
    }

    /// Bytes per row of the sparse matrices of one sequence on a device of `place`: the
    /// message-passing matrix, and on the first stage, where their non-zeros are measured, the
    /// input features and the one-hot degrees. Their column offsets (4 bytes a column, a few
    /// kB a sequence) are left out, so that the bytes stay linear in the device's share.
    fn sequence_matrix_row_bytes(&self, place: &Place) -> f64 {
        let model = self.model;
        let matrix =
            |entries_per_row: f64| SPARSE_ENTRY_BYTES * entries_per_row + SPARSE_OFFSET_BYTES;
        let mut bytes = matrix(model.edges_per_node.max(1.0));
        if place.first_stage() && model.feature_entries_per_node > 0.0 {
            bytes += matrix(model.feature_entries_per_node) + matrix(1.0);
        }
        bytes
    }

    /// The device's largest single buffers for one sequence as functions of its share, bytes:
    /// its row block of the largest per-row array (distance buckets under the full scope, S
    /// bytes a row; pair keys under the hops scope, 4 bytes a pair; input features on the first
    /// stage; FFN activations), and its key table's K (every key row it reads × hidden).
    /// Checked against a device's buffer limit ([`DevicePrediction::fits`]; the share caps of
    /// balancing).
    pub(crate) fn buffer_terms(&self, place: &Place) -> [Affine; 2] {
        let model = self.model;
        let b = model.bytes_per_element as f64;
        let seq = model.seq_len as f64;
        let per_pair = match model.scope {
            AttentionScope::Full => 1.0,
            AttentionScope::Hops { .. } => PAIR_KEY_BYTES,
        };
        let mut widest = (per_pair * model.pairs_per_row()).max(b * model.ffn_hidden as f64);
        if place.first_stage() {
            widest = widest.max(b * model.features as f64);
        }
        let key_bytes = b * model.hidden as f64;
        let keys_at_zero = self.key_rows(place.degrees.cp, 0.0);
        [
            Affine {
                at_zero: 0.0,
                slope: seq * widest,
            },
            Affine {
                at_zero: keys_at_zero * key_bytes,
                slope: (self.key_rows(place.degrees.cp, 1.0) - keys_at_zero) * key_bytes,
            },
        ]
    }

    /// FLOPs of one sequence's forward and backward through the whole model, summed over the
    /// `cp` shards of a replica whatever their shares: the row terms split by share, but every
    /// shard projects K and V of each key row it reads (all `S` under the full scope, its rows
    /// and halo under the hops scope) and runs the global tokens' rows itself (the lower
    /// bounds of `bound` rest on this).
    pub fn sequence_flops(&self, cp: usize) -> f64 {
        let model = self.model;
        let seq = model.seq_len as f64;
        let h = model.hidden as f64;
        let f = model.ffn_hidden as f64;
        let tokens = model.global_tokens as f64;
        let edges = model.edges_per_node.max(1.0);
        let shards = cp as f64;
        // Σ_c key_rows(share_c) for shares summing to 1 (key_rows is affine in the share).
        let at_zero = self.key_rows(cp, 0.0);
        let keys = shards * at_zero + self.key_rows(cp, 1.0) - at_zero;
        let per_row = 4.0 * h * h
            + 4.0 * h * model.pairs_per_row()
            + 4.0 * h * tokens
            + 2.0 * h * h
            + 2.0 * edges * h
            + 4.0 * h * f;
        let per_layer =
            seq * per_row + 4.0 * h * h * keys + shards * tokens * (8.0 * h * h + 4.0 * h * f);
        let ends = 2.0 * h * (model.features + model.classes) as f64;
        PASSES * (model.layers as f64 * per_layer + seq * ends)
    }
}

/// Bytes a device's sequence cache holds beyond the `in_flight` sequences' once it has
/// uploaded each of the graph's `graph_sequences`, which take `sequence` bytes each on it (pairs
/// and sparse matrices) at node share `share`: all of them, or as many bytes as its part
/// of the budget allows, [`SEQUENCE_CACHE_BYTES`](crate::SEQUENCE_CACHE_BYTES) × `share`
/// (the engine's budget, so that every shard of a group holds as many sequences; it holds
/// whole sequences, so it may hold up to one sequence less than that). Linear in the share,
/// as balancing needs.
fn cached_sequences(graph_sequences: usize, in_flight: f64, sequence: f64, share: f64) -> f64 {
    let held = (graph_sequences as f64 * sequence).min(crate::SEQUENCE_CACHE_BYTES as f64 * share);
    (held - in_flight * sequence).max(0.0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::baseline::uniform_config;
    use crate::enumerate::{all_degrees, micro_batching};
    use crate::testing::{arb_cluster, arb_model, cluster, device, model};
    use crate::{DeviceSpec, PairLink, Stage, StepOverhead};

    /// Two equal devices joined by `link` (bandwidth, latency) and `pairs`.
    fn two_devices(link: (f64, f64), pairs: Vec<PairLink>) -> ClusterSpec {
        let devices = vec![device("a", 1e12, 1e13, 1e12), device("b", 1e12, 1e13, 1e12)];
        cluster(devices, link, pairs)
    }

    /// The uniform configuration of degrees `[dp, pp, cp]` over two devices.
    fn on_two(model: &ModelSpec, [dp, pp, cp]: [usize; 3], micro_batches: usize) -> ParallelConfig {
        uniform_config(2, model, Degrees { dp, pp, cp }, micro_batches)
    }

    #[test]
    fn attention_counts_two_flops_per_multiply_add_and_a_double_backward() {
        // Infinite memory bandwidth leaves only the FLOP term.
        let spec = cluster(
            vec![device("d", 1e12, 1e13, f64::INFINITY)],
            (1e9, 0.0),
            vec![],
        );
        let model = model(3, 1024, 1);
        let config = uniform_config(
            1,
            &model,
            Degrees {
                dp: 1,
                pp: 1,
                cp: 1,
            },
            1,
        );
        let prediction = predict(&spec, &model, &config);
        let (s, h, f) = (1024.0, 64.0, 256.0);
        // Q/K/V and output projections 2·S·4h², scores and weighted sum 2·2·S²·h.
        let attention = 3.0 * 3.0 * (2.0 * s * 4.0 * h * h + 4.0 * s * s * h) / 1e13;
        let ffn = 3.0 * 3.0 * (2.0 * 2.0 * s * h * f) / 1e13;
        let time = &prediction.devices[0].time;
        assert!((time.attention / attention - 1.0).abs() < 1e-12);
        assert!((time.ffn / ffn - 1.0).abs() < 1e-12);
        assert_eq!(time.ring_exchange, 0.0);
        assert_eq!(prediction.step_seconds, time.total());
    }

    #[test]
    fn a_context_parallel_shard_projects_keys_and_values_for_the_whole_sequence() {
        // As the engine does: each shard gathers the normalised states of every row and
        // projects K and V of all S of them, but queries and outputs of its own S/2 rows.
        let spec = cluster(
            vec![
                device("a", 1e12, 1e13, f64::INFINITY),
                device("b", 1e12, 1e13, f64::INFINITY),
            ],
            (1e9, 0.0),
            vec![],
        );
        let model = model(3, 1024, 1);
        let degrees = Degrees {
            dp: 1,
            pp: 1,
            cp: 2,
        };
        let prediction = predict(&spec, &model, &uniform_config(2, &model, degrees, 1));
        let (s, h) = (1024.0, 64.0);
        let rows = s / 2.0;
        let attention =
            3.0 * 3.0 * (4.0 * h * h * rows + 4.0 * h * h * s + 4.0 * h * rows * s) / 1e13;
        for device in &prediction.devices {
            assert!(
                (device.time.attention / attention - 1.0).abs() < 1e-12,
                "{} vs {attention}",
                device.time.attention
            );
        }
    }

    #[test]
    fn devices_of_one_hardware_divide_its_rates_among_the_busy_ones() {
        // Three logical devices of one adapter and one device of its own.
        let shared = |name: &str| DeviceSpec {
            hardware: Some("adapter".into()),
            ..device(name, 1e12, 1e13, 1e12)
        };
        let spec = cluster(
            vec![
                shared("a"),
                shared("b"),
                shared("c"),
                device("d", 1e12, 1e13, 1e12),
            ],
            (1e9, 0.0),
            vec![],
        );
        let model = model(2, 1024, 2);
        let cost = CostModel::new(&spec, &model);
        let grid = |degrees: &str, cells: &[usize]| Grid {
            degrees: degrees.parse().expect("degrees parse"),
            cells: cells.to_vec(),
        };
        let one = Micro { count: 1 };
        let cp3 = grid("dp1-pp1-cp3", &[0, 1, 3]);
        assert_eq!(cost.sharing(&cp3, one), [2.0, 2.0, 3.0, 1.0]);
        assert_eq!(cost.sharing(&grid("dp1-pp1-cp1", &[3]), one), [1.0; 4]);
        // Two stages on one hardware: with one micro-batch they take turns; with three they
        // overlap (3 − 1) / (3 + 2 − 1) of the step.
        let pp2 = grid("dp1-pp2-cp1", &[0, 1]);
        assert_eq!(cost.sharing(&pp2, one), [1.0, 1.0, 3.0, 1.0]);
        assert_eq!(cost.sharing(&pp2, Micro { count: 3 }), [1.5, 1.5, 3.0, 1.0]);
        // dp2 over two shared devices: each computes at half its rate; over one shared
        // device and the lone one: both at full rate.
        let dp2 = Degrees {
            dp: 2,
            pp: 1,
            cp: 1,
        };
        let config = |devices: [usize; 2]| ParallelConfig {
            stages: vec![Stage {
                layers: [0, 2],
                devices: vec![vec![devices[0]], vec![devices[1]]],
            }],
            ..uniform_config(4, &model, dp2, 1)
        };
        let together = predict(&spec, &model, &config([0, 1]));
        let apart = predict(&spec, &model, &config([0, 3]));
        let (t, a) = (&together.devices[0].time, &apart.devices[0].time);
        for (shared, alone) in [
            (t.attention, a.attention),
            (t.ffn, a.ffn),
            (t.optimizer, a.optimizer),
        ] {
            assert!((shared / alone - 2.0).abs() < 1e-12, "{shared} vs {alone}");
        }
    }

    #[test]
    fn overheads_on_shared_hardware_grow_by_the_measured_contention() {
        let overhead = Overhead {
            fixed: 1e-3,
            per_row: 1e-6,
        };
        let shared = |name: &str, contention: Option<f64>| DeviceSpec {
            hardware: Some("adapter".into()),
            layer_overhead: Some(overhead),
            end_overhead: Some(overhead),
            step_overhead: Some(StepOverhead {
                per_layer: 1e-3,
                ends: 2e-3,
            }),
            overhead_contention: contention,
            ..device(name, 1e12, 1e13, 1e12)
        };
        let model = model(2, 1024, 4);
        let degrees = |text: &str| text.parse::<Degrees>().expect("degrees parse");
        let overheads = |contention: Option<f64>, degrees: Degrees| {
            let devices = (0..4).map(|i| shared(&format!("d{i}"), contention));
            let spec = cluster(devices.collect(), (1e9, 0.0), vec![]);
            let config = uniform_config(4, &model, degrees, 1);
            let cost = CostModel::new(&spec, &model);
            let (_, optimizer) = cost.post_time(&cost.places(&config)[0]);
            (
                predict(&spec, &model, &config).devices[0].time.overhead,
                optimizer,
            )
        };
        let dp1 = degrees("dp1-pp1-cp1");
        let dp4 = degrees("dp4-pp1-cp1");
        // Alone, the contention changes nothing.
        assert_eq!(overheads(Some(0.4), dp1), overheads(None, dp1));
        // Four busy on one adapter: 1 + 0.4 · 3 = 2.2 times alone, against 4 without a
        // measured contention.
        let (alone, _) = overheads(None, dp1);
        let (measured, measured_step) = overheads(Some(0.4), dp4);
        let (unmeasured, unmeasured_step) = overheads(None, dp4);
        assert!(
            (measured / alone - 2.2).abs() < 1e-12,
            "{measured} vs {alone}"
        );
        assert!(
            (unmeasured / alone - 4.0).abs() < 1e-12,
            "{unmeasured} vs {alone}"
        );
        // The step's overhead grows the same way (Adam's arithmetic beside it does not).
        assert!(measured_step < unmeasured_step);
    }

    #[test]
    fn the_gradient_all_reduce_is_a_ring() {
        // Four devices in data parallelism: each sends 2·3/4 of the gradients in 6 messages.
        let spec = cluster(
            (0..4)
                .map(|i| device(&format!("d{i}"), 1e12, 1e13, 1e12))
                .collect(),
            (1e9, 1e-3),
            vec![],
        );
        let model = model(2, 256, 4);
        let dp4 = Degrees {
            dp: 4,
            pp: 1,
            cp: 1,
        };
        let config = uniform_config(4, &model, dp4, 1);
        let cost = CostModel::new(&spec, &model);
        let place = cost.places(&config)[0];
        let bytes = cost.stage_params(&place) * 4.0;
        let (allreduce, _) = cost.post_time(&place);
        let expected = 6.0 * (1e-3 + bytes / 4.0 / 1e9);
        assert!(
            (allreduce / expected - 1.0).abs() < 1e-12,
            "{allreduce} vs {expected}"
        );
    }

    #[test]
    fn overheads_cost_their_fixed_part_and_rows_per_layer_and_end() {
        let overhead = |fixed, per_row| Some(Overhead { fixed, per_row });
        let spec = cluster(
            vec![DeviceSpec {
                layer_overhead: overhead(1e-3, 1e-6),
                end_overhead: overhead(4e-3, 2e-6),
                ..device("a", 1e12, 1e13, 1e12)
            }],
            (1e9, 0.0),
            vec![],
        );
        let model = model(3, 256, 2);
        let one = Degrees {
            dp: 1,
            pp: 1,
            cp: 1,
        };
        let prediction = predict(&spec, &model, &uniform_config(1, &model, one, 2));
        // Two micro-batches of one 256-row sequence: three layers, and both ends.
        let expected = 2.0 * (3.0 * (1e-3 + 256e-6) + (4e-3 + 512e-6));
        let charged = prediction.devices[0].time.overhead;
        assert!(
            (charged / expected - 1.0).abs() < 1e-12,
            "{charged} vs {expected}"
        );
    }

    #[test]
    fn the_step_overhead_is_charged_once_per_step_for_a_stage_s_layers_and_ends() {
        let step_overhead = Some(StepOverhead {
            per_layer: 2e-3,
            ends: 6e-3,
        });
        let plain = two_devices((1e9, 0.0), vec![]);
        let mut with = plain.clone();
        for d in &mut with.devices {
            d.step_overhead = step_overhead;
        }
        let model = model(3, 256, 4);
        let pp2 = on_two(&model, [1, 2, 1], 4);
        let optimizer = |spec: &ClusterSpec| {
            let prediction = predict(spec, &model, &pp2);
            [0, 1].map(|d| prediction.devices[d].time.optimizer)
        };
        let (base, charged) = (optimizer(&plain), optimizer(&with));
        // Four micro-batches, one step: each stage's layers once and one of the two ends.
        for (d, layers) in [
            (0, pp2.stages[0].layer_count()),
            (1, pp2.stages[1].layer_count()),
        ] {
            let expected = layers as f64 * 2e-3 + 3e-3;
            let extra = charged[d] - base[d];
            assert!(
                (extra / expected - 1.0).abs() < 1e-9,
                "{extra} vs {expected}"
            );
        }
    }

    #[test]
    fn ring_exchange_uses_the_pair_link() {
        let slow = PairLink {
            a: 0,
            b: 1,
            bandwidth: 1e8,
            latency: 1e-3,
        };
        let spec = two_devices((1e11, 0.0), vec![slow]);
        let model = model(2, 2048, 1);
        let config = on_two(&model, [1, 1, 2], 1);
        let prediction = predict(&spec, &model, &config);
        // Per layer and per logit-propagation step, the other half of the rows' states goes
        // round the ring forward (hidden wide per layer, classes wide per step) and their
        // gradients back: 2 layers + 10 steps of one message each way; and one message of
        // the barrier before the backward.
        let widths = 2.0 * 64.0 + 10.0 * 8.0;
        let bytes = 0.5 * 2048.0 * widths * 4.0;
        let expected = 2.0 * (12.0 * 1e-3 + bytes / 1e8) + 1e-3;
        let ring = prediction.devices[0].time.ring_exchange;
        assert!(
            (ring / expected - 1.0).abs() < 1e-12,
            "{ring} vs {expected}"
        );
    }

    #[test]
    fn one_f_one_b_step_is_paced_by_the_slowest_stage() {
        let spec = two_devices((1e10, 1e-5), vec![]);
        let model = model(4, 512, 4);
        let config = on_two(&model, [1, 2, 1], 4);
        let prediction = predict(&spec, &model, &config);
        let cost = CostModel::new(&spec, &model);
        let grid = Grid::of(&config);
        let micro = Micro { count: 4 };
        let slowest = (0..2)
            .map(|s| {
                let place = Place {
                    cell: grid.cell(0, s, 0),
                    degrees: config.degrees,
                    layers: 2,
                    micro,
                    reduce: cost.group_link(&[s]),
                    sharing: 1.0,
                };
                cost.micro_batch_time(&place, 1.0).total()
            })
            .fold(0.0, f64::max);
        for device in &prediction.devices {
            let t = &device.time;
            let expected = (4.0 + 1.0) * slowest + t.grad_allreduce + t.optimizer;
            assert!((device.step_seconds / expected - 1.0).abs() < 1e-12);
        }
        // Stage 0 keeps two micro-batches in flight, stage 1 one.
        let (first, last) = (&prediction.devices[0].memory, &prediction.devices[1].memory);
        assert!((first.distance_buckets / last.distance_buckets - 2.0).abs() < 1e-12);
    }

    #[test]
    fn only_the_first_stage_holds_the_input_features_sparse_where_measured() {
        let spec = two_devices((1e10, 1e-5), vec![]);
        let measured = ModelSpec {
            edges_per_node: 5.0,
            feature_entries_per_node: 20.0,
            ..model(2, 512, 2)
        };
        let unmeasured = ModelSpec {
            feature_entries_per_node: 0.0,
            ..measured.clone()
        };
        let config = on_two(&measured, [1, 2, 1], 2);
        let [first, last] = [0, 1].map(|d| predict(&spec, &measured, &config).devices[d].memory);
        // Per row: the message-passing matrix (5 entries), and on the first stage the features
        // (20 entries) and the one-hot degree (1 entry), 16 bytes an entry and 4 a row offset.
        let first_rows = 2.0 * 512.0;
        assert_eq!(
            first.sequence_matrices,
            first_rows * (16.0 * 5.0 + 4.0 + 16.0 * 20.0 + 4.0 + 16.0 + 4.0)
        );
        assert_eq!(last.sequence_matrices, 512.0 * (16.0 * 5.0 + 4.0));
        // Unmeasured features count as dense rows of activations on the first stage instead.
        let [dense_first, dense_last] =
            [0, 1].map(|d| predict(&spec, &unmeasured, &config).devices[d].memory);
        assert_eq!(dense_last, last);
        assert_eq!(
            dense_first.sequence_matrices,
            first_rows * (16.0 * 5.0 + 4.0)
        );
        assert_eq!(
            dense_first.activations - first.activations,
            first_rows * (4.0 * 128.0 + DEGREE_INDEX_BYTES)
        );
    }

    #[test]
    fn the_sequence_cache_holds_the_graphs_other_sequences_up_to_its_budget() {
        let spec = two_devices((1e10, 1e-5), vec![]);
        let model = model(2, 512, 1);
        let config = on_two(&model, [1, 1, 2], 1);
        let with_graph = |graph_sequences, seq_len| {
            let model = ModelSpec {
                graph_sequences,
                seq_len,
                ..model.clone()
            };
            predict(&spec, &model, &config).devices[0].memory
        };
        let unknown = with_graph(0, 512);
        assert_eq!(
            unknown.cached_sequences, 0.0,
            "no graph size given: nothing cached"
        );
        // A shard's pairs: its 256 rows × 512 keys, one byte each; its message-passing
        // matrix: one entry (the self-loop, edges not measured) and one row offset a row.
        let four = with_graph(4, 512);
        assert_eq!(four.distance_buckets, 256.0 * 512.0);
        assert_eq!(four.sequence_matrices, 256.0 * (16.0 + 4.0));
        assert_eq!(
            four.cached_sequences,
            3.0 * (four.distance_buckets + four.sequence_matrices)
        );
        // 2^16 nodes: 2 GiB of a shard's pairs per sequence, beyond the cache's 1 GiB.
        let long = with_graph(4, 1 << 16);
        assert_eq!(
            long.cached_sequences, 0.0,
            "the sequence in flight fills the budget"
        );
        // Each of the two shards (node share 1/2) has half the budget: every shard of a group
        // holds as many sequences.
        let mid = with_graph(64, 1 << 13);
        assert_eq!(
            mid.cached_sequences + mid.distance_buckets + mid.sequence_matrices,
            crate::SEQUENCE_CACHE_BYTES as f64 / 2.0,
            "64 sequences of 32 MiB fill the shard's half of the budget"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn memory_grows_with_sequence_length(
            cluster in arb_cluster(6),
            model in arb_model(),
            pick in any::<prop::sample::Index>(),
            longer in 1usize..4096,
        ) {
            let degrees = all_degrees(cluster.devices.len(), &model);
            let degrees = degrees[pick.index(degrees.len())];
            let micro_batches = micro_batching(&model, degrees.dp).count;
            let config = uniform_config(cluster.devices.len(), &model, degrees, micro_batches);
            let long = ModelSpec { seq_len: model.seq_len + longer, ..model.clone() };
            let short = predict(&cluster, &model, &config);
            let long = predict(&cluster, &long, &config);
            for (s, l) in short.devices.iter().zip(&long.devices) {
                prop_assert!(l.peak_bytes >= s.peak_bytes, "{} < {}", l.peak_bytes, s.peak_bytes);
            }
            prop_assert!(long.step_seconds >= short.step_seconds);
        }
    }
}
