//! What the dense and the hops attention backward share on the wgpu backend: their operand,
//! saved-tensor and gradient bindings, `rowsum(dO ⊙ O)`, and the bias-table gradient summed
//! from per-row partial sums by `column_sums.wgsl` (in row order, without atomics).

use burn::{
    backend::wgpu::into_contiguous,
    cubecl::server::Handle,
    tensor::{Tensor, TensorPrimitive},
};

use super::{
    AttentionGrads, AttentionSaved,
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

/// The bindings both attention backwards share, in their order: the operands (bindings 0–3),
/// then, after each kernel's pattern, the saved tensors and that kernel's gradient outputs.
pub(super) struct BackwardBindings {
    /// q, k, v and the bias table.
    pub operands: [Handle; 4],
    /// dO, the log-sum-exp and `delta` (`rowsum(dO ⊙ O)` minus the log-sum-exp's gradient).
    saved: [Handle; 3],
    /// The gradients the kernels write.
    pub grads: GradientBuffers,
}

impl BackwardBindings {
    /// The bindings of a backward over contiguous `operands` (q, k, v, table) with the
    /// forward's `saved` outputs and the gradients of its output and (where it has one) of its
    /// log-sum-exp; `dims` as [`GradientBuffers::new`] takes them.
    pub fn new(
        operands: [&Cube; 4],
        saved: AttentionSaved<WgpuBackend>,
        grad_output: Cube,
        grad_lse: Option<Cube>,
        dims: [usize; 5],
    ) -> Self {
        let grad_output = into_contiguous(grad_output);
        let lse = into_contiguous(saved.lse);
        let delta = row_dot(grad_output.clone(), saved.output, grad_lse);
        Self {
            operands: operands.map(|t| t.handle.clone()),
            saved: [grad_output.handle, lse.handle, delta.handle],
            grads: GradientBuffers::new(operands[0], dims),
        }
    }

    /// What the query kernel binds after its pattern: the saved tensors, dQ and the bias
    /// partial sums.
    pub fn query_outputs(&self) -> Vec<Handle> {
        [&self.saved[..], &self.grads.query()].concat()
    }

    /// What the key kernel binds after its pattern: the saved tensors, dK and dV.
    pub fn key_outputs(&self) -> Vec<Handle> {
        [&self.saved[..], &self.grads.key()].concat()
    }
}

/// `rowsum(a ⊙ b)` over the last dimension of `[heads, rows, head_dim]` tensors, minus `less`
/// (`[heads, rows]`) if given: contiguous `[heads, rows]`.
fn row_dot(a: Cube, b: Cube, less: Option<Cube>) -> Cube {
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
