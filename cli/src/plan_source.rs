//! The plan a multi-device `train` runs: read from `--plan`, or searched for `--devices N`
//! from a fresh profile; checked against the run's model and the devices present.

use std::path::Path;

use anyhow::{Context, bail};
use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    device::{list_adapters, open_logical_devices, open_wgpu},
    graph::Graph,
    profile::{ProfileOptions, profile},
    train::{TrainOptions, measure_sequences},
};
use megagraph_planner::{
    ClusterSpec, Degrees, HaloSpec, ModelSpec, Plan, load_cluster, search, search_fixed,
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

/// How many logical devices to open: `--devices N` when given; for a plan made on a cluster
/// spec that lists more devices (`planned`) than the machine has adapters (a spec profiled
/// with `--devices N`), that many; otherwise none (one device per adapter).
pub fn logical_count(
    devices: Option<usize>,
    cluster: Option<&Path>,
    planned: usize,
) -> Option<usize> {
    logical_for(devices, cluster.is_some(), planned, || {
        list_adapters().len()
    })
}

/// [`logical_count`] with the machine's adapters counted by `adapters` (only when needed).
fn logical_for(
    devices: Option<usize>,
    from_cluster: bool,
    planned: usize,
    adapters: impl FnOnce() -> usize,
) -> Option<usize> {
    devices.or_else(|| (from_cluster && adapters() < planned).then_some(planned))
}

/// The model spec of this run, as the planner sees it, with the figures of its sequences
/// measured from the graph: pairs and edges per node, and the halos of CP degrees up to
/// `max_cp` (hops scope).
pub fn model_spec(
    graph: &Graph,
    options: &TrainOptions,
    max_cp: usize,
) -> anyhow::Result<ModelSpec> {
    let config = options.model_config(graph);
    let degrees: Vec<usize> = (2..=max_cp).collect();
    let figures = measure_sequences(graph, options.seq_len, options.seed, &config, &degrees)
        .context("measuring the sequences for the planner")?;
    Ok(ModelSpec {
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
        scope: config.scope,
        global_tokens: config.global_tokens,
        pairs_per_node: figures.pairs_per_node,
        edges_per_node: figures.edges_per_node,
        halo: figures
            .halo
            .into_iter()
            .map(|(cp, fraction)| HaloSpec { cp, fraction })
            .collect(),
        ..ModelSpec::full_scope()
    })
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
        ("global_tokens", planned.global_tokens, model.global_tokens),
    ];
    for (name, planned, here) in fields {
        if planned != here {
            bail!(
                "the plan is for a model with {name} {planned}, this run has {name} {here}: plan for this model"
            );
        }
    }
    if planned.scope != model.scope {
        bail!(
            "the plan is for a model with scope {}, this run has scope {}: plan for this model",
            planned.scope,
            model.scope
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use megagraph_planner::{AttentionScope, load_model};

    fn example(path: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(path)
    }

    #[test]
    fn a_plan_for_another_scope_is_refused_in_one_line() -> anyhow::Result<()> {
        let cluster = load_cluster(&example("clusters/desk-rtx4090-rx7900xtx.json"))?;
        let full = load_model(&example("models/cora-gt.json"))?;
        let hops = ModelSpec {
            scope: "hops:2".parse::<AttentionScope>()?,
            global_tokens: 1,
            ..full.clone()
        };
        let plan = search(&cluster, &hops)?;
        check(&plan, &hops)?;
        let refused = check(&plan, &full).expect_err("a hops plan for a full-scope run");
        assert_eq!(
            refused.to_string(),
            "the plan is for a model with global_tokens 1, this run has global_tokens 0: plan for this model"
        );
        let untokened = ModelSpec {
            global_tokens: 0,
            ..hops.clone()
        };
        let plan = search(&cluster, &untokened)?;
        let refused = check(&plan, &full).expect_err("a hops plan for a full-scope run");
        assert_eq!(
            refused.to_string(),
            "the plan is for a model with scope hops:2:256, this run has scope full: plan for this model"
        );
        Ok(())
    }

    #[test]
    fn a_cluster_of_more_devices_than_adapters_opens_logical_devices() {
        assert_eq!(
            logical_for(Some(3), true, 4, || 1),
            Some(3),
            "--devices wins"
        );
        assert_eq!(logical_for(None, true, 4, || 1), Some(4));
        assert_eq!(
            logical_for(None, true, 2, || 2),
            None,
            "one device per adapter"
        );
        assert_eq!(
            logical_for(None, false, 4, || 1),
            None,
            "a plan file names adapters"
        );
    }
}
