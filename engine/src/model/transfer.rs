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
        let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
        // A clone of a parameter not yet read would draw its own values (see `materialised`).
        self.visit(&mut Materialise);
        let bytes = recorder.record(self.clone().into_record(), ())?;
        let record = recorder.load(bytes, device)?;
        Ok(GraphTransformer::<B2>::new(config, device).load_record(record))
    }

    /// The model with every parameter read once. burn initialises parameters lazily, and a
    /// clone of a parameter not yet read draws its own values: a model is materialised
    /// before it is cloned or copied so that the copy holds its values.
    pub(super) fn materialised(self) -> Self {
        self.visit(&mut Materialise);
        self
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
