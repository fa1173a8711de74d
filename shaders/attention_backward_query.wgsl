// Fused topology-biased attention, backward for the queries and the bias table.
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
//   8 d_q      vec4<f32> [heads, rows, head_dim / 4]    gradient of the queries (written)
//   9 d_bias   f32 [heads, rows, buckets]     per-row partial sums of the bias-table gradient (written;
//                                            the host sums over rows: no S×S buffer, no atomics)
//  10 params   Params
// Dispatch: workgroups (ceil(rows / 64), heads, 1); one invocation per (query row, head).
// HEAD_DIM and BUCKETS are specialised by the host before compilation.

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
const BUCKETS: u32 = 7u;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(5) var<storage, read_write> d_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> delta: array<f32>;
@group(0) @binding(8) var<storage, read_write> d_q: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> d_bias: array<f32>;
@group(0) @binding(10) var<storage, read_write> params: Params;

fn bucket_of(row: u32, col: u32) -> u32 {
    let pair = row * params.keys + col;
    return (pairs[pair >> 2u] >> ((pair & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    let head = gid.y;
    let rows = params.rows;
    let keys = params.keys;
    if (row >= rows || head >= params.heads) {
        return;
    }
    let head_base = head * keys * VEC;
    let row_base = (head * rows + row) * VEC;
    let bias_base = head * params.buckets;
    let row_lse = lse[head * rows + row];
    let row_delta = delta[head * rows + row];

    var qi: array<vec4<f32>, VEC>;
    var doi: array<vec4<f32>, VEC>;
    var dq: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        qi[c] = q[row_base + c] * params.scale;
        doi[c] = d_out[row_base + c];
        dq[c] = vec4<f32>(0.0);
    }
    var db: array<f32, BUCKETS>;
    for (var b = 0u; b < BUCKETS; b++) {
        db[b] = 0.0;
    }

    for (var col = 0u; col < keys; col++) {
        let key_base = head_base + col * VEC;
        let bucket = bucket_of(row, col);
        var score = table[bias_base + bucket];
        var dp = 0.0;
        for (var c = 0u; c < VEC; c++) {
            score += dot(qi[c], k[key_base + c]);
            dp += dot(doi[c], v[key_base + c]);
        }
        let ds = exp(score - row_lse) * (dp - row_delta);
        db[bucket] += ds;
        for (var c = 0u; c < VEC; c++) {
            dq[c] += ds * k[key_base + c];
        }
    }

    for (var c = 0u; c < VEC; c++) {
        d_q[row_base + c] = dq[c] * params.scale;
    }
    let bias_row = (head * rows + row) * BUCKETS;
    for (var b = 0u; b < BUCKETS; b++) {
        d_bias[bias_row + b] = db[b];
    }
}
