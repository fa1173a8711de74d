//! The model's parameters by the pipeline stage that owns them, as host values, and a
//! deterministic initialisation shared by every device of a job.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use burn::{
    module::{Module, ModuleVisitor, Param, ParamId},
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
        let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = Default::default();
        CpuBackend::seed(&cpu, seed);
        GraphTransformer::<CpuBackend>::new(config, &cpu)
            .copy_to::<B>(config, device)
            .expect("a freshly built model's record loads into the same architecture")
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
