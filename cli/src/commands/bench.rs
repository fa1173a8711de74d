//! `megagraph bench attention`: fused against reference attention on one adapter.

use clap::{Args, Subcommand};
use megagraph_engine::bench::{AttentionBench, ReferenceMode, bench_attention};

/// What to benchmark.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Fused topology-biased attention against the burn-op reference, forward + backward.
    Attention(AttentionArgs),
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
    /// wgpu adapter index from `megagraph devices`.
    #[arg(long)]
    adapter: Option<usize>,
    /// Print one JSON object on the last line.
    #[arg(long)]
    json: bool,
}

/// Runs the benchmark and prints what it measured beside its bound.
pub fn run(command: &BenchCommand) -> anyhow::Result<()> {
    let BenchCommand::Attention(args) = command;
    let shape = AttentionBench {
        nodes: args.nodes,
        heads: args.heads,
        head_dim: args.head_dim,
        with_reference: !args.fused_only,
    };
    let r = bench_attention(shape, args.adapter)?;
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
