//! `mpirun -np N megagraph train …`: every process drives its devices of the plan; the
//! process of the lead device prints the report.
//!
//! The plan is `--plan`, or planned on `--cluster`, or, with neither, planned on process 0
//! from a profile of every process's devices (as `--devices N` does in one process) and sent
//! to all. A refusal that comes before the job starts (bad options or data, a plan that cannot
//! run) is agreed on by every process: process 0 prints it once, then every process finalises
//! MPI and exits non-zero, so that `mpirun` ends the job without an abort. A failure once the
//! job runs names its process and ends every process at once (`MPI_Abort`), so none waits for
//! a peer that is gone.

use std::sync::Arc;

use anyhow::{Context, bail};
use megagraph_engine::{
    comm::MpiRuntime,
    device::WgpuAutodiff,
    parallel::{Layout, LocalDevice},
    profile::{ProfileOptions, profile_processes},
};
use megagraph_planner::{Plan, search, search_fixed};

use super::{Prepared, TrainArgs, batch, prepare, resolve_plan, run_job};
use crate::{
    commands::{RefusalSaid, one_line, profile::profile_options},
    plan_source,
};

/// Runs this process's part of the job. A refusal is printed here, before MPI is finalised:
/// once every process has finalised and one has exited non-zero, `mpirun` ends the others, and
/// a line printed after finalising can be lost with them.
pub fn run(args: &TrainArgs) -> anyhow::Result<()> {
    let runtime = MpiRuntime::init()?;
    match run_on(&runtime, args) {
        Err(error) if !error.is::<RefusalSaid>() => {
            crate::error_line::say_error(one_line(&error));
            Err(RefusalSaid.into())
        }
        done => done,
    }
}

/// [`run`] on an initialised runtime.
fn run_on(runtime: &MpiRuntime, args: &TrainArgs) -> anyhow::Result<()> {
    // The lead device, which writes the saved model, is on process 0 in plans made on a
    // cluster spec of `mpirun megagraph profile` (its devices in process order).
    let checked = prepare(args, runtime.process() == 0).and_then(|prepared| {
        let plan = match (&args.plan, &args.cluster) {
            (None, None) => None,
            _ => Some(placed_plan(runtime, args, &prepared)?),
        };
        Ok((prepared, plan))
    });
    let (prepared, plan) = agree(runtime, checked)?;
    let plan = match plan {
        Some(plan) => plan,
        None => plan_over_processes(runtime, args, &prepared)?,
    };
    let result = run_process(runtime, args, &prepared, &plan);
    if let Err(error) = &result {
        fail_job(runtime, error);
    }
    result
}

/// Names this process and its error, then ends every process of the job.
fn fail_job(runtime: &MpiRuntime, error: &anyhow::Error) -> ! {
    crate::error_line::say_error(format_args!(
        "process {} of {} on {}: {}",
        runtime.process(),
        runtime.processes(),
        runtime.host(),
        one_line(error)
    ));
    runtime.abort(1)
}

/// Every process's outcome of the checks before the job (a collective of every process):
/// this one's value when all passed; otherwise the refusal, as one line on process 0 (the
/// cause once when every process found the same, else each process's) and
/// [`RefusalSaid`] on the others.
fn agree<T>(runtime: &MpiRuntime, checked: anyhow::Result<T>) -> anyhow::Result<T> {
    let mine = checked.as_ref().err().map_or_else(String::new, one_line);
    let all = runtime.all_gather_bytes(mine.as_bytes());
    let refusals: Vec<(usize, String)> = (all.iter().enumerate())
        .filter(|(_, bytes)| !bytes.is_empty())
        .map(|(process, bytes)| (process, String::from_utf8_lossy(bytes).into_owned()))
        .collect();
    if refusals.is_empty() {
        return checked;
    }
    if runtime.process() != 0 {
        return Err(RefusalSaid.into());
    }
    if refusals.len() == all.len() && refusals.iter().all(|(_, r)| *r == refusals[0].1) {
        bail!("{}", refusals[0].1);
    }
    let each: Vec<String> = (refusals.iter())
        .map(|(process, refusal)| format!("process {process} of {}: {refusal}", all.len()))
        .collect();
    bail!("{}", each.join("; "))
}

