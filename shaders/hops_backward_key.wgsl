// Sparse topology-biased attention over near pairs (the hops scope), backward for the keys and
// values: per key, over the pairs that reach it (the transposed index, built once on the host),
// recomputes each pair's probability and accumulates dK and dV. Deterministic, no atomics.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 q         vec4<f32> [heads, rows, head_dim / 4]
//   1 k         vec4<f32> [heads, keys, head_dim / 4]
//   2 v         vec4<f32> [heads, keys, head_dim / 4]
//   3 table     f32 [heads, buckets]
//   4 offsets   u32 [keys + 1]     pairs of key j are offsets[j] .. offsets[j + 1] of the
//                                  key-ordered arrays
//   5 rows_of   u32 [pairs]        query row of each pair, grouped by key, rows ascending
//   6 buckets   u32 [ceil(pairs / 4)] bucket of key-ordered pair t at byte t
//   7 d_out     vec4<f32> [heads, rows, head_dim / 4]  gradient of the output
//   8 lse       f32 [heads, rows]  saved by the forward
//   9 delta     f32 [heads, rows]  rowsum(d_out * out) minus the gradient of the lse (host)
//  10 d_k       vec4<f32> [heads, keys, head_dim / 4]  gradient of the keys (written)
//  11 d_v       vec4<f32> [heads, keys, head_dim / 4]  gradient of the values (written)
//  12 order    u32 [keys]  the key of each invocation slot: keys by pair count, most first
//  13 params   Params
// Dispatch: workgroups (x, y, heads) with x · y · 64 ≥ keys · TEAM, x ≤ 65535; a team of TEAM
// invocations per slot (gid.x + gid.y · 64 · x) / TEAM, of head gid.z, for key order[slot]
// (the host orders the keys so that the lanes of a SIMD group have alike loop counts); member
// t takes the key's pairs t, t + TEAM, …, and the team sums dk and dv at the end.
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
@group(0) @binding(5) var<storage, read_write> rows_of: array<u32>;
@group(0) @binding(6) var<storage, read_write> buckets: array<u32>;
@group(0) @binding(7) var<storage, read_write> d_out: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;
@group(0) @binding(9) var<storage, read_write> delta: array<f32>;
@group(0) @binding(10) var<storage, read_write> d_k: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> d_v: array<vec4<f32>>;
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
    // No early return for slots past the keys: the team reductions need every invocation.
    let in_range = slot < params.keys;
    let key = order[min(slot, params.keys - 1u)];
    let table_base = head * params.buckets;
    load_bias_row(table_base);
    let key_base = (head * params.keys + key) * VEC;
    var kj: array<vec4<f32>, VEC>;
    var vj: array<vec4<f32>, VEC>;
    var dk: array<vec4<f32>, VEC>;
    var dv: array<vec4<f32>, VEC>;
    for (var c = 0u; c < VEC; c++) {
        kj[c] = k[key_base + c] * params.scale;
        vj[c] = v[key_base + c];
        dk[c] = vec4<f32>(0.0);
        dv[c] = vec4<f32>(0.0);
    }
    let end = offsets[key + 1u];
    for (var t = offsets[key] + member; t < end; t += TEAM) {
        let at = head * params.rows + rows_of[t];
        let row_base = at * VEC;
        var score = bias(table_base, bucket_of(t));
        var dp = 0.0;
        for (var c = 0u; c < VEC; c++) {
            score += dot(q[row_base + c], kj[c]);
            dp += dot(d_out[row_base + c], vj[c]);
        }
        let p = exp(score - lse[at]);
        let ds = p * (dp - delta[at]);
        for (var c = 0u; c < VEC; c++) {
            dv[c] += p * d_out[row_base + c];
            dk[c] += ds * q[row_base + c];
        }
    }
    // The team's sums: member t writes columns t, t + TEAM, … of dk and dv.
    for (var c = 0u; c < VEC; c++) {
        let dk_total = team_sum4(lanes, dk[c]);
        let dv_total = team_sum4(lanes, dv[c]);
        if (in_range && c % TEAM == member) {
            d_k[key_base + c] = dk_total * params.scale;
            d_v[key_base + c] = dv_total;
        }
    }
}
