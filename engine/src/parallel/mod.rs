//! Executing a plan: one worker thread per device, talking through a [`Communicator`].
//!
//! - **Context parallelism**: each sequence's rows are split over the shards of a
//!   (replica, stage) group by the plan's node shares, in graph-partition order (METIS keeps
//!   clusters together inside a sequence, and a shard is a consecutive block of it). A shard
//!   holds its rows' features, degrees, edges and its row block of the pair buckets. Each
//!   layer all-gathers the normalised node states (ring all-gather) so that a shard computes
//!   the keys and values of the whole sequence and attends its query rows to them; the
//!   backward reduce-scatters their gradients. The bias-table gradient is summed over shards.
//! - **Pipeline parallelism**: stages run the plan's layer ranges (the embedding in the
//!   first, the head in the last) in 1F1B order over micro-batches (sequences); activations
//!   and their gradients travel between stage devices of the same replica and shard.
//! - **Data parallelism**: replicas take different sequences of each step's batch; gradients
//!   are summed over the devices holding each parameter, so every replica takes the same
//!   optimizer step.
//!
//! Every device starts from the same initial parameters (see
//! [`GraphTransformer::initialised`](crate::model::GraphTransformer::initialised)). A
//! worker that fails aborts the job on every device; the error names the rank.

mod best;
mod cache;
mod checkpointing;
mod evaluation;
mod grads;
mod layout;
mod memory_watch;
mod passes;
mod reports;
mod sender;
mod transfer;
mod worker;

pub use cache::device_cache_bytes;
pub use checkpointing::CheckpointOptions;
pub(crate) use layout::split_rows;
pub use layout::{Layout, Role};
pub use megagraph_planner::{Pass, one_forward_one_backward};
pub use sender::SYNC_TRANSFERS_VAR;
pub use worker::epoch_batches;

/// What the name of the thread that drives a device's work begins with (the device's rank
/// follows). Its panics are caught and reported as the device's error; a process may treat a
/// panic on any other thread but its main one as fatal (see `megagraph`'s panic hook).
pub const WORKER_THREAD_PREFIX: &str = "megagraph-device-";

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use crate::{
    EngineError,
    comm::{CommError, Communicator, LocalHub, Rank},
    device::MemoryProbe,
    graph::{Graph, Split},
    kernels::shaders::Shader,
    model::{ModelBackend, ModelConfig},
    run::{EpochMetrics, Sequences, TrainOptions, TrainReport, training_sequences},
};
use burn::tensor::backend::{AutodiffBackend, Backend};
use worker::{Job, Worker, WorkerOutcome};

/// Trains on `graph` with `split` under `layout`, device `r` of the plan being `devices[r]`,
/// all in this process, calling `on_epoch` after every epoch.
pub fn train_parallel<B>(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    layout: &Layout,
    devices: &[B::Device],
    on_epoch: &mut dyn FnMut(&EpochMetrics),
) -> Result<TrainReport, EngineError>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    if devices.len() < layout.size() {
        return Err(EngineError::Plan(format!(
            "the plan is for {} devices but {} were opened",
            layout.size(),
            devices.len()
        )));
    }
    let hub = LocalHub::new(layout.size());
    let local = layout
        .ranks()
        .into_iter()
        .map(|rank| {
            Ok(LocalDevice {
                rank,
                device: devices[rank].clone(),
                comm: Arc::new(hub.communicator(rank)?),
            })
        })
        .collect::<Result<Vec<_>, CommError>>()?;
    let run = JobRun {
        layout,
        checkpoint: &CheckpointOptions::default(),
    };
    let report = train_devices::<B>(graph, split, options, &run, local, on_epoch)?;
    Ok(report.expect("the lead device runs in this process"))
}

/// A device of the plan that this process drives, with its end of the job's communicator.
#[derive(Debug)]
pub struct LocalDevice<B: Backend> {
    /// The device's rank in the plan.
    pub rank: Rank,
    /// The device.
    pub device: B::Device,
    /// Its communicator.
    pub comm: Arc<dyn Communicator>,
}

