// Fused topology-biased attention, backward for the keys and values.
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
//   8 d_k      vec4<f32> [heads, keys, head_dim / 4]   gradient of the keys (written)
//   9 d_v      vec4<f32> [heads, keys, head_dim / 4]   gradient of the values (written)
//  10 params   Params
// Dispatch, once per block of pair rows: workgroups (x, y, heads) with
// x · y ≥ ceil(keys / (64 · ROWS)); invocation gid.x + gid.y · (64 · x) takes ROWS consecutive
// key columns of head gid.z, over the block's query rows; the first block writes d_k and d_v,
// later ones (accumulate = 1) add to them.
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
@group(0) @binding(8) var<storage, read_write> d_k: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> d_v: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let keys = params.keys;
    let head = gid.z;
    let invocation = gid.x + gid.y * groups.x * 64u;
    let first = invocation * ROWS;
    let query_base = head * params.rows * VEC;
    let key_base_of_head = head * keys * VEC;
    let table_base = head * params.buckets;
    load_bias_row(table_base);

    var cols: array<u32, ROWS>;
    var kj: array<array<vec4<f32>, VEC>, ROWS>;
    var vj: array<array<vec4<f32>, VEC>, ROWS>;
    var dk: array<array<vec4<f32>, VEC>, ROWS>;
    var dv: array<array<vec4<f32>, VEC>, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        cols[r] = min(first + r, keys - 1u);
        let col_base = key_base_of_head + cols[r] * VEC;
        for (var c = 0u; c < VEC; c++) {
            kj[r][c] = k[col_base + c] * params.scale;
            vj[r][c] = v[col_base + c];
            dk[r][c] = vec4<f32>(0.0);
            dv[r][c] = vec4<f32>(0.0);
        }
    }

    let end = params.row_start + params.row_count;
    for (var row = params.row_start; row < end; row++) {
        let row_base = query_base + row * VEC;
        var qi: array<vec4<f32>, VEC>;
        var doi: array<vec4<f32>, VEC>;
        for (var c = 0u; c < VEC; c++) {
            qi[c] = q[row_base + c];
            doi[c] = d_out[row_base + c];
        }
        let row_lse = lse[head * params.rows + row];
        let row_delta = delta[head * params.rows + row];
        // The ROWS buckets of this row lie in the first column's word and, when they cross
        // into it, the next one. Only then is it read: it holds a pair of the block and so
        // lies inside the binding (on a block's last row it may be the block's last word).
        let first_pair = (row - params.row_start) * keys + cols[0];
        let word = first_pair >> 2u;
        let low = pairs[word];
        var high = 0u;
        if ((first_pair & 3u) + (cols[ROWS - 1u] - cols[0]) >= 4u) {
            high = pairs[word + 1u];
        }
        for (var r = 0u; r < ROWS; r++) {
            let at = (first_pair & 3u) + (cols[r] - cols[0]);
            let bucket = (select(low, high, at >= 4u) >> ((at & 3u) * 8u)) & 0xffu;
            var score = bias(table_base, bucket);
            var dp = 0.0;
            for (var c = 0u; c < VEC; c++) {
                score += dot(qi[c], kj[r][c]);
                dp += dot(doi[c], vj[r][c]);
            }
            let p = exp(score - row_lse);
            let ds = p * (dp - row_delta);
            for (var c = 0u; c < VEC; c++) {
                dv[r][c] += p * doi[c];
                dk[r][c] += ds * qi[c];
            }
        }
    }

    for (var r = 0u; r < ROWS; r++) {
        let col = first + r;
        if (col < keys) {
            for (var c = 0u; c < VEC; c++) {
                let at = key_base_of_head + col * VEC + c;
                if (params.accumulate == 1u) {
                    d_k[at] += dk[r][c] * params.scale;
                    d_v[at] += dv[r][c];
                } else {
                    d_k[at] = dk[r][c] * params.scale;
                    d_v[at] = dv[r][c];
                }
            }
        }
    }
}
