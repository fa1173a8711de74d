//! The training state as host values, for checkpoints: the shapes of parameters, a model with
//! parameter values replaced, and the Adam optimizer's moments out of and back into the
//! optimizer.

use std::collections::HashMap;

use burn::{
    module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId},
    optim::{
        Adam, AdamState, AdaptiveMomentumState, Optimizer, adaptor::OptimizerAdaptor,
        record::AdaptorRecord,
    },
    tensor::{
        Tensor, TensorData,
        backend::{AutodiffBackend, Backend},
    },
};

use super::GraphTransformer;
use crate::host::host_f32;

/// The optimizer every worker uses.
pub type ModelOptimizer<B> = OptimizerAdaptor<Adam, GraphTransformer<B>, B>;

/// The optimizer's state of every parameter it holds state for, by parameter id.
type AdamRecord<B> = <ModelOptimizer<B> as Optimizer<GraphTransformer<B>, B>>::Record;

/// Adam's state of one parameter tensor, as host values. AMSGrad's running maximum is not
/// kept: the workers' Adam does not use AMSGrad.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamMoments {
    /// Steps the moments aggregate; 0 for a parameter without state.
    pub time: usize,
    /// First moment, row-major, one value per parameter element.
    pub moment_1: Vec<f32>,
    /// Second moment, row-major, one value per parameter element.
    pub moment_2: Vec<f32>,
}

/// Collects the shapes of the float parameters named in `wanted`.
struct Shapes<'a> {
    wanted: &'a [ParamId],
    found: HashMap<ParamId, Vec<usize>>,
}

impl<B: Backend> ModuleVisitor<B> for Shapes<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if self.wanted.contains(&param.id) {
            self.found.insert(param.id, param.val().dims().to_vec());
        }
    }
}

/// Replaces the values of the float parameters it holds slices for.
struct Replace<'a> {
    values: HashMap<ParamId, &'a [f32]>,
}

impl<B: Backend> ModuleMapper<B> for Replace<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let Some(values) = self.values.remove(&param.id) else {
            return param;
        };
        let (id, tensor, mapper) = param.consume();
        let data = TensorData::new(values.to_vec(), tensor.dims());
        let replaced =
            Tensor::from_data(data, &tensor.device()).set_require_grad(tensor.is_require_grad());
        Param::from_mapped_value(id, replaced, mapper)
    }
}

impl<B: Backend> GraphTransformer<B> {
    /// Shapes of the parameters `ids`, in that order.
    pub fn parameter_shapes(&self, ids: &[ParamId]) -> Vec<Vec<usize>> {
        let mut shapes = Shapes {
            wanted: ids,
            found: HashMap::new(),
        };
        self.visit(&mut shapes);
        (ids.iter())
            .map(|id| (shapes.found.get(id).cloned()).expect("the id is a parameter of this model"))
            .collect()
    }

    /// The model with the parameters `ids` replaced by `values` (concatenated in `ids` order,
    /// as [`parameter_values`](Self::parameter_values) returns them), each on its device with
    /// its id and whether it requires a gradient kept. Errs, with both counts, when `values`
    /// is not exactly as long as those parameters together.
    pub fn with_parameter_values(self, ids: &[ParamId], values: &[f32]) -> Result<Self, String> {
        let sizes: Vec<usize> = (self.parameter_shapes(ids).iter())
            .map(|shape| shape.iter().product())
            .collect();
        let needed: usize = sizes.iter().sum();
        if values.len() != needed {
            return Err(format!(
                "{} parameter values given for {} parameters holding {needed}",
                values.len(),
                ids.len()
            ));
        }
        let mut slices = HashMap::new();
        let mut rest = values;
        for (id, size) in ids.iter().zip(sizes) {
            let (mine, after) = rest.split_at(size);
            slices.insert(*id, mine);
            rest = after;
        }
        Ok(self.map(&mut Replace { values: slices }))
    }
}

/// Takes the moments of the parameters named in `wanted` out of an optimizer record.
struct Export<'a, B: AutodiffBackend> {
    wanted: &'a [ParamId],
    record: AdamRecord<B>,
    found: HashMap<ParamId, AdamMoments>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Export<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if !self.wanted.contains(&param.id) {
            return;
        }
        let moments = match self.record.remove(&param.id) {
            Some(record) => {
                let momentum = record.into_state::<D>().momentum;
                AdamMoments {
                    time: momentum.time,
                    moment_1: host_f32(momentum.moment_1),
                    moment_2: host_f32(momentum.moment_2),
                }
            }
            None => {
                let elements = param.val().shape().num_elements();
                AdamMoments {
                    time: 0,
                    moment_1: vec![0.0; elements],
                    moment_2: vec![0.0; elements],
                }
            }
        };
        self.found.insert(param.id, moments);
    }
}