/// How a job runs: its plan and its checkpoints.
#[derive(Debug, Clone, Copy)]
pub struct JobRun<'a> {
    /// The plan.
    pub layout: &'a Layout,
    /// Where and how often state is saved, and whether the run resumes.
    pub checkpoint: &'a CheckpointOptions,
}

/// Trains the devices `local` of `run`'s plan: every device of the plan when one process
/// drives them all, this process's share of them under MPI (every process calls this with
/// its own). `on_epoch` is called after every epoch in the process of the lead device
/// (replica 0, stage 0, shard 0), which returns the report; the others return `None`.
pub fn train_devices<B>(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    run: &JobRun<'_>,
    local: Vec<LocalDevice<B>>,
    on_epoch: &mut dyn FnMut(&EpochMetrics),
) -> Result<Option<TrainReport>, EngineError>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    let start = Instant::now();
    let layout = run.layout;
    let config = options.model_config(graph);
    config.validate()?;
    options.validate()?;
    run.checkpoint.validate()?;
    if let Some(device) = local.iter().find(|d| layout.role(d.rank).is_none()) {
        return Err(EngineError::Plan(format!(
            "device {} was given a worker but the plan does not use it",
            device.rank
        )));
    }
    let sequences = training_sequences(graph, split, options)?;
    let devices: Vec<(Rank, &B::Device)> = local.iter().map(|d| (d.rank, &d.device)).collect();
    check_kernels_bind::<B>(&config, &devices)?;
    check_shards_fit::<B>(graph, layout, &config, &sequences, &devices)?;
    let job = Job {
        graph,
        sequences: &sequences,
        options,
        config: &config,
        layout,
        checkpoint: run.checkpoint,
    };
    let lead = layout.device(0, 0, 0);
    let local_lead = local.iter().any(|d| d.rank == lead);
    let (progress, epochs) = mpsc::channel();
    let results: Vec<Result<WorkerOutcome, EngineError>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for LocalDevice { rank, device, comm } in local {
            let progress = (rank == lead).then(|| progress.clone());
            let job = &job;
            let worker = std::thread::Builder::new()
                .name(format!("{WORKER_THREAD_PREFIX}{rank}"))
                .spawn_scoped(scope, move || {
                    run_guarded::<B>(job, rank, device, comm, progress)
                })
                .expect("the system starts a thread per device");
            handles.push(worker);
        }
        drop(progress);
        let mut first = local_lead.then(|| {
            crate::progress::task("the first epoch (its first steps compile and tune the kernels)")
        });
        for metrics in epochs {
            first.take();
            on_epoch(&metrics);
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("worker panics are caught inside the worker")
            })
            .collect()
    });
    let outcomes = first_cause(results)?;
    Ok(outcomes
        .into_iter()
        .find(|o| o.rank == lead)
        .map(|lead| report(lead, sequences.len(), start)))
}

/// Refuses, before any work, a device whose adapter binds fewer storage buffers per shader
/// than a kernel of `config` needs (OpenGL drivers may allow as few as 8; the hops kernels
/// bind 14), naming the device, its adapter and the kernel.
pub(crate) fn check_kernels_bind<B: MemoryProbe>(
    config: &ModelConfig,
    devices: &[(Rank, &B::Device)],
) -> Result<(), EngineError> {
    let Some(widest) = Shader::run_by(config)
        .into_iter()
        .max_by_key(|shader| shader.storage_buffers())
    else {
        return Ok(());
    };
    for &(rank, device) in devices {
        if let Some(limit) = B::storage_buffer_limit(device) {
            let adapter = B::adapter_name(device).unwrap_or_default();
            refuse_narrow_adapter(rank, &adapter, limit, widest)?;
        }
    }
    Ok(())
}

