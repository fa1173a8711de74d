//! The fused attention kernels on the wgpu backend: WGSL from `shaders/`, launched through
//! cubecl's raw-source path, once per block of query rows of the pair buckets.

use std::ops::Range;

use burn::{backend::wgpu::into_contiguous, cubecl::server::Handle, tensor::ops::FloatTensor};

use super::{
    AttentionBackwardBackend, AttentionGrads, AttentionInputs, AttentionSaved,
    BiasedAttentionBackend,
    gradients::BackwardBindings,
    launch::{empty, launch},
    plan::{AttentionShape, LaunchPlan},
    shaders::Shader,
    tuning::{self, AttentionKernel, Pass},
};
use crate::device::WgpuBackend;

/// The shape of the attention inputs, checked against each other and against what the
/// kernels can run.
fn shape_of(inputs: &AttentionInputs<WgpuBackend>) -> AttentionShape {
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
    let shape = AttentionShape {
        heads,
        rows,
        keys,
        head_dim,
        buckets: ts[1],
        max_bucket: inputs.pairs.max_bucket,
    };
    shape.check();
    shape
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

/// Launches once per block of pair buckets: bindings `before`, the block, `after`, and the
/// plan `plan_of(block index, block rows)` makes.
fn run_blocks(
    inputs: &AttentionInputs<WgpuBackend>,
    [before, after]: [&[Handle]; 2],
    plan_of: impl Fn(usize, Range<usize>) -> LaunchPlan,
) {
    for (b, block) in inputs.pairs.blocks.iter().enumerate() {
        let block = into_contiguous(block.clone().into_primitive());
        let mut buffers = before.to_vec();
        buffers.push(block.handle.clone());
        buffers.extend_from_slice(after);
        launch(&inputs.q, plan_of(b, inputs.pairs.block_range(b)), buffers);
    }
}

/// Launches `shader`, or its tiled variant as `kernel` says, over every block: row-parallel
/// shaders cover the block's rows; the key kernel covers all S columns and accumulates over the
/// blocks.
fn run_shader(
    inputs: &AttentionInputs<WgpuBackend>,
    shape: &AttentionShape,
    shader: Shader,
    kernel: AttentionKernel,
    bindings: [&[Handle]; 2],
) {
    run_blocks(inputs, bindings, |b, rows| {
        let accumulate = shader == Shader::AttentionBackwardKey && b > 0;
        match kernel {
            AttentionKernel::Registers => shape.launch(shader, rows, accumulate),
            AttentionKernel::Tiled(tiling) => shape.launch_tiled(shader, tiling, rows, accumulate),
        }
    });
}

impl BiasedAttentionBackend for WgpuBackend {
    fn biased_attention(inputs: AttentionInputs<Self>) -> AttentionSaved<Self> {
        let inputs = contiguous(inputs);
        let shape = shape_of(&inputs);
        let q = &inputs.q;
        let output = empty(q, vec![shape.heads, shape.rows, shape.head_dim]);
        let lse = empty(q, vec![shape.heads, shape.rows]);
        let before = [
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
        ];
        let after = [output.handle.clone(), lse.handle.clone()];
        let run = |kernel: AttentionKernel| {
            run_shader(
                &inputs,
                &shape,
                Shader::AttentionForward,
                kernel,
                [&before, &after],
            );
        };
        run(tuning::choose(&q.device, &shape, Pass::Forward, &run));
        AttentionSaved { output, lse }
    }
}

impl AttentionBackwardBackend for WgpuBackend {
    fn biased_attention_backward(
        inputs: AttentionInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
    ) -> AttentionGrads<Self> {
        let inputs = contiguous(inputs);
        let shape = shape_of(&inputs);
        let bindings = BackwardBindings::new(
            [&inputs.q, &inputs.k, &inputs.v, &inputs.table],
            saved,
            grad_output,
            None,
            shape.gradient_dims(),
        );
        let before = &bindings.operands;
        let (query_outputs, key_outputs) = (bindings.query_outputs(), bindings.key_outputs());
        let run = |kernel: AttentionKernel| {
            run_shader(
                &inputs,
                &shape,
                Shader::AttentionBackwardQuery,
                kernel,
                [before, &query_outputs],
            );
            run_shader(
                &inputs,
                &shape,
                Shader::AttentionBackwardKey,
                kernel,
                [before, &key_outputs],
            );
        };
        run(tuning::choose(
            &inputs.q.device,
            &shape,
            Pass::Backward,
            &run,
        ));
        bindings.grads.into_grads()
    }
}
