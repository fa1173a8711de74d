//! What the dense and the hops attention backward share on the wgpu backend: their gradient
//! buffers, `rowsum(dO ⊙ O)`, and the bias-table gradient summed from per-row partial sums by
//! `column_sums.wgsl` (in row order, without atomics).

use burn::{
    backend::wgpu::into_contiguous,
    cubecl::server::Handle,
    tensor::{Tensor, TensorPrimitive},
};

use super::{
    AttentionGrads,
    launch::{Cube, empty, launch},
    plan::ColumnSumShape,
};
use crate::device::WgpuBackend;

/// Rows summed by one invocation of `column_sums.wgsl` per pass.
const SUM_CHUNK: usize = 256;

/// The outputs of an attention backward, allocated on the device of `like`.
pub(super) struct GradientBuffers {
    d_q: Cube,
    d_k: Cube,
    d_v: Cube,
    d_bias_rows: Cube,
}

impl GradientBuffers {
    /// dQ `[heads, rows, head_dim]`, dK and dV `[heads, keys, head_dim]`, and the per-row
    /// bias-table partial sums `[heads, rows, buckets]`.
    pub fn new(like: &Cube, [heads, rows, keys, head_dim, buckets]: [usize; 5]) -> Self {
        Self {
            d_q: empty(like, vec![heads, rows, head_dim]),
            d_k: empty(like, vec![heads, keys, head_dim]),
            d_v: empty(like, vec![heads, keys, head_dim]),
            d_bias_rows: empty(like, vec![heads, rows, buckets]),
        }
    }

    /// The query kernel's outputs: dQ and the bias partial sums.
    pub fn query(&self) -> [Handle; 2] {
        [self.d_q.handle.clone(), self.d_bias_rows.handle.clone()]
    }

    /// The key kernel's outputs: dK and dV.
    pub fn key(&self) -> [Handle; 2] {
        [self.d_k.handle.clone(), self.d_v.handle.clone()]
    }

    /// The gradients, the bias table's summed over the rows.
    pub fn into_grads(self) -> AttentionGrads<WgpuBackend> {
        AttentionGrads {
            q: self.d_q,
            k: self.d_k,
            v: self.d_v,
            table: sum_rows(self.d_bias_rows),
        }
    }
}

/// `rowsum(a ⊙ b)` over the last dimension of `[heads, rows, head_dim]` tensors, minus `less`
/// (`[heads, rows]`) if given: contiguous `[heads, rows]`.
pub(super) fn row_dot(a: Cube, b: Cube, less: Option<Cube>) -> Cube {
    let a: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(a));
    let b: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(b));
    let [heads, rows, _] = a.dims();
    let mut dot = (a * b).sum_dim(2).reshape([heads, rows]);
    if let Some(less) = less {
        dot = dot - Tensor::<WgpuBackend, 2>::from_primitive(TensorPrimitive::Float(less));
    }
    into_contiguous(dot.into_primitive().tensor())
}

/// `[batch, rows, width]` → `[batch, width]`: sums over the rows, in row order, in passes of
/// [`SUM_CHUNK`] rows per invocation.
fn sum_rows(mut x: Cube) -> Cube {
    let dims = x.meta.shape();
    let (batch, width) = (dims[0], dims[2]);
    let mut rows = dims[1];
    loop {
        let shape = ColumnSumShape {
            batch,
            rows,
            width,
            chunk: SUM_CHUNK,
        };
        let out = empty(&x, vec![batch, shape.chunks(), width]);
        launch(
            &x,
            shape.launch(),
            vec![x.handle.clone(), out.handle.clone()],
        );
        x = out;
        rows = shape.chunks();
        if rows == 1 {
            let sums: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(x));
            return into_contiguous(sums.reshape([batch, width]).into_primitive().tensor());
        }
    }
}
