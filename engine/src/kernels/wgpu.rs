//! The fused attention kernels on the wgpu backend: WGSL from `shaders/`, launched through
//! cubecl's raw-source path.

use burn::{
    backend::wgpu::{
        CubeTensor, KernelSource, SourceKernel, SourceTemplate, WgpuRuntime, into_contiguous,
    },
    cubecl::{
        CubeCount, CubeDim,
        bytes::Bytes,
        prelude::KernelId,
        server::{Handle, KernelArguments},
    },
    tensor::{DType, Shape, Tensor, TensorPrimitive, ops::FloatTensor},
};

use super::{
    AttentionGrads, AttentionInputs, AttentionSaved, BiasedAttentionBackend,
    shaders::{AttentionParams, Shader},
};
use crate::device::WgpuBackend;

/// Invocations per workgroup, as in the shaders' `@workgroup_size`.
const WORKGROUP: u32 = 64;

/// A shader specialised to a head dimension and bucket count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct AttentionKernel {
    shader: Shader,
    head_dim: u32,
    buckets: u32,
}

impl KernelSource for AttentionKernel {
    fn source(&self) -> SourceTemplate {
        let mut constants = vec![("HEAD_DIM", self.head_dim)];
        if self.shader == Shader::AttentionBackwardQuery {
            constants.push(("BUCKETS", self.buckets));
        }
        SourceTemplate::new(self.shader.specialised(&constants))
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info(*self)
    }
}

type Cube = CubeTensor<WgpuRuntime>;

/// The shape of the attention inputs, checked.
struct Dims {
    heads: usize,
    rows: usize,
    keys: usize,
    head_dim: usize,
    buckets: usize,
}

impl Dims {
    fn of(inputs: &AttentionInputs<WgpuBackend>) -> Self {
        let qs = inputs.q.meta.shape();
        let (heads, rows, head_dim) = (qs[0], qs[1], qs[2]);
        let ks = inputs.k.meta.shape();
        let keys = ks[1];
        assert_eq!(
            [ks[0], ks[2]],
            [heads, head_dim],
            "k must be [heads, keys, head_dim] like q"
        );
        assert_eq!(inputs.v.meta.shape(), ks, "v must have the shape of k");
        let ts = inputs.table.meta.shape();
        assert_eq!(ts[0], heads, "the bias table needs one row per head");
        let words = inputs.pairs.meta.shape()[0];
        assert_eq!(
            words,
            (rows * keys).div_ceil(4),
            "pairs must hold rows × keys one-byte buckets"
        );
        assert!(ts[1] <= 256, "at most 256 buckets fit a byte");
        assert!(
            head_dim % 4 == 0,
            "the fused kernels read heads as vec4: head_dim {head_dim} must be a multiple of 4"
        );
        Self {
            heads,
            rows,
            keys,
            head_dim,
            buckets: ts[1],
        }
    }

    fn params(&self) -> AttentionParams {
        AttentionParams {
            heads: self.heads as u32,
            rows: self.rows as u32,
            keys: self.keys as u32,
            head_dim: self.head_dim as u32,
            buckets: self.buckets as u32,
            scale: (self.head_dim as f32).sqrt().recip(),
            _pad: [0; 2],
        }
    }

    /// One invocation per query row (`per_key` false) or per key (`per_key` true), per head.
    fn count(&self, per_key: bool) -> CubeCount {
        let items = if per_key { self.keys } else { self.rows };
        CubeCount::Static((items as u32).div_ceil(WORKGROUP), self.heads as u32, 1)
    }

    fn kernel(&self, shader: Shader) -> AttentionKernel {
        AttentionKernel {
            shader,
            head_dim: self.head_dim as u32,
            buckets: self.buckets as u32,
        }
    }
}

/// An uninitialised f32 tensor of `shape` on the device of `like`.
fn empty(like: &Cube, shape: Vec<usize>) -> Cube {
    let shape = Shape::from(shape);
    let handle = like.client.empty(shape.num_elements() * size_of::<f32>());
    CubeTensor::new_contiguous(
        like.client.clone(),
        like.device.clone(),
        shape,
        handle,
        DType::F32,
    )
}

