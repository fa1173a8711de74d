//! Builders shared by the unit tests.

use proptest::prelude::*;

use crate::{
    ClusterSpec, DeviceSpec, Link, ModelSpec, Overhead, PairLink, SCHEMA_VERSION, StepOverhead,
};

/// A device with the given memory, FLOP/s and memory bandwidth.
pub(crate) fn device(name: &str, memory_bytes: f64, flops: f64, mem_bandwidth: f64) -> DeviceSpec {
    DeviceSpec::new(name, memory_bytes, flops, mem_bandwidth)
}

/// A cluster with default link `(bandwidth, latency)` and per-pair `links`.
pub(crate) fn cluster(
    devices: Vec<DeviceSpec>,
    link: (f64, f64),
    links: Vec<PairLink>,
) -> ClusterSpec {
    ClusterSpec {
        schema_version: SCHEMA_VERSION,
        devices,
        link: Link {
            bandwidth: link.0,
            latency: link.1,
        },
        links,
    }
}

/// A small Graph Transformer with `layers` layers and `num_sequences` sequences of `seq_len`.
pub(crate) fn model(layers: usize, seq_len: usize, num_sequences: usize) -> ModelSpec {
    ModelSpec {
        schema_version: SCHEMA_VERSION,
        layers,
        hidden: 64,
        heads: 4,
        ffn_hidden: 256,
        features: 128,
        classes: 8,
        seq_len,
        num_sequences,
        max_distance: 8,
        bytes_per_element: 4,
        ..ModelSpec::full_scope()
    }
}

/// `10^exponent` for an exponent drawn uniformly from `range`: log-uniform figures.
fn log_uniform(range: std::ops::Range<f64>) -> impl Strategy<Value = f64> {
    range.prop_map(|e| 10f64.powf(e))
}

/// Random clusters of 1 to `max_devices` devices drawn from up to three device types (so
/// that some devices are interchangeable), with a random default link and, half the time,
/// random per-pair links; the devices of a type share one hardware 30% of the time and have
/// overheads half the time (with a measured contention half of those). Memories run from a few
/// MB to a few GB, so that memory binds in
/// many cases, and links from 100 MB/s to 100 GB/s, so that communication matters in many.
pub(crate) fn arb_cluster(max_devices: usize) -> impl Strategy<Value = ClusterSpec> {
    let kind = (
        log_uniform(6.5..9.7),
        log_uniform(12.0..14.0),
        log_uniform(11.0..12.3),
        prop::option::weighted(0.3, log_uniform(5.0..8.0)),
        prop::bool::weighted(0.3),
        prop::option::weighted(
            0.5,
            (0.0f64..1e-2, 0.0f64..1e-5, prop::option::of(0.0f64..2.0)),
        ),
    );
    let types = prop::collection::vec(kind, 1..=3);
    let link = (log_uniform(8.0..11.0), 0.0f64..1e-4);
    (types, 1..=max_devices, link, any::<bool>()).prop_flat_map(
        |(types, n, (bandwidth, latency), with_links)| {
            let kinds = prop::collection::vec(0..types.len(), n);
            let pairs = n * (n - 1) / 2;
            let links =
                prop::collection::vec((any::<bool>(), log_uniform(8.0..11.5), 0.0f64..1e-4), pairs);
            (kinds, links).prop_map(move |(kinds, links)| {
                let devices = kinds
                    .iter()
                    .map(|&k| {
                        let (memory, flops, mem_bandwidth, max_buffer_bytes, shared, overhead) =
                            types[k];
                        let step_overhead = overhead.map(|(fixed, per_row, _)| StepOverhead {
                            per_layer: fixed,
                            ends: fixed + 100.0 * per_row,
                        });
                        let overhead_contention = overhead.and_then(|(.., contention)| contention);
                        let overhead =
                            overhead.map(|(fixed, per_row, _)| Overhead { fixed, per_row });
                        DeviceSpec {
                            max_buffer_bytes,
                            hardware: shared.then(|| format!("hardware{k}")),
                            layer_overhead: overhead,
                            end_overhead: overhead,
                            step_overhead,
                            overhead_contention,
                            ..device(&format!("type{k}"), memory, flops, mem_bandwidth)
                        }
                    })
                    .collect();
                let all_pairs = (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b)));
                let links = all_pairs
                    .zip(links)
                    .filter(|(_, (on, _, _))| with_links && *on)
                    .map(|((a, b), (_, bandwidth, latency))| PairLink {
                        a,
                        b,
                        bandwidth,
                        latency,
                    })
                    .collect();
                cluster(devices, (bandwidth, latency), links)
            })
        },
    )
}

/// Random small Graph Transformers: 1 to 6 layers, 1 to 12 sequences of 64 to 8192 nodes.
pub(crate) fn arb_model() -> impl Strategy<Value = ModelSpec> {
    (
        (1usize..=6, log_uniform(1.8..3.9), 1usize..=12),
        (
            prop::sample::select(vec![32usize, 64, 128, 256]),
            prop::sample::select(vec![1usize, 2, 4]),
        ),
        (32usize..=1024, 4usize..=1024, 2usize..=16, 0usize..=16),
        0usize..=48,
    )
        .prop_map(
            |(
                (layers, seq_len, num_sequences),
                (hidden, heads),
                (ffn_hidden, features, classes, max_distance),
                more_sequences,
            )| {
                ModelSpec {
                    graph_sequences: num_sequences + more_sequences,
                    hidden,
                    heads,
                    ffn_hidden,
                    features,
                    classes,
                    max_distance,
                    ..model(layers, seq_len as usize, num_sequences)
                }
            },
        )
}
