//! The plan a multi-device `train` runs: read from `--plan`, or searched for `--devices N`
//! from a fresh profile; checked against the run's model and the devices present.

use std::path::Path;

use crate::commands::profile::profile_options;
use anyhow::{Context, bail};
use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    device::{AdapterSelector, declare_adapters, describe_adapter, list_adapters, open_wgpu},
    graph::Graph,
    profile::{ProfileOptions, profile},
    train::{TrainOptions, measure_sequences},
};

use megagraph_planner::{
    ClusterSpec, Degrees, HaloSpec, ModelSpec, Plan, load_cluster, search, search_fixed,
};

/// The adapters of a job's devices.
#[derive(Debug, PartialEq)]
enum Chosen {
    /// One device per entry, on the adapter it names (`None`: the first of the list).
    Each(Vec<Option<AdapterSelector>>),
    /// One device per adapter of the process's list.
    EveryListed,
}

/// Which adapters a job opens, from what names them, first match wins: `logical` devices on
/// the one `--adapter` (or the first of the list); the `--adapter`s, one device each; the
/// plan's adapter ids for this process's devices (`planned`, all of them named); one device per
/// adapter of the list.
fn choose(
    adapters: &[AdapterSelector],
    logical: Option<usize>,
    planned: &[Option<String>],
) -> anyhow::Result<Chosen> {
    if let Some(count) = logical {
        if count == 0 {
            bail!("--devices must be at least 1");
        }
        if adapters.len() > 1 {
            bail!("--devices N opens N logical devices of one adapter: name at most one --adapter");
        }
        return Ok(Chosen::Each(vec![adapters.first().cloned(); count]));
    }
    if !adapters.is_empty() {
        return Ok(Chosen::Each(adapters.iter().cloned().map(Some).collect()));
    }
    if !planned.is_empty() && planned.iter().all(Option::is_some) {
        let selectors = planned
            .iter()
            .flatten()
            .map(|id| {
                id.parse::<AdapterSelector>()
                    .map(Some)
                    .map_err(|e| anyhow::anyhow!("the plan's adapter {e}"))
            })
            .collect::<anyhow::Result<_>>()?;
        return Ok(Chosen::Each(selectors));
    }
    Ok(Chosen::EveryListed)
}

/// Opens the devices of a job (see [`choose`] for which).
pub fn open_devices(
    adapters: &[AdapterSelector],
    logical: Option<usize>,
    planned: &[Option<String>],
) -> anyhow::Result<Vec<WgpuDevice>> {
    let selectors = match choose(adapters, logical, planned)? {
        Chosen::Each(selectors) => selectors,
        Chosen::EveryListed => {
            let listed: Vec<_> = list_adapters().iter().map(|a| Some(a.selector())).collect();
            if listed.is_empty() {
                vec![None]
            } else {
                listed
            }
        }
    };
    let ids = selectors
        .iter()
        .map(|selector| Ok(describe_adapter(selector.as_ref())?.id))
        .collect::<anyhow::Result<Vec<_>>>()?;
    declare_adapters(&ids)?;
    Ok(selectors
        .iter()
        .map(|selector| open_wgpu(selector.as_ref()))
        .collect::<Result<Vec<_>, _>>()?)
}

/// How many logical devices to open: `--devices N` when given; for a plan made on a cluster
/// spec that lists more devices (`planned`) than the machine has adapters (a spec profiled
/// with `--devices N`) and names no adapters (`names_adapters`), that many; otherwise none.
pub fn logical_count(
    devices: Option<usize>,
    cluster: Option<&Path>,
    planned: usize,
    names_adapters: bool,
) -> Option<usize> {
    logical_for(
        devices,
        cluster.is_some() && !names_adapters,
        planned,
        || list_adapters().len(),
    )
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

/// The sequences the graph is cut into at `seq_len` nodes each.
pub fn sequence_count(graph: &Graph, seq_len: usize) -> usize {
    graph.num_nodes().div_ceil(seq_len).max(1)
}

/// The model spec of this run, as the planner sees it, with `batch` sequences per step and
/// the figures of its sequences measured from the graph: pairs, edges and feature non-zeros
/// per node, and the halos of CP degrees up to `max_cp` (hops scope).
pub fn model_spec(
    graph: &Graph,
    options: &TrainOptions,
    max_cp: usize,
    batch: usize,
) -> anyhow::Result<ModelSpec> {
    let config = options.model_config(graph);
    let degrees: Vec<usize> = (2..=max_cp).collect();
    let figures = measure_sequences(graph, options.seq_len, options.seed, &config, &degrees)
        .context("measuring the sequences for the planner")?;
    Ok(ModelSpec {
        num_sequences: batch,
        graph_sequences: sequence_count(graph, options.seq_len),
        pairs_per_node: figures.pairs_per_node,
        edges_per_node: figures.edges_per_node,
        feature_entries_per_node: graph.feature_entries_per_node(),
        halo: figures
            .halo
            .into_iter()
            .map(|(cp, fraction)| HaloSpec { cp, fraction })
            .collect(),
        ..config.planner_spec(options.sequence_nodes(graph))
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
    /// The adapters to profile (empty: every listed one).
    pub adapters: &'a [AdapterSelector],
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
            // Timed at the run's own sequence length, where the planner will read them.
            profile(&ProfileOptions {
                seq_len: Some(model.seq_len),
                ..profile_options(request.adapters, request.devices, request.device_memory)
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
    fn the_first_source_that_names_adapters_chooses_them() -> anyhow::Result<()> {
        let id = |text: &str| text.parse::<AdapterSelector>().map_err(anyhow::Error::msg);
        let (gl, vulkan) = (id("gl:0")?, id("vulkan:card#0")?);
        let planned = [
            Some("vulkan:card#0".to_string()),
            Some("gl:x#0".to_string()),
        ];
        assert_eq!(
            choose(std::slice::from_ref(&gl), Some(2), &planned)?,
            Chosen::Each(vec![Some(gl.clone()); 2]),
            "logical devices of the one --adapter"
        );
        assert_eq!(choose(&[], Some(2), &[])?, Chosen::Each(vec![None; 2]));
        assert_eq!(
            choose(&[vulkan.clone(), gl.clone()], None, &planned)?,
            Chosen::Each(vec![Some(vulkan.clone()), Some(gl.clone())]),
            "--adapter over the plan"
        );
        assert_eq!(
            choose(&[], None, &planned)?,
            Chosen::Each(vec![Some(vulkan), Some(id("gl:x#0")?)]),
            "the plan's adapters"
        );
        assert_eq!(
            choose(&[], None, &[planned[0].clone(), None])?,
            Chosen::EveryListed,
            "a plan that names some adapters only"
        );
        assert_eq!(choose(&[], None, &[])?, Chosen::EveryListed);
        let refused = choose(&[gl.clone(), gl], Some(2), &[]).expect_err("two adapters");
        assert!(refused.to_string().contains("at most one --adapter"));
        let refused = choose(&[], None, &[Some("opengl:0".to_string())]).expect_err("bad id");
        assert!(
            refused.to_string().starts_with("the plan's adapter"),
            "{refused}"
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
