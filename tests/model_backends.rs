//! The Graph Transformer on the wgpu backend computes what the same model computes on burn's
//! CPU backend (ndarray): the logits, the loss, and the gradient of every float parameter.
//!
//! Tolerance: for each compared tensor `a` (wgpu) against `b` (CPU),
//! `|a_i − b_i| ≤ 1e-4 · max_j |b_j| + 1e-6` for every element `i` — a bound relative to the
//! tensor's largest magnitude, since fp32 sums accumulated in different orders (tiled matmuls,
//! atomics, fused attention) differ by a few ulps of the largest terms, not of each element.
//!
//! The model is tiny (64 nodes, hidden 16, 2 heads, 2 layers, 3 propagation steps) with
//! dropout 0.5 at every site: the masks are counter-based, so both backends draw the same ones
//! and run the same deterministic function.

use megagraph_engine::{
    burn::{
        backend::wgpu::WgpuDevice,
        module::{Module, ModuleVisitor, Param},
        nn::loss::CrossEntropyLossConfig,
        tensor::{
            Bool, Int, Tensor, TensorData,
            backend::{AutodiffBackend, Backend},
        },
    },
    device::{CpuAutodiff, CpuBackend, WgpuAutodiff},
    graph::{Graph, SbmParams, sbm},
    model::{AttentionKernel, GraphTransformer, HostSequence, ModelBackend, ModelConfig},
};

use crate::common::{TestError, TestResult, wgpu_device};

/// Relative part of the tolerance, scaled by the largest magnitude of the reference tensor.
const RELATIVE_TOLERANCE: f32 = 1e-4;
/// Absolute part of the tolerance.
const ABSOLUTE_TOLERANCE: f32 = 1e-6;

/// Nodes of the test graph, all in one sequence.
const NODES: usize = 64;

/// The gradient of one parameter, by module path.
struct NamedGrad {
    path: String,
    shape: Vec<usize>,
    values: Vec<f32>,
}

/// Collects `param.val().grad(grads)` for every float parameter, in visit order.
struct GradCollector<'g, B: AutodiffBackend> {
    grads: &'g B::Gradients,
    path: Vec<String>,
    found: Vec<NamedGrad>,
    missing: Vec<String>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for GradCollector<'_, B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let path = self.path.join(".");
        match param.val().grad(self.grads) {
            Some(grad) => {
                let shape = grad.dims().to_vec();
                let values = grad
                    .into_data()
                    .to_vec::<f32>()
                    .expect("gradients of f32 parameters are f32");
                self.found.push(NamedGrad {
                    path,
                    shape,
                    values,
                });
            }
            None => self.missing.push(path),
        }
    }
}

/// Counts every parameter tensor of a module (float, int and bool).
#[derive(Default)]
struct ParamCounter {
    tensors: usize,
}

impl<B: Backend> ModuleVisitor<B> for ParamCounter {
    fn visit_float<const D: usize>(&mut self, _: &Param<Tensor<B, D>>) {
        self.tensors += 1;
    }

    fn visit_int<const D: usize>(&mut self, _: &Param<Tensor<B, D, Int>>) {
        self.tensors += 1;
    }

    fn visit_bool<const D: usize>(&mut self, _: &Param<Tensor<B, D, Bool>>) {
        self.tensors += 1;
    }
}

/// Collects the values of every float parameter, in visit order; reading a parameter also
/// initialises it if it is still lazy.
#[derive(Default)]
struct ParamValues {
    values: Vec<Vec<f32>>,
}

impl<B: Backend> ModuleVisitor<B> for ParamValues {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let values = param
            .val()
            .into_data()
            .to_vec::<f32>()
            .expect("f32 parameters");
        self.values.push(values);
    }
}

/// The values of every float parameter of `model` (initialising lazy ones).
fn parameter_values<B: Backend>(model: &GraphTransformer<B>) -> Vec<Vec<f32>> {
    let mut collector = ParamValues::default();
    model.visit(&mut collector);
    collector.values
}

/// Number of parameter tensors of `model`.
fn parameter_tensors<B: Backend>(model: &GraphTransformer<B>) -> usize {
    let mut counter = ParamCounter::default();
    model.visit(&mut counter);
    counter.tensors
}

