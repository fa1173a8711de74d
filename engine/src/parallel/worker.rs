//! One device's part of a parallel training job: its pipeline passes over its shard of each
//! sequence, the gradient sums, the optimizer step, and its share of evaluation.

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
        ElementConversion, Tensor, TensorData,
        activation::log_softmax,
        backend::{AutodiffBackend, Backend},
    },
};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use super::{
    Layout, Role,
    grads::all_reduce_gradients,
    schedule::{Pass, one_forward_one_backward},
};
use crate::{
    EngineError,
    comm::{Communicator, Rank, RowExchange, Tag},
    device::MemoryProbe,
    graph::Graph,
    model::{GraphTransformer, ModelBackend, ModelConfig, ModelPart, SequenceTensors},
    train::{EpochMetrics, LabelledSequence, Role as NodeRole, TrainOptions},
};

/// What every worker reads: the data, the options and the plan.
pub(super) struct Job<'a> {
    pub graph: &'a Graph,
    pub sequences: &'a [LabelledSequence],
    pub options: &'a TrainOptions,
    pub config: &'a ModelConfig,
    pub layout: &'a Layout,
}

/// What a worker reports when the job ends.
#[derive(Debug)]
pub(super) struct WorkerOutcome {
    pub rank: Rank,
    /// Every epoch's figures (the same on every worker).
    pub history: Vec<EpochMetrics>,
    /// The loss of every optimizer step (the same on every worker).
    pub step_losses: Vec<f64>,
    /// Median wall-clock seconds of this worker's training steps (the median leaves out the
    /// first steps' kernel compilation).
    pub step_seconds: f64,
    /// Peak bytes reserved by this device's memory pool, where the backend reports it.
    pub peak_bytes: Option<u64>,
    /// Peak bytes held by live tensors at the sampled moments.
    pub peak_in_use: PeakTracker,
    /// The lead worker's copy of every final parameter value, in canonical order.
    pub parameters: Option<Vec<f32>>,
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
    job: &'a Job<'a>,
    rank: Rank,
    role: Role,
    part: ModelPart,
    device: B::Device,
    comm: Arc<dyn Communicator>,
    model: GraphTransformer<B>,
    /// All devices of the job, for the table's gradient and the reports.
    everyone: Vec<Rank>,
    peak_in_use: PeakTracker,
}

/// The largest of the samples taken, if any.
#[derive(Debug, Clone, Default)]
pub(super) struct PeakTracker(std::cell::Cell<Option<u64>>);

impl PeakTracker {
    /// Takes a sample.
    fn sample(&self, bytes: Option<u64>) {
        if let Some(bytes) = bytes {
            self.0
                .set(Some(self.0.get().map_or(bytes, |p| p.max(bytes))));
        }
    }

