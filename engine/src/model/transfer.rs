//! Copying a model's parameters to another backend or device.

use burn::{
    module::{Module, ModuleVisitor, Param},
    record::{BinBytesRecorder, FullPrecisionSettings, Recorder, RecorderError},
    tensor::{Bool, Int, Tensor, backend::Backend},
};

use super::{GraphTransformer, ModelConfig};

impl<B: Backend> GraphTransformer<B> {
    /// The same model (same parameter values, full precision) on `device` of backend `B2`.
    pub fn copy_to<B2: Backend>(
        &self,
        config: &ModelConfig,
        device: &B2::Device,
    ) -> Result<GraphTransformer<B2>, RecorderError> {
        // burn initialises parameters lazily, and a clone of a parameter not yet read draws
        // its own values: read them all first so the copy holds this model's values.
        self.visit(&mut Materialise);
        let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
        let bytes = recorder.record(self.clone().into_record(), ())?;
        let record = recorder.load(bytes, device)?;
        Ok(GraphTransformer::<B2>::new(config, device).load_record(record))
    }
}

/// Reads every parameter once, forcing burn's lazy initialisation.
struct Materialise;

impl<B: Backend> ModuleVisitor<B> for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let _ = param.val();
    }

    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<B, D, Int>>) {
        let _ = param.val();
    }

    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<B, D, Bool>>) {
        let _ = param.val();
    }
}
