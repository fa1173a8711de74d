//! One device's part of a parallel training job: its pipeline passes over its shard of each
//! sequence, the gradient sums, the optimizer step, and its share of evaluation.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, mpsc::Sender};
use std::time::Instant;

use burn::{
    module::{AutodiffModule, ParamId},
    optim::{
        AdamConfig, GradientsAccumulator, GradientsParams, Optimizer, decay::WeightDecayConfig,
    },
    tensor::{
        ElementConversion, Tensor, TensorData, activation::log_softmax, backend::AutodiffBackend,
    },
};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use super::{
    CheckpointOptions, Layout, Pass, Role,
    cache::{DEVICE_CACHE_BYTES, DeviceCache},
    grads::all_reduce_gradients,
    memory_watch::MemoryWatch,
    one_forward_one_backward,
};
use crate::{
    EngineError,
    comm::{Communicator, Rank, Tag},
    device::MemoryProbe,
    graph::Graph,
    kernels::DropoutStreams,
    model::{
        GraphTransformer, ModelBackend, ModelConfig, ModelOptimizer, ModelPart, SequenceTensors,
        ShardSpec,
    },
    train::{DeviceRun, EpochMetrics, LabelledSequence, Role as NodeRole, Sequences, TrainOptions},
};

/// What every worker reads: the data, the options and the plan.
pub(super) struct Job<'a> {
    pub graph: &'a Graph,
    pub sequences: &'a Sequences,
    pub options: &'a TrainOptions,
    pub config: &'a ModelConfig,
    pub layout: &'a Layout,
    pub checkpoint: &'a CheckpointOptions,
}

/// What a worker reports when the job ends.
#[derive(Debug)]
pub(super) struct WorkerOutcome {
    pub rank: Rank,
    /// Every epoch's figures (the same on every worker).
    pub history: Vec<EpochMetrics>,
    /// The loss of every optimizer step (the same on every worker).
    pub step_losses: Vec<f64>,
    /// The lead worker's figures of every device of the job, in rank order.
    pub devices: Option<Vec<DeviceRun>>,
    /// The lead worker's copy of every final parameter value, in canonical order.
    pub parameters: Option<Vec<f32>>,
}

/// Where training stands: what a checkpoint saves.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// The epoch (1-based) the next step belongs to.
    pub epoch: usize,
    /// Batches of that epoch already taken.
    pub batches_done: usize,
    /// Every finished epoch's figures.
    pub history: Vec<EpochMetrics>,
    /// The loss of every optimizer step so far.
    pub step_losses: Vec<f64>,
    /// The epoch of best validation accuracy so far (early stopping).
    pub best: Option<EpochMetrics>,
}

impl Progress {
    /// Optimizer steps taken.
    pub fn step(&self) -> usize {
        self.step_losses.len()
    }
}

/// A forward pass waiting for its backward.
struct InFlight<B: AutodiffBackend> {
    /// The stage's input received from the previous stage (tracked), if any.
    input: Option<Tensor<B, 2>>,
    /// This shard's rows of the sequence.
    rows: Range<usize>,
    /// Nodes of the whole sequence.
    nodes: usize,
    end: StageEnd<B>,
}

/// What a stage's forward ends in.
enum StageEnd<B: AutodiffBackend> {
    /// Last stage: the loss of the micro-batch.
    Loss(Tensor<B, 1>),
    /// Other stages: the output sent on, whose gradient will come back.
    Output(Tensor<B, 2>),
}

/// One device's worker.
pub(super) struct Worker<'a, B: AutodiffBackend> {
    pub(super) job: &'a Job<'a>,
    pub(super) rank: Rank,
    pub(super) role: Role,
    pub(super) part: ModelPart,
    pub(super) device: B::Device,
    pub(super) comm: Arc<dyn Communicator>,
    pub(super) model: GraphTransformer<B>,
    /// All devices of the job, for the table's gradient and the reports.
    pub(super) everyone: Vec<Rank>,
    /// This device's memory high-water marks.
    memory: MemoryWatch,
    /// This device's uploaded shards of the sequences.
    cache: RefCell<DeviceCache<B::InnerBackend>>,
}

