//! Hops attention on the wgpu backend: `shaders/hops_*.wgsl` through cubecl's raw-source path.
//! The forward and the query-side backward run a team of invocations per query row, the
//! key-side backward a team per key over the transposed index; the team is the device's, as
//! [`choose_hops_team`] chooses it (one invocation per row on software adapters).

use burn::{
    backend::wgpu::into_contiguous,
    cubecl::server::Handle,
    tensor::{Int, Tensor, ops::FloatTensor},
};

use super::{HopsAttentionBackend, HopsAttentionBackward, HopsInputs};
use crate::device::WgpuBackend;
use crate::kernels::{
    AttentionGrads, AttentionSaved,
    gradients::BackwardBindings,
    launch::{empty, launch},
    plan::HopsShape,
    shaders::Shader,
    tuning::choose_hops_team,
};

/// The shape of the inputs, checked against each other and the pattern.
fn shape_of(inputs: &HopsInputs<WgpuBackend>) -> HopsShape {
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
    let pattern = &inputs.pattern;
    assert_eq!(
        [pattern.rows, pattern.keys],
        [rows, keys],
        "the pattern must pair these {rows} query rows with these {keys} keys"
    );
    let shape = HopsShape {
        heads,
        rows,
        keys,
        head_dim,
        buckets: ts[1],
        pairs: pattern.pairs,
        max_bucket: pattern.max_bucket,
    };
    shape.check();
    shape
}

fn int(t: Tensor<WgpuBackend, 1, Int>) -> Handle {
    into_contiguous(t.into_primitive()).handle
}

fn contiguous(inputs: HopsInputs<WgpuBackend>) -> HopsInputs<WgpuBackend> {
    HopsInputs {
        q: into_contiguous(inputs.q),
        k: into_contiguous(inputs.k),
        v: into_contiguous(inputs.v),
        table: into_contiguous(inputs.table),
        pattern: inputs.pattern,
    }
}

impl HopsAttentionBackend for WgpuBackend {
    fn hops_attention(inputs: HopsInputs<Self>) -> AttentionSaved<Self> {
        let inputs = contiguous(inputs);
        let shape = shape_of(&inputs);
        let q = &inputs.q;
        let output = empty(q, vec![shape.heads, shape.rows, shape.head_dim]);
        let lse = empty(q, vec![shape.heads, shape.rows]);
        let pattern = inputs.pattern.clone();
        let buffers = vec![
            inputs.q.handle.clone(),
            inputs.k.handle.clone(),
            inputs.v.handle.clone(),
            inputs.table.handle.clone(),
            int(pattern.row_offsets),
            int(pattern.pair_keys),
            int(pattern.pair_buckets),
            output.handle.clone(),
            lse.handle.clone(),
            int(pattern.row_order),
        ];
        let run = |team| launch(q, shape.launch(Shader::HopsForward, team), buffers.clone());
        run(choose_hops_team(&q.device, &shape, false, &run));
        AttentionSaved { output, lse }
    }
}

impl HopsAttentionBackward for WgpuBackend {
    fn hops_attention_backward(
        inputs: HopsInputs<Self>,
        saved: AttentionSaved<Self>,
        grad_output: FloatTensor<Self>,
        grad_lse: Option<FloatTensor<Self>>,
    ) -> AttentionGrads<Self> {
        let inputs = contiguous(inputs);
        let shape = shape_of(&inputs);
        let bindings = BackwardBindings::new(
            [&inputs.q, &inputs.k, &inputs.v, &inputs.table],
            saved,
            grad_output,
            grad_lse,
            shape.gradient_dims(),
        );
        let pattern = inputs.pattern.clone();
        let by_row = [
            int(pattern.row_offsets),
            int(pattern.pair_keys),
            int(pattern.pair_buckets),
        ];
        let by_key = [
            int(pattern.col_offsets),
            int(pattern.col_rows),
            int(pattern.col_buckets),
        ];
        let query = [
            &bindings.operands[..],
            &by_row,
            &bindings.query_outputs(),
            &[int(pattern.row_order)],
        ]
        .concat();
        let key = [
            &bindings.operands[..],
            &by_key,
            &bindings.key_outputs(),
            &[int(pattern.key_order)],
        ]
        .concat();
        // Both kernels write (never add to) their outputs: a timing run is harmless.
        let run = |team| {
            let q = &inputs.q;
            launch(
                q,
                shape.launch(Shader::HopsBackwardQuery, team),
                query.clone(),
            );
            launch(q, shape.launch(Shader::HopsBackwardKey, team), key.clone());
        };
        run(choose_hops_team(&inputs.q.device, &shape, true, &run));
        bindings.grads.into_grads()
    }
}
