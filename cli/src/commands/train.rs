//! `megagraph train`: train a Graph Transformer on one device, or on several under a plan.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use megagraph_engine::{
    burn::tensor::backend::AutodiffBackend,
    comm::LocalHub,
    device::{
        AdapterSelector, CpuAutodiff, MemoryProbe, WgpuAutodiff, describe_adapter, list_adapters,
        open_wgpu,
    },
    graph::{Graph, Split, split},
    infer::{Holds, Trained},
    memory::{Bytes, check_host},
    model::{AttentionKernel, AttentionScope, ModelBackend, ModelConfig},
    parallel::{CheckpointOptions, JobRun, Layout, LocalDevice, train_devices},
    train::{TrainOptions, TrainReport, sequence_footprint},
};
use megagraph_planner::{Degrees, ParallelConfig, Plan, Stage};

use crate::{data, plan_source, progress::EpochProgress};

#[cfg(feature = "mpi")]
mod mpi;

/// Which burn backend runs the model.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendChoice {
    /// wgpu (Vulkan, Metal, DX12, GL): a real GPU, or Mesa's lavapipe on a CPU.
    Wgpu,
    /// burn's ndarray CPU backend (a reference).
    Ndarray,
}

/// Which attention implementation the model uses.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AttentionChoice {
    /// Fused WGSL kernels: no S×S matrix in device memory.
    Fused,
    /// Plain burn ops, materialising S×S scores (the test oracle).
    Reference,
}

impl From<AttentionChoice> for AttentionKernel {
    fn from(choice: AttentionChoice) -> Self {
        match choice {
            AttentionChoice::Fused => AttentionKernel::Fused,
            AttentionChoice::Reference => AttentionKernel::Reference,
        }
    }
}

