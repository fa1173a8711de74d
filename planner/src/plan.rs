//! A plan: the configuration found, its predicted figures and the baselines; its JSON form.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cost::predict;
use crate::{
    Baselines, ClusterSpec, Degrees, DevicePrediction, ModelSpec, ParallelConfig, PlannerError,
    Prediction, SCHEMA_VERSION, Stage, json,
};

/// The configuration a search found, what it is predicted to do, and the baselines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "PlanFile", try_from = "PlanFile")]
pub struct Plan {
    /// The configuration.
    pub config: ParallelConfig,
    /// Its predicted figures.
    pub prediction: Prediction,
    /// Pure DP, uniform PP and uniform CP on the same cluster and model.
    pub baselines: Baselines,
    /// The model shape the plan was made for (an engine refuses a plan for another shape).
    pub model: ModelSpec,
    /// Per device: the MPI process that drives it (from the cluster spec's devices).
    pub processes: Vec<usize>,
    /// Per device: the stable id of the adapter that holds it (from the cluster spec's devices);
    /// empty when the spec names no adapter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<Option<String>>,
}

impl Plan {
    /// The plan of `config` (valid for this cluster and model) with prediction and baselines.
    pub(crate) fn new(cluster: &ClusterSpec, model: &ModelSpec, config: ParallelConfig) -> Self {
        Plan {
            prediction: predict(cluster, model, &config),
            baselines: Baselines::of(cluster, model),
            model: model.clone(),
            processes: cluster.devices.iter().map(|d| d.process).collect(),
            adapters: if cluster.devices.iter().any(|d| d.adapter.is_some()) {
                cluster.devices.iter().map(|d| d.adapter.clone()).collect()
            } else {
                Vec::new()
            },
            config,
        }
    }

    /// Reads and validates a plan file (as written by [`Plan::to_json`]); errors name the file.
    pub fn load(path: &Path) -> Result<Plan, PlannerError> {
        json::load(path, Plan::from_json)
    }

    /// Parses and validates the text of a plan file.
    pub fn from_json(text: &str) -> Result<Plan, PlannerError> {
        Plan::try_from(json::parse::<PlanFile>(text, "plan")?)
    }

    /// The plan as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan always serializes")
    }
}

/// A plan as written to JSON: the contract of `megagraph plan --json`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    schema_version: u64,
    config: Degrees,
    config_text: String,
    stages: Vec<Stage>,
    node_shares: Vec<f64>,
    micro_batches: usize,
    predicted_step_seconds: f64,
    predicted_peak_bytes: Vec<u64>,
    fits: bool,
    devices: Vec<DevicePrediction>,
    baselines: Baselines,
    model: ModelSpec,
    /// Per device, its MPI process; left out when every device is on process 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    processes: Vec<usize>,
    /// Per device, the stable id of its adapter (null: unnamed); left out when none is named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    adapters: Vec<Option<String>>,
}

impl From<Plan> for PlanFile {
    fn from(plan: Plan) -> Self {
        let Plan {
            config,
            prediction,
            baselines,
            model,
            processes,
            adapters,
        } = plan;
        PlanFile {
            schema_version: SCHEMA_VERSION,
            config: config.degrees,
            config_text: config.degrees.to_string(),
            stages: config.stages,
            node_shares: config.node_shares,
            micro_batches: config.micro_batches,
            predicted_step_seconds: prediction.step_seconds,
            predicted_peak_bytes: prediction.peak_bytes(),
            fits: prediction.fits(),
            devices: prediction.devices,
            baselines,
            model,
            processes: if processes.iter().all(|&p| p == 0) {
                Vec::new()
            } else {
                processes
            },
            adapters,
        }
    }
}

impl TryFrom<PlanFile> for Plan {
    type Error = PlannerError;

