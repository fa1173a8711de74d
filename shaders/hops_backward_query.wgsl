// Sparse topology-biased attention over near pairs (the hops scope), backward for the queries
// and the bias table: per query row, recomputes each pair's probability from the saved
// log-sum-exp and accumulates dQ and the row's partial sums of the bias-table gradient.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q        vec4<f32> [heads, rows, head_dim / 4]
//   1 k        vec4<f32> [heads, keys, head_dim / 4]
//   2 v        vec4<f32> [heads, keys, head_dim / 4]
//   3 table    f32 [heads, buckets]
//   4 offsets  u32 [rows + 1]      pairs of row i are offsets[i] .. offsets[i + 1]
//   5 keys_of  u32 [pairs]         key of each pair
//   6 buckets  u32 [ceil(pairs / 4)] bucket of pair t at byte t
//   7 d_out    vec4<f32> [heads, rows, head_dim / 4]  gradient of the output
//   8 lse      f32 [heads, rows]   saved by the forward
//   9 delta    f32 [heads, rows]   rowsum(d_out * out) minus the gradient of the lse (host)
//  10 d_q      vec4<f32> [heads, rows, head_dim / 4]  gradient of the queries (written)
//  11 d_bias   f32 [heads, rows, buckets]  per-row partial sums of the bias-table gradient
//                                          (written; the host sums over rows)
//  12 order    u32 [rows]  the row of each invocation slot: rows by pair count, most first
//  13 params   Params
// Dispatch: as hops_forward.wgsl (a team of TEAM invocations per query row, member t taking
// the row's pairs t, t + TEAM, …, the team summing dq and the bias sums at the end).
// HEAD_DIM, BUCKETS and TEAM are specialised by the host before compilation. The host puts
// shaders/include/bias.wgsl, team.wgsl and team_workgroup.wgsl or team_subgroups.wgsl before
// this file (Shader::source).

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

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys_of: array<u32>;
@group(0) @binding(6) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(7) var<storage, read_write> d_out: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;
@group(0) @binding(9) var<storage, read_write> delta: array<f32>;
@group(0) @binding(10) var<storage, read_write> d_q: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> d_bias: array<f32>;
@group(0) @binding(12) var<storage, read_write> order: array<u32>;
@group(0) @binding(13) var<storage, read_write> params: Params;

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
    let at = head * params.rows + row;
    let query_base = at * VEC;
    let key_base_of_head = head * params.keys * VEC;
    var qi: array<vec4<f32>, VEC>;
    var doi: array<vec4<f32>, VEC>;
    var dq: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        qi[c] = q[query_base + c] * params.scale;
        doi[c] = d_out[query_base + c];
        dq[c] = vec4<f32>(0.0);
    }
    var d_row: array<f32, BUCKETS>;
    for (var b = 0u; b < BUCKETS; b++) {
        d_row[b] = 0.0;
    }
    let row_lse = lse[at];
    let row_delta = delta[at];
    let end = offsets[row + 1u];
    for (var t = offsets[row] + member; t < end; t += TEAM) {
        let key_base = key_base_of_head + keys_of[t] * VEC;
        let bucket = bucket_of(t);
        var score = bias(table_base, bucket);
        var dp = 0.0;
        for (var c = 0u; c < VEC; c++) {
            score += dot(qi[c], k[key_base + c]);
            dp += dot(doi[c], v[key_base + c]);
        }
        let ds = exp(score - row_lse) * (dp - row_delta);
        for (var c = 0u; c < VEC; c++) {
            dq[c] += ds * k[key_base + c];
        }
        for (var b = 0u; b < BUCKETS; b++) {
            d_row[b] += select(0.0, ds, bucket == b);
        }
    }
    // The team's sums: member t writes columns t, t + TEAM, … of dq and buckets 4t … 4t + 3,
    // 4(t + TEAM) ….
    for (var c = 0u; c < VEC; c++) {
        let total = team_sum4(lanes, dq[c]);
        if (in_range && c % TEAM == member) {
            d_q[query_base + c] = total * params.scale;
        }
    }
    let bias_base = at * params.buckets;
    for (var b = 0u; b < BUCKETS; b += 4u) {
        var four = vec4<f32>(0.0);
        for (var i = 0u; i < 4u; i++) {
            if (b + i < BUCKETS) {
                four[i] = d_row[b + i];
            }
        }
        let total = team_sum4(lanes, four);
        if (in_range && b / 4u % TEAM == member) {
            for (var i = 0u; i < min(4u, BUCKETS - b); i++) {
                d_bias[bias_base + b + i] = total[i];
            }
        }
    }
}
