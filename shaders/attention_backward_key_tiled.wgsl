// Fused topology-biased attention, backward for the keys and values, shaped for GPUs: a
// workgroup takes GROUP_COLS key columns of one head and walks the block's query rows in tiles
// of TILE, staging each tile's queries, output gradients, log-sum-exps, deltas and pair buckets
// in workgroup memory once for all its columns. A team of TEAM invocations shares each column
// (member t takes rows t, t + TEAM, … of a tile), and the team sums its partial dk and dv at the
// end (shaders/include/team.wgsl). Same bindings, parameters and results as attention_backward_key.wgsl (see there).
//
// Dispatch, once per block of pair rows: workgroups (x, y, heads) of 64 invocations with
// x · y ≥ ceil(keys / GROUP_COLS); workgroup wid.x + wid.y · x takes key columns
// GROUP_COLS · (wid.x + wid.y · x) … of head wid.z. The host specialises HEAD_DIM, BUCKETS,
// TEAM, ROWS (columns per team), TILE, GROUP_COLS = 64 / TEAM · ROWS and SHARED_VECS =
// 2 · TILE · HEAD_DIM / 4.
// The host puts shaders/include/attention_params.wgsl, bias.wgsl, team.wgsl and
// team_workgroup.wgsl or team_subgroups.wgsl before this file (Shader::source).

const HEAD_DIM: u32 = 32u;
const VEC: u32 = HEAD_DIM / 4u;
const BUCKETS: u32 = 7u;
const TEAM: u32 = 4u;
const ROWS: u32 = 2u;
const TILE: u32 = 64u;
const GROUP_COLS: u32 = 32u;
const SHARED_VECS: u32 = 1024u;
const WORKGROUP: u32 = 64u;
const PER_MEMBER: u32 = TILE / TEAM;
const COL_WORDS: u32 = GROUP_COLS / 4u + 1u;

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

// Queries (first TILE · VEC) and output gradients (next TILE · VEC) of a tile of rows.
var<workgroup> shared_vecs: array<vec4<f32>, SHARED_VECS>;
// Pair buckets of the tile: COL_WORDS words per row of the tile, from the word that holds the
// row's pair with the workgroup's first column.
var<workgroup> shared_buckets: array<u32, TILE * COL_WORDS>;
// The block's row count, through workgroup memory: `params` is a read_write storage binding,
// so by WGSL's uniformity rules a value read from it is not workgroup-uniform, and the tile
// loop it bounds holds barriers.
var<workgroup> uniform_rows: u32;
// Log-sum-exp (x) and delta (y) of each row of the tile.
var<workgroup> shared_rows: array<vec2<f32>, TILE>;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let keys = params.keys;
    let head = wid.z;
    let group_first = (wid.x + wid.y * groups.x) * GROUP_COLS;
    let first_col = min(group_first, keys - 1u);
    let last_word = (params.row_count * keys - 1u) >> 2u;
    let lanes = team_setup(li);
    let team = li / TEAM;
    let member = li % TEAM;
    let query_base = head * params.rows * VEC;
    let key_base_of_head = head * keys * VEC;
    let table_base = head * params.buckets;
    load_bias_row(table_base);

    var kj: array<array<vec4<f32>, VEC>, ROWS>;
    var vj: array<array<vec4<f32>, VEC>, ROWS>;
    var dk: array<array<vec4<f32>, VEC>, ROWS>;
    var dv: array<array<vec4<f32>, VEC>, ROWS>;
    for (var r = 0u; r < ROWS; r++) {
        let col = min(group_first + team * ROWS + r, keys - 1u);
        let col_base = key_base_of_head + col * VEC;
        for (var c = 0u; c < VEC; c++) {
            kj[r][c] = k[col_base + c] * params.scale;
            vj[r][c] = v[col_base + c];
            dk[r][c] = vec4<f32>(0.0);
            dv[r][c] = vec4<f32>(0.0);
        }
    }

    if (li == 0u) {
        uniform_rows = params.row_count;
    }
    let row_count = workgroupUniformLoad(&uniform_rows);
    for (var start = 0u; start < row_count; start += TILE) {
        workgroupBarrier();
        for (var i = li; i < TILE * VEC; i += WORKGROUP) {
            let row = params.row_start + min(start + i / VEC, params.row_count - 1u);
            let at = query_base + row * VEC + i % VEC;
            shared_vecs[i] = q[at];
            shared_vecs[TILE * VEC + i] = d_out[at];
        }
        for (var i = li; i < TILE; i += WORKGROUP) {
            let row = params.row_start + min(start + i, params.row_count - 1u);
            shared_rows[i] = vec2<f32>(lse[head * params.rows + row], delta[head * params.rows + row]);
        }
        for (var i = li; i < TILE * COL_WORDS; i += WORKGROUP) {
            let local_row = min(start + i / COL_WORDS, params.row_count - 1u);
            let first_word = (local_row * keys + first_col) >> 2u;
            shared_buckets[i] = pairs[min(first_word + i % COL_WORDS, last_word)];
        }
        workgroupBarrier();

        for (var t = 0u; t < PER_MEMBER; t++) {
            let offset = member + t * TEAM;
            if (start + offset < params.row_count) {
                let stats = shared_rows[offset];
                let base = ((start + offset) * keys + first_col) & 3u;
                for (var r = 0u; r < ROWS; r++) {
                    let col = min(group_first + team * ROWS + r, keys - 1u);
                    let byte = base + (col - first_col);
                    let word = shared_buckets[offset * COL_WORDS + (byte >> 2u)];
                    var score = bias(table_base, (word >> ((byte & 3u) * 8u)) & 0xffu);
                    var dp = 0.0;
                    for (var c = 0u; c < VEC; c++) {
                        score += dot(shared_vecs[offset * VEC + c], kj[r][c]);
                        dp += dot(shared_vecs[(TILE + offset) * VEC + c], vj[r][c]);
                    }
                    let p = exp(score - stats.x);
                    let ds = p * (dp - stats.y);
                    for (var c = 0u; c < VEC; c++) {
                        dv[r][c] += p * shared_vecs[(TILE + offset) * VEC + c];
                        dk[r][c] += ds * shared_vecs[offset * VEC + c];
                    }
                }
            }
        }
    }

    // The team's sums: member t writes components t, t + TEAM, … of dk and dv of each column.
    for (var r = 0u; r < ROWS; r++) {
        let col = group_first + team * ROWS + r;
        let writes = col < keys;
        for (var c = 0u; c < VEC; c++) {
            var dk_total = team_sum4(lanes, dk[r][c]) * params.scale;
            var dv_total = team_sum4(lanes, dv[r][c]);
            if (writes && c % TEAM == member) {
                let at = key_base_of_head + col * VEC + c;
                if (params.accumulate == 1u) {
                    dk_total += d_k[at];
                    dv_total += d_v[at];
                }
                d_k[at] = dk_total;
                d_v[at] = dv_total;
            }
        }
    }
}
