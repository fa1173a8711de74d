//! `megagraph bench attention`: fused against reference attention on one adapter;
//! `megagraph bench comm`: bandwidth between MPI processes.

use clap::{Args, Subcommand};
use megagraph_engine::{
    bench::{AttentionBench, HopsBench, ReferenceMode, bench_attention, bench_hops_attention},
    device::AdapterSelector,
    model::AttentionScope,
};

/// What to benchmark.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Fused topology-biased attention against the burn-op reference, forward + backward.
    Attention(AttentionArgs),
    /// Send/recv and all-reduce bandwidth between MPI processes: the job communicator next
    /// to MPI's own (run under `mpirun -np 2` or more; needs the `mpi` feature).
    Comm(CommArgs),
}

/// Options of `megagraph bench comm`.
#[derive(Debug, Args)]
pub struct CommArgs {
    /// Message sizes in bytes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4096,65536,1048576,16777216"
    )]
    sizes: Vec<usize>,
    /// Timed repetitions per size.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Print one JSON array on the last line.
    #[arg(long)]
    json: bool,
}

/// Options of `megagraph bench attention`.
#[derive(Debug, Args)]
pub struct AttentionArgs {
    /// Sequence length S (nodes in the sequence).
    #[arg(long)]
    nodes: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 4)]
    heads: usize,
    /// Head dimension (a multiple of 4).
    #[arg(long, default_value_t = 32)]
    head_dim: usize,
    /// Skip the reference (it is slow at large S).
    #[arg(long)]
    fused_only: bool,
    /// Also time every kernel shape the adapter runs, each pinned in turn: under full, the
    /// dense kernels (register-blocked and tiled); under hops, the hops kernels' teams.
    #[arg(long)]
    variants: bool,
    /// full: every pair of S (the dense fused kernels against the reference); hops:K[:MAX]:
    /// the near pairs of an R-MAT graph of S nodes (S a power of two) through the hops kernels,
    /// beside the reference over the same pairs and the dense kernels where they fit.
    #[arg(long, default_value = "full", value_name = "full|hops:K[:MAX]")]
    scope: AttentionScope,
    /// With --scope hops: run the dense fused kernels over all S² pairs too up to this S.
    #[arg(long, default_value_t = 16384, value_name = "S")]
    dense_up_to: usize,
    /// With --scope hops: write the pairs (offsets, keys, buckets) to this .npz for a peer.
    #[arg(long, value_name = "FILE")]
    export_pairs: Option<std::path::PathBuf>,
    /// The adapter: its position in `megagraph devices`, API:N (e.g. gl:0) or its id
    /// API:NAME#N (default: the first listed).
    #[arg(long, value_name = "ADAPTER")]
    adapter: Option<AdapterSelector>,
    /// Print one JSON object on the last line.
    #[arg(long)]
    json: bool,
}

/// Runs the benchmark asked for.
pub fn run(command: &BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Attention(args) => attention(args),
        BenchCommand::Comm(args) => comm(args),
    }
}

/// Measures MPI bandwidths; process 0 prints them.
#[cfg(feature = "mpi")]
fn comm(args: &CommArgs) -> anyhow::Result<()> {
    use megagraph_engine::comm::{MpiRuntime, bench_comm};
    let runtime = MpiRuntime::init()?;
    let rows = match bench_comm(&runtime, &args.sizes, args.rounds.max(1)) {
        Ok(rows) => rows,
        Err(error) => {
            crate::error_line::say_error(format_args!("process {}: {error}", runtime.process()));
            runtime.abort(1);
        }
    };
    let Some(rows) = rows else { return Ok(()) };
    let gb = |b: f64| b / 1e9;
    println!(
        "{} processes on {}: GB/s (bytes over time; send/recv over half the round trip)",
        runtime.processes(),
        runtime.host()
    );
    println!(
        "bytes        MPI send/recv  job send/recv  MPI_Allreduce  job all-reduce (ring)  job all-reduce (gather)"
    );
    for r in &rows {
        println!(
            "{:<12} {:>13.3}  {:>13.3}  {:>13.3}  {:>21.3}  {:>23.3}",
            r.bytes,
            gb(r.mpi_send_recv),
            gb(r.job_send_recv),
            gb(r.mpi_all_reduce),
            gb(r.job_all_reduce),
            gb(r.job_all_reduce_gathered)
        );
    }
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    }
    Ok(())
}

/// Without MPI support there is nothing to measure.
#[cfg(not(feature = "mpi"))]
fn comm(_: &CommArgs) -> anyhow::Result<()> {
    anyhow::bail!("this megagraph was built without MPI: build with `--features megagraph-cli/mpi`")
}

