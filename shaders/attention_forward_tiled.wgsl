// Fused topology-biased attention, forward, shaped for GPUs: a workgroup takes GROUP_ROWS
// query rows of one head and walks the keys in tiles of TILE, staging each tile's keys, values
// and pair buckets in workgroup memory once for all its rows. A team of TEAM invocations shares
// each query row: member t scores keys t, t + TEAM, … of the tile with its own online softmax,
// and the team merges its partial (max, sum, accumulator) at the end (shaders/include/team.wgsl:
// by subgroup shuffles where the adapter has them, else through workgroup memory).
// Same bindings, parameters and results as attention_forward.wgsl (see there).
//
// Dispatch, once per block of pair rows: workgroups (x, y, heads) of 64 invocations with
// x · y ≥ ceil(row_count / GROUP_ROWS); workgroup wid.x + wid.y · x takes rows
// GROUP_ROWS · (wid.x + wid.y · x) … of the block, of head wid.z.
// The host specialises HEAD_DIM, BUCKETS, TEAM (divides 64), ROWS (rows per team), TILE
// (a multiple of 4 and of TEAM), GROUP_ROWS = 64 / TEAM · ROWS and SHARED_VECS =
// 2 · TILE · HEAD_DIM / 4, within the adapter's workgroup storage.
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
const NEG: f32 = -1.0e30;

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> table: array<f32>;
@group(0) @binding(4) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: Params;

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
    var acc: array<array<vec4<f32>, VEC>, ROWS>;
    var m: array<f32, ROWS>;
    var l: array<f32, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        let row = min(group_first + team * ROWS + r, last);
        for (var c = 0u; c < VEC; c++) {
            qi[r][c] = q[query_base + row * VEC + c] * params.scale;
            acc[r][c] = vec4<f32>(0.0);
        }
        m[r] = NEG;
        l[r] = 0.0;
    }

    for (var start = 0u; start < keys; start += TILE) {
        workgroupBarrier();
        stage_key_tile(li, start, group_first, last, key_base_of_head);
        workgroupBarrier();

        var s: array<array<f32, PER_MEMBER>, ROWS>;
        var tile_max: array<f32, ROWS>;
        for (var r = 0u; r < ROWS; r++) {
            tile_max[r] = m[r];
        }
        for (var t = 0u; t < PER_MEMBER; t++) {
            let offset = member + t * TEAM;
            let valid = start + offset < keys;
            for (var r = 0u; r < ROWS; r++) {
                let local_row = team * ROWS + r;
                let row = min(group_first + local_row, last);
                var score = bias(table_base, tile_bucket(local_row, row, start, offset));
                for (var c = 0u; c < VEC; c++) {
                    score += dot(qi[r][c], shared_vecs[offset * VEC + c]);
                }
                s[r][t] = select(NEG, score, valid);
                tile_max[r] = max(tile_max[r], s[r][t]);
            }
        }
        for (var r = 0u; r < ROWS; r++) {
            let correction = exp(m[r] - tile_max[r]);
            l[r] *= correction;
            for (var c = 0u; c < VEC; c++) {
                acc[r][c] *= correction;
            }
            m[r] = tile_max[r];
        }
        for (var t = 0u; t < PER_MEMBER; t++) {
            let offset = member + t * TEAM;
            for (var r = 0u; r < ROWS; r++) {
                let p = exp(s[r][t] - m[r]);
                l[r] += p;
                for (var c = 0u; c < VEC; c++) {
                    acc[r][c] += p * shared_vecs[(TILE + offset) * VEC + c];
                }
            }
        }
    }

    // The team's merge: every member rescales to the team's max, the team sums, and member t
    // writes columns t, t + TEAM, … of each row.
    for (var r = 0u; r < ROWS; r++) {
        let row = group_first + team * ROWS + r;
        let row_max = team_max(lanes, m[r]);
        let rescale = exp(m[r] - row_max);
        let row_sum = team_sum4(lanes, vec4<f32>(l[r] * rescale, 0.0, 0.0, 0.0)).x;
        for (var c = 0u; c < VEC; c++) {
            let total = team_sum4(lanes, acc[r][c] * rescale);
            if (row <= last && c % TEAM == member) {
                out[query_base + row * VEC + c] = total / row_sum;
            }
        }
        if (row <= last && member == 0u) {
            lse[head * params.rows + row] = row_max + log(row_sum);
        }
    }
}