/// Options of `megagraph train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// A graph file: an .npz in the CSR layout of shchur/gnn-benchmark, or an OGB raw CSV directory.
    #[arg(long, conflicts_with = "synthetic")]
    data: Option<PathBuf>,
    /// A generated graph, e.g. sbm:NODES:CLASSES.
    #[arg(long)]
    synthetic: Option<String>,
    /// random:TRAIN:VAL (fractions; the rest is test) or per-class:K (Planetoid protocol).
    #[arg(long, default_value = "random:0.6:0.2")]
    split: String,
    /// Largest number of epochs (early stopping on validation accuracy may end sooner).
    #[arg(long, default_value_t = 200)]
    epochs: usize,
    /// Epochs without a better validation accuracy before stopping.
    #[arg(long, default_value_t = 50)]
    patience: usize,
    /// Evaluate (train/validation/test accuracy, early stopping, --save-model) after every N
    /// epochs and after the last one.
    #[arg(long, default_value_t = 1, value_name = "N")]
    eval_every: usize,
    /// Transformer layers.
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Hidden width.
    #[arg(long, default_value_t = 64)]
    hidden: usize,
    /// Attention heads (must divide --hidden).
    #[arg(long, default_value_t = 4)]
    heads: usize,
    /// Largest number of nodes in one sequence; larger graphs are partitioned (METIS).
    #[arg(long, default_value_t = 1024)]
    seq_len: usize,
    /// Sequences per optimizer step (default 1, the dp of --degrees, or a --plan's own). Each
    /// of the plan's dp replicas runs batch / dp of them, one per micro-batch, so every plan of
    /// one batch trains the same steps as one device does.
    #[arg(long, value_name = "B")]
    batch: Option<usize>,
    /// Adam learning rate.
    #[arg(long, default_value_t = 5e-3)]
    lr: f64,
    /// Seed of initialisation, dropout, split and partitioning.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Which pairs attend: full (every pair of a sequence) or hops:K[:MAX] (each node its
    /// K-hop neighbourhood, itself included, at most MAX pairs, nearest first; MAX defaults to
    /// 256), plus --global-tokens learned tokens.
    #[arg(long, default_value = "full", value_name = "full|hops:K[:MAX]")]
    scope: AttentionScope,
    /// Learned global tokens that attend to and are attended by every node (hops scope;
    /// default 1 there, 0 under full).
    #[arg(long, value_name = "G")]
    global_tokens: Option<usize>,
    /// Attention implementation: the fused WGSL kernels or the reference burn-op composition.
    #[arg(long, value_enum, default_value = "fused")]
    attention: AttentionChoice,
    /// Backend that runs the model.
    #[arg(long, value_enum, default_value = "wgpu")]
    backend: BackendChoice,
    /// The adapter to train on, from `megagraph devices`: its position, API:N (e.g. gl:0) or its
    /// id API:NAME#N (default: the first listed). Repeat it for a job over several adapters
    /// (each one device, any mix of graphics APIs), planned as --devices is.
    #[arg(long, value_name = "ADAPTER")]
    adapter: Vec<AdapterSelector>,
    /// Train on N logical devices of the adapter; without --plan, under the plan the planner
    /// finds from a fresh profile of them.
    #[arg(long)]
    devices: Option<usize>,
    /// Run this plan (from `megagraph plan --out`); its devices are the adapters, or the
    /// --devices logical devices.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Memory of each device in bytes, for the profile behind --devices without --plan.
    #[arg(long, requires = "devices", conflicts_with_all = ["plan", "cluster"])]
    device_memory: Option<u64>,
    /// Plan on this cluster spec (from `megagraph profile`) instead of profiling now; its
    /// devices are the adapters, or as many logical devices when it lists more.
    #[arg(long, conflicts_with = "plan")]
    cluster: Option<PathBuf>,
    /// Plan these degrees (e.g. dp1-pp2-cp2) instead of searching all.
    #[arg(long, conflicts_with = "plan")]
    degrees: Option<Degrees>,
    /// Stop after N optimizer steps in all (then evaluate once); counts the steps before a
    /// --resume.
    #[arg(long, value_name = "N")]
    steps: Option<usize>,
    /// Dropout probability of the input and of every layer (default: the model's 0.5).
    #[arg(long)]
    dropout: Option<f64>,
    /// Save model, optimizer state, position and records into DIR (see README, Checkpoints).
    #[arg(long, value_name = "DIR")]
    checkpoint: Option<PathBuf>,
    /// Save a checkpoint after every N optimizer steps.
    #[arg(long, value_name = "N", default_value_t = 50, requires = "checkpoint")]
    checkpoint_every: usize,
    /// Checkpoints kept in DIR; older ones are deleted after each save.
    #[arg(long, value_name = "K", default_value_t = 3, requires = "checkpoint")]
    keep_checkpoints: usize,
    /// Continue from the newest valid checkpoint of --checkpoint DIR (under any plan).
    #[arg(long, requires = "checkpoint")]
    resume: bool,
    /// Seconds a device waits for a message from another before declaring it hung or gone
    /// (at least 900 during its first epoch, which compiles and autotunes its kernels).
    #[arg(long, value_name = "SECONDS", default_value_t = 900.0)]
    comm_timeout: f64,
    /// Under mpirun: all-reduce gradients with MPI's own MPI_Allreduce where a group has one
    /// device on every process, instead of the deterministic ring. Faster on some networks;
    /// the sums' order is MPI's, so losses are not bit-reproducible across process counts, and
    /// a hung process hangs the others there (no --comm-timeout inside MPI).
    #[arg(long)]
    fast_allreduce: bool,
    /// Write the parameters of the best validation epoch (no optimizer state) with the run's
    /// settings to FILE, a safetensors file that `predict` and `evaluate` read.
    #[arg(long, value_name = "FILE")]
    save_model: Option<PathBuf>,
    /// Print the final result as one JSON object on the last line.
    #[arg(long)]
    json: bool,
    /// Show progress on standard error even with --json (which is quiet otherwise).
    #[arg(long)]
    progress: bool,
    /// Write training.svg, devices.svg, metrics.json and index.html of the run into DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

/// `--comm-timeout` as a duration: positive, finite, and within what a `Duration` holds.
pub(super) fn comm_timeout(args: &TrainArgs) -> anyhow::Result<Duration> {
    match Duration::try_from_secs_f64(args.comm_timeout) {
        Ok(timeout) if !timeout.is_zero() => Ok(timeout),
        _ => anyhow::bail!(
            "--comm-timeout must be a positive number of seconds up to {:e}, got {:e}",
            Duration::MAX.as_secs_f64(),
            args.comm_timeout
        ),
    }
}