/// The plan of `--plan` or `--cluster`, refused when it leaves processes without devices.
fn placed_plan(
    runtime: &MpiRuntime,
    args: &TrainArgs,
    prepared: &Prepared,
) -> anyhow::Result<Plan> {
    let plan = resolve_plan(args, &prepared.graph, &prepared.options)?;
    if runtime.processes() > 1 && plan.processes.iter().all(|&p| p == 0) {
        bail!(
            "the plan places every device on process 0 but mpirun started {} processes: plan on a cluster spec from `mpirun -np {} megagraph profile` (whose devices carry their process), or leave out --plan and --cluster to profile and plan now",
            runtime.processes(),
            runtime.processes()
        );
    }
    Ok(plan)
}

/// Profiles every process's devices (`--devices N` logical devices each, or its adapters),
/// plans on process 0 and sends the plan to every process (a collective of every process).
/// A process that cannot profile ends the job; a plan that cannot be found is a refusal.
fn plan_over_processes(
    runtime: &MpiRuntime,
    args: &TrainArgs,
    prepared: &Prepared,
) -> anyhow::Result<Plan> {
    let options = ProfileOptions {
        seq_len: Some(prepared.options.sequence_nodes(&prepared.graph)),
        ..profile_options(&args.adapter, args.devices, args.device_memory)
    };
    let measured = profile_processes(runtime, &options)
        .context("profiling this process's devices for a plan")
        .unwrap_or_else(|e| fail_job(runtime, &e));
    let planned = measured.map(|measured| -> anyhow::Result<Plan> {
        let max_cp = measured.cluster.devices.len();
        let model =
            plan_source::model_spec(&prepared.graph, &prepared.options, max_cp, batch(args))?;
        let plan = match args.degrees {
            Some(degrees) => search_fixed(&measured.cluster, &model, degrees)?,
            None => search(&measured.cluster, &model)?,
        };
        plan_source::check(&plan, &model)?;
        eprintln!(
            "planned {} over {} processes' devices",
            plan.config.degrees,
            runtime.processes()
        );
        Ok(plan)
    });
    let text = match &planned {
        Some(Ok(plan)) => plan.to_json(),
        _ => String::new(),
    };
    let shared = runtime.all_gather_bytes(text.as_bytes()).swap_remove(0);
    match planned {
        Some(on_process_0) => on_process_0,
        None if shared.is_empty() => Err(RefusalSaid.into()),
        None => Ok(Plan::from_json(&String::from_utf8_lossy(&shared))
            .context("the plan process 0 sent does not parse")
            .unwrap_or_else(|e| fail_job(runtime, &e))),
    }
}

/// Opens this process's devices of `plan` and trains them.
fn run_process(
    runtime: &MpiRuntime,
    args: &TrainArgs,
    prepared: &Prepared,
    plan: &Plan,
) -> anyhow::Result<()> {
    let options = &prepared.options;
    let placement = plan.processes.clone();
    let layout = Layout::new(plan.config.clone(), placement.len(), options.model.layers)?;
    let mine: Vec<usize> = (0..placement.len())
        .filter(|&d| placement[d] == runtime.process())
        .collect();
    let logical = plan_source::logical_count(
        args.devices.map(|_| mine.len()),
        args.cluster.as_deref(),
        mine.len(),
        !plan.adapters.is_empty(),
    );
    let planned: Vec<Option<String>> = if plan.adapters.is_empty() {
        Vec::new()
    } else {
        mine.iter().map(|&d| plan.adapters[d].clone()).collect()
    };
    let devices = plan_source::open_devices(&args.adapter, logical, &planned)
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
    let mut job = runtime.job(placement, super::comm_timeout(args)?)?;
    if args.fast_allreduce {
        job.use_native_all_reduce();
    }
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
    let finished = run_job(args, prepared, &layout, local, Some(plan))?;
    job.finish();
    match finished {
        Some(finished) => {
            let name = format!(
                "{} wgpu devices on {} processes",
                layout.ranks().len(),
                runtime.processes()
            );
            finished.show(args, options, &name, Some(plan))
        }
        None => Ok(()),
    }
}