impl<'a, B> Worker<'a, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// The worker of `rank` (a device the plan uses), with a freshly initialised model.
    pub fn new(
        job: &'a Job<'a>,
        rank: Rank,
        device: B::Device,
        comm: Arc<dyn Communicator>,
    ) -> Self {
        let layout = job.layout;
        let role = layout
            .role(rank)
            .expect("workers run on the plan's devices");
        Self {
            job,
            rank,
            role,
            part: layout.part(role.stage),
            model: GraphTransformer::initialised(job.config, job.options.seed, &device),
            device,
            comm,
            everyone: layout.ranks(),
            memory: MemoryWatch::default(),
            cache: RefCell::new(DeviceCache::new(DEVICE_CACHE_BYTES)),
        }
    }

    /// Trains for the options' epochs (or steps), from the newest checkpoint when resuming,
    /// evaluating after every `eval_every`-th epoch and the last one and saving checkpoints
    /// when due; sends each evaluated epoch's figures to `progress` when given.
    pub fn run(
        mut self,
        progress: Option<Sender<EpochMetrics>>,
    ) -> Result<WorkerOutcome, EngineError> {
        let options = self.job.options;
        let mut optimizer: ModelOptimizer<B> = AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(options.weight_decay)))
            .init();
        let mut state = Progress {
            epoch: 1,
            ..Progress::default()
        };
        if self.job.checkpoint.resume {
            self.resume(&mut optimizer, &mut state)?;
        } else {
            self.refuse_old_checkpoints()?;
        }
        // The order of epoch `e` is the seed's generator after `e` shuffles of one vector.
        let mut order_rng = StdRng::seed_from_u64(options.seed);
        let mut order: Vec<usize> = (0..self.job.sequences.len()).collect();
        for _ in 1..state.epoch {
            order.shuffle(&mut order_rng);
        }
        let batch = self.job.layout.batch();
        let mut step_times = Vec::new();
        let mut step_sent = 0u64;
        let done = |state: &Progress| options.max_steps.is_some_and(|max| state.step() >= max);
        while state.epoch <= options.epochs && !done(&state) {
            let epoch = state.epoch;
            let epoch_start = Instant::now();
            order.shuffle(&mut order_rng);
            let first_step = state.step() - state.batches_done;
            let batches = epoch_batches(&order, batch);
            for batch in &batches[state.batches_done.min(batches.len())..] {
                if done(&state) {
                    break;
                }
                let start = Instant::now();
                let sent_before = self.comm.sent_bytes();
                let (model, loss) =
                    self.step(batch, state.step(), self.model.clone(), &mut optimizer)?;
                self.model = model;
                step_times.push(start.elapsed().as_secs_f64());
                step_sent += self.comm.sent_bytes() - sent_before;
                if !loss.is_finite() {
                    return Err(EngineError::Diverged {
                        epoch,
                        step: state.step() + 1,
                        loss,
                    });
                }
                state.step_losses.push(loss);
                state.batches_done += 1;
                fault_point(self.rank, state.step());
                if self.job.checkpoint.due(state.step()) {
                    self.save_checkpoint(&optimizer, &state)?;
                }
            }
            let last = epoch == options.epochs || done(&state);
            if !last && !epoch.is_multiple_of(options.eval_every) {
                self.memory.after_pass::<B>(&self.device);
                self.comm.warmed_up();
                state.epoch += 1;
                state.batches_done = 0;
                continue;
            }
            let accuracy = self.evaluate()?;
            self.memory.after_pass::<B>(&self.device);
            self.comm.warmed_up();
            let losses = &state.step_losses[first_step..];
            let metrics = EpochMetrics {
                epoch,
                loss: losses.iter().sum::<f64>() / losses.len().max(1) as f64,
                train_acc: accuracy[NodeRole::Train as usize],
                val_acc: accuracy[NodeRole::Val as usize],
                test_acc: accuracy[NodeRole::Test as usize],
                seconds: epoch_start.elapsed().as_secs_f64(),
            };
            if let Some(progress) = &progress {
                // The receiver only shows progress; a closed one changes nothing.
                let _ = progress.send(metrics.clone());
            }
            state.history.push(metrics.clone());
            state.epoch += 1;
            state.batches_done = 0;
            if state
                .best
                .as_ref()
                .is_none_or(|b| metrics.val_acc > b.val_acc)
            {
                self.save_best(&metrics)?;
                state.best = Some(metrics);
            } else if state
                .best
                .as_ref()
                .is_some_and(|b| epoch - b.epoch >= options.patience)
            {
                break;
            }
        }
        let parameters = self.collect_parameters()?;
        let run = DeviceRun {
            rank: self.rank,
            step_seconds: median(&mut step_times),
            peak_bytes: self.memory.peak_reserved(),
            peak_in_use_bytes: self.memory.peak_in_use(),
            sent_bytes_per_step: self.comm.sent_bytes() as f64 / state.step().max(1) as f64,
            step_sent_bytes: step_sent as f64 / step_times.len().max(1) as f64,
        };
        let devices = self.collect_device_runs(run)?;
        Ok(WorkerOutcome {
            rank: self.rank,
            history: state.history,
            step_losses: state.step_losses,
            devices,
            parameters,
        })
    }

    /// Every device's figures on the lead, in rank order (`None` elsewhere).
    fn collect_device_runs(&self, mine: DeviceRun) -> Result<Option<Vec<DeviceRun>>, EngineError> {
        let lead = self.job.layout.device(0, 0, 0);
        if self.rank != lead {
            self.comm.send(lead, Tag::Report, encode_run(&mine))?;
            return Ok(None);
        }
        let mut runs = Vec::new();
        for &rank in &self.everyone {
            runs.push(if rank == lead {
                mine.clone()
            } else {
                decode_run(rank, &self.comm.recv(rank, Tag::Report)?)?
            });
        }
        Ok(Some(runs))
    }

    /// One optimizer step (number `step`, from 0) over `batch` (sequence indices,
    /// `dp × micro_batches`): this replica's micro-batches through this stage in 1F1B order,
    /// gradients summed over the devices sharing each parameter, the Adam step. Returns the
    /// model and the step's loss.
    fn step<O: Optimizer<GraphTransformer<B>, B>>(
        &self,
        batch: &[usize],
        step: usize,
        mut model: GraphTransformer<B>,
        optimizer: &mut O,
    ) -> Result<(GraphTransformer<B>, f64), EngineError> {
        let layout = self.job.layout;
        let micro = layout.micro_batches();
        let mine = &batch[self.role.replica * micro..(self.role.replica + 1) * micro];
        let stages = layout.degrees().pp;
        let mut in_flight: HashMap<usize, InFlight<B>> = HashMap::new();
        let mut accumulator = GradientsAccumulator::<GraphTransformer<B>>::new();
        let mut loss_sum = 0.0;
        for pass in one_forward_one_backward(self.role.stage, stages, micro) {
            match pass {
                Pass::Forward(m) => {
                    let pending = self.forward(&model, mine[m], batch.len(), step)?;
                    self.memory.after_pass::<B>(&self.device);
                    in_flight.insert(m, pending);
                }
                Pass::Backward(m) => {
                    let InFlight {
                        input,
                        rows,
                        nodes,
                        end,
                    } = in_flight
                        .remove(&m)
                        .expect("1F1B runs a forward before its backward");
                    let grads = match end {
                        StageEnd::Loss(loss) => {
                            loss_sum += loss.clone().into_scalar().elem::<f64>();
                            loss.backward()
                        }
                        StageEnd::Output(output) => {
                            let grad = self.receive_output_grad::<B>(&rows, nodes)?;
                            (output * grad).sum().backward()
                        }
                    };
                    if layout.degrees().cp > 1 {
                        // burn's autodiff cleans up after a backward by locking every graph
                        // of the process, and a shard blocked in a collective inside its
                        // backward holds its own graph's lock: keep the shards of a group in
                        // step so that none starts a backward while a peer is cleaning up.
                        let group = layout.shard_group(self.role.replica, self.role.stage);
                        self.comm.barrier(&group)?;
                    }
                    if let Some(input) = input {
                        let grad = input.grad(&grads).expect("a stage's input is tracked");
                        self.send_input_grad(grad, &rows, nodes)?;
                    }
                    self.memory.after_pass::<B>(&self.device);
                    accumulator.accumulate(&model, GradientsParams::from_grads(grads, &model));
                }
            }
        }
        let mut grads = accumulator.grads();
        let stage_ids = model.part_ids(&self.part);
        let stage_group = layout.stage_group(self.role.stage);
        all_reduce_gradients(&model, &mut grads, &stage_ids, &*self.comm, &stage_group)?;
        let table: [ParamId; 1] = [model.table_id()];
        all_reduce_gradients(&model, &mut grads, &table, &*self.comm, &self.everyone)?;
        model = optimizer.step(self.job.options.learning_rate, model, grads);
        self.memory.after_pass::<B>(&self.device);
        let loss = self.sum_over_job(vec![loss_sum as f32])?[0] as f64;
        Ok((model, loss))
    }

    /// The forward of one micro-batch (sequence `index`) through this stage at step `step`,
    /// whose dropout masks are those of (the run's seed, `step`, `index`) on any plan.
    fn forward(
        &self,
        model: &GraphTransformer<B>,
        index: usize,
        batch: usize,
        step: usize,
    ) -> Result<InFlight<B>, EngineError> {
        let (tensors, rows) = self.upload(index)?;
        let streams = DropoutStreams::new(self.job.options.seed, step, index);
        let tensors = tensors.lift::<B>().with_dropout(streams);
        let seq = self.job.sequences.get(index);
        let nodes = seq.nodes.len();
        let (input, x) = if self.role.stage > 0 {
            let x = self.receive_stage_input::<B>(&rows, nodes)?.require_grad();
            (Some(x.clone()), x)
        } else {
            (None, model.forward_embedding(&tensors))
        };
        let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
        let end = if self.part.output {
            let logits = model.forward_output(output, &tensors);
            StageEnd::Loss(self.loss(logits, seq, &rows, batch))
        } else {
            self.send_stage_output(output.clone().inner(), &rows, nodes)?;
            StageEnd::Output(output)
        };
        Ok(InFlight {
            input,
            rows,
            nodes,
            end,
        })
    }

    /// This shard's term of the step loss: the cross-entropy of its training rows, divided by
    /// the sequence's training nodes and the batch's sequences, so that the terms of all shards
    /// and micro-batches sum to the batch's mean per-sequence loss. One-hot weights rather
    /// than a gather keep the same graph on every shard, rows to train or not.
    fn loss(
        &self,
        logits: Tensor<B, 2>,
        seq: &LabelledSequence,
        rows: &Range<usize>,
        batch: usize,
    ) -> Tensor<B, 1> {
        let [count, classes] = logits.dims();
        let mut weights = vec![0f32; count * classes];
        let scale = 1.0 / (seq.train.len().max(1) * batch) as f32;
        for &position in &seq.train {
            let position = position as usize;
            if rows.contains(&position) {
                let label = self.job.graph.labels()[seq.nodes[position] as usize] as usize;
                weights[(position - rows.start) * classes + label] = scale;
            }
        }
        let weights =
            Tensor::<B, 2>::from_data(TensorData::new(weights, [count, classes]), &self.device);
        (log_softmax(logits, 1) * weights).sum().neg()
    }

    /// Accuracy on the train, validation and test nodes: replica `r` evaluates the sequences
    /// `i` with `i mod dp = r`, forward only, through its pipeline and shards.
    fn evaluate(&self) -> Result<[f64; 3], EngineError> {
        let model = self.model.valid();
        let dp = self.job.layout.degrees().dp;
        let mut counts = vec![0f32; 6];
        for (index, seq) in self.job.sequences.list().iter().enumerate() {
            if index % dp != self.role.replica {
                continue;
            }
            let (tensors, rows) = self.upload(index)?;
            let nodes = seq.nodes.len();
            let x = if self.role.stage > 0 {
                self.receive_stage_input::<B::InnerBackend>(&rows, nodes)?
            } else {
                model.forward_embedding(&tensors)
            };
            let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
            if !self.part.output {
                self.send_stage_output(output, &rows, nodes)?;
                continue;
            }
            let predicted = model.forward_output(output, &tensors).argmax(1).into_data();
            let predicted: Vec<i64> = predicted.iter::<i64>().collect();
            for (local, position) in rows.clone().enumerate() {
                if let Some(role) = seq.roles[position] {
                    let node = seq.nodes[position] as usize;
                    counts[3 + role as usize] += 1.0;
                    if predicted[local] == self.job.graph.labels()[node] as i64 {
                        counts[role as usize] += 1.0;
                    }
                }
            }
        }
        let counts = self.sum_over_job(counts)?;
        Ok(std::array::from_fn(|i| {
            counts[i] as f64 / counts[3 + i].max(1.0) as f64
        }))
    }

    /// This device's shard of sequence `index` on its device (uploaded at its first use and
    /// kept while the cache has room), with the exchanges of its shard group, and its rows.
    fn upload(
        &self,
        index: usize,
    ) -> Result<(SequenceTensors<B::InnerBackend>, Range<usize>), EngineError> {
        let shard = self.shard_spec(self.job.sequences.get(index).nodes.len())?;
        let rows = shard.rows();
        let tensors = self.cache.borrow_mut().get_or_upload(index, || {
            let host = self.job.sequences.host(index, self.job.graph);
            Ok(host.shard_to_device(self.job.graph, self.job.config, &shard, &self.device))
        })?;
        Ok((tensors, rows))
    }

    /// This device's shard of a sequence of `nodes` nodes: every shard's rows in its group,
    /// and the group's ranks.
    fn shard_spec(&self, nodes: usize) -> Result<ShardSpec, EngineError> {
        let layout = self.job.layout;
        let Role {
            replica,
            stage,
            shard,
        } = self.role;
        let rows = layout.shard_rows(replica, stage, nodes)?;
        Ok(ShardSpec {
            ranges: (0..rows.len())
                .map(|c| Layout::shard_range(&rows, c))
                .collect(),
            position: shard,
            group: (rows.len() > 1)
                .then(|| (self.comm.clone(), layout.shard_group(replica, stage))),
        })
    }

    /// The element-wise sum of `values` over every device of the job.
    pub(super) fn sum_over_job(&self, values: Vec<f32>) -> Result<Vec<f32>, EngineError> {
        Ok(self
            .comm
            .all_reduce_sum(&self.everyone, Tag::Report, values)?)
    }

    /// Gathers the final parameters on the lead device (replica 0, stage 0, shard 0): each
    /// stage's first device sends its part, the lead appends the shared table.
    pub(super) fn collect_parameters(&self) -> Result<Option<Vec<f32>>, EngineError> {
        let layout = self.job.layout;
        let lead = layout.device(0, 0, 0);
        let Role {
            replica,
            stage,
            shard,
        } = self.role;
        let stage_leader = replica == 0 && shard == 0;
        if stage_leader && self.rank != lead {
            let values = self
                .model
                .parameter_values(&self.model.part_ids(&self.part));
            self.comm.send(lead, Tag::Report, values)?;
        }
        if self.rank != lead {
            return Ok(None);
        }
        debug_assert_eq!(stage, 0);
        let mut all = self
            .model
            .parameter_values(&self.model.part_ids(&self.part));
        for stage in 1..layout.degrees().pp {
            all.extend(self.comm.recv(layout.device(0, stage, 0), Tag::Report)?);
        }
        all.extend(self.model.parameter_values(&[self.model.table_id()]));
        Ok(Some(all))
    }
}

