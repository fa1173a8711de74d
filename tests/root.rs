//! Integration tests: one binary (the `integration` test of `megagraph-cli`).
//!
//! Tests that need a wgpu adapter skip loudly without one, or fail when
//! `MEGAGRAPH_REQUIRE_ADAPTER=1` (as CI sets it).

mod bounds_check;
mod cli_bench;
mod cli_errors;
#[cfg(feature = "mpi")]
mod cli_mpi;
mod cli_parallel;
mod cli_plan;
mod cli_predict;
mod cli_report;
mod cli_train;
mod common;
mod cost_model_check;
mod device_memory;
mod dropout;
mod gpu_check;
mod hops_kernels;
mod hops_scope;
mod kernels;
mod mixed_apis;
mod model_backends;
mod parallel;
mod profile_overheads;
mod safe_ops;
mod shaders;
mod sparse_kernels;