/// Runs the hops benchmark and prints what it measured beside the dense kernels and the
/// reference.
fn hops_attention(args: &AttentionArgs, hops: u8, max_pairs: usize) -> anyhow::Result<()> {
    let shape = HopsBench {
        nodes: args.nodes,
        heads: args.heads,
        head_dim: args.head_dim,
        hops,
        max_pairs,
        dense_up_to: args.dense_up_to,
        with_reference: !args.fused_only,
        with_variants: args.variants,
    };
    let r = bench_hops_attention(shape, args.adapter.as_ref(), args.export_pairs.as_deref())?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "S={} heads={} head_dim={} {}: {} pairs ({:.1} per node, built in {:.2} s): hops {:.1} ms, peak {:.1} MiB, {:.2} GFLOP/s (device matmul {:.2}, host ndarray matmul {:.2} GFLOP/s)",
        r.nodes,
        r.heads,
        r.head_dim,
        r.scope,
        r.pairs,
        r.pairs_per_node,
        r.build_seconds,
        r.hops_ms,
        mib(r.hops_peak_bytes),
        r.hops_gflops,
        r.matmul_peak_gflops,
        r.host_matmul_gflops
    );
    if r.heads_per_block < r.heads {
        println!(
            "heads ran {} at a time: one [heads, S, head_dim] tensor exceeds the adapter's binding limit",
            r.heads_per_block
        );
    }
    println!(
        "hops kernels ran with {} (forward), {} (backward)",
        r.chosen_teams[0], r.chosen_teams[1]
    );
    for v in &r.team_variants {
        println!(
            "  {:<20} forward + backward {:>10.2} ms",
            v.team, v.forward_backward_ms
        );
    }
    for (what, ms, peak) in [
        (
            "dense fused kernels over all S² pairs",
            r.dense_ms,
            r.dense_peak_bytes,
        ),
        (
            "reference over the same pairs",
            r.reference_ms,
            r.reference_peak_bytes,
        ),
    ] {
        match (ms, peak) {
            (Some(ms), Some(peak)) => println!(
                "{what}: {ms:.1} ms, peak {:.1} MiB: hops is {:.2}x faster with {:.3} of the memory",
                mib(peak),
                ms / r.hops_ms,
                r.hops_peak_bytes as f64 / peak as f64
            ),
            _ => println!("{what}: not run here"),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

/// Runs the attention benchmark and prints what it measured beside its bound.
fn attention(args: &AttentionArgs) -> anyhow::Result<()> {
    if let AttentionScope::Hops { hops, max_pairs } = args.scope {
        return hops_attention(args, hops, max_pairs);
    }
    let shape = AttentionBench {
        nodes: args.nodes,
        heads: args.heads,
        head_dim: args.head_dim,
        with_reference: !args.fused_only,
        with_variants: args.variants,
    };
    let r = bench_attention(shape, args.adapter.as_ref())?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "S={} heads={} head_dim={}: fused {:.1} ms, peak {:.1} MiB, {:.2} GFLOP/s ({:.2} of the device's matmul {:.2} GFLOP/s; host ndarray matmul {:.2} GFLOP/s)",
        r.nodes,
        r.heads,
        r.head_dim,
        r.fused_ms,
        mib(r.fused_peak_bytes),
        r.fused_gflops,
        r.fused_gflops / r.matmul_peak_gflops,
        r.matmul_peak_gflops,
        r.host_matmul_gflops
    );
    println!(
        "kernels chosen: forward {}, backward {}",
        r.chosen_kernels[0], r.chosen_kernels[1]
    );
    for v in &r.kernel_variants {
        println!(
            "  {:<16} forward {:>10.2} ms, forward + backward {:>10.2} ms",
            v.kernel, v.forward_ms, v.forward_backward_ms
        );
    }
    match (r.reference_ms, r.reference_peak_bytes, r.reference_mode) {
        (Some(ms), Some(bytes), Some(mode)) => println!(
            "reference ({}) {:.1} ms, peak {:.1} MiB: fused is {:.2}x faster and needs {:.3} of the memory",
            match mode {
                ReferenceMode::Full => "all heads at once".to_string(),
                ReferenceMode::PerHead => format!(
                    "one head at a time: [heads, S, S] is {:.0} MiB, beyond the {:.0} MiB binding limit",
                    mib(r.square_tensor_bytes),
                    mib(r.binding_limit_bytes)
                ),
                ReferenceMode::PerHeadRowBlocks => format!(
                    "one head and {} query rows at a time: [1, S, S] exceeds the {:.0} MiB binding limit",
                    r.reference_rows_per_chunk.unwrap_or(0),
                    mib(r.binding_limit_bytes)
                ),
            },
            ms,
            mib(bytes),
            ms / r.fused_ms,
            r.fused_peak_bytes as f64 / bytes as f64
        ),
        _ if args.fused_only => println!("reference: not run (--fused-only)"),
        _ => println!(
            "reference: cannot allocate: one S-long f32 row block exceeds the {:.0} MiB binding limit",
            mib(r.binding_limit_bytes)
        ),
    }
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}
