// Fused topology-biased attention, backward for the queries and the bias table.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q        vec4<f32> [heads, rows, head_dim / 4]  (the rows of this device's block)
//   1 k        vec4<f32> [heads, keys, head_dim / 4]  (all keys of the sequence)
//   2 v        vec4<f32> [heads, keys, head_dim / 4]
//   3 table    f32 [heads, buckets]
//   4 pairs    u32 [ceil(row_count*keys / 4)] one block of query rows: bucket of pair (i, j) at byte
//                                          (i - row_start)*keys + j
//   5 d_out    vec4<f32> [heads, rows, head_dim / 4]   gradient of the attention output
//   6 lse      f32 [heads, rows]             saved by the forward
//   7 delta    f32 [heads, rows]             rowsum(d_out * out), computed by the host
//   8 d_q      vec4<f32> [heads, rows, head_dim / 4]   gradient of the queries (written)
//   9 d_bias   f32 [heads, rows, buckets]    per-row partial sums of the bias-table gradient (written;
//                                            the host sums over rows: no S×S buffer, no atomics)
//  10 params   Params
// Dispatch, once per block of pair rows: workgroups (x, y, heads) with
// x · y ≥ ceil(row_count / (64 · ROWS)); invocation gid.x + gid.y · (64 · x) takes ROWS
// consecutive query rows of the block, of head gid.z.
// HEAD_DIM and BUCKETS are specialised by the host before compilation; ROWS is fixed here.
// The host puts shaders/include/attention_params.wgsl and bias.wgsl before this file (Shader::source).

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;
const BUCKETS: u32 = 7u;
const ROWS: u32 = 4u;

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
    var doi: array<array<vec4<f32>, VEC>, ROWS>;
    var dq: array<array<vec4<f32>, VEC>, ROWS>;
    var row_lse: array<f32, ROWS>;
    var row_delta: array<f32, ROWS>;
    var db: array<array<f32, BUCKETS>, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        rows[r] = min(first + r, last);
        let row_base = query_base + rows[r] * VEC;
        for (var c = 0u; c < VEC; c++) {
            qi[r][c] = q[row_base + c] * params.scale;
            doi[r][c] = d_out[row_base + c];
            dq[r][c] = vec4<f32>(0.0);
        }
        row_lse[r] = lse[head * params.rows + rows[r]];
        row_delta[r] = delta[head * params.rows + rows[r]];
        for (var b = 0u; b < BUCKETS; b++) {
            db[r][b] = 0.0;
        }
    }

    for (var col = 0u; col < keys; col++) {
        let key_base = key_base_of_head + col * VEC;
        var kj: array<vec4<f32>, VEC>;
        var vj: array<vec4<f32>, VEC>;
        for (var c = 0u; c < VEC; c++) {
            kj[c] = k[key_base + c];
            vj[c] = v[key_base + c];
        }
        for (var r = 0u; r < ROWS; r++) {
            let bucket = bucket_of(rows[r], col);
            var score = bias(table_base, bucket);
            var dp = 0.0;
            for (var c = 0u; c < VEC; c++) {
                score += dot(qi[r][c], kj[c]);
                dp += dot(doi[r][c], vj[c]);
            }
            let ds = exp(score - row_lse[r]) * (dp - row_delta[r]);
            if (BUCKETS <= SMALL_TABLE) {
                for (var b = 0u; b < BUCKETS; b++) {
                    db[r][b] += select(0.0, ds, bucket == b);
                }
            } else {
                db[r][bucket] += ds;
            }
            for (var c = 0u; c < VEC; c++) {
                dq[r][c] += ds * kj[c];
            }
        }
    }

    for (var r = 0u; r < ROWS; r++) {
        let row = first + r;
        if (row <= last) {
            for (var c = 0u; c < VEC; c++) {
                d_q[query_base + row * VEC + c] = dq[r][c] * params.scale;
            }
            let bias_out = (head * params.rows + row) * BUCKETS;
            for (var b = 0u; b < BUCKETS; b++) {
                d_bias[bias_out + b] = db[r][b];
            }
        }
    }
}
