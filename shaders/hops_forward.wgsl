// Sparse topology-biased attention over near pairs (the hops scope), forward: for each query
// row, SDDMM over its pairs (scores q·k/√d plus the bucket's bias), online softmax, SpMM with the
// values; saves only the output and the log-sum-exp.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q        vec4<f32> [heads, rows, head_dim / 4]  queries
//   1 k        vec4<f32> [heads, keys, head_dim / 4]  keys (a shard's own rows, its halo, tokens)
//   2 v        vec4<f32> [heads, keys, head_dim / 4]  values
//   3 table    f32 [heads, buckets]                   spatial bias per head per bucket
//   4 offsets  u32 [rows + 1]      pairs of row i are offsets[i] .. offsets[i + 1]
//   5 keys_of  u32 [pairs]         key of each pair
//   6 buckets  u32 [ceil(pairs / 4)] bucket of pair t at byte t (little-endian, 4 per word)
//   7 out      vec4<f32> [heads, rows, head_dim / 4]  attention output (written)
//   8 lse      f32 [heads, rows]                      log-sum-exp of each row's scores (written;
//                                                     -1e30 for a row without pairs)
//   9 order    u32 [rows]  the row of each invocation slot: rows by pair count, most first
//  10 params   Params
// Dispatch: workgroups (x, y, heads) with x · y · 64 ≥ rows · TEAM, x ≤ 65535; a team of TEAM
// invocations per slot (gid.x + gid.y · 64 · x) / TEAM, of head gid.z, for query row
// order[slot] (the host orders the rows so that the lanes of a SIMD group have alike loop
// counts). Member t of a team takes the row's pairs t, t + TEAM, … with its own online
// softmax, and the team merges at the end (shaders/include/team.wgsl). Every index is bounded
// by the host: keys of pairs < keys, buckets < buckets, order a permutation of the rows.
// HEAD_DIM, BUCKETS and TEAM (1, 2, 4, … up to 64) are specialised by the host before
// compilation. The host puts shaders/include/bias.wgsl, team.wgsl and team_workgroup.wgsl or
// team_subgroups.wgsl before this file (Shader::source).

struct Params {
    heads: u32,
    rows: u32,
    keys: u32,
    head_dim: u32,
    buckets: u32,
    scale: f32,
    pairs: u32,
    _pad0: u32,
}

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;
const BUCKETS: u32 = 8u;
const TEAM: u32 = 1u;
const WORKGROUP: u32 = 64u;
const NEG: f32 = -1.0e30;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys_of: array<u32>;
@group(0) @binding(6) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;
@group(0) @binding(9) var<storage, read_write> order: array<u32>;
@group(0) @binding(10) var<storage, read_write> params: Params;

fn bucket_of(pair: u32) -> u32 {
    return min((buckets[pair >> 2u] >> ((pair & 3u) * 8u)) & 0xffu, BUCKETS - 1u);
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let lanes = team_setup(li);
    let index = gid.x + gid.y * groups.x * 64u;
    let slot = index / TEAM;
    let member = index % TEAM;
    let head = gid.z;
    // No early return for slots past the rows: the team reductions need every invocation.
    let in_range = slot < params.rows;
    let row = order[min(slot, params.rows - 1u)];
    let table_base = head * params.buckets;
    load_bias_row(table_base);
    let query_base = (head * params.rows + row) * VEC;
    let key_base_of_head = head * params.keys * VEC;
    var qi: array<vec4<f32>, VEC>;
    var acc: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        qi[c] = q[query_base + c] * params.scale;
        acc[c] = vec4<f32>(0.0);
    }
    var m = NEG;
    var l = 0.0;
    let end = offsets[row + 1u];
    for (var t = offsets[row] + member; t < end; t += TEAM) {
        let key_base = key_base_of_head + keys_of[t] * VEC;
        var score = bias(table_base, bucket_of(t));
        for (var c = 0u; c < VEC; c++) {
            score += dot(qi[c], k[key_base + c]);
        }
        let m_new = max(m, score);
        let correction = exp(m - m_new);
        let p = exp(score - m_new);
        l = l * correction + p;
        for (var c = 0u; c < VEC; c++) {
            acc[c] = acc[c] * correction + p * v[key_base + c];
        }
        m = m_new;
    }
    // The team's merge: every member rescales to the team's max (a member without pairs
    // holds nothing), the team sums, and member t writes columns t, t + TEAM, ….
    let row_max = team_max(lanes, m);
    let rescale = select(0.0, exp(m - row_max), l > 0.0);
    let row_sum = team_sum4(lanes, vec4<f32>(l * rescale, 0.0, 0.0, 0.0)).x;
    let inverse = select(0.0, 1.0 / row_sum, row_sum > 0.0);
    for (var c = 0u; c < VEC; c++) {
        let total = team_sum4(lanes, acc[c] * rescale);
        if (in_range && c % TEAM == member) {
            out[query_base + c] = total * inverse;
        }
    }
    if (in_range && member == 0u) {
        lse[head * params.rows + row] = select(NEG, row_max + log(row_sum), row_sum > 0.0);
    }
}
