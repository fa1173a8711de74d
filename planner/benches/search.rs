//! Times the search on a 64-device, 48-layer problem and prints it beside its 1 s bound.
//!
//! The cluster: eight nodes of eight GPUs (four nodes of H100 SXM, four of A100 SXM), NVLink
//! inside a node, 400 Gb/s InfiniBand between nodes. Run with `cargo bench -p megagraph-planner`.

use std::time::Instant;

use megagraph_planner::{
    ClusterSpec, DeviceSpec, Link, ModelSpec, PairLink, SCHEMA_VERSION, search,
};

/// The time the search must stay under.
const BOUND_SECONDS: f64 = 1.0;

fn cluster() -> ClusterSpec {
    let mut devices = Vec::new();
    let mut links = Vec::new();
    for node in 0..8 {
        let (name, memory_bytes, flops, mem_bandwidth, nvlink) = if node < 4 {
            ("h100-sxm", 85.9e9, 6.7e13, 3.35e12, 4.5e11)
        } else {
            ("a100-sxm", 85.9e9, 1.95e13, 2.04e12, 3.0e11)
        };
        for _ in 0..8 {
            devices.push(DeviceSpec {
                name: name.to_string(),
                memory_bytes,
                flops,
                mem_bandwidth,
                process: 0,
            });
        }
        for a in 0..8 {
            for b in a + 1..8 {
                links.push(PairLink {
                    a: node * 8 + a,
                    b: node * 8 + b,
                    bandwidth: nvlink,
                    latency: 3e-6,
                });
            }
        }
    }
    ClusterSpec {
        schema_version: SCHEMA_VERSION,
        devices,
        link: Link {
            bandwidth: 5e10,
            latency: 1e-5,
        },
        links,
    }
}

fn model() -> ModelSpec {
    ModelSpec {
        schema_version: SCHEMA_VERSION,
        layers: 48,
        hidden: 1024,
        heads: 16,
        ffn_hidden: 4096,
        features: 128,
        classes: 64,
        seq_len: 32768,
        num_sequences: 64,
        max_distance: 16,
        bytes_per_element: 4,
        ..ModelSpec::full_scope()
    }
}

fn main() {
    let (cluster, model) = (cluster(), model());
    let runs = 3;
    let mut best = f64::INFINITY;
    let mut plan = None;
    for _ in 0..runs {
        let start = Instant::now();
        plan = Some(search(&cluster, &model).expect("the benchmark problem has a plan"));
        best = best.min(start.elapsed().as_secs_f64());
    }
    let plan = plan.expect("ran at least once");
    println!(
        "search, {} devices x {} layers: {best:.3} s (best of {runs}), bound {BOUND_SECONDS:.1} s; plan {} with {} micro-batches, predicted step {:.3} s",
        cluster.devices.len(),
        model.layers,
        plan.config.degrees,
        plan.config.micro_batches,
        plan.prediction.step_seconds
    );
    print!("{}", plan.table());
    if best > BOUND_SECONDS {
        eprintln!("search took {best:.3} s, over the {BOUND_SECONDS:.1} s bound");
        std::process::exit(1);
    }
}