/// What one backend computed.
struct Outcome {
    logits: Vec<f32>,
    loss: f32,
    grads: Vec<NamedGrad>,
    missing: Vec<String>,
}

/// Forward on the whole sequence, cross-entropy against every node's label, backward.
fn forward_backward<B: AutodiffBackend + ModelBackend>(
    model: &GraphTransformer<B>,
    graph: &Graph,
    host: &HostSequence,
    config: &ModelConfig,
    device: &B::Device,
) -> Result<Outcome, TestError> {
    let seq = host.to_device::<B>(graph, config, device);
    let logits = model.forward(&seq);
    let labels: Vec<i32> = host
        .nodes
        .iter()
        .map(|&n| graph.labels()[n as usize] as i32)
        .collect();
    let targets: Tensor<B, 1, Int> =
        Tensor::from_data(TensorData::new(labels, [host.nodes.len()]), device);
    let loss = CrossEntropyLossConfig::new()
        .init(device)
        .forward(logits.clone(), targets);
    let grads = loss.backward();
    let mut collector = GradCollector::<B> {
        grads: &grads,
        path: Vec::new(),
        found: Vec::new(),
        missing: Vec::new(),
    };
    model.visit(&mut collector);
    let logits = logits
        .into_data()
        .to_vec::<f32>()
        .map_err(|e| format!("{e:?}"))?;
    let loss = loss
        .into_data()
        .to_vec::<f32>()
        .map_err(|e| format!("{e:?}"))?;
    Ok(Outcome {
        logits,
        loss: loss[0],
        grads: collector.found,
        missing: collector.missing,
    })
}

/// Compares `got` against the reference `want` with the tolerance of the module docs;
/// returns a description of the worst element if they differ, and prints the figures.
fn compare(what: &str, got: &[f32], want: &[f32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{what}: {} elements on wgpu, {} on CPU",
            got.len(),
            want.len()
        ));
    }
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let tolerance = RELATIVE_TOLERANCE * scale + ABSOLUTE_TOLERANCE;
    let (worst, diff) = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .enumerate()
        .fold((0, 0f32), |(wi, wd), (i, d)| {
            // NaN compares false: make it the worst.
            if d > wd || d.is_nan() {
                (i, d)
            } else {
                (wi, wd)
            }
        });
    eprintln!(
        "{what}: max |wgpu - cpu| = {diff:.3e} (tolerance {tolerance:.3e}, max |cpu| {scale:.3e})"
    );
    let non_finite = got.iter().any(|v| !v.is_finite());
    if non_finite || diff.is_nan() || diff > tolerance {
        return Some(format!(
            "{what}: element {worst} is {} on wgpu but {} on CPU (|diff| {diff:.3e} > tolerance {tolerance:.3e})",
            got.get(worst).copied().unwrap_or(f32::NAN),
            want.get(worst).copied().unwrap_or(f32::NAN),
        ));
    }
    None
}

