//! `mpirun -np N megagraph train --plan plan.json`: every process drives its devices of the
//! plan; the process of the lead device prints the report.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use megagraph_engine::{
    comm::MpiRuntime,
    device::WgpuAutodiff,
    graph::{Graph, Split},
    parallel::{CheckpointOptions, JobRun, Layout, LocalDevice},
    train::TrainOptions,
};

use super::{TrainArgs, resolve_plan, run_job};
use crate::{commands::one_line, plan_source};

/// Runs this process's part of the job. On any failure it names this process, then ends
/// every process of the job (`MPI_Abort`), so none waits for a peer that is gone.
pub fn run(
    args: &TrainArgs,
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    checkpoint: &CheckpointOptions,
) -> anyhow::Result<()> {
    let runtime = MpiRuntime::init()?;
    let result = run_process(&runtime, args, graph, split, options, checkpoint);
    if let Err(error) = &result {
        eprintln!(
            "error: process {} of {} on {}: {}",
            runtime.process(),
            runtime.processes(),
            runtime.host(),
            one_line(error)
        );
        runtime.abort(1);
    }
    result
}

fn run_process(
    runtime: &MpiRuntime,
    args: &TrainArgs,
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    checkpoint: &CheckpointOptions,
) -> anyhow::Result<()> {
    if args.plan.is_none() && args.cluster.is_none() {
        bail!(
            "under mpirun, train needs --plan (from `megagraph plan`) or --cluster (from `mpirun megagraph profile`): a plan says which process drives which device"
        );
    }
    let plan = resolve_plan(args, graph, options)?;
    let placement = plan.processes.clone();
    if runtime.processes() > 1 && placement.iter().all(|&p| p == 0) {
        bail!(
            "the plan places every device on process 0 but mpirun started {} processes: plan on a cluster spec from `mpirun -np {} megagraph profile`, whose devices carry their process",
            runtime.processes(),
            runtime.processes()
        );
    }
    let layout = Layout::new(plan.config.clone(), placement.len(), options.model.layers)?;
    let mine: Vec<usize> = (0..placement.len())
        .filter(|&d| placement[d] == runtime.process())
        .collect();
    let devices = plan_source::open_devices(args.adapter, args.devices.map(|_| mine.len()))
        .context("opening this process's devices")?;
    if devices.len() < mine.len() {
        bail!(
            "the plan gives process {} {} devices ({mine:?}) but it has {} (pass --devices {} for logical devices)",
            runtime.process(),
            mine.len(),
            devices.len(),
            mine.len()
        );
    }
    let job = runtime.job(placement, Duration::from_secs_f64(args.comm_timeout))?;
    let mut local = Vec::new();
    for (index, &rank) in mine.iter().enumerate() {
        if layout.role(rank).is_some() {
            local.push(LocalDevice::<WgpuAutodiff> {
                rank,
                device: devices[index].clone(),
                comm: Arc::new(job.communicator(rank)?),
            });
        }
    }
    let run = JobRun {
        layout: &layout,
        checkpoint,
    };
    let finished = run_job(args, graph, split, options, &run, local, Some(&plan))?;
    job.finish();
    match finished {
        Some(finished) => {
            let name = format!(
                "{} wgpu devices on {} processes",
                layout.ranks().len(),
                runtime.processes()
            );
            finished.show(args, options, &name, Some(&plan))
        }
        None => Ok(()),
    }
}