/// What every way of training starts from, checked: the graph, the options, its split and
/// the checkpoint options. The entry points (one device, a plan in this process, a plan under
/// `mpirun`) take it whole.
pub(super) struct Prepared {
    graph: Graph,
    options: TrainOptions,
    split: Split,
    checkpoint: CheckpointOptions,
}

/// Loads the graph and checks every option before any device work; with `writes`, also that
/// the `--save-model` file can be written (where the lead device runs).
pub(super) fn prepare(args: &TrainArgs, writes: bool) -> anyhow::Result<Prepared> {
    let graph = data::load(args.data.as_deref(), args.synthetic.as_deref(), args.seed)?;
    let options = train_options(args, &graph)?;
    let split = split(&graph, &options.split, options.seed)?;
    options.model_config(&graph).validate()?;
    options.validate()?;
    if args.steps == Some(0) {
        anyhow::bail!("--steps must be at least 1");
    }
    check_batch(args, &graph)?;
    comm_timeout(args)?;
    check_software_devices(args, &graph, &options)?;
    let checkpoint = checkpoint_options(args);
    checkpoint.validate()?;
    if let Some(path) = args.save_model.as_ref().filter(|_| writes) {
        data::check_writable("--save-model", path)?;
    }
    Ok(Prepared {
        graph,
        options,
        split,
        checkpoint,
    })
}

/// Sequences per optimizer step: `--batch`, else the dp of `--degrees`, else 1 (a `--plan`
/// brings its own, see [`resolve_plan`]).
pub(super) fn batch(args: &TrainArgs) -> usize {
    args.batch
        .or(args.degrees.map(|degrees| degrees.dp))
        .unwrap_or(1)
}

/// Refuses a `--batch` of no sequences, and a batch (asked, or the dp of `--degrees`) of more
/// than the graph's sequences.
fn check_batch(args: &TrainArgs, graph: &Graph) -> anyhow::Result<()> {
    if args.batch == Some(0) {
        anyhow::bail!("--batch must be at least 1");
    }
    let sequences = plan_source::sequence_count(graph, args.seq_len);
    let batch = batch(args);
    if batch > sequences {
        anyhow::bail!(
            "a batch of {batch} sequences (--batch, or the dp of --degrees) exceeds the graph's {sequences} sequence(s) of --seq-len {}: a step would repeat sequences",
            args.seq_len
        );
    }
    Ok(())
}

/// Refuses, before any device work, a run on software adapters (lavapipe, llvmpipe's GL: their
/// device memory is the host's) whose sequences' host data plus their copy on each of their
/// devices exceed what the host has available. (wgpu reports no memory size for a GPU: plans are checked against
/// the memory their cluster declares or `profile` measured.)
fn check_software_devices(
    args: &TrainArgs,
    graph: &Graph,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    if !matches!(args.backend, BackendChoice::Wgpu) || args.plan.is_some() || args.cluster.is_some()
    {
        return Ok(());
    }
    let described = match args.adapter.as_slice() {
        [] => vec![describe_adapter(None)],
        named => named.iter().map(|a| describe_adapter(Some(a))).collect(),
    };
    let software: Vec<_> = described
        .into_iter()
        .flatten()
        .filter(|a| a.device_type == "Cpu")
        .collect();
    let Some(adapter) = software.first() else {
        return Ok(());
    };
    // `--devices N` opens N logical devices of the one adapter; several `--adapter`s one
    // device each, of which the software ones share the host's memory.
    let devices = args.devices.unwrap_or(software.len()) as u64;
    let footprint = sequence_footprint(graph, options);
    let needed = footprint
        .host
        .saturating_add(footprint.device.saturating_mul(devices));
    let what = format!(
        "the sequences of {} nodes on the host and on {devices} device(s) of {} (a software adapter: its memory is the host's)",
        graph.num_nodes(),
        adapter.name
    );
    Ok(check_host(what, needed)?)
}

