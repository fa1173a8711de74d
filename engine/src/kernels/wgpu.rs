//! The fused attention kernels on the wgpu backend: WGSL from `shaders/`, launched through
//! cubecl's raw-source path, once per block of query rows of the pair buckets.

use burn::{
    backend::wgpu::into_contiguous,
    cubecl::{CubeCount, server::Handle},
    tensor::{Tensor, TensorPrimitive, ops::FloatTensor},
};

use super::{
    AttentionGrads, AttentionInputs, AttentionSaved, BiasedAttentionBackend,
    launch::{Cube, WORKGROUP, WgslKernel, empty, launch, params_handle},
    shaders::{AttentionParams, Shader},
};
use crate::device::WgpuBackend;

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
        assert_eq!(
            [inputs.pairs.rows, inputs.pairs.cols],
            [rows, keys],
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

    /// The parameters of a launch over query rows `rows`; `accumulate` adds to the outputs
    /// (the key kernel, after the first block).
    fn params(&self, rows: &std::ops::Range<usize>, accumulate: bool) -> AttentionParams {
        AttentionParams {
            heads: self.heads as u32,
            rows: self.rows as u32,
            keys: self.keys as u32,
            head_dim: self.head_dim as u32,
            buckets: self.buckets as u32,
            scale: (self.head_dim as f32).sqrt().recip(),
            row_start: rows.start as u32,
            row_count: rows.len() as u32,
            accumulate: u32::from(accumulate),
            _pad: [0; 3],
        }
    }

    /// Workgroups of `shader` over `items` rows (or, for the key kernel, all S columns): each
    /// invocation takes the shader's `ROWS` of them, for one head.
    fn count(&self, shader: Shader, items: usize) -> CubeCount {
        let rows = shader.constant("ROWS").unwrap_or(1);
        CubeCount::Static(
            (items as u32).div_ceil(WORKGROUP * rows),
            self.heads as u32,
            1,
        )
    }

    /// `shader` specialised to these dimensions.
    fn kernel(&self, shader: Shader) -> WgslKernel {
        let mut constants = vec![("HEAD_DIM", self.head_dim as u32)];
        if shader.constant("BUCKETS").is_some() {
            constants.push(("BUCKETS", self.buckets as u32));
        }
        WgslKernel::new(shader, constants)
    }
}

fn contiguous(inputs: AttentionInputs<WgpuBackend>) -> AttentionInputs<WgpuBackend> {
    AttentionInputs {
        q: into_contiguous(inputs.q),
        k: into_contiguous(inputs.k),
        v: into_contiguous(inputs.v),
        table: into_contiguous(inputs.table),
        pairs: inputs.pairs,
    }
}

/// Launches `shader` once per block of pair buckets: bindings `before`, the block, `after`, and
/// the block's parameters. Row-parallel shaders cover the block's rows; the key kernel covers
/// all S columns and accumulates over the blocks.
fn run_blocks(
    inputs: &AttentionInputs<WgpuBackend>,
    dims: &Dims,
    shader: Shader,
    [before, after]: [&[Handle]; 2],
) {
    let like = &inputs.q;
    for (b, block) in inputs.pairs.blocks.iter().enumerate() {
        let rows = inputs.pairs.block_range(b);
        let block = into_contiguous(block.clone().into_primitive());
        let mut buffers = before.to_vec();
        buffers.push(block.handle.clone());
        buffers.extend_from_slice(after);
        let by_columns = shader == Shader::AttentionBackwardKey;
        buffers.push(params_handle(
            like,
            shader,
            dims.params(&rows, by_columns && b > 0),
        ));
        let items = if by_columns { dims.keys } else { rows.len() };
        launch(
            like,
            dims.kernel(shader),
            dims.count(shader, items),
            buffers,
        );
    }
}

impl BiasedAttentionBackend for WgpuBackend {
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self> {
        let inputs = contiguous(inputs);
        let dims = Dims::of(&inputs);
        let q = &inputs.q;
        let output = empty(q, vec![dims.heads, dims.rows, dims.head_dim]);
        let lse = empty(q, vec![dims.heads, dims.rows]);
        let before = [
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
        ];
        let after = [output.handle.clone(), lse.handle.clone()];
        run_blocks(&inputs, &dims, Shader::AttentionForward, [&before, &after]);
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
        let before = [
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
        ];
        let saved = [
            grad_output.handle.clone(),
            lse.handle.clone(),
            delta.handle.clone(),
        ];
        let query_out = [
            saved.to_vec(),
            vec![d_q.handle.clone(), d_bias_rows.handle.clone()],
        ];
        let key_out = [saved.to_vec(), vec![d_k.handle.clone(), d_v.handle.clone()]];
        let shaders = [Shader::AttentionBackwardQuery, Shader::AttentionBackwardKey];
        for (shader, after) in shaders.into_iter().zip([query_out, key_out]) {
            run_blocks(&inputs, &dims, shader, [&before, &after.concat()]);
        }
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

/// `rowsum(a ⊙ b)` over the head dimension, contiguous `[heads, rows]`.
fn row_dot(a: Cube, b: Cube, dims: &Dims) -> Cube {
    let a: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(a));
    let b: Tensor<WgpuBackend, 3> = Tensor::from_primitive(TensorPrimitive::Float(b));
    let dot = (a * b).sum_dim(2).reshape([dims.heads, dims.rows]);
    into_contiguous(dot.into_primitive().tensor())
}