/// Builds the model with attention `kernel` on the CPU, copies it to `wgpu`, runs both and
/// compares everything; returns the disagreements.
fn check_backends_agree(
    kernel: AttentionKernel,
    wgpu: &WgpuDevice,
) -> Result<Vec<String>, TestError> {
    let wgpu = wgpu.clone();
    let graph = sbm(&SbmParams::new(NODES, 3, 11))?;
    let config = ModelConfig {
        hidden: 16,
        heads: 2,
        layers: 2,
        ffn_hidden: 32,
        input_dropout: 0.5,
        dropout: 0.5,
        propagation_steps: 3,
        attention: kernel,
        ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
    };
    config.validate()?;
    let host = HostSequence::new(&graph, (0..NODES as u32).collect(), &config);

    let cpu = Default::default();
    CpuAutodiff::seed(&cpu, 5);
    let cpu_model = GraphTransformer::<CpuAutodiff>::new(&config, &cpu);
    // burn initialises parameters lazily, and a clone of a never-read parameter draws its own
    // values; `copy_to` clones, so read (initialise) every parameter first. The copy of a
    // fresh model is checked on its own by `copy_to_copies_the_parameters_of_a_fresh_model`.
    let cpu_values = parameter_values(&cpu_model);
    let wgpu_model = cpu_model.copy_to::<WgpuAutodiff>(&config, &wgpu)?;
    assert!(
        cpu_values == parameter_values(&wgpu_model),
        "copy_to did not copy the parameter values to wgpu"
    );
    let tensors = parameter_tensors(&cpu_model);
    assert_eq!(
        tensors,
        parameter_tensors(&wgpu_model),
        "the copy has a different number of parameter tensors"
    );

    let want = forward_backward(&cpu_model, &graph, &host, &config, &cpu)?;
    let got = forward_backward(&wgpu_model, &graph, &host, &config, &wgpu)?;

    for (backend, outcome) in [("CPU", &want), ("wgpu", &got)] {
        assert!(
            outcome.missing.is_empty(),
            "{backend}: parameters without a gradient: {:?}",
            outcome.missing
        );
        assert_eq!(
            outcome.grads.len(),
            tensors,
            "{backend}: gradients collected for {} of the model's {tensors} parameter tensors",
            outcome.grads.len()
        );
    }

    let mut failures = Vec::new();
    failures.extend(compare("logits", &got.logits, &want.logits));
    failures.extend(compare("loss", &[got.loss], &[want.loss]));
    for (g, w) in got.grads.iter().zip(&want.grads) {
        assert_eq!(
            g.path, w.path,
            "the two models visit parameters in different orders"
        );
        assert_eq!(g.shape, w.shape, "gradient shapes of {} differ", g.path);
        let reference_zero = w.values.iter().all(|&v| v == 0.0);
        assert!(
            !reference_zero,
            "the CPU gradient of {} is all zeros: the comparison could not fail",
            w.path
        );
        failures.extend(compare(&format!("grad {}", w.path), &g.values, &w.values));
    }
    eprintln!(
        "{kernel:?} attention: compared logits, loss and {} parameter gradients",
        want.grads.len()
    );
    Ok(failures
        .into_iter()
        .map(|f| format!("{kernel:?} attention: {f}"))
        .collect())
}

/// Both attention implementations on wgpu against the CPU backend: the default one (the fused
/// WGSL kernels on wgpu; the CPU backend runs the burn-ops reference for it) and the reference
/// composed of plain burn ops. One test, so that one process compiles the shared kernels.
#[test]
fn wgpu_matches_cpu_for_both_attention_kernels() -> TestResult {
    let Some(wgpu) = wgpu_device("model_backends::wgpu_matches_cpu_for_both_attention_kernels")?
    else {
        return Ok(());
    };
    let mut failures = check_backends_agree(AttentionKernel::Fused, &wgpu)?;
    failures.extend(check_backends_agree(AttentionKernel::Reference, &wgpu)?);
    assert!(
        failures.is_empty(),
        "wgpu and CPU disagree:\n{}",
        failures.join("\n")
    );
    Ok(())
}

/// `copy_to` of a freshly built model (parameters not read yet) copies the values the model
/// itself then has. CPU only.
#[test]
fn copy_to_copies_the_parameters_of_a_fresh_model() -> TestResult {
    let config = ModelConfig {
        hidden: 8,
        heads: 2,
        layers: 1,
        ffn_hidden: 16,
        ..ModelConfig::new(12, 3)
    };
    let device = Default::default();
    CpuBackend::seed(&device, 3);
    let model = GraphTransformer::<CpuBackend>::new(&config, &device);
    let copy = model.copy_to::<CpuBackend>(&config, &device)?;
    let (original, copied) = (parameter_values(&model), parameter_values(&copy));
    assert_eq!(original.len(), copied.len());
    let differing: Vec<usize> = (0..original.len())
        .filter(|&i| original[i] != copied[i])
        .collect();
    assert!(
        differing.is_empty(),
        "copy_to of a fresh model copied other values than the model has: parameters {differing:?} \
         (of {}) differ (burn's lazy parameters: the clone in copy_to draws its own init)",
        original.len()
    );
    Ok(())
}