/// Loads the graph, trains and reports.
pub fn run(args: &TrainArgs) -> anyhow::Result<()> {
    crate::progress::install(args.json, args.progress);
    #[cfg(feature = "mpi")]
    if megagraph_engine::comm::launched_by_mpirun() {
        return mpi::run(args);
    }
    if args.fast_allreduce {
        anyhow::bail!(
            "--fast-allreduce applies under mpirun only: it all-reduces with MPI_Allreduce between processes"
        );
    }
    let prepared = prepare(args, true)?;
    if args.plan.is_some()
        || args.devices.is_some()
        || args.cluster.is_some()
        || args.adapter.len() > 1
    {
        return run_plan(args, &prepared);
    }
    match args.backend {
        BackendChoice::Wgpu => {
            let adapter = describe_adapter(args.adapter.first())?;
            let device = open_wgpu(Some(&adapter.selector()))?;
            let name = format!("{} ({})", adapter.name, adapter.backend);
            run_one_device::<WgpuAutodiff>(args, &prepared, device, &name)
        }
        BackendChoice::Ndarray => {
            let device = Default::default();
            let name = "ndarray cpu";
            run_one_device::<CpuAutodiff>(args, &prepared, device, name)
        }
    }
}

/// The training options of the arguments, for `graph`.
fn train_options(args: &TrainArgs, graph: &Graph) -> anyhow::Result<TrainOptions> {
    let dropout = args.dropout.unwrap_or(ModelConfig::new(0, 0).dropout);
    Ok(TrainOptions {
        max_steps: args.steps,
        epochs: args.epochs,
        patience: args.patience,
        eval_every: args.eval_every,
        learning_rate: args.lr,
        seq_len: args.seq_len,
        seed: args.seed,
        split: args.split.parse()?,
        model: ModelConfig {
            layers: args.layers,
            hidden: args.hidden,
            heads: args.heads,
            ffn_hidden: 2 * args.hidden,
            attention: args.attention.into(),
            dropout,
            input_dropout: dropout,
            scope: args.scope,
            global_tokens: args
                .global_tokens
                .unwrap_or(args.scope.default_global_tokens()),
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        },
        ..TrainOptions::default()
    })
}

/// The checkpoint options of the arguments.
fn checkpoint_options(args: &TrainArgs) -> CheckpointOptions {
    CheckpointOptions {
        dir: args.checkpoint.clone(),
        every: if args.checkpoint.is_some() {
            args.checkpoint_every
        } else {
            0
        },
        keep: args.keep_checkpoints,
        resume: args.resume,
        save_model: args.save_model.clone(),
    }
}

/// The plan of the arguments (`--plan`, or planned on `--cluster` or a fresh profile).
pub(super) fn resolve_plan(
    args: &TrainArgs,
    graph: &Graph,
    options: &TrainOptions,
) -> anyhow::Result<Plan> {
    if matches!(args.backend, BackendChoice::Ndarray) {
        anyhow::bail!("--plan and --devices run on wgpu devices; drop --backend ndarray");
    }
    let max_cp = args.devices.unwrap_or_else(|| match args.adapter.len() {
        0 => list_adapters().len().max(1),
        named => named,
    });
    let model = plan_source::model_spec(graph, options, max_cp, batch(args))?;
    let request = plan_source::PlanRequest {
        plan: args.plan.as_deref(),
        cluster: args.cluster.as_deref(),
        degrees: args.degrees,
        devices: args.devices,
        adapters: &args.adapter,
        device_memory: args.device_memory,
    };
    let plan = plan_source::resolve(request, &model)?;
    plan_source::check(&plan, &model)?;
    let planned = plan.config.degrees.dp * plan.config.micro_batches;
    if let Some(asked) = args.batch.filter(|&asked| asked != planned) {
        anyhow::bail!(
            "the plan runs {planned} sequence(s) per step (dp × micro-batches), --batch asks {asked}: drop --batch or plan for it"
        );
    }
    Ok(plan)
}

