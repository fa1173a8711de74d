//! `megagraph train`: train a Graph Transformer on one device, or on several under a plan.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use megagraph_engine::{
    device::{CpuAutodiff, WgpuAutodiff, list_adapters, open_wgpu},
    graph::{Graph, Split, SplitSpec, SyntheticSpec, load_graph, split},
    model::{AttentionKernel, ModelConfig},
    parallel::{Layout, train_parallel},
    train::{TrainOptions, TrainReport, train},
};
use megagraph_planner::{Degrees, Plan};

use crate::{plan_source, progress::EpochProgress};

/// The synthetic graph trained on when neither `--data` nor `--synthetic` is given.
const DEFAULT_SYNTHETIC: &str = "sbm:1000:4";

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
    /// Adam learning rate.
    #[arg(long, default_value_t = 5e-3)]
    lr: f64,
    /// Seed of initialisation, dropout, split and partitioning.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Attention implementation: the fused WGSL kernels or the reference burn-op composition.
    #[arg(long, value_enum, default_value = "fused")]
    attention: AttentionChoice,
    /// Backend that runs the model.
    #[arg(long, value_enum, default_value = "wgpu")]
    backend: BackendChoice,
    /// wgpu adapter index from `megagraph devices` (default: wgpu's preferred adapter).
    #[arg(long)]
    adapter: Option<usize>,
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
    /// Plan on this cluster spec (from `megagraph profile`) instead of profiling now.
    #[arg(long, requires = "devices", conflicts_with = "plan")]
    cluster: Option<PathBuf>,
    /// Plan these degrees (e.g. dp1-pp2-cp2) instead of searching all.
    #[arg(long, requires = "devices", conflicts_with = "plan")]
    degrees: Option<Degrees>,
    /// Print the final result as one JSON object on the last line.
    #[arg(long)]
    json: bool,
    /// Write training.svg, devices.svg, metrics.json and index.html of the run into DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

/// Loads the graph, trains and reports.
pub fn run(args: &TrainArgs) -> anyhow::Result<()> {
    let graph = load(args)?;
    let split_spec: SplitSpec = args.split.parse()?;
    let split = split(&graph, &split_spec, args.seed)?;
    let options = TrainOptions {
        epochs: args.epochs,
        patience: args.patience,
        learning_rate: args.lr,
        seq_len: args.seq_len,
        seed: args.seed,
        model: ModelConfig {
            layers: args.layers,
            hidden: args.hidden,
            heads: args.heads,
            ffn_hidden: 2 * args.hidden,
            attention: args.attention.into(),
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        },
        ..TrainOptions::default()
    };
    options.model_config(&graph).validate()?;
    options.validate()?;
    if args.plan.is_some() || args.devices.is_some() {
        return run_plan(args, &graph, &split, &options);
    }
    let wgpu_device = match args.backend {
        BackendChoice::Wgpu => Some(open_wgpu(args.adapter)?),
        BackendChoice::Ndarray => None,
    };
    describe(&graph, &split, &args.split);
    let report_target = crate::report::ReportTarget::prepare(args.report.as_deref());
    let mut progress = EpochProgress::new(args.epochs);
    let mut on_epoch = |m: &_| progress.epoch(m);
    let (report, device_name) = match wgpu_device {
        Some(device) => {
            let name = list_adapters()
                .into_iter()
                .nth(args.adapter.unwrap_or(0))
                .map_or_else(
                    || format!("{device:?}"),
                    |a| format!("{} ({})", a.name, a.backend),
                );
            let report = train::<WgpuAutodiff>(&graph, &split, &options, &device, &mut on_epoch)?;
            (report, name)
        }
        None => {
            let device = Default::default();
            let report = train::<CpuAutodiff>(&graph, &split, &options, &device, &mut on_epoch)?;
            (report, "ndarray cpu".to_string())
        }
    };
    progress.finish();
    print_report(&report, &device_name, None, args.json);
    match report_target {
        Some(target) => target.write(&options, &report, &device_name, None),
        None => Ok(()),
    }
}

/// Trains under a plan over several wgpu devices.
fn run_plan(
    args: &TrainArgs,
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    if matches!(args.backend, BackendChoice::Ndarray) {
        anyhow::bail!("--plan and --devices run on wgpu devices; drop --backend ndarray");
    }
    let model = plan_source::model_spec(graph, options);
    let request = plan_source::PlanRequest {
        plan: args.plan.as_deref(),
        cluster: args.cluster.as_deref(),
        degrees: args.degrees,
        devices: args.devices,
        device_memory: args.device_memory,
    };
    let plan = plan_source::resolve(request, &model)?;
    plan_source::check(&plan, &model)?;
    let devices = plan_source::open_devices(args.adapter, args.devices)?;
    let layout = Layout::new(plan.config.clone(), devices.len(), options.model.layers)?;
    describe(graph, split, &args.split);
    let report_target = crate::report::ReportTarget::prepare(args.report.as_deref());
    eprintln!(
        "plan {} over {} devices, {} micro-batches",
        plan.config.degrees,
        layout.ranks().len(),
        layout.micro_batches()
    );
    let mut progress = EpochProgress::new(args.epochs);
    let mut on_epoch = |m: &_| progress.epoch(m);
    let report =
        train_parallel::<WgpuAutodiff>(graph, split, options, &layout, &devices, &mut on_epoch)?;
    progress.finish();
    let name = format!("{} wgpu devices", layout.ranks().len());
    print_report(&report, &name, Some(&plan), args.json);
    match report_target {
        Some(target) => target.write(options, &report, &name, Some(&plan)),
        None => Ok(()),
    }
}

/// One line about the graph and the split.
fn describe(graph: &Graph, split: &Split, split_text: &str) {
    eprintln!(
        "graph {}: {} nodes, {} edges, {} features, {} classes; split {}: {} train / {} val / {} test",
        graph.name(),
        graph.num_nodes(),
        graph.adjacency().num_edges(),
        graph.feature_dim(),
        graph.num_classes(),
        split_text,
        split.train.len(),
        split.val.len(),
        split.test.len()
    );
}

fn load(args: &TrainArgs) -> anyhow::Result<Graph> {
    if let Some(path) = &args.data {
        return Ok(load_graph(path)?);
    }
    let text = args.synthetic.as_deref().unwrap_or(DEFAULT_SYNTHETIC);
    let spec: SyntheticSpec = text
        .parse()
        .with_context(|| format!("--synthetic {text}"))?;
    Ok(spec.generate(args.seed)?)
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
                "step_seconds": d.step_seconds,
                "peak_bytes": d.peak_bytes,
                "peak_in_use_bytes": d.peak_in_use_bytes,
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
            })
        );
    }
}
