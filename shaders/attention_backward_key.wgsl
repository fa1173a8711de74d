// Fused topology-biased attention, backward for the keys and values.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q        vec4<f32> [heads, rows, head_dim / 4]
//   1 k        vec4<f32> [heads, keys, head_dim / 4]
//   2 v        vec4<f32> [heads, keys, head_dim / 4]
//   3 table    f32 [heads, buckets]
//   4 pairs    u32 [ceil(rows*keys / 4)]     one-byte bucket of pair (i, j) at byte i*keys + j
//   5 d_out    vec4<f32> [heads, rows, head_dim / 4]    gradient of the attention output
//   6 lse      f32 [heads, rows]              saved by the forward
//   7 delta    f32 [heads, rows]              rowsum(d_out * out), computed by the host
//   8 d_k      vec4<f32> [heads, keys, head_dim / 4]    gradient of the keys (written)
//   9 d_v      vec4<f32> [heads, keys, head_dim / 4]    gradient of the values (written)
//  10 params   Params
// Dispatch: workgroups (ceil(keys / 64), heads, 1); one invocation per (key column, head).
// HEAD_DIM is specialised by the host before compilation.

struct Params {
    heads: u32,
    rows: u32,
    keys: u32,
    head_dim: u32,
    buckets: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(5) var<storage, read_write> d_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> delta: array<f32>;
@group(0) @binding(8) var<storage, read_write> d_k: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> d_v: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> params: Params;

fn bucket_of(row: u32, col: u32) -> u32 {
    let pair = row * params.keys + col;
    return (pairs[pair >> 2u] >> ((pair & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let head = gid.y;
    let rows = params.rows;
    let keys = params.keys;
    if (col >= keys || head >= params.heads) {
        return;
    }
    let query_base = head * rows * VEC;
    let col_base = (head * keys + col) * VEC;
    let bias_base = head * params.buckets;

    var kj: array<vec4<f32>, VEC>;
    var vj: array<vec4<f32>, VEC>;
    var dk: array<vec4<f32>, VEC>;
    var dv: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        kj[c] = k[col_base + c];
        vj[c] = v[col_base + c];
        dk[c] = vec4<f32>(0.0);
        dv[c] = vec4<f32>(0.0);
    }

    for (var row = 0u; row < rows; row++) {
        let row_base = query_base + row * VEC;
        var score = table[bias_base + bucket_of(row, col)];
        var dp = 0.0;
        for (var c = 0u; c < VEC; c++) {
            score += dot(q[row_base + c], kj[c]) * params.scale;
            dp += dot(d_out[row_base + c], vj[c]);
        }
        let p = exp(score - lse[head * rows + row]);
        let ds = p * (dp - delta[head * rows + row]);
        for (var c = 0u; c < VEC; c++) {
            dv[c] += p * d_out[row_base + c];
            dk[c] += ds * q[row_base + c];
        }
    }

    for (var c = 0u; c < VEC; c++) {
        d_k[col_base + c] = dk[c] * params.scale;
        d_v[col_base + c] = dv[c];
    }
}