    fn try_from(file: PlanFile) -> Result<Self, Self::Error> {
        json::check_version(file.schema_version, "plan")?;
        file.config.check_text(&file.config_text)?;
        let config = ParallelConfig {
            degrees: file.config,
            stages: file.stages,
            node_shares: file.node_shares,
            micro_batches: file.micro_batches,
        };
        config.check_shape()?;
        let count = config.node_shares.len();
        let bad = |message: String| Err(PlannerError::Config(message));
        if file.devices.len() != count || file.predicted_peak_bytes.len() != count {
            return bad(format!(
                "node_shares has {count} entries but devices has {} and predicted_peak_bytes {}",
                file.devices.len(),
                file.predicted_peak_bytes.len()
            ));
        }
        let prediction = Prediction {
            step_seconds: file.predicted_step_seconds,
            devices: file.devices,
        };
        if prediction.peak_bytes() != file.predicted_peak_bytes {
            return bad("predicted_peak_bytes disagrees with the devices' peak_bytes".to_string());
        }
        if prediction.fits() != file.fits {
            return bad(format!(
                "fits is {} but the devices' figures say {}",
                file.fits,
                prediction.fits()
            ));
        }
        for (name, baseline) in file.baselines.named() {
            if baseline.peak_bytes.len() != count {
                return bad(format!(
                    "baseline {name} has {} peaks for {count} devices",
                    baseline.peak_bytes.len()
                ));
            }
        }
        file.model.validate()?;
        let processes = match file.processes.len() {
            0 => vec![0; count],
            n if n == count => file.processes,
            n => return bad(format!("processes has {n} entries for {count} devices")),
        };
        if !file.adapters.is_empty() && file.adapters.len() != count {
            return bad(format!(
                "adapters has {} entries for {count} devices",
                file.adapters.len()
            ));
        }
        Ok(Plan {
            config,
            prediction,
            baselines: file.baselines,
            model: file.model,
            processes,
            adapters: file.adapters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search;
    use crate::testing::{cluster, device, model};

    fn plan() -> Result<Plan, PlannerError> {
        let devices = vec![
            device("fast", 4e9, 4e13, 1e12),
            device("slow", 4e9, 2e13, 5e11),
            device("small", 5e8, 2e13, 5e11),
        ];
        search(&cluster(devices, (2e10, 1e-5), vec![]), &model(4, 4096, 6))
    }

    /// The plan's JSON with the value at `pointer` set to `value` (added if absent).
    fn edited(plan: &Plan, pointer: &str, value: serde_json::Value) -> String {
        let mut json = serde_json::to_value(plan).expect("serializes");
        match json.pointer_mut(pointer) {
            Some(slot) => *slot = value,
            None => {
                json[pointer.trim_start_matches('/')] = value;
            }
        }
        json.to_string()
    }

    /// Whether two JSON values are equal, numbers within `1e-12` relative (serde_json's
    /// default parser may be one ulp off).
    fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (
                    x.as_f64().unwrap_or(f64::NAN),
                    y.as_f64().unwrap_or(f64::NAN),
                );
                x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }

    #[test]
    fn json_round_trips() -> Result<(), PlannerError> {
        let plan = plan()?;
        let again = Plan::from_json(&plan.to_json())?;
        assert_eq!(again.config.stages, plan.config.stages);
        assert_eq!(again.config.degrees, plan.config.degrees);
        assert_eq!(again.prediction.peak_bytes(), plan.prediction.peak_bytes());
        let value = |p: &Plan| serde_json::to_value(p).expect("serializes");
        assert!(same(&value(&again), &value(&plan)));
        let path = std::env::temp_dir().join(format!("megagraph-plan-{}.json", std::process::id()));
        std::fs::write(&path, plan.to_json()).expect("temp file");
        let loaded = Plan::load(&path);
        std::fs::remove_file(&path).expect("temp file");
        assert!(same(&value(&loaded?), &value(&plan)));
        Ok(())
    }

    #[test]
    fn processes_come_from_the_cluster_and_round_trip() -> Result<(), PlannerError> {
        let mut devices = vec![device("a", 4e9, 4e13, 1e12), device("b", 4e9, 4e13, 1e12)];
        devices[1].process = 1;
        let plan = search(&cluster(devices, (2e10, 1e-5), vec![]), &model(2, 1024, 4))?;
        assert_eq!(plan.processes, vec![0, 1]);
        let again = Plan::from_json(&plan.to_json())?;
        assert_eq!(again.processes, vec![0, 1]);
        let single = Plan::from_json(&self::plan()?.to_json())?;
        assert_eq!(
            single.processes,
            vec![0; 3],
            "absent means every device on process 0"
        );
        assert!(!single.to_json().contains("processes"));
        assert_one_entry_refused(&plan, "processes", serde_json::json!([0]));
        Ok(())
    }

    #[test]
    fn adapters_come_from_the_cluster_and_round_trip() -> Result<(), PlannerError> {
        let mut devices = vec![device("a", 4e9, 4e13, 1e12), device("b", 4e9, 4e13, 1e12)];
        devices[0].adapter = Some("vulkan:card#0".to_string());
        devices[1].adapter = Some("gl:card#0".to_string());
        let plan = search(&cluster(devices, (2e10, 1e-5), vec![]), &model(2, 1024, 4))?;
        let named = vec![
            Some("vulkan:card#0".to_string()),
            Some("gl:card#0".to_string()),
        ];
        assert_eq!(plan.adapters, named);
        assert_eq!(Plan::from_json(&plan.to_json())?.adapters, named);
        let unnamed = self::plan()?;
        assert!(unnamed.adapters.is_empty(), "no adapter named, none listed");
        assert!(!unnamed.to_json().contains("adapters"));
        assert_one_entry_refused(&plan, "adapters", serde_json::json!(["gl:card#0"]));
        Ok(())
    }

    /// Asserts that `plan` (of two devices) with one entry in its per-device list `field` is
    /// refused, naming the field and the counts.
    fn assert_one_entry_refused(plan: &Plan, field: &str, one: serde_json::Value) {
        let mut value: serde_json::Value = serde_json::from_str(&plan.to_json()).expect("JSON");
        value[field] = one;
        let err = Plan::from_json(&value.to_string()).expect_err("one entry for two devices");
        assert!(
            err.to_string()
                .contains(&format!("{field} has 1 entries for 2 devices")),
            "{err}"
        );
    }

    #[test]
    fn json_has_the_contract_fields() -> Result<(), PlannerError> {
        let plan = plan()?;
        let value: serde_json::Value = serde_json::from_str(&plan.to_json()).expect("valid JSON");
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["config"]["dp"], plan.config.degrees.dp);
        assert_eq!(value["config_text"], plan.config.degrees.to_string());
        assert_eq!(value["stages"][0]["layers"][0], 0);
        assert!(value["stages"][0]["devices"].is_array());
        assert_eq!(value["node_shares"].as_array().map(Vec::len), Some(3));
        assert_eq!(value["micro_batches"], plan.config.micro_batches);
        assert!(value["predicted_step_seconds"].is_f64());
        assert_eq!(
            value["predicted_peak_bytes"].as_array().map(Vec::len),
            Some(3)
        );
        assert_eq!(value["fits"], true);
        for baseline in ["pure_dp", "uniform_pp", "uniform_cp"] {
            let b = &value["baselines"][baseline];
            for key in [
                "config",
                "config_text",
                "micro_batches",
                "predicted_step_seconds",
                "predicted_peak_bytes",
                "fits",
            ] {
                assert!(!b[key].is_null(), "baselines.{baseline}.{key}");
            }
        }
        Ok(())
    }

    #[test]
    fn inconsistent_plans_are_rejected_with_one_line() -> Result<(), PlannerError> {
        let plan = plan()?;
        use serde_json::json;
        let cases = [
            (
                "/schema_version",
                json!(2),
                "plan: schema_version 2 is not supported (expected 1)",
            ),
            (
                "/config_text",
                json!("dp9-pp9-cp9"),
                "does not match config",
            ),
            ("/node_shares/0", json!(7), "not in [0, 1]"),
            (
                "/micro_batches",
                json!(0),
                "micro_batches must be >= 1, got 0",
            ),
            (
                "/fits",
                json!(false),
                "fits is false but the devices' figures say true",
            ),
            (
                "/predicted_peak_bytes/0",
                json!(1),
                "predicted_peak_bytes disagrees",
            ),
            ("/extra", json!(1), "plan: unknown field `extra`"),
        ];
        for (pointer, value, expected) in cases {
            let message = Plan::from_json(&edited(&plan, pointer, value))
                .unwrap_err()
                .to_string();
            assert!(message.contains(expected), "{message:?} lacks {expected:?}");
            assert_eq!(message.lines().count(), 1);
        }
        Ok(())
    }

    #[test]
    fn explain_and_table_describe_every_device_and_baseline() -> Result<(), PlannerError> {
        let plan = plan()?;
        let explain = plan.explain();
        assert!(explain.starts_with(&format!("plan {}", plan.config.degrees)));
        for (d, device) in plan.prediction.devices.iter().enumerate() {
            assert!(
                explain.contains(&format!("device {d} {:?}", device.name)),
                "{explain}"
            );
        }
        assert!(explain.contains("memory: "));
        let comparison = plan.comparison_table();
        assert_eq!(comparison.lines().count(), 5, "{comparison}");
        for name in ["plan", "pure DP", "uniform PP", "uniform CP"] {
            assert!(
                comparison.lines().any(|l| l.starts_with(name)),
                "{comparison}"
            );
        }
        let table = plan.table();
        assert!(table.ends_with(&comparison), "{table}");
        let devices: Vec<&str> = table.lines().take_while(|l| !l.is_empty()).collect();
        assert_eq!(devices.len(), 1 + plan.prediction.devices.len(), "{table}");
        for ((d, device), role) in plan.prediction.devices.iter().enumerate().zip(plan.roles()) {
            let line = devices[1 + d];
            assert!(line.contains(&device.name), "{line}");
            let Some((_, s, _)) = role else {
                assert!(line.contains("unused"), "{line}");
                continue;
            };
            let share = format!("{:.1}%", 100.0 * plan.config.node_shares[d]);
            assert!(line.contains(&plan.stage_label(s)), "{line}");
            assert!(line.contains(&share), "{line} lacks {share}");
            assert!(
                line.ends_with(if device.fits() { "yes" } else { "no" }),
                "{line}"
            );
        }
        Ok(())
    }
}
