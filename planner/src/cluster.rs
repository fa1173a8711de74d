//! `cluster.json`: the devices of a cluster and the links between them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{PlannerError, json};

/// A cluster: its devices, a default link between any two, and optional per-pair links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Must be 1.
    pub schema_version: u64,
    /// The devices; a device's index in this list is its id everywhere in a plan.
    pub devices: Vec<DeviceSpec>,
    /// The link between any two devices not listed in `links`.
    pub link: Link,
    /// Links between particular pairs (undirected), overriding `link`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<PairLink>,
}

/// One device as profiled or taken from a spec sheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// A name for messages and reports.
    pub name: String,
    /// Memory usable for training, in bytes.
    pub memory_bytes: f64,
    /// Measured (or spec-sheet) throughput of the attention kernel, FLOP/s.
    pub flops: f64,
    /// Memory bandwidth, bytes/s.
    pub mem_bandwidth: f64,
    /// The MPI process (rank in `MPI_COMM_WORLD`) that drives the device; 0 for a job of
    /// one process. A process's devices are its adapters (or logical devices) in list order.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub process: usize,
    /// The adapter that holds the device, by its stable id (`API:NAME#N`, as `megagraph devices`
    /// lists it); several devices may name one adapter (logical devices). A plan opens exactly
    /// these adapters. Absent: the process's adapters (or logical devices) in list order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// The largest buffer the device can bind, bytes (its API's limit; absent: none known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_buffer_bytes: Option<f64>,
    /// The hardware the device shares with every other device naming the same (the logical
    /// devices of one adapter; software adapters of one host's CPU). `flops` and
    /// `mem_bandwidth` are then the device's rates when it runs alone, and a plan that keeps
    /// `k` of the sharing devices busy gives each `1/k` of them. Absent: shares nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
    /// Seconds a transformer layer's forward and backward over one sequence cost beyond its
    /// FLOPs and memory traffic (kernel dispatch, autodiff bookkeeping, small element-wise
    /// kernels), as a function of the device's rows (absent: none counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_overhead: Option<Overhead>,
    /// The same for the embedding and the head together, forward and backward (a stage with
    /// one of them is charged half; absent: none counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_overhead: Option<Overhead>,
    /// What an optimizer step costs beyond Adam's arithmetic and memory traffic (gradient
    /// bookkeeping, Adam's small kernels on every parameter tensor), once per step whatever
    /// the micro-batches (absent: none counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_overhead: Option<StepOverhead>,
    /// How the overheads grow with the devices a plan keeps busy on the device's `hardware`:
    /// with `k` of them busy, each overhead takes `1 + overhead_contention · (k − 1)` times
    /// its time alone. Measured with every logical device of an adapter running the model at
    /// once. Absent: 1, the overheads share the hardware like the kernels (`k` times as long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_contention: Option<f64>,
}

/// Seconds of overhead on one sequence: `fixed + per_row · rows`, for the rows a device holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overhead {
    /// Seconds whatever the rows.
    pub fixed: f64,
    /// Seconds per row.
    pub per_row: f64,
}

impl Overhead {
    /// The overhead over `rows` rows.
    pub fn at(&self, rows: f64) -> f64 {
        self.fixed + self.per_row * rows
    }
}

/// Seconds of overhead of one optimizer step: per transformer layer a device updates, and for
/// the embedding and head together (a stage with one of them is charged half).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepOverhead {
    /// Seconds per transformer layer.
    pub per_layer: f64,
    /// Seconds for the embedding and head together.
    pub ends: f64,
}

/// Whether a process number is the default.
fn is_zero(process: &usize) -> bool {
    *process == 0
}

/// A link's bandwidth and latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Bytes/s in each direction.
    pub bandwidth: f64,
    /// Seconds per message.
    pub latency: f64,
}

/// The link between devices `a` and `b` (either direction).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairLink {
    /// One device index.
    pub a: usize,
    /// The other device index.
    pub b: usize,
    /// Bytes/s in each direction.
    pub bandwidth: f64,
    /// Seconds per message.
    pub latency: f64,
}

/// Reads, parses and validates a `cluster.json`; errors name the file.
pub fn load_cluster(path: &Path) -> Result<ClusterSpec, PlannerError> {
    json::load(path, ClusterSpec::from_json)
}

