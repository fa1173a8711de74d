//! Copying a model's parameters to another backend or device.

use burn::{
    module::Module,
    record::{BinBytesRecorder, FullPrecisionSettings, Recorder, RecorderError},
    tensor::backend::Backend,
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
        let bytes = recorder.record(self.clone().into_record(), ())?;
        let record = recorder.load(bytes, device)?;
        Ok(GraphTransformer::<B2>::new(config, device).load_record(record))
    }
}