fn contiguous(inputs: AttentionInputs<WgpuBackend>) -> AttentionInputs<WgpuBackend> {
    AttentionInputs {
        q: into_contiguous(inputs.q),
        k: into_contiguous(inputs.k),
        v: into_contiguous(inputs.v),
        table: into_contiguous(inputs.table),
        pairs: into_contiguous(inputs.pairs),
    }
}

fn params_handle(like: &Cube, dims: &Dims) -> Handle {
    like.client.create(Bytes::from_elems(vec![dims.params()]))
}

fn launch(like: &Cube, dims: &Dims, shader: Shader, buffers: Vec<Handle>) {
    assert_eq!(
        buffers.len(),
        shader.binding_count(),
        "{} bindings",
        shader.file_name()
    );
    like.client.launch(
        Box::new(SourceKernel::new(
            dims.kernel(shader),
            CubeDim::new_1d(WORKGROUP),
        )),
        dims.count(shader == Shader::AttentionBackwardKey),
        KernelArguments::new().with_buffers(buffers.into_iter().map(Handle::binding).collect()),
    );
}

impl BiasedAttentionBackend for WgpuBackend {
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self> {
        let inputs = contiguous(inputs);
        let dims = Dims::of(&inputs);
        let q = &inputs.q;
        let output = empty(q, vec![dims.heads, dims.rows, dims.head_dim]);
        let lse = empty(q, vec![dims.heads, dims.rows]);
        let buffers = vec![
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
            inputs.pairs.handle.clone(),
            output.handle.clone(),
            lse.handle.clone(),
            params_handle(q, &dims),
        ];
        launch(q, &dims, Shader::AttentionForward, buffers);
        AttentionSaved { output, lse }
    }

    fn biased_attention_backward(
        inputs: AttentionInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
    ) -> AttentionGrads<Self> {
        let inputs = contiguous(inputs);
        let dims = Dims::of(&inputs);
        let grad_output = into_contiguous(grad_output);
        let lse = into_contiguous(saved.lse);
        let delta = row_dot(grad_output.clone(), saved.output, &dims);
        let q = &inputs.q;
        let d_q = empty(q, vec![dims.heads, dims.rows, dims.head_dim]);
        let d_k = empty(q, vec![dims.heads, dims.keys, dims.head_dim]);
        let d_v = empty(q, vec![dims.heads, dims.keys, dims.head_dim]);
        let d_bias_rows = empty(q, vec![dims.heads, dims.rows, dims.buckets]);
        let shared = [
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
            inputs.pairs.handle.clone(),
            grad_output.handle.clone(),
            lse.handle.clone(),
            delta.handle.clone(),
        ];
        let params = params_handle(q, &dims);
        let mut query = shared.to_vec();
        query.extend([
            d_q.handle.clone(),
            d_bias_rows.handle.clone(),
            params.clone(),
        ]);
        launch(q, &dims, Shader::AttentionBackwardQuery, query);
        let mut key = shared.to_vec();
        key.extend([d_k.handle.clone(), d_v.handle.clone(), params]);
        launch(q, &dims, Shader::AttentionBackwardKey, key);
        let d_table: Tensor<Self, 3> = Tensor::from_primitive(TensorPrimitive::Float(d_bias_rows));
        let d_table = d_table.sum_dim(1).reshape([dims.heads, dims.buckets]);
        AttentionGrads {
            q: d_q,
            k: d_k,
            v: d_v,
            table: d_table.into_primitive().tensor(),
        }
    }
}

/// `rowsum(a ⊙ b)` over the head dimension, contiguous `[heads, S]`.
fn row_dot(a: Cube, b: Cube, dims: &Dims) -> Cube {
    let a: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(a));
    let b: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(b));
    let dot = (a * b).sum_dim(2).reshape([dims.heads, dims.rows]);
    into_contiguous(dot.into_primitive().tensor())
}
