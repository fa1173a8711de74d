//! Counter-based dropout on the wgpu backend: `shaders/dropout.wgsl`.

use burn::{backend::wgpu::into_contiguous, tensor::ops::FloatTensor};

use super::{CounterDropoutBackend, DropoutMask};
use crate::device::WgpuBackend;
use crate::kernels::{
    launch::{empty, launch},
    plan::DropoutShape,
};

impl CounterDropoutBackend for WgpuBackend {
    fn counter_dropout(x: FloatTensor<Self>, mask: &DropoutMask) -> FloatTensor<Self> {
        let x = into_contiguous(x);
        let [rows, width] = x.meta.shape.dims::<2>();
        if rows * width == 0 {
            return x;
        }
        let out = empty(&x, vec![rows, width]);
        let plan = DropoutShape {
            rows,
            width,
            mask: *mask,
        }
        .launch();
        launch(&x, plan, vec![x.handle.clone(), out.handle.clone()]);
        out
    }
}
