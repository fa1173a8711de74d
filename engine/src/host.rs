//! Copying tensors to the host.

use burn::tensor::{Tensor, backend::Backend};

/// The values of `tensor` on the host as `f32`, row-major, whatever its float type on the
/// device.
pub fn host_f32<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .to_vec::<f32>()
        .expect("converted to f32")
}
