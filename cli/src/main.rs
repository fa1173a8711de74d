//! `megagraph`: train Graph Transformers on large graphs across whatever GPUs a lab has.

mod commands;
mod data;
mod error_line;
mod panics;
mod plan_source;
mod progress;
mod report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use megagraph_engine::device::Backends;

/// MegaGraph: portable Graph Transformer training on wgpu.
#[derive(Debug, Parser)]
#[command(name = "megagraph", version, about)]
struct Cli {
    /// The graphics APIs whose adapters every command lists, numbers and may open: all, or a
    /// comma-separated list of vulkan, gl, metal and dx12 (default: Vulkan, Metal and DX12, or
    /// any API where those find none). An adapter named API:N or by its id opens whatever this says.
    #[arg(long, global = true, value_name = "APIS", value_parser = parse_backends)]
    backends: Option<Backends>,
    #[command(subcommand)]
    command: Command,
}

/// `--backends`' value.
fn parse_backends(text: &str) -> Result<Backends, String> {
    megagraph_engine::device::parse_backends(text)
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the wgpu adapters of this machine.
    Devices(commands::devices::DevicesArgs),
    /// Train a Graph Transformer (on the embedded synthetic graph by default).
    Train(Box<commands::train::TrainArgs>),
    /// Predict every node's class with a trained model (a checkpoint or saved model).
    Predict(Box<commands::predict::PredictArgs>),
    /// Score a trained model on the train, validation and test nodes of a split.
    Evaluate(Box<commands::evaluate::EvaluateArgs>),
    /// Benchmark a kernel against its reference.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
    /// Measure this machine's devices into a cluster spec for `plan`.
    Profile(commands::profile::ProfileArgs),
    /// Find the hybrid parallel plan (dp × pp × cp) of least predicted step time.
    Plan(commands::plan::PlanArgs),
}

fn main() -> ExitCode {
    panics::end_the_process_on_orphan_panics();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return commands::report_usage_error(e),
    };
    if let Some(backends) = cli.backends {
        megagraph_engine::device::use_backends(backends).expect("set once, first");
    }
    let result = match cli.command {
        Command::Devices(args) => commands::devices::run(&args),
        Command::Train(args) => commands::train::run(&args),
        Command::Predict(args) => commands::predict::run(&args),
        Command::Evaluate(args) => commands::evaluate::run(&args),
        Command::Plan(args) => commands::plan::run(&args),
        Command::Profile(args) => commands::profile::run(&args),
        Command::Bench(command) => commands::bench::run(&command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        #[cfg(feature = "mpi")]
        Err(e) if e.is::<commands::RefusalSaid>() => ExitCode::FAILURE,
        Err(e) => {
            error_line::say_error(commands::one_line(&e));
            ExitCode::FAILURE
        }
    }
}
