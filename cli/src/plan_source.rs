//! The plan a multi-device `train` runs: read from `--plan`, or searched for `--devices N`
//! from a fresh profile; checked against the run's model and the devices present.

use std::path::Path;

use anyhow::{Context, bail};
use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    device::{list_adapters, open_logical_devices, open_wgpu},
    graph::Graph,
    profile::{ProfileOptions, profile},
    train::TrainOptions,
};
use megagraph_planner::{
    ClusterSpec, Degrees, ModelSpec, Plan, load_cluster, search, search_fixed,
};

/// The devices to run on: `logical` devices on one adapter, or one per adapter.
pub fn open_devices(
    adapter: Option<usize>,
    logical: Option<usize>,
) -> anyhow::Result<Vec<WgpuDevice>> {
    match logical {
        Some(0) => bail!("--devices must be at least 1"),
        Some(count) => Ok(open_logical_devices(adapter, count)?),
        None => {
            let count = list_adapters().len().max(1);
            Ok((0..count)
                .map(|i| open_wgpu(Some(i)))
                .collect::<Result<Vec<_>, _>>()?)
        }
    }
}

/// The model spec of this run, as the planner sees it.
pub fn model_spec(graph: &Graph, options: &TrainOptions) -> ModelSpec {
    let config = options.model_config(graph);
    ModelSpec {
        schema_version: megagraph_planner::SCHEMA_VERSION,
        layers: config.layers,
        hidden: config.hidden,
        heads: config.heads,
        ffn_hidden: config.ffn_hidden,
        features: config.features,
        classes: config.classes,
        seq_len: options.seq_len.min(graph.num_nodes()),
        num_sequences: graph.num_nodes().div_ceil(options.seq_len).max(1),
        max_distance: config.max_distance as usize,
        bytes_per_element: 4,
    }
}

/// Where a run's plan comes from.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// A plan file.
    pub plan: Option<&'a Path>,
    /// A cluster spec to plan on, instead of a fresh profile.
    pub cluster: Option<&'a Path>,
    /// Degrees to plan, instead of searching all.
    pub degrees: Option<Degrees>,
    /// Logical devices to profile.
    pub devices: Option<usize>,
    /// Memory of each profiled device.
    pub device_memory: Option<u64>,
}

/// Reads the plan file, or plans on the cluster spec (read, or measured now).
pub fn resolve(request: PlanRequest<'_>, model: &ModelSpec) -> anyhow::Result<Plan> {
    if let Some(path) = request.plan {
        return Ok(Plan::load(path)?);
    }
    let cluster: ClusterSpec = match request.cluster {
        Some(path) => load_cluster(path)?,
        None => {
            profile(&ProfileOptions {
                logical_devices: request.devices,
                device_memory: request.device_memory,
            })
            .context("profiling the devices for a plan")?
            .cluster
        }
    };
    let plan = match request.degrees {
        Some(degrees) => search_fixed(&cluster, model, degrees)?,
        None => search(&cluster, model)?,
    };
    eprintln!("planned {}", plan.config.degrees);
    Ok(plan)
}

/// Refuses a plan made for another model shape or one predicted not to fit.
pub fn check(plan: &Plan, model: &ModelSpec) -> anyhow::Result<()> {
    let planned = &plan.model;
    let fields = [
        ("layers", planned.layers, model.layers),
        ("hidden", planned.hidden, model.hidden),
        ("heads", planned.heads, model.heads),
        ("ffn_hidden", planned.ffn_hidden, model.ffn_hidden),
        ("features", planned.features, model.features),
        ("classes", planned.classes, model.classes),
        ("seq_len", planned.seq_len, model.seq_len),
        ("max_distance", planned.max_distance, model.max_distance),
    ];
    for (name, planned, here) in fields {
        if planned != here {
            bail!(
                "the plan is for a model with {name} {planned}, this run has {name} {here}: plan for this model"
            );
        }
    }
    if !plan.prediction.fits() {
        let (device, needed, capacity) = plan
            .prediction
            .devices
            .iter()
            .enumerate()
            .find(|(_, d)| !d.fits())
            .map(|(i, d)| (i, d.peak_bytes, d.memory_bytes))
            .expect("a plan that does not fit has a device that does not");
        bail!("the plan does not fit: device {device} needs {needed} bytes but has {capacity:.0}");
    }
    Ok(())
}
