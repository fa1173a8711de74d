//! `megagraph plan`: the planner's best hybrid parallel configuration for a cluster and model.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use megagraph_planner::{Degrees, load_cluster, load_model, search, search_fixed};

/// Options of `megagraph plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The cluster: devices and links (`cluster.json`, schema_version 1).
    #[arg(long)]
    cluster: PathBuf,
    /// The model shape (`model.json`, schema_version 1).
    #[arg(long)]
    model: PathBuf,
    /// Plan these degrees (e.g. dp2-pp1-cp2: shares and layers balanced for them) instead of
    /// searching all.
    #[arg(long)]
    degrees: Option<Degrees>,
    /// Also write the plan here as JSON.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the plan as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Print the predicted time and memory breakdown of every device.
    #[arg(long)]
    explain: bool,
    /// Write plan.svg (devices, 1F1B timeline, plan against the baselines) into DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

/// Searches and prints the plan.
pub fn run(args: &PlanArgs) -> anyhow::Result<()> {
    let cluster = load_cluster(&args.cluster)?;
    let model = load_model(&args.model)?;
    let plan = match args.degrees {
        Some(degrees) => search_fixed(&cluster, &model, degrees)?,
        None => search(&cluster, &model)?,
    };
    if let Some(out) = &args.out {
        std::fs::write(out, plan.to_json() + "\n")
            .with_context(|| format!("{}: cannot write the plan", out.display()))?;
    }
    if let Some(dir) = &args.report {
        crate::report::write_plan(dir, &plan, &cluster, &model)?;
    }
    if args.explain {
        println!("{}", plan.explain());
    }
    if args.json {
        println!("{}", plan.to_json());
    } else {
        println!("{}", plan.table());
    }
    Ok(())
}
