// Fused topology-biased attention, forward (FlashAttention-style online softmax).
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q       vec4<f32> [heads, rows, head_dim / 4]  queries (a block of `rows` query rows)
//   1 k       vec4<f32> [heads, keys, head_dim / 4]  keys (all `keys` keys of the sequence)
//   2 v       vec4<f32> [heads, keys, head_dim / 4]  values
//   3 table   f32 [heads, buckets]         spatial bias per head per distance bucket
//   4 pairs   u32 [ceil(rows*keys / 4)]    one-byte bucket of pair (i, j) at byte i*keys + j (little-endian)
//   5 out     vec4<f32> [heads, rows, head_dim / 4]  attention output
//   6 lse     f32 [heads, rows]             log-sum-exp of each score row (saved for the backward)
//   7 params  Params
// Dispatch: workgroups (ceil(rows / 64), heads, 1); one invocation per (query row, head).
// Never writes an S×S matrix: scores live in registers, a block of BLOCK keys at a time.
// HEAD_DIM is specialised by the host to the real head dimension before compilation.

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
const BLOCK: u32 = 16u;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: Params;

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

    var qi: array<vec4<f32>, VEC>;
    var acc: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        qi[c] = q[row_base + c] * params.scale;
        acc[c] = vec4<f32>(0.0);
    }
    var running_max = -1.0e30;
    var running_sum = 0.0;
    var scores: array<f32, BLOCK>;

    for (var start = 0u; start < keys; start += BLOCK) {
        let count = min(BLOCK, keys - start);
        var block_max = -1.0e30;
        for (var t = 0u; t < count; t++) {
            let key_base = head_base + (start + t) * VEC;
            var score = table[bias_base + bucket_of(row, start + t)];
            for (var c = 0u; c < VEC; c++) {
                score += dot(qi[c], k[key_base + c]);
            }
            scores[t] = score;
            block_max = max(block_max, score);
        }
        let new_max = max(running_max, block_max);
        let correction = exp(running_max - new_max);
        running_sum *= correction;
        for (var c = 0u; c < VEC; c++) {
            acc[c] *= correction;
        }
        for (var t = 0u; t < count; t++) {
            let p = exp(scores[t] - new_max);
            running_sum += p;
            let value_base = head_base + (start + t) * VEC;
            for (var c = 0u; c < VEC; c++) {
                acc[c] += p * v[value_base + c];
            }
        }
        running_max = new_max;
    }

    let inverse = 1.0 / running_sum;
    for (var c = 0u; c < VEC; c++) {
        out[row_base + c] = acc[c] * inverse;
    }
    lse[head * rows + row] = running_max + log(running_sum);
}