/// The refusal of [`check_kernels_bind`] for device `rank` on `adapter`, which binds `limit`
/// storage buffers per shader, if `widest` needs more.
fn refuse_narrow_adapter(
    rank: Rank,
    adapter: &str,
    limit: u32,
    widest: Shader,
) -> Result<(), EngineError> {
    let needed = widest.storage_buffers();
    if needed <= limit {
        return Ok(());
    }
    Err(EngineError::Plan(format!(
        "device {rank} ({adapter}) binds at most {limit} storage buffers per shader, but {} needs {needed}: put it on another adapter (another graphics API of the same card may allow more) or train with --attention reference",
        widest.file_name()
    )))
}

/// Checks before any work that every device can allocate the largest buffer of its shard of
/// every sequence (see [`HostSequence::largest_buffers`](crate::model::HostSequence)). An
/// allocation beyond the limit does not fail cleanly on every backend (cubecl's wgpu server
/// panics on its own thread and the kernels then read an unbound buffer), so it must never be
/// attempted.
pub(crate) fn check_shards_fit<B: MemoryProbe>(
    graph: &Graph,
    layout: &Layout,
    config: &ModelConfig,
    sequences: &Sequences,
    devices: &[(Rank, &B::Device)],
) -> Result<(), EngineError> {
    let task = crate::progress::task(format!(
        "building the attention pairs of {} sequence(s) and checking their shards",
        sequences.len()
    ));
    let total = (devices.len() * sequences.len()) as u64;
    for (d, &(rank, device)) in devices.iter().enumerate() {
        let Some(limit) = B::max_buffer_bytes(device) else {
            continue;
        };
        let role = layout.role(rank).expect("ranks have roles");
        for index in 0..sequences.len() {
            task.advance((d * sequences.len() + index) as u64, total);
            let nodes = sequences.get(index).nodes.len();
            let rows = layout.shard_rows(role.replica, role.stage, nodes)?;
            let ranges: Vec<_> = (0..rows.len())
                .map(|c| Layout::shard_range(&rows, c))
                .collect();
            let host = sequences.host(index, graph);
            check_buffers(&host, config, &ranges[role.shard], rank, limit)?;
        }
    }
    Ok(())
}

