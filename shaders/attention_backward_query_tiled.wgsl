// Fused topology-biased attention, backward for the queries and the bias table, shaped for GPUs
// like attention_forward_tiled.wgsl: a workgroup takes GROUP_ROWS query rows of one head and
// walks the keys in tiles of TILE, staging each tile's keys, values and pair buckets in
// workgroup memory; a team of TEAM invocations shares each row (member t takes keys t,
// t + TEAM, … of a tile), and the team sums its partial dq and bias sums at the end.
// Same bindings, parameters and results as attention_backward_query.wgsl (see there).
//
// Dispatch: as attention_forward_tiled.wgsl. The host specialises HEAD_DIM, BUCKETS, TEAM,
// ROWS, TILE, GROUP_ROWS = 64 / TEAM · ROWS and SHARED_VECS = 2 · TILE · HEAD_DIM / 4.
// The host puts shaders/include/attention_params.wgsl, bias.wgsl, row_tiles.wgsl, team.wgsl and
// team_workgroup.wgsl or team_subgroups.wgsl before this file (Shader::source).

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;
const BUCKETS: u32 = 7u;
const TEAM: u32 = 4u;
const ROWS: u32 = 2u;
const TILE: u32 = 64u;
const GROUP_ROWS: u32 = 32u;
const SHARED_VECS: u32 = 1024u;
const WORKGROUP: u32 = 64u;
const PER_MEMBER: u32 = TILE / TEAM;

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

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let keys = uniform_key_count(li);
    let head = wid.z;
    let group_first = params.row_start + (wid.x + wid.y * groups.x) * GROUP_ROWS;
    let last = params.row_start + params.row_count - 1u;
    let lanes = team_setup(li);
    let team = li / TEAM;
    let member = li % TEAM;
    let query_base = head * params.rows * VEC;
    let key_base_of_head = head * keys * VEC;
    let table_base = head * params.buckets;
    load_bias_row(table_base);

    var qi: array<array<vec4<f32>, VEC>, ROWS>;
    var doi: array<array<vec4<f32>, VEC>, ROWS>;
    var dq: array<array<vec4<f32>, VEC>, ROWS>;
    var row_lse: array<f32, ROWS>;
    var row_delta: array<f32, ROWS>;
    var db: array<array<f32, BUCKETS>, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        let row = min(group_first + team * ROWS + r, last);
        let row_base = query_base + row * VEC;
        for (var c = 0u; c < VEC; c++) {
            qi[r][c] = q[row_base + c] * params.scale;
            doi[r][c] = d_out[row_base + c];
            dq[r][c] = vec4<f32>(0.0);
        }
        row_lse[r] = lse[head * params.rows + row];
        row_delta[r] = delta[head * params.rows + row];
        for (var b = 0u; b < BUCKETS; b++) {
            db[r][b] = 0.0;
        }
    }

    for (var start = 0u; start < keys; start += TILE) {
        workgroupBarrier();
        stage_key_tile(li, start, group_first, last, key_base_of_head);
        workgroupBarrier();

        for (var t = 0u; t < PER_MEMBER; t++) {
            let offset = member + t * TEAM;
            if (start + offset < keys) {
                for (var r = 0u; r < ROWS; r++) {
                    let local_row = team * ROWS + r;
                    let row = min(group_first + local_row, last);
                    let bucket = tile_bucket(local_row, row, start, offset);
                    var score = bias(table_base, bucket);
                    var dp = 0.0;
                    for (var c = 0u; c < VEC; c++) {
                        score += dot(qi[r][c], shared_vecs[offset * VEC + c]);
                        dp += dot(doi[r][c], shared_vecs[(TILE + offset) * VEC + c]);
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
                        dq[r][c] += ds * shared_vecs[offset * VEC + c];
                    }
                }
            }
        }
    }

    // The team's sums: member t writes columns t, t + TEAM, … of dq and buckets 4t … 4t + 3,
    // 4(t + TEAM) …, of each row.
    for (var r = 0u; r < ROWS; r++) {
        let row = group_first + team * ROWS + r;
        let writes = row <= last;
        for (var c = 0u; c < VEC; c++) {
            let total = team_sum4(lanes, dq[r][c]);
            if (writes && c % TEAM == member) {
                d_q[query_base + row * VEC + c] = total * params.scale;
            }
        }
        for (var b = 0u; b < BUCKETS; b += 4u) {
            var four = vec4<f32>(0.0);
            for (var i = 0u; i < 4u; i++) {
                if (b + i < BUCKETS) {
                    four[i] = db[r][b + i];
                }
            }
            let total = team_sum4(lanes, four);
            if (writes && b / 4u % TEAM == member) {
                for (var i = 0u; i < min(4u, BUCKETS - b); i++) {
                    d_bias[(head * params.rows + row) * BUCKETS + b + i] = total[i];
                }
            }
        }
    }
}
