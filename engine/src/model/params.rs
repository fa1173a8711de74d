//! The model's parameters by the pipeline stage that owns them, as host values, and a
//! deterministic initialisation shared by every device of a job.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use burn::{
    module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId},
    tensor::{Tensor, backend::Backend},
};

use super::{GraphTransformer, ModelConfig};
use crate::{device::CpuBackend, host::host_f32};

/// The part of the model a pipeline stage runs: the embedding (first stage), a range of
/// transformer layers, the output head (last stage). The shared spatial-bias table belongs to
/// every stage and is not listed here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPart {
    /// Whether the part includes the input embedding.
    pub embedding: bool,
    /// Transformer layers `[first, last)`.
    pub layers: Range<usize>,
    /// Whether the part includes the output norm and classification head.
    pub output: bool,
}

impl ModelPart {
    /// The whole model.
    pub fn whole(layers: usize) -> Self {
        Self {
            embedding: true,
            layers: 0..layers,
            output: true,
        }
    }
}

/// Serialises initialisation: burn's CPU generator is process-wide state.
static INIT: Mutex<()> = Mutex::new(());

/// Collects the ids of float parameters in visiting order.
struct Ids(Vec<ParamId>);

impl<B: Backend> ModuleVisitor<B> for Ids {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.0.push(param.id);
    }
}

/// The true shape of every parameter of a model, by id, whether or not the model holds its
/// values (see [`GraphTransformer::initialised_part`]).
#[derive(Debug, Clone)]
pub struct ParameterShapes(HashMap<ParamId, Vec<usize>>);

impl ParameterShapes {
    /// The shapes of `ids`, in that order. Panics on an id of another model.
    pub fn of(&self, ids: &[ParamId]) -> Vec<Vec<usize>> {
        (ids.iter())
            .map(|id| (self.0.get(id).cloned()).expect("the id is a parameter of this model"))
            .collect()
    }
}

/// Replaces every float parameter not in `keep` by a one-element placeholder with the same
/// id and gradient setting.
struct Placeholders<'a> {
    keep: &'a [ParamId],
}

impl<B: Backend> ModuleMapper<B> for Placeholders<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        if self.keep.contains(&param.id) {
            return param;
        }
        let (id, tensor, mapper) = param.consume();
        let placeholder =
            Tensor::zeros([1; D], &tensor.device()).set_require_grad(tensor.is_require_grad());
        Param::from_mapped_value(id, placeholder, mapper)
    }
}

/// Collects the host values of the float parameters named in `wanted`.
struct Values<'a> {
    wanted: &'a [ParamId],
    found: HashMap<ParamId, Vec<f32>>,
}

impl<B: Backend> ModuleVisitor<B> for Values<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if self.wanted.contains(&param.id) {
            self.found.insert(param.id, host_f32(param.val()));
        }
    }
}

impl<B: Backend> GraphTransformer<B> {
    /// A model initialised from `seed` on `device`: drawn on the CPU backend under a process-wide
    /// lock and copied, so every device of a job (and every backend) starts from the same
    /// values whatever else runs concurrently.
    pub fn initialised(config: &ModelConfig, seed: u64, device: &B::Device) -> Self {
        Self::initialised_part(config, seed, device, None).0
    }

    /// [`initialised`](Self::initialised), holding only `part`'s parameters and the table
    /// when a part is given (a pipeline stage's device): every other parameter is a
    /// one-element placeholder that keeps its id, so the device never holds the other
    /// stages' values. Returns the model and the true shape of every parameter, by id.
    pub fn initialised_part(
        config: &ModelConfig,
        seed: u64,
        device: &B::Device,
        part: Option<&ModelPart>,
    ) -> (Self, ParameterShapes) {
        let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = Default::default();
        CpuBackend::seed(&cpu, seed);
        let mut model = GraphTransformer::<CpuBackend>::new(config, &cpu).materialised();
        let ids = model.canonical_ids();
        let shapes = ParameterShapes(
            ids.iter()
                .copied()
                .zip(model.parameter_shapes(&ids))
                .collect(),
        );
        if let Some(part) = part {
            let mut keep = model.part_ids(part);
            keep.push(model.table_id());
            model = model.map(&mut Placeholders { keep: &keep });
        }
        let model = model
            .copy_to::<B>(config, device)
            .expect("a freshly built model's record loads into the same architecture");
        (model, shapes)
    }

    /// The id of the shared spatial-bias table.
    pub fn table_id(&self) -> ParamId {
        self.spatial_bias.id
    }

    /// The ids of `part`'s float parameters (the table excluded), in a fixed order: embedding,
    /// layers, output.
    pub fn part_ids(&self, part: &ModelPart) -> Vec<ParamId> {
        let mut ids = Ids(Vec::new());
        if part.embedding {
            self.input.visit(&mut ids);
            self.degree.visit(&mut ids);
            self.tokens.visit(&mut ids);
        }
        for layer in &self.layers[part.layers.clone()] {
            layer.visit(&mut ids);
        }
        if part.output {
            self.norm_out.visit(&mut ids);
            self.head.visit(&mut ids);
        }
        ids.0
    }

    /// The values of the parameters `ids`, concatenated in that order.
    pub fn parameter_values(&self, ids: &[ParamId]) -> Vec<f32> {
        let mut values = Values {
            wanted: ids,
            found: HashMap::new(),
        };
        self.visit(&mut values);
        ids.iter()
            .flat_map(|id| {
                values
                    .found
                    .remove(id)
                    .expect("the id is a parameter of this model")
            })
            .collect()
    }

    /// Every parameter's id in the canonical order (that of checkpoints and saved models): the
    /// whole model's part, then the table.
    pub fn canonical_ids(&self) -> Vec<ParamId> {
        let mut ids = self.part_ids(&ModelPart::whole(self.layers.len()));
        ids.push(self.table_id());
        ids
    }

    /// Every parameter's values in the canonical order.
    pub fn all_parameter_values(&self) -> Vec<f32> {
        self.parameter_values(&self.canonical_ids())
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;

    use super::*;
    use crate::device::CpuBackend;

    #[test]
    fn a_part_holds_its_own_values_and_placeholders_for_the_rest() {
        let config = ModelConfig {
            layers: 3,
            hidden: 8,
            heads: 2,
            ffn_hidden: 16,
            ..ModelConfig::new(12, 3)
        };
        let device = Default::default();
        let whole = GraphTransformer::<CpuBackend>::initialised(&config, 7, &device);
        let part = ModelPart {
            embedding: false,
            layers: 1..2,
            output: true,
        };
        let (held, shapes) =
            GraphTransformer::<CpuBackend>::initialised_part(&config, 7, &device, Some(&part));
        let mut kept = held.part_ids(&part);
        kept.push(held.table_id());
        let kept_in_whole = {
            let mut ids = whole.part_ids(&part);
            ids.push(whole.table_id());
            ids
        };
        assert_eq!(
            held.parameter_values(&kept),
            whole.parameter_values(&kept_in_whole),
            "the part's values are the whole model's"
        );
        let ids = held.canonical_ids();
        assert_eq!(
            shapes.of(&ids),
            whole.parameter_shapes(&whole.canonical_ids()),
            "the true shapes of every parameter, held or not"
        );
        let kept_values = held.parameter_values(&kept).len();
        let placeholders = ids.len() - kept.len();
        assert_eq!(held.num_params(), kept_values + placeholders);
        assert!(held.num_params() < whole.num_params() / 2);
    }
}