/// The failure injection the fault tests use: with `MEGAGRAPH_FAULT=kill:RANK:STEP` (or
/// `hang:RANK:STEP`), device `RANK` kills its process with SIGKILL (or stops answering) right
/// after step `STEP`. Unset, it does nothing.
fn fault_point(rank: Rank, step: usize) {
    let Ok(spec) = std::env::var("MEGAGRAPH_FAULT") else {
        return;
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let [kind, at_rank, at_step] = parts[..] else {
        return;
    };
    if at_rank.parse() != Ok(rank) || at_step.parse() != Ok(step) {
        return;
    }
    match kind {
        "kill" => {
            eprintln!("MEGAGRAPH_FAULT: device {rank} kills its process after step {step}");
            // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        "hang" => {
            eprintln!("MEGAGRAPH_FAULT: device {rank} hangs after step {step}");
            loop {
                std::thread::park();
            }
        }
        _ => {}
    }
}

/// A device's figures as a message: step seconds, peak reserved, peak in use and bytes sent
/// per step, each as the two halves of its 64 bits (`u64::MAX`: not measured).
fn encode_run(run: &DeviceRun) -> Vec<f32> {
    [
        run.step_seconds.to_bits(),
        run.peak_bytes.unwrap_or(u64::MAX),
        run.peak_in_use_bytes.unwrap_or(u64::MAX),
        run.sent_bytes_per_step.to_bits(),
        run.step_sent_bytes.to_bits(),
    ]
    .into_iter()
    .flat_map(|v| [f32::from_bits(v as u32), f32::from_bits((v >> 32) as u32)])
    .collect()
}

/// The figures of `rank` from [`encode_run`]'s message.
fn decode_run(rank: Rank, message: &[f32]) -> Result<DeviceRun, EngineError> {
    let words: Vec<u64> = message
        .chunks(2)
        .map(|w| w[0].to_bits() as u64 | (w.get(1).map_or(0, |h| h.to_bits()) as u64) << 32)
        .collect();
    let [seconds, peak, in_use, sent, step_sent] = words[..] else {
        return Err(EngineError::Plan(format!(
            "device {rank} sent a report of {} values, expected 10",
            message.len()
        )));
    };
    let measured = |v: u64| (v != u64::MAX).then_some(v);
    Ok(DeviceRun {
        rank,
        step_seconds: f64::from_bits(seconds),
        peak_bytes: measured(peak),
        peak_in_use_bytes: measured(in_use),
        sent_bytes_per_step: f64::from_bits(sent),
        step_sent_bytes: f64::from_bits(step_sent),
    })
}

/// The median of `values` (0 when empty).
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The batches of one epoch: `order` cut into runs of `batch` sequences; the last run is filled
/// up from the start of `order`, so every step has a full batch and every sequence is used.
pub fn epoch_batches(order: &[usize], batch: usize) -> Vec<Vec<usize>> {
    let steps = order.len().div_ceil(batch);
    (0..steps)
        .map(|step| {
            (0..batch)
                .map(|i| order[(step * batch + i) % order.len()])
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{DeviceRun, decode_run, encode_run, epoch_batches, median};

    #[test]
    fn a_device_report_round_trips_through_a_message() {
        let run = DeviceRun {
            rank: 3,
            step_seconds: 0.123_456_789,
            peak_bytes: Some(5_000_000_123),
            peak_in_use_bytes: None,
            sent_bytes_per_step: 1234.5,
            step_sent_bytes: 1000.25,
        };
        let back = decode_run(3, &encode_run(&run)).expect("six values");
        assert_eq!(back.step_seconds, run.step_seconds);
        assert_eq!(
            (back.peak_bytes, back.peak_in_use_bytes),
            (run.peak_bytes, None)
        );
        assert_eq!(back.sent_bytes_per_step, run.sent_bytes_per_step);
        assert_eq!(back.step_sent_bytes, run.step_sent_bytes);
        assert!(decode_run(3, &[0.0; 8]).is_err());
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [9.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 30.0]), 3.0);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn batches_cover_every_sequence_and_wrap_the_last() {
        assert_eq!(
            epoch_batches(&[4, 2, 0, 1, 3], 2),
            vec![vec![4, 2], vec![0, 1], vec![3, 4]]
        );
        assert_eq!(epoch_batches(&[1, 0], 1), vec![vec![1], vec![0]]);
        assert_eq!(epoch_batches(&[0], 4), vec![vec![0, 0, 0, 0]]);
    }
}
