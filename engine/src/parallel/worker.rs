//! One device's part of a parallel training job: its epochs, and its optimizer steps (the
//! micro-batches' forwards and backwards in 1F1B order, the gradient sums, the Adam step).
//! The passes themselves are in `passes.rs`, evaluation in `evaluation.rs`, the stage transfers
//! in `transfer.rs` and the end-of-run reports in `reports.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, mpsc::Sender};
use std::time::Instant;

use burn::{
    module::ParamId,
    optim::{
        AdamConfig, GradientsAccumulator, GradientsParams, Optimizer, decay::WeightDecayConfig,
    },
    tensor::{ElementConversion, backend::AutodiffBackend},
};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use super::{
    CheckpointOptions, Layout, Pass, Role,
    cache::{DeviceCache, device_cache_bytes},
    grads::all_reduce_gradients,
    memory_watch::MemoryWatch,
    one_forward_one_backward,
    passes::{InFlight, StageEnd},
    sender::StageSender,
};
use crate::{
    EngineError,
    comm::{Communicator, Rank, take_exchange_time},
    device::MemoryProbe,
    graph::Graph,
    model::{
        GraphTransformer, ModelBackend, ModelConfig, ModelOptimizer, ModelPart, ParameterShapes,
    },
    run::{DeviceRun, EpochMetrics, Role as NodeRole, Sequences, TrainOptions},
    timing::{TransferTime, median},
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

/// One device's worker.
pub(super) struct Worker<'a, B: AutodiffBackend> {
    pub(super) job: &'a Job<'a>,
    pub(super) rank: Rank,
    pub(super) role: Role,
    pub(super) part: ModelPart,
    pub(super) device: B::Device,
    pub(super) comm: Arc<dyn Communicator>,
    /// The model, holding only this stage's parameters and the table.
    pub(super) model: GraphTransformer<B>,
    /// The true shape of every parameter of the model, held here or not.
    pub(super) shapes: ParameterShapes,
    /// All devices of the job, for the table's gradient and the reports.
    pub(super) everyone: Vec<Rank>,
    /// This device's memory high-water marks.
    pub(super) memory: MemoryWatch,
    /// This device's uploaded shards of the sequences.
    pub(super) cache: RefCell<DeviceCache<B::InnerBackend>>,
    /// The thread that sends this device's stage transfers (pipelines of two or more stages).
    pub(super) sender: Option<StageSender>,
    /// Whether transfers are waited for at once ([`super::SYNC_TRANSFERS_VAR`]): the stage
    /// transfers, and the context-parallel key exchanges, which then start only where the
    /// key table is needed.
    pub(super) synchronous_transfers: bool,
}

impl<'a, B> Worker<'a, B>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    /// The worker of `rank` (a device the plan uses), with a freshly initialised model of its
    /// stage's part.
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
        let part = layout.part(role.stage);
        let synchronous_transfers = StageSender::synchronous_from_env();
        let (model, shapes) =
            GraphTransformer::initialised_part(job.config, job.options.seed, &device, Some(&part));
        Self {
            job,
            rank,
            role,
            part,
            model,
            shapes,
            device,
            comm: comm.clone(),
            everyone: layout.ranks(),
            memory: MemoryWatch::default(),
            cache: RefCell::new(DeviceCache::new(device_cache_bytes(
                layout.node_share(role),
            ))),
            sender: (layout.degrees().pp > 1)
                .then(|| StageSender::start(rank, comm.clone(), synchronous_transfers)),
            synchronous_transfers,
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
        // Per step: the stage transfers' and the row exchanges' time.
        let mut transfers: Vec<TransferTime> = Vec::new();
        let mut exchanges: Vec<TransferTime> = Vec::new();
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
                // Exchanges before the step (evaluation's) are not the step's.
                take_exchange_time();
                let (model, loss) =
                    self.step(batch, state.step(), self.model.clone(), &mut optimizer)?;
                self.model = model;
                transfers.push(self.wait_for_sends()?);
                exchanges.push(take_exchange_time());
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
        let steps = step_times.len().max(1) as f64;
        let run = DeviceRun {
            rank: self.rank,
            adapter: B::adapter_name(&self.device).unwrap_or_default(),
            step_seconds: median(&mut step_times),
            peak_bytes: self.memory.peak_reserved(),
            peak_in_use_bytes: self.memory.peak_in_use(),
            sent_bytes_per_step: self.comm.sent_bytes() as f64 / state.step().max(1) as f64,
            step_sent_bytes: step_sent as f64 / steps,
            transfer_seconds_per_step: median_of(&transfers, |t| t.seconds),
            hidden_transfer_seconds_per_step: median_of(&transfers, TransferTime::hidden_seconds),
            exchange_seconds_per_step: median_of(&exchanges, |t| t.seconds),
            hidden_exchange_seconds_per_step: median_of(&exchanges, TransferTime::hidden_seconds),
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

    /// Waits until this device's stage transfers have all been sent; the time they took and
    /// the time this device waited for them since the last call (zero without a pipeline).
    pub(super) fn wait_for_sends(&self) -> Result<TransferTime, EngineError> {
        let Some(sender) = &self.sender else {
            return Ok(TransferTime::default());
        };
        sender.wait_for_all()?;
        Ok(sender.take_time())
    }
}

/// The failure injection the fault tests use: with `MEGAGRAPH_FAULT=kill:RANK:STEP` (or
/// `hang:RANK:STEP`), device `RANK` kills its process with SIGKILL (or stops answering) right
/// after step `STEP`; with `orphan-panic:RANK:STEP` a thread nobody joins panics and the device
/// then waits for it forever, as a device does when its runtime's poll thread dies. Unset, it
/// does nothing.
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
        "orphan-panic" => {
            eprintln!("MEGAGRAPH_FAULT: a thread beside device {rank} panics after step {step}");
            let orphan = std::thread::spawn(|| panic!("MEGAGRAPH_FAULT: an orphan thread panics"));
            // The device waits for its thread as it would for a poll thread: forever.
            drop(orphan);
            loop {
                std::thread::park();
            }
        }
        _ => {}
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

/// The median over `steps` of `figure` (0 without steps): like the step time, free of the
/// first steps' kernel compilation, which a peer's exchange waits for too.
fn median_of(steps: &[TransferTime], figure: impl Fn(&TransferTime) -> f64) -> f64 {
    median(&mut steps.iter().map(figure).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::epoch_batches;

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
