// Fused topology-biased attention, forward (FlashAttention-style online softmax).
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q       vec4<f32> [heads, rows, head_dim / 4]  queries (the rows of this device's block)
//   1 k       vec4<f32> [heads, keys, head_dim / 4]  keys (all keys of the sequence)
//   2 v       vec4<f32> [heads, keys, head_dim / 4]  values
//   3 table   f32 [heads, buckets]         spatial bias per head per distance bucket
//   4 pairs   u32 [ceil(row_count*keys / 4)]  one block of query rows: bucket of pair (i, j) at byte
//                                        (i - row_start)*keys + j (little-endian)
//   5 out     vec4<f32> [heads, rows, head_dim / 4]  attention output
//   6 lse     f32 [heads, rows]            log-sum-exp of each score row (saved for the backward)
//   7 params  Params
// Dispatch, once per block of pair rows: workgroups (x, y, heads) with
// x · y ≥ ceil(row_count / (64 · ROWS)); invocation gid.x + gid.y · (64 · x) takes ROWS
// consecutive query rows of the block, of head gid.z.
// HEAD_DIM and BUCKETS are specialised by the host before compilation; ROWS is fixed here.
// The host puts shaders/include/attention_params.wgsl and bias.wgsl before this file (Shader::source).

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;
const BUCKETS: u32 = 7u;
const ROWS: u32 = 4u;
const BLOCK: u32 = 8u;
const NEG: f32 = -1.0e30;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: Params;

// The bucket of (query row, key column), from the launch's block of rows.
fn bucket_of(row: u32, col: u32) -> u32 {
    let pair = (row - params.row_start) * params.keys + col;
    return (pairs[pair >> 2u] >> ((pair & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let keys = params.keys;
    let head = gid.z;
    let invocation = gid.x + gid.y * groups.x * 64u;
    let first = params.row_start + invocation * ROWS;
    let last = params.row_start + params.row_count - 1u;
    let query_base = head * params.rows * VEC;
    let key_base_of_head = head * keys * VEC;
    let table_base = head * params.buckets;
    load_bias_row(table_base);

    var rows: array<u32, ROWS>;
    var qi: array<array<vec4<f32>, VEC>, ROWS>;
    var acc: array<array<vec4<f32>, VEC>, ROWS>;
    var m: array<f32, ROWS>;
    var l: array<f32, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        rows[r] = min(first + r, last);
        for (var c = 0u; c < VEC; c++) {
            qi[r][c] = q[query_base + rows[r] * VEC + c] * params.scale;
            acc[r][c] = vec4<f32>(0.0);
        }
        m[r] = NEG;
        l[r] = 0.0;
    }

    for (var start = 0u; start < keys; start += BLOCK) {
        var s: array<array<f32, BLOCK>, ROWS>;
        for (var t = 0u; t < BLOCK; t++) {
            let key = min(start + t, keys - 1u);
            let valid = start + t < keys;
            let key_base = key_base_of_head + key * VEC;
            var kj: array<vec4<f32>, VEC>;
            for (var c = 0u; c < VEC; c++) {
                kj[c] = k[key_base + c];
            }
            for (var r = 0u; r < ROWS; r++) {
                var score = bias(table_base, bucket_of(rows[r], key));
                for (var c = 0u; c < VEC; c++) {
                    score += dot(qi[r][c], kj[c]);
                }
                s[r][t] = select(NEG, score, valid);
            }
        }
        for (var r = 0u; r < ROWS; r++) {
            var block_max = m[r];
            for (var t = 0u; t < BLOCK; t++) {
                block_max = max(block_max, s[r][t]);
            }
            let correction = exp(m[r] - block_max);
            l[r] *= correction;
            for (var c = 0u; c < VEC; c++) {
                acc[r][c] *= correction;
            }
            m[r] = block_max;
        }
        for (var t = 0u; t < BLOCK; t++) {
            let key = min(start + t, keys - 1u);
            let value_base = key_base_of_head + key * VEC;
            var vj: array<vec4<f32>, VEC>;
            for (var c = 0u; c < VEC; c++) {
                vj[c] = v[value_base + c];
            }
            for (var r = 0u; r < ROWS; r++) {
                let p = exp(s[r][t] - m[r]);
                l[r] += p;
                for (var c = 0u; c < VEC; c++) {
                    acc[r][c] += p * vj[c];
                }
            }
        }
    }

    for (var r = 0u; r < ROWS; r++) {
        let row = first + r;
        if (row <= last) {
            let inverse = 1.0 / l[r];
            for (var c = 0u; c < VEC; c++) {
                out[query_base + row * VEC + c] = acc[r][c] * inverse;
            }
            lse[head * params.rows + row] = m[r] + log(l[r]);
        }
    }
}
