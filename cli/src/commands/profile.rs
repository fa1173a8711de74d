//! `megagraph profile`: measure this machine's devices into a `cluster.json` for `plan`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use megagraph_engine::{
    device::AdapterSelector,
    profile::{Profile, ProfileOptions, SizedRate, profile},
};
use megagraph_planner::{Overhead, StepOverhead};

/// Options of `megagraph profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Measure this adapter (position in `megagraph devices`, API:N or id API:NAME#N); repeat
    /// it for several (default: every listed adapter).
    #[arg(long, value_name = "ADAPTER")]
    adapter: Vec<AdapterSelector>,
    /// Measure N logical devices on the first adapter instead of one device per adapter.
    #[arg(long)]
    devices: Option<usize>,
    /// Memory of each device in bytes (wgpu does not report a GPU's memory).
    #[arg(long)]
    device_memory: Option<u64>,
    /// The sequence length you will train with: the model's overheads are timed there (up to
    /// 2,048 nodes), so plans at that length interpolate them rather than extrapolate
    /// (default: timed at 256 nodes).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    seq_len: Option<u64>,
    /// Where to write the cluster spec (schema_version 1).
    #[arg(long)]
    out: PathBuf,
}

/// Measures the devices and writes the cluster spec; under mpirun, every process's devices
/// and the links between processes, written by process 0.
pub fn run(args: &ProfileArgs) -> anyhow::Result<()> {
    let options = ProfileOptions {
        seq_len: args.seq_len.map(|len| len as usize),
        ..profile_options(&args.adapter, args.devices, args.device_memory)
    };
    #[cfg(feature = "mpi")]
    if megagraph_engine::comm::launched_by_mpirun() {
        let runtime = megagraph_engine::comm::MpiRuntime::init()?;
        let measured = match megagraph_engine::profile::profile_processes(&runtime, &options) {
            Ok(measured) => measured,
            Err(error) => {
                crate::error_line::say_error(format_args!(
                    "process {}: {error}",
                    runtime.process()
                ));
                runtime.abort(1);
            }
        };
        return match measured {
            Some(measured) => write(args, &measured),
            None => Ok(()),
        };
    }
    write(args, &profile(&options)?)
}

/// The variable that, set to `0`, leaves the model's overheads unmeasured in every profile
/// (`profile`, and `train` planning without a plan): for quick runs of a debug build, where
/// timing the model takes minutes. The planner then counts arithmetic and transfers only.
pub const PROFILE_OVERHEADS_VAR: &str = "MEGAGRAPH_PROFILE_OVERHEADS";

/// What every profile of the command line measures: these adapters (or logical devices of
/// the first) with this memory, and the overheads unless [`PROFILE_OVERHEADS_VAR`] is `0`
/// (timed at the default lengths: a profile for a known run sets `seq_len`).
pub fn profile_options(
    adapters: &[AdapterSelector],
    logical_devices: Option<usize>,
    device_memory: Option<u64>,
) -> ProfileOptions {
    ProfileOptions {
        adapters: adapters.to_vec(),
        logical_devices,
        device_memory,
        skip_overheads: std::env::var(PROFILE_OVERHEADS_VAR).is_ok_and(|v| v == "0"),
        seq_len: None,
    }
}

/// Prints what was measured and writes the cluster spec.
fn write(args: &ProfileArgs, measured: &Profile) -> anyhow::Result<()> {
    for m in &measured.measurements {
        let shared = m.shared_attention_flops.map_or(String::new(), |f| {
            format!(
                ", attention {:.2} GFLOP/s with all devices at once",
                f / 1e9
            )
        });
        let shared_overhead = m.shared_overhead.map_or(String::new(), |o| {
            format!(
                ", the model at {} nodes {:.2}× as long with all {} at once (overhead contention {:.2} per other device)",
                o.nodes,
                o.slowdown,
                o.devices,
                o.contention()
            )
        });
        eprintln!(
            "{}: attention {} GFLOP/s (S), matmul {} GFLOP/s (rows), embedding gather {} GB/s (rows), memory {:.2} GB/s, overhead per layer {} and for the ends {}{}, optimizer step overhead {}{shared}{shared_overhead}",
            m.name,
            giga(&m.attention_flops),
            giga(&m.matmul_flops),
            giga(&m.embedding_bytes_per_second),
            m.mem_bandwidth / 1e9,
            describe_overhead(&m.layer_overhead),
            describe_overhead(&m.end_overhead),
            m.overhead_nodes
                .map_or(String::new(), |[short, long]| format!(
                    " (timed at {short} and {long} nodes)"
                )),
            describe_step_overhead(&m.step_overhead),
        );
    }
    let link = &measured.cluster.link;
    eprintln!(
        "link (host-staged copy): {:.2} GB/s, latency {:.1} µs",
        link.bandwidth / 1e9,
        link.latency * 1e6
    );
    for pair in &measured.cluster.links {
        eprintln!(
            "link {}–{} (MPI): {:.2} GB/s, latency {:.1} µs",
            pair.a,
            pair.b,
            pair.bandwidth / 1e9,
            pair.latency * 1e6
        );
    }
    let json = serde_json::to_string_pretty(&measured.cluster)?;
    std::fs::write(&args.out, json + "\n")
        .with_context(|| format!("{}: cannot write the cluster spec", args.out.display()))?;
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// `2.31@256 2.65@1024`: each rate in units of 10⁹ at its size.
fn giga(rates: &[SizedRate]) -> String {
    rates
        .iter()
        .map(|r| format!("{:.2}@{}", r.rate / 1e9, r.size))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An optimizer step's overhead as `L ms a layer + E ms`, or `not measured`.
fn describe_step_overhead(overhead: &Option<StepOverhead>) -> String {
    let Some(overhead) = overhead else {
        return "not measured".into();
    };
    format!(
        "{:.1} ms a layer + {:.1} ms",
        overhead.per_layer * 1e3,
        overhead.ends * 1e3
    )
}

/// An overhead as `F ms + R µs/row`, or `not measured`.
fn describe_overhead(overhead: &Option<Overhead>) -> String {
    let Some(overhead) = overhead else {
        return "not measured".into();
    };
    format!(
        "{:.1} ms + {:.1} µs/row",
        overhead.fixed * 1e3,
        overhead.per_row * 1e6
    )
}