impl ClusterSpec {
    /// Parses and validates the text of a `cluster.json`.
    pub fn from_json(text: &str) -> Result<Self, PlannerError> {
        let spec: Self = json::parse(text, "cluster")?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks the version, that there are devices, that every figure is in range and that
    /// per-pair links name distinct existing devices, each pair once.
    pub fn validate(&self) -> Result<(), PlannerError> {
        json::check_version(self.schema_version, "cluster")?;
        if self.devices.is_empty() {
            return Err(PlannerError::NoDevices);
        }
        for (index, device) in self.devices.iter().enumerate() {
            device.validate(index)?;
        }
        check_link("link".to_string(), self.link.bandwidth, self.link.latency)?;
        let count = self.devices.len();
        let mut first_of_pair = std::collections::HashMap::new();
        for (index, pair) in self.links.iter().enumerate() {
            for device in [pair.a, pair.b] {
                if device >= count {
                    return Err(PlannerError::LinkDevice {
                        index,
                        device,
                        count,
                    });
                }
            }
            if pair.a == pair.b {
                return Err(PlannerError::SelfLink {
                    index,
                    device: pair.a,
                });
            }
            let key = (pair.a.min(pair.b), pair.a.max(pair.b));
            if let Some(&first) = first_of_pair.get(&key) {
                return Err(PlannerError::DuplicateLink {
                    index,
                    a: pair.a,
                    b: pair.b,
                    first,
                });
            }
            first_of_pair.insert(key, index);
            let name = format!("links[{index}] ({}-{})", pair.a, pair.b);
            check_link(name, pair.bandwidth, pair.latency)?;
        }
        Ok(())
    }

    /// The link between every ordered pair of devices, row-major (`[a * n + b]`); the
    /// diagonal holds the default link and is never used.
    pub(crate) fn link_matrix(&self) -> Vec<Link> {
        let n = self.devices.len();
        let mut matrix = vec![self.link; n * n];
        for pair in &self.links {
            let link = Link {
                bandwidth: pair.bandwidth,
                latency: pair.latency,
            };
            matrix[pair.a * n + pair.b] = link;
            matrix[pair.b * n + pair.a] = link;
        }
        matrix
    }
}

impl DeviceSpec {
    /// Each overhead's field name and figures (`[fixed, per_row]`, or `[per_layer, ends]` for
    /// the step), `None` where absent.
    pub(crate) fn overheads(&self) -> [(&'static str, Option<[f64; 2]>); 3] {
        [
            (
                "layer_overhead",
                self.layer_overhead.map(|o| [o.fixed, o.per_row]),
            ),
            (
                "end_overhead",
                self.end_overhead.map(|o| [o.fixed, o.per_row]),
            ),
            (
                "step_overhead",
                self.step_overhead.map(|o| [o.per_layer, o.ends]),
            ),
        ]
    }

    /// A device of process 0 with this memory (bytes), FLOP/s and memory bandwidth (bytes/s),
    /// and nothing else known: no adapter, buffer limit, shared hardware or overheads.
    pub fn new(name: &str, memory_bytes: f64, flops: f64, mem_bandwidth: f64) -> Self {
        DeviceSpec {
            name: name.to_string(),
            memory_bytes,
            flops,
            mem_bandwidth,
            process: 0,
            adapter: None,
            max_buffer_bytes: None,
            hardware: None,
            layer_overhead: None,
            end_overhead: None,
            step_overhead: None,
            overhead_contention: None,
        }
    }

    /// How many times its time alone each overhead takes with `sharing` devices busy on the
    /// device's hardware (itself included; see `overhead_contention`).
    pub(crate) fn overhead_slowdown(&self, sharing: f64) -> f64 {
        1.0 + self.overhead_contention.unwrap_or(1.0) * (sharing - 1.0)
    }

    /// Checks that memory, FLOP/s, bandwidth and any buffer limit are finite and positive, and
    /// the overheads and their contention finite and not negative.
    fn validate(&self, index: usize) -> Result<(), PlannerError> {
        for (field, value) in [
            ("memory_bytes", self.memory_bytes),
            ("flops", self.flops),
            ("mem_bandwidth", self.mem_bandwidth),
            ("max_buffer_bytes", self.max_buffer_bytes.unwrap_or(1.0)),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(PlannerError::Device {
                    index,
                    name: self.name.clone(),
                    field,
                    rule: "> 0",
                    value,
                });
            }
        }
        let overheads = (self.overheads().into_iter())
            .flat_map(|(field, figures)| figures.into_iter().flatten().map(move |v| (field, v)));
        let contention = (self.overhead_contention).map(|c| ("overhead_contention", c));
        for (field, value) in overheads.chain(contention) {
            if !(value.is_finite() && value >= 0.0) {
                return Err(PlannerError::Device {
                    index,
                    name: self.name.clone(),
                    field,
                    rule: ">= 0",
                    value,
                });
            }
        }
        Ok(())
    }
}

/// Checks a link: bandwidth finite and positive, latency finite and not negative.
fn check_link(link: String, bandwidth: f64, latency: f64) -> Result<(), PlannerError> {
    let error = |field, rule, value| PlannerError::Link {
        link: link.clone(),
        field,
        rule,
        value,
    };
    if !(bandwidth.is_finite() && bandwidth > 0.0) {
        return Err(error("bandwidth", "> 0", bandwidth));
    }
    if !(latency.is_finite() && latency >= 0.0) {
        return Err(error("latency", ">= 0", latency));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
        "schema_version": 1,
        "devices": [
            {"name": "rtx4090", "memory_bytes": 25769803776, "flops": 8.26e13, "mem_bandwidth": 1.008e12},
            {"name": "rx7900xtx", "memory_bytes": 25769803776, "flops": 6.14e13, "mem_bandwidth": 9.6e11}
        ],
        "link": {"bandwidth": 1.2e10, "latency": 5e-5},
        "links": [{"a": 0, "b": 1, "bandwidth": 2.4e10, "latency": 2e-5}]
    }"#;

    fn error_of(text: &str) -> String {
        match ClusterSpec::from_json(text) {
            Ok(_) => panic!("expected an error for {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn good_cluster_parses_and_round_trips() -> Result<(), PlannerError> {
        let spec = ClusterSpec::from_json(GOOD)?;
        assert_eq!(spec.devices.len(), 2);
        let again = ClusterSpec::from_json(&serde_json::to_string(&spec).expect("serializes"))?;
        assert_eq!(spec, again);
        let links = spec.link_matrix();
        assert_eq!(links[1].bandwidth, 2.4e10);
        assert_eq!(links[2].bandwidth, 2.4e10);
        Ok(())
    }

    #[test]
    fn negative_memory_is_named_with_its_value() {
        let text = GOOD.replace(
            "\"memory_bytes\": 25769803776, \"flops\": 6.14e13",
            "\"memory_bytes\": -5, \"flops\": 6.14e13",
        );
        assert_eq!(
            error_of(&text),
            "device 1 (\"rx7900xtx\"): memory_bytes must be > 0, got -5"
        );
    }

    #[test]
    fn overhead_contention_is_read_and_checked() -> Result<(), PlannerError> {
        let with = |contention: &str| {
            GOOD.replace(
                "\"mem_bandwidth\": 9.6e11}",
                &format!("\"mem_bandwidth\": 9.6e11, \"overhead_contention\": {contention}}}"),
            )
        };
        let spec = ClusterSpec::from_json(&with("0.5"))?;
        let (lone, busy) = (&spec.devices[0], &spec.devices[1]);
        assert_eq!(busy.overhead_contention, Some(0.5));
        // Four busy: 1 + 0.5 · 3 with the measured contention, 4 without one.
        assert_eq!(busy.overhead_slowdown(4.0), 2.5);
        assert_eq!(lone.overhead_slowdown(4.0), 4.0);
        assert_eq!(busy.overhead_slowdown(1.0), 1.0);
        assert_eq!(
            error_of(&with("-0.1")),
            "device 1 (\"rx7900xtx\"): overhead_contention must be >= 0, got -0.1"
        );
        Ok(())
    }

    #[test]
    fn zero_devices_is_an_error() {
        let text =
            r#"{"schema_version": 1, "devices": [], "link": {"bandwidth": 1e9, "latency": 0}}"#;
        assert_eq!(error_of(text), "cluster: devices must not be empty");
    }

    #[test]
    fn unknown_schema_version_is_named() {
        let text = GOOD.replace("\"schema_version\": 1", "\"schema_version\": 7");
        assert_eq!(
            error_of(&text),
            "cluster: schema_version 7 is not supported (expected 1)"
        );
    }

    #[test]
    fn unknown_field_is_an_error() {
        let text = GOOD.replace("\"latency\": 5e-5", "\"latency\": 5e-5, \"jitter\": 1");
        let message = error_of(&text);
        assert!(
            message.starts_with("cluster: unknown field `jitter`"),
            "{message}"
        );
        assert_eq!(message.lines().count(), 1);
    }

    #[test]
    fn bad_links_are_errors() {
        let out_of_range = GOOD.replace("\"a\": 0, \"b\": 1", "\"a\": 0, \"b\": 5");
        assert_eq!(
            error_of(&out_of_range),
            "links[0]: device 5 out of range (the cluster has 2 devices)"
        );
        let negative = GOOD.replace("\"latency\": 2e-5", "\"latency\": -1");
        assert_eq!(
            error_of(&negative),
            "links[0] (0-1): latency must be >= 0, got -1"
        );
        let zero = GOOD.replace("\"bandwidth\": 1.2e10", "\"bandwidth\": 0");
        assert_eq!(error_of(&zero), "link: bandwidth must be > 0, got 0");
        let twice = GOOD.replace(
            "\"latency\": 2e-5}]",
            "\"latency\": 2e-5}, {\"a\": 1, \"b\": 0, \"bandwidth\": 1, \"latency\": 0}]",
        );
        assert_eq!(
            error_of(&twice),
            "links[1]: pair (1, 0) is already given by links[0]"
        );
    }

    #[test]
    fn malformed_json_is_one_line() {
        let message = error_of("{\"schema_version\": 1, \"devices\": [");
        assert!(message.starts_with("cluster: "), "{message}");
        assert_eq!(message.lines().count(), 1);
    }

    #[test]
    fn load_names_the_file() {
        let path =
            std::env::temp_dir().join(format!("megagraph-planner-{}.json", std::process::id()));
        std::fs::write(&path, "{\"schema_version\": 2}").expect("temp file");
        let message = load_cluster(&path).map(|_| ()).unwrap_err().to_string();
        std::fs::remove_file(&path).expect("temp file");
        assert!(
            message.starts_with(&path.display().to_string()),
            "{message}"
        );
        assert!(message.ends_with("cluster: schema_version 2 is not supported (expected 1)"));
        let missing = load_cluster(Path::new("/nonexistent/cluster.json")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot read /nonexistent/cluster.json")
        );
    }
}