/// Puts moments into an optimizer record, on each parameter's device.
struct Import<B: AutodiffBackend> {
    moments: HashMap<ParamId, AdamMoments>,
    record: AdamRecord<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Import<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(moments) = self.moments.remove(&param.id) else {
            return;
        };
        self.record.remove(&param.id);
        if moments.time == 0 {
            return;
        }
        let tensor = param.val();
        let (shape, device) = (tensor.dims(), tensor.device());
        for (name, values) in [("first", &moments.moment_1), ("second", &moments.moment_2)] {
            assert_eq!(
                values.len(),
                tensor.shape().num_elements(),
                "the {name} moment of a parameter of shape {shape:?}"
            );
        }
        let moment = |values: Vec<f32>| {
            Tensor::<B::InnerBackend, D>::from_data(TensorData::new(values, shape), &device)
        };
        let state = AdamState {
            momentum: AdaptiveMomentumState {
                time: moments.time,
                moment_1: moment(moments.moment_1),
                moment_2: moment(moments.moment_2),
                max_moment_2: None,
            },
        };
        (self.record).insert(param.id, AdaptorRecord::from_state::<D>(state));
    }
}

/// Adam's moments of the parameters `ids` of `model`, in that order (zeros and time 0 for a
/// parameter with no state yet).
pub fn adam_moments<B: AutodiffBackend>(
    optimizer: &ModelOptimizer<B>,
    model: &GraphTransformer<B>,
    ids: &[ParamId],
) -> Vec<AdamMoments> {
    let mut export = Export {
        wanted: ids,
        record: optimizer.to_record(),
        found: HashMap::new(),
    };
    model.visit(&mut export);
    (ids.iter())
        .map(|id| (export.found.get(id).cloned()).expect("the id is a parameter of this model"))
        .collect()
}

/// Loads `moments` (in `ids` order) as the optimizer's state of the parameters `ids` of
/// `model`, on each parameter's device; a time 0 entry leaves its parameter without state.
/// The state of other parameters is kept.
///
/// Panics unless there is one entry per id, each id is a parameter of `model` and each
/// moment has one value per element of its parameter (check the values against
/// [`GraphTransformer::parameter_shapes`] first).
pub fn restore_adam<B: AutodiffBackend>(
    optimizer: &mut ModelOptimizer<B>,
    model: &GraphTransformer<B>,
    ids: &[ParamId],
    moments: Vec<AdamMoments>,
) {
    assert_eq!(ids.len(), moments.len(), "one AdamMoments per parameter");
    let mut import = Import {
        moments: ids.iter().copied().zip(moments).collect(),
        record: optimizer.to_record(),
    };
    model.visit(&mut import);
    assert!(
        import.moments.is_empty(),
        "every id is a parameter of this model"
    );
    *optimizer = optimizer.clone().load_record(import.record);
}

#[cfg(test)]
mod tests {
    use burn::{
        nn::loss::CrossEntropyLossConfig,
        optim::{AdamConfig, GradientsParams, decay::WeightDecayConfig},
        tensor::Int,
    };

    use super::*;
    use crate::{
        device::CpuAutodiff,
        graph::{Graph, SbmParams, sbm},
        model::{AttentionKernel, HostSequence, ModelConfig, ModelPart},
    };

    type B = CpuAutodiff;
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Nodes of the test graph, all in one sequence.
    const NODES: usize = 24;

    /// A tiny deterministic training problem: one sequence over a small SBM graph, a small
    /// model without dropout.
    struct Problem {
        graph: Graph,
        host: HostSequence,
        config: ModelConfig,
    }

    impl Problem {
        fn new() -> Result<Self, Box<dyn std::error::Error>> {
            let graph = sbm(&SbmParams::new(NODES, 3, 7))?;
            let config = ModelConfig {
                hidden: 8,
                heads: 2,
                layers: 2,
                ffn_hidden: 16,
                input_dropout: 0.0,
                dropout: 0.0,
                propagation_steps: 2,
                attention: AttentionKernel::Reference,
                ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
            };
            config.validate()?;
            let host = HostSequence::new(&graph, (0..NODES as u32).collect(), &config);
            Ok(Self {
                graph,
                host,
                config,
            })
        }

        /// A model initialised from `seed`.
        fn model(&self, seed: u64) -> GraphTransformer<B> {
            GraphTransformer::initialised(&self.config, seed, &Default::default())
        }

