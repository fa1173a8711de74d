//! Copying tensors to the host.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use burn::tensor::{Tensor, TensorData, backend::Backend, backend::ExecutionError};

/// The values of `tensor` on the host as `f32`, row-major, whatever its float type on the
/// device.
pub fn host_f32<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Vec<f32> {
    f32_values(tensor.into_data())
}

/// `data` as `f32` values, row-major.
fn f32_values(data: TensorData) -> Vec<f32> {
    data.convert::<f32>()
        .to_vec::<f32>()
        .expect("converted to f32")
}

/// The result of a read-back from a device.
type ReadResult = Result<TensorData, ExecutionError>;

/// A copy of a tensor to the host that has been started on the device and may still be in
/// flight: [`HostRead::start`] enqueues it from the thread that drives the device, and any
/// thread may wait for it ([`HostRead::values`]) while that thread goes on computing.
pub struct HostRead {
    state: ReadState,
}

enum ReadState {
    /// The copy is done (a CPU backend copies at once).
    Done(ReadResult),
    /// The copy is enqueued; the future completes when the device has mapped the values.
    InFlight(Pin<Box<dyn Future<Output = ReadResult> + Send>>),
}

impl HostRead {
    /// Starts copying `tensor` to the host. The device work (making it contiguous, the copy
    /// into a staging buffer, the submission) happens here, on the calling thread, which must
    /// be the one that drives the device; only the wait is left for later.
    pub fn start<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Self {
        let mut read: Pin<Box<dyn Future<Output = ReadResult> + Send>> =
            Box::pin(tensor.into_data_async());
        // One poll runs the read up to its first wait: the copy is submitted and mapping.
        let state = match read.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => ReadState::Done(result),
            Poll::Pending => ReadState::InFlight(read),
        };
        Self { state }
    }

    /// Waits for the copy and returns the values as `f32`, row-major.
    pub fn values(self) -> Result<Vec<f32>, ExecutionError> {
        let data = match self.state {
            ReadState::Done(result) => result?,
            ReadState::InFlight(read) => pollster::block_on(read)?,
        };
        Ok(f32_values(data))
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Tensor, TensorData};

    use super::{HostRead, host_f32};
    use crate::device::CpuBackend;

    #[test]
    fn a_started_read_gives_the_values_on_another_thread() {
        let device = Default::default();
        let values: Vec<f32> = (0..12).map(|v| v as f32 * 0.5).collect();
        let tensor =
            Tensor::<CpuBackend, 2>::from_data(TensorData::new(values.clone(), [3, 4]), &device);
        assert_eq!(host_f32(tensor.clone()), values);
        let read = HostRead::start(tensor.transpose());
        let got = std::thread::spawn(move || read.values().unwrap())
            .join()
            .unwrap();
        let transposed: Vec<f32> = (0..4)
            .flat_map(|c| (0..3).map(move |r| (r * 4 + c) as f32 * 0.5))
            .collect();
        assert_eq!(got, transposed);
    }
}