/// Refuses the rows `range` of `host` on device `rank` if one of their buffers exceeds
/// `limit` bytes.
fn check_buffers(
    host: &crate::model::HostSequence,
    config: &ModelConfig,
    range: &std::ops::Range<usize>,
    rank: Rank,
    limit: u64,
) -> Result<(), EngineError> {
    match host
        .largest_buffers(config, range)
        .into_iter()
        .find(|&(_, needed)| needed > limit)
    {
        Some((what, needed)) => Err(EngineError::ShardTooLarge {
            rank,
            nodes: host.len(),
            rows: range.len(),
            what,
            needed,
            limit,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Shader, check_buffers, refuse_narrow_adapter};

    #[test]
    fn an_adapter_binding_too_few_storage_buffers_is_refused_by_name() {
        let config = ModelConfig {
            scope: "hops:2".parse().expect("a scope"),
            ..ModelConfig::new(8, 2)
        };
        let widest = Shader::run_by(&config)
            .into_iter()
            .max_by_key(|s| s.storage_buffers())
            .expect("fused kernels");
        assert_eq!(widest.storage_buffers(), 14, "the hops backward kernels");
        assert!(refuse_narrow_adapter(1, "card | gl", 16, widest).is_ok());
        let refused = refuse_narrow_adapter(1, "card | gl", 8, widest)
            .expect_err("8 < 14")
            .to_string();
        assert!(
            refused.contains("device 1 (card | gl) binds at most 8 storage buffers per shader, but hops_backward_"),
            "{refused}"
        );
        let full = ModelConfig::new(8, 2);
        assert!(
            Shader::run_by(&full)
                .iter()
                .all(|s| s.storage_buffers() <= 11),
            "the dense kernels bind at most 11"
        );
        let reference = ModelConfig {
            attention: crate::model::AttentionKernel::Reference,
            ..full
        };
        assert!(Shader::run_by(&reference).is_empty());
    }
    use crate::graph::SyntheticSpec;
    use crate::model::{AttentionScope, HostSequence, ModelConfig};

    #[test]
    fn near_pairs_beyond_the_buffer_limit_are_refused_with_what_would_fit()
    -> Result<(), Box<dyn std::error::Error>> {
        let graph = "sbm:200:2".parse::<SyntheticSpec>()?.generate(1)?;
        let config = ModelConfig {
            scope: "hops:3:64".parse::<AttentionScope>()?,
            global_tokens: 1,
            hidden: 8,
            heads: 2,
            ffn_hidden: 8,
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        };
        let host = HostSequence::new(&graph, (0..200).collect(), &config);
        let pairs: u64 = (0..200)
            .map(|i| match &host.pairs {
                crate::model::SequencePairs::Near(near) => near.row(i).0.len() as u64 + 1,
                crate::model::SequencePairs::Dense(_) => unreachable!("a hops scope"),
            })
            .sum();
        check_buffers(&host, &config, &(0..200), 0, 4 * pairs)?;
        let limit = 4 * pairs - 4;
        let refused = check_buffers(&host, &config, &(0..200), 3, limit)
            .expect_err("one pair too many")
            .to_string();
        assert!(
            refused.contains(&format!("{}-byte near-pair buffer", 4 * pairs))
                && refused.contains(&format!("at most {} near pairs fit", limit / 4))
                && refused.starts_with("device 3 cannot hold its shard of a 200-node sequence"),
            "{refused}"
        );
        Ok(())
    }
}

/// Runs one worker, turning a panic into an error and aborting the job on any failure so that
/// no other worker waits forever.
fn run_guarded<B>(
    job: &Job<'_>,
    rank: usize,
    device: B::Device,
    comm: Arc<dyn Communicator>,
    progress: Option<mpsc::Sender<EpochMetrics>>,
) -> Result<WorkerOutcome, EngineError>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    let result = catch_unwind(AssertUnwindSafe(|| {
        Worker::<B>::new(job, rank, device, comm.clone()).run(progress)
    }));
    let result = match result {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(EngineError::Worker { rank, message })
        }
    };
    if let Err(error) = &result {
        comm.abort(&error.to_string());
    }
    result
}

/// The workers' outcomes, or the error that caused the others (an abort is a consequence).
fn first_cause(
    results: Vec<Result<WorkerOutcome, EngineError>>,
) -> Result<Vec<WorkerOutcome>, EngineError> {
    let mut errors: Vec<EngineError> = Vec::new();
    let mut outcomes = Vec::new();
    for result in results {
        match result {
            Ok(outcome) => outcomes.push(outcome),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        return Ok(outcomes);
    }
    let is_consequence = |e: &EngineError| matches!(e, EngineError::Comm(CommError::Aborted(_)));
    let index = errors.iter().position(|e| !is_consequence(e)).unwrap_or(0);
    Err(errors.swap_remove(index))
}

/// The run's report from the lead worker's outcome.
fn report(lead: WorkerOutcome, sequences: usize, start: Instant) -> TrainReport {
    let history = lead.history;
    let best = history
        .iter()
        .fold(None::<&EpochMetrics>, |best, m| match best {
            Some(b) if b.val_acc >= m.val_acc => Some(b),
            _ => Some(m),
        })
        .expect("at least one epoch ran: epochs >= 1 is validated")
        .clone();
    let devices = lead.devices.unwrap_or_default();
    TrainReport {
        test_acc: best.test_acc,
        val_acc: best.val_acc,
        best_epoch: best.epoch,
        final_loss: history.last().map_or(f64::NAN, |m| m.loss),
        epochs: history.len(),
        seconds: start.elapsed().as_secs_f64(),
        peak_device_bytes: devices.iter().filter_map(|d| d.peak_bytes).collect(),
        sequences,
        step_losses: lead.step_losses,
        parameters: lead.parameters.unwrap_or_default(),
        devices,
        history,
    }
}