        /// One Adam step on the cross-entropy of every node.
        fn step(
            &self,
            model: GraphTransformer<B>,
            optimizer: &mut ModelOptimizer<B>,
        ) -> GraphTransformer<B> {
            let device = Default::default();
            let seq = (self.host).to_device::<B>(&self.graph, &self.config, &device);
            let labels: Vec<i32> = (self.host.nodes.iter())
                .map(|&n| self.graph.labels()[n as usize] as i32)
                .collect();
            let targets = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [NODES]), &device);
            let loss = CrossEntropyLossConfig::new()
                .init(&device)
                .forward(model.forward(&seq), targets);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            optimizer.step(1e-2, model, grads)
        }
    }

    /// The optimizer the workers build.
    fn optimizer() -> ModelOptimizer<B> {
        AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(5e-4)))
            .init()
    }

    /// Every parameter id in canonical order.
    fn canonical(model: &GraphTransformer<B>) -> Vec<ParamId> {
        let mut ids = model.part_ids(&ModelPart::whole(model.layer_count()));
        ids.push(model.table_id());
        ids
    }

    #[test]
    fn a_restored_model_and_optimizer_take_the_same_step() -> TestResult {
        let problem = Problem::new()?;
        let mut a = problem.model(1);
        let mut optimizer_a = optimizer();
        for _ in 0..2 {
            a = problem.step(a, &mut optimizer_a);
        }
        let ids_a = canonical(&a);
        let values = a.parameter_values(&ids_a);
        let moments = adam_moments(&optimizer_a, &a, &ids_a);
        assert!(
            moments.iter().all(|m| m.time == 2),
            "every parameter stepped"
        );

        let b = problem.model(2);
        let ids_b = canonical(&b);
        assert_ne!(b.parameter_values(&ids_b), values, "another seed");
        let b = b.with_parameter_values(&ids_b, &values)?;
        assert_eq!(b.parameter_values(&ids_b), values);
        let mut optimizer_b = optimizer();
        restore_adam(&mut optimizer_b, &b, &ids_b, moments.clone());
        assert_eq!(adam_moments(&optimizer_b, &b, &ids_b), moments);

        let a = problem.step(a, &mut optimizer_a);
        let b = problem.step(b, &mut optimizer_b);
        let bits = |values: Vec<f32>| values.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(
            bits(a.parameter_values(&ids_a)),
            bits(b.parameter_values(&ids_b)),
            "the third step agrees bit for bit"
        );
        assert_eq!(
            adam_moments(&optimizer_a, &a, &ids_a),
            adam_moments(&optimizer_b, &b, &ids_b)
        );
        Ok(())
    }

    #[test]
    fn time_zero_means_no_state() -> TestResult {
        let problem = Problem::new()?;
        let model = problem.model(3);
        let ids = canonical(&model);
        let mut optimizer = optimizer();
        let fresh = adam_moments(&optimizer, &model, &ids);
        let sizes: Vec<usize> = (model.parameter_shapes(&ids).iter())
            .map(|s| s.iter().product())
            .collect();
        for (m, size) in fresh.iter().zip(&sizes) {
            assert_eq!(m.time, 0);
            assert_eq!((m.moment_1.len(), m.moment_2.len()), (*size, *size));
            assert!(m.moment_1.iter().chain(&m.moment_2).all(|v| *v == 0.0));
        }

        let model = problem.step(model, &mut optimizer);
        let mut moments = adam_moments(&optimizer, &model, &ids);
        assert!(moments.iter().all(|m| m.time == 1));
        moments[0] = fresh[0].clone();
        // Over existing state, a time 0 entry removes the parameter's state.
        restore_adam(&mut optimizer, &model, &ids, moments.clone());
        assert_eq!(optimizer.to_record().len(), ids.len() - 1);
        assert_eq!(adam_moments(&optimizer, &model, &ids), moments);
        // Only the parameters named are touched.
        restore_adam(&mut optimizer, &model, &ids[1..2], vec![fresh[1].clone()]);
        assert_eq!(optimizer.to_record().len(), ids.len() - 2);
        assert_eq!(adam_moments(&optimizer, &model, &ids[2..]), moments[2..]);
        Ok(())
    }

    #[test]
    fn shapes_and_a_length_mismatch() -> TestResult {
        let problem = Problem::new()?;
        let model = problem.model(4);
        let table = [model.table_id()];
        let buckets = problem.config.distance_buckets();
        assert_eq!(model.parameter_shapes(&table), [vec![2, buckets]]);
        let ids = canonical(&model);
        let shapes = model.parameter_shapes(&ids);
        assert!(shapes.iter().any(|s| s.len() == 1) && shapes.iter().any(|s| s.len() == 2));
        let total: usize = shapes.iter().map(|s| s.iter().product::<usize>()).sum();
        assert_eq!(total, model.all_parameter_values().len());
        let err = (model.clone())
            .with_parameter_values(&table, &vec![0.5; 2 * buckets + 1])
            .expect_err("one value too many");
        assert!(err.contains(&format!("{}", 2 * buckets + 1)), "{err}");
        assert!(err.contains(&format!("holding {}", 2 * buckets)), "{err}");
        let model = model.with_parameter_values(&table, &vec![0.5; 2 * buckets])?;
        assert_eq!(model.parameter_values(&table), vec![0.5; 2 * buckets]);
        assert!(model.spatial_bias.val().is_require_grad());
        Ok(())
    }
}