/// Trains under a plan over several wgpu devices of this process.
fn run_plan(args: &TrainArgs, prepared: &Prepared) -> anyhow::Result<()> {
    let options = &prepared.options;
    let plan = resolve_plan(args, &prepared.graph, options)?;
    let planned = plan.processes.len();
    let logical = plan_source::logical_count(
        args.devices,
        args.cluster.as_deref(),
        planned,
        !plan.adapters.is_empty(),
    );
    let devices = plan_source::open_devices(&args.adapter, logical, &plan.adapters)?;
    let layout = Layout::new(plan.config.clone(), devices.len(), options.model.layers)?;
    let hub = LocalHub::with_timeout(layout.size(), comm_timeout(args)?);
    let local = layout
        .ranks()
        .into_iter()
        .map(|rank| {
            Ok(LocalDevice::<WgpuAutodiff> {
                rank,
                device: devices[rank].clone(),
                comm: Arc::new(hub.communicator(rank)?),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let name = format!("{} wgpu devices", layout.ranks().len());
    let finished = run_job(args, prepared, &layout, local, Some(&plan))?;
    let finished = finished.expect("the lead device runs in this process");
    finished.show(args, options, &name, Some(&plan))
}

/// Trains on one device (of either backend) through the plan executor, which also saves
/// and resumes checkpoints and the best model.
fn run_one_device<B>(
    args: &TrainArgs,
    prepared: &Prepared,
    device: B::Device,
    name: &str,
) -> anyhow::Result<()>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    let options = &prepared.options;
    let config = ParallelConfig {
        degrees: "dp1-pp1-cp1".parse()?,
        stages: vec![Stage {
            layers: [0, options.model.layers],
            devices: vec![vec![0]],
        }],
        node_shares: vec![1.0],
        micro_batches: batch(args),
    };
    let layout = Layout::new(config, 1, options.model.layers)?;
    let local = vec![LocalDevice::<B> {
        rank: 0,
        device,
        comm: Arc::new(LocalHub::new(1).communicator(0)?),
    }];
    let finished = run_job(args, prepared, &layout, local, None)?;
    let finished = finished.expect("the lead device runs in this process");
    finished.show(args, options, name, None)
}

/// Trains this process's devices (`local`) of the job laid out as `layout`, showing progress
/// where the lead device runs; returns the report there.
pub(super) fn run_job<B>(
    args: &TrainArgs,
    prepared: &Prepared,
    layout: &Layout,
    local: Vec<LocalDevice<B>>,
    plan: Option<&Plan>,
) -> anyhow::Result<Option<Finished>>
where
    B: AutodiffBackend + MemoryProbe + ModelBackend,
    B::InnerBackend: ModelBackend,
{
    let Prepared {
        graph,
        options,
        split,
        checkpoint,
    } = prepared;
    let run = JobRun { layout, checkpoint };
    let lead_here = local.iter().any(|d| d.rank == layout.device(0, 0, 0));
    let target = lead_here
        .then(|| crate::report::ReportTarget::prepare(args.report.as_deref()))
        .flatten();
    if lead_here {
        describe(graph, split, options);
        if let Some(plan) = plan {
            eprintln!(
                "plan {} over {} devices, {} micro-batches",
                plan.config.degrees,
                layout.ranks().len(),
                layout.micro_batches()
            );
        }
    }
    let shown = lead_here && crate::progress::shown(args.json, args.progress);
    let mut progress = shown.then(|| EpochProgress::new(args.epochs));
    let mut on_epoch = |m: &_| {
        if let Some(progress) = &mut progress {
            progress.epoch(m);
        }
    };
    let report = train_devices::<B>(graph, split, options, &run, local, &mut on_epoch)?;
    if let Some(progress) = progress {
        progress.finish();
    }
    Ok(report.map(|report| Finished { report, target }))
}

/// A finished run's report, and where to write its report directory.
pub(super) struct Finished {
    report: TrainReport,
    target: Option<crate::report::ReportTarget>,
}

impl Finished {
    /// Prints the report and writes the report directory when asked.
    pub(super) fn show(
        &self,
        args: &TrainArgs,
        options: &TrainOptions,
        name: &str,
        plan: Option<&Plan>,
    ) -> anyhow::Result<()> {
        print_report(&self.report, name, plan, args.json);
        if let Some(path) = &args.save_model {
            say_saved_model(path, &self.report);
        }
        match &self.target {
            Some(target) => target.write(options, &self.report, name, plan),
            None => Ok(()),
        }
    }
}

/// Says which epoch the `--save-model` file holds, or why it is not the best one.
fn say_saved_model(path: &std::path::Path, report: &TrainReport) {
    match Trained::load(path).map(|t| t.holds) {
        Ok(Holds::BestEpoch(m)) if m.epoch == report.best_epoch => eprintln!(
            "saved model: {} holds epoch {} (val_acc {:.4})",
            path.display(),
            m.epoch,
            m.val_acc
        ),
        Ok(holds) => eprintln!(
            "warning: {} holds {holds}, not the best epoch {} (it came before this run resumed, without --save-model then)",
            path.display(),
            report.best_epoch
        ),
        Err(e) => eprintln!(
            "warning: no saved model in {} (the best epoch {} came before this run resumed, without --save-model then): {e}",
            path.display(),
            report.best_epoch
        ),
    }
}

/// One line about the graph, the split and the memory its sequences take.
fn describe(graph: &Graph, split: &Split, options: &TrainOptions) {
    let footprint = sequence_footprint(graph, options);
    eprintln!(
        "graph {}: {} nodes, {} edges, {} features, {} classes; split {}: {} train / {} val / {} test; sequences of up to {} nodes: about {} of host memory, {} per device",
        graph.name(),
        graph.num_nodes(),
        graph.adjacency().num_edges(),
        graph.feature_dim(),
        graph.num_classes(),
        options.split,
        split.train.len(),
        split.val.len(),
        split.test.len(),
        options.sequence_nodes(graph),
        Bytes(footprint.host),
        Bytes(footprint.device),
    );
}

/// Per device: what was measured, beside the plan's prediction when there is one.
fn device_rows(report: &TrainReport, plan: Option<&Plan>) -> Vec<serde_json::Value> {
    report
        .devices
        .iter()
        .map(|d| {
            let predicted = plan.and_then(|p| p.prediction.devices.get(d.rank));
            serde_json::json!({
                "rank": d.rank,
                "adapter": d.adapter,
                "step_seconds": d.step_seconds,
                "peak_bytes": d.peak_bytes,
                "peak_in_use_bytes": d.peak_in_use_bytes,
                "sent_bytes_per_step": d.sent_bytes_per_step,
                "step_sent_bytes": d.step_sent_bytes,
                "transfer_seconds_per_step": d.transfer_seconds_per_step,
                "hidden_transfer_seconds_per_step": d.hidden_transfer_seconds_per_step,
                "exchange_seconds_per_step": d.exchange_seconds_per_step,
                "hidden_exchange_seconds_per_step": d.hidden_exchange_seconds_per_step,
                "predicted_sent_bytes": predicted.map(|p| p.sent_bytes),
                "predicted_step_seconds": predicted.map(|p| p.step_seconds),
                "predicted_peak_bytes": predicted.map(|p| p.peak_bytes),
            })
        })
        .collect()
}

fn print_report(report: &TrainReport, device: &str, plan: Option<&Plan>, json: bool) {
    eprintln!(
        "best epoch {} of {}: val_acc {:.4}  test_acc {:.4}  final loss {:.4}  {:.1} s on {device}",
        report.best_epoch,
        report.epochs,
        report.val_acc,
        report.test_acc,
        report.final_loss,
        report.seconds
    );
    if json {
        println!(
            "{}",
            serde_json::json!({
                "test_acc": report.test_acc,
                "val_acc": report.val_acc,
                "final_loss": report.final_loss,
                "epochs": report.epochs,
                "best_epoch": report.best_epoch,
                "seconds": report.seconds,
                "peak_device_bytes": report.peak_device_bytes,
                "sequences": report.sequences,
                "device": device,
                "plan": plan.map(|p| p.config.degrees.to_string()),
                "devices": device_rows(report, plan),
                "step_losses": report.step_losses,
                "history": report.history,
            })
        );
    }
}
