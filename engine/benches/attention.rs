//! `cargo bench -p megagraph-engine --bench attention`: fused attention against the reference
//! composition, forward + backward, on the first wgpu adapter; one JSON line per sequence length
//! (the report of `megagraph bench attention --json`: time, peak device bytes, GFLOP/s and the
//! device's best measured matmul GFLOP/s as the bound).
//!
//! Environment: `MEGAGRAPH_BENCH_SIZES` (comma-separated S, default `512,2048,4096`),
//! `MEGAGRAPH_BENCH_HEADS` (default 4), `MEGAGRAPH_BENCH_HEAD_DIM` (default 32),
//! `MEGAGRAPH_BENCH_REFERENCE=0` to time the fused kernels only.

use std::error::Error;

use megagraph_engine::bench::{AttentionBench, bench_attention};

/// The value of `name`, parsed, or `default` when unset.
fn setting<T: std::str::FromStr>(name: &str, default: T) -> Result<T, Box<dyn Error>>
where
    T::Err: Error + 'static,
{
    match std::env::var(name) {
        Ok(text) => Ok(text.trim().parse()?),
        Err(_) => Ok(default),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let sizes = std::env::var("MEGAGRAPH_BENCH_SIZES").unwrap_or_else(|_| "512,2048,4096".into());
    let heads = setting("MEGAGRAPH_BENCH_HEADS", 4)?;
    let head_dim = setting("MEGAGRAPH_BENCH_HEAD_DIM", 32)?;
    let with_reference = setting("MEGAGRAPH_BENCH_REFERENCE", 1u8)? != 0;
    for size in sizes.split(',') {
        let shape = AttentionBench {
            nodes: size.trim().parse()?,
            heads,
            head_dim,
            with_reference,
            with_variants: setting("MEGAGRAPH_BENCH_VARIANTS", 0u8)? != 0,
        };
        let report = bench_attention(shape, None)?;
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(())
}