    /// The peak so far.
    pub fn get(&self) -> Option<u64> {
        self.0.get()
    }
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
            peak_in_use: PeakTracker::default(),
        }
    }

    /// Trains for the options' epochs (or steps), evaluating after every epoch; sends each
    /// epoch's figures to `progress` when given.
    pub fn run(
        mut self,
        progress: Option<Sender<EpochMetrics>>,
    ) -> Result<WorkerOutcome, EngineError> {
        let options = self.job.options;
        let mut optimizer = AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(options.weight_decay)))
            .init::<B, GraphTransformer<B>>();
        let mut order_rng = StdRng::seed_from_u64(options.seed);
        let mut order: Vec<usize> = (0..self.job.sequences.len()).collect();
        let batch = self.job.layout.batch();
        let mut history: Vec<EpochMetrics> = Vec::new();
        let mut step_losses = Vec::new();
        let mut step_times = Vec::new();
        let mut peak: Option<u64> = None;
        let mut best: Option<EpochMetrics> = None;
        'epochs: for epoch in 1..=options.epochs {
            let epoch_start = Instant::now();
            order.shuffle(&mut order_rng);
            let first_step = step_losses.len();
            for batch in epoch_batches(&order, batch) {
                let start = Instant::now();
                let (model, loss) = self.step(&batch, self.model.clone(), &mut optimizer)?;
                self.model = model;
                step_times.push(start.elapsed().as_secs_f64());
                if !loss.is_finite() {
                    return Err(EngineError::InvalidOptions(format!(
                        "training diverged at epoch {epoch}: loss is {loss} (try a lower learning rate)"
                    )));
                }
                step_losses.push(loss);
                if let Some(bytes) = B::reserved_bytes(&self.device) {
                    peak = Some(peak.map_or(bytes, |p| p.max(bytes)));
                }
                if options
                    .max_steps
                    .is_some_and(|max| step_losses.len() >= max)
                {
                    break;
                }
            }
            let accuracy = self.evaluate()?;
            let losses = &step_losses[first_step..];
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
            history.push(metrics.clone());
            if best.as_ref().is_none_or(|b| metrics.val_acc > b.val_acc) {
                best = Some(metrics);
            } else if best
                .as_ref()
                .is_some_and(|b| epoch - b.epoch >= options.patience)
            {
                break 'epochs;
            }
            if options
                .max_steps
                .is_some_and(|max| step_losses.len() >= max)
            {
                break 'epochs;
            }
        }
        let parameters = self.collect_parameters()?;
        Ok(WorkerOutcome {
            rank: self.rank,
            step_seconds: median(&mut step_times),
            history,
            step_losses,
            peak_bytes: peak,
            peak_in_use: self.peak_in_use.clone(),
            parameters,
        })
    }

    /// One optimizer step over `batch` (sequence indices, `dp × micro_batches`): this
    /// replica's micro-batches through this stage in 1F1B order, gradients summed over the
    /// devices sharing each parameter, the Adam step. Returns the model and the step's loss.
    fn step<O: Optimizer<GraphTransformer<B>, B>>(
        &self,
        batch: &[usize],
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
                    let pending =
                        self.forward(&model, &self.job.sequences[mine[m]], batch.len())?;
                    self.peak_in_use.sample(B::in_use_bytes(&self.device));
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
                            let stage = self.role.stage + 1;
                            let grad =
                                self.receive_rows::<B>(stage, Tag::ActivationGrad, &rows, nodes)?;
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
                        let stage = self.role.stage - 1;
                        self.send_rows(stage, Tag::ActivationGrad, grad, &rows, nodes)?;
                    }
                    self.peak_in_use.sample(B::in_use_bytes(&self.device));
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
        self.peak_in_use.sample(B::in_use_bytes(&self.device));
        let loss = self.sum_over_job(vec![loss_sum as f32])?[0] as f64;
        Ok((model, loss))
    }

    /// The forward of one micro-batch through this stage.
    fn forward(
        &self,
        model: &GraphTransformer<B>,
        seq: &LabelledSequence,
        batch: usize,
    ) -> Result<InFlight<B>, EngineError> {
        let (tensors, rows) = self.upload::<B>(seq)?;
        let nodes = seq.host.nodes.len();
        let (input, x) = if self.role.stage > 0 {
            let x = self
                .receive_rows::<B>(self.role.stage - 1, Tag::Activation, &rows, nodes)?
                .require_grad();
            (Some(x.clone()), x)
        } else {
            (None, model.forward_embedding(&tensors))
        };
        let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
        let end = if self.part.output {
            let logits = model.forward_output(output, &tensors);
            StageEnd::Loss(self.loss(logits, seq, &rows, batch))
        } else {
            let stage = self.role.stage + 1;
            self.send_rows(stage, Tag::Activation, output.clone().inner(), &rows, nodes)?;
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
                let label = self.job.graph.labels()[seq.host.nodes[position] as usize] as usize;
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
        for (index, seq) in self.job.sequences.iter().enumerate() {
            if index % dp != self.role.replica {
                continue;
            }
            let (tensors, rows) = self.upload::<B::InnerBackend>(seq)?;
            let nodes = seq.host.nodes.len();
            let x = if self.role.stage > 0 {
                let stage = self.role.stage - 1;
                self.receive_rows::<B::InnerBackend>(stage, Tag::Activation, &rows, nodes)?
            } else {
                model.forward_embedding(&tensors)
            };
            let output = model.forward_layers(x, self.part.layers.clone(), &tensors);
            if !self.part.output {
                let stage = self.role.stage + 1;
                self.send_rows(stage, Tag::Activation, output, &rows, nodes)?;
                continue;
            }
            let predicted = model.forward_output(output, &tensors).argmax(1).into_data();
            let predicted: Vec<i64> = predicted.iter::<i64>().collect();
            for (local, position) in rows.clone().enumerate() {
                if let Some(role) = seq.roles[position] {
                    let node = seq.host.nodes[position] as usize;
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

    /// This device's rows of `seq` on its device, with the exchange of its shard group.
    fn upload<D: Backend<Device = B::Device>>(
        &self,
        seq: &LabelledSequence,
    ) -> Result<(SequenceTensors<D>, Range<usize>), EngineError> {
        let layout = self.job.layout;
        let Role {
            replica,
            stage,
            shard,
        } = self.role;
        let rows = layout.shard_rows(replica, stage, seq.host.nodes.len())?;
        let range = Layout::shard_range(&rows, shard);
        let exchange = (rows.len() > 1).then(|| RowExchange {
            comm: self.comm.clone(),
            group: layout.shard_group(replica, stage),
            rows,
        });
        let tensors = seq.host.shard_to_device::<D>(
            self.job.graph,
            self.job.config.max_degree,
            range.clone(),
            exchange,
            &self.device,
        );
        Ok((tensors, range))
    }

    /// The row ranges of the shards of this replica's `stage` for a sequence of `nodes`.
    fn stage_ranges(&self, stage: usize, nodes: usize) -> Result<Vec<Range<usize>>, EngineError> {
        let rows = self
            .job
            .layout
            .shard_rows(self.role.replica, stage, nodes)?;
        Ok((0..rows.len())
            .map(|c| Layout::shard_range(&rows, c))
            .collect())
    }

    /// Sends this shard's rows `mine` of `tensor` to the shards of `stage` (of this replica)
    /// that hold them: stages may split a sequence differently, so a shard sends each shard of
    /// the other stage the rows they share (possibly none).
    fn send_rows<D: Backend>(
        &self,
        stage: usize,
        tag: Tag,
        tensor: Tensor<D, 2>,
        mine: &Range<usize>,
        nodes: usize,
    ) -> Result<(), EngineError> {
        let [_, width] = tensor.dims();
        let values = tensor.into_data().convert::<f32>().to_vec::<f32>();
        let values = values.expect("converted to f32");
        for (shard, theirs) in self.stage_ranges(stage, nodes)?.into_iter().enumerate() {
            let (lo, hi) = (mine.start.max(theirs.start), mine.end.min(theirs.end));
            let part = if lo < hi {
                values[(lo - mine.start) * width..(hi - mine.start) * width].to_vec()
            } else {
                Vec::new()
            };
            let to = self.job.layout.device(self.role.replica, stage, shard);
            self.comm.send(to, tag, part)?;
        }
        Ok(())
    }

    /// Receives this shard's rows `mine` (`[rows, hidden]`) from the shards of `stage`.
    fn receive_rows<D: Backend<Device = B::Device>>(
        &self,
        stage: usize,
        tag: Tag,
        mine: &Range<usize>,
        nodes: usize,
    ) -> Result<Tensor<D, 2>, EngineError> {
        let width = self.job.config.hidden;
        let mut values = Vec::with_capacity(mine.len() * width);
        for (shard, theirs) in self.stage_ranges(stage, nodes)?.into_iter().enumerate() {
            let from = self.job.layout.device(self.role.replica, stage, shard);
            let part = self.comm.recv(from, tag)?;
            let shared = mine
                .end
                .min(theirs.end)
                .saturating_sub(mine.start.max(theirs.start));
            if part.len() != shared * width {
                return Err(EngineError::Plan(format!(
                    "rank {} expected {shared}×{width} values from rank {from}, got {}",
                    self.rank,
                    part.len()
                )));
            }
            values.extend(part);
        }
        Ok(Tensor::from_data(
            TensorData::new(values, [mine.len(), width]),
            &self.device,
        ))
    }

    /// The element-wise sum of `values` over every device of the job.
    fn sum_over_job(&self, values: Vec<f32>) -> Result<Vec<f32>, EngineError> {
        Ok(self
            .comm
            .all_reduce_sum(&self.everyone, Tag::Report, values)?)
    }

    /// Gathers the final parameters on the lead device (replica 0, stage 0, shard 0): each
    /// stage's first device sends its part, the lead appends the shared table.
    fn collect_parameters(&self) -> Result<Option<Vec<f32>>, EngineError> {
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
    use super::{epoch_batches, median};

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
