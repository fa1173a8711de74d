// Fused topology-biased attention, backward for the queries and the bias table, shaped for GPUs
// like attention_forward_tiled.wgsl: a workgroup takes GROUP_ROWS query rows of one head and
// walks the keys in tiles of TILE, staging each tile's keys, values and pair buckets in
// workgroup memory; a team of TEAM invocations shares each row (member t takes keys t,
// t + TEAM, … of a tile), and the team sums its partial dq and bias sums at the end.
// Same bindings, parameters and results as attention_backward_query.wgsl (see there).
//
// Dispatch: as attention_forward_tiled.wgsl. The host specialises HEAD_DIM, BUCKETS, TEAM,
// ROWS, TILE, GROUP_ROWS = 64 / TEAM · ROWS and SHARED_VECS = max(2 · TILE, 64 · ROWS) ·
// HEAD_DIM / 4.

struct Params {
    heads: u32,
    rows: u32,
    keys: u32,
    head_dim: u32,
    buckets: u32,
    scale: f32,
    row_start: u32,
    row_count: u32,
    accumulate: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

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
const TILE_WORDS: u32 = TILE / 4u + 1u;
const SMALL_TABLE: u32 = 16u;

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

// Keys (first TILE · VEC) and values (next TILE · VEC) of a tile; at the end, the members'
// partial dq.
var<workgroup> shared_vecs: array<vec4<f32>, SHARED_VECS>;
// Pair buckets of the tile: TILE_WORDS words per row of the workgroup, from the word that holds
// the row's first key of the tile.
var<workgroup> shared_buckets: array<u32, GROUP_ROWS * TILE_WORDS>;
// The members' partial sums of one bias bucket, one per row of each member.
var<workgroup> shared_sums: array<f32, WORKGROUP * ROWS>;

var<private> bias_row: array<f32, BUCKETS>;

fn bias(table_base: u32, bucket: u32) -> f32 {
    if (BUCKETS <= SMALL_TABLE) {
        var value = bias_row[0];
        for (var b = 1u; b < BUCKETS; b++) {
            value = select(value, bias_row[b], bucket == b);
        }
        return value;
    }
    return table[table_base + bucket];
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let keys = params.keys;
    let head = wid.z;
    let group_first = params.row_start + (wid.x + wid.y * groups.x) * GROUP_ROWS;
    let last = params.row_start + params.row_count - 1u;
    let last_word = (params.row_count * keys - 1u) >> 2u;
    let team = li / TEAM;
    let member = li % TEAM;
    let query_base = head * params.rows * VEC;
    let key_base_of_head = head * keys * VEC;
    let table_base = head * params.buckets;
    if (BUCKETS <= SMALL_TABLE) {
        for (var b = 0u; b < BUCKETS; b++) {
            bias_row[b] = table[table_base + b];
        }
    }

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
        for (var i = li; i < TILE * VEC; i += WORKGROUP) {
            let key = min(start + i / VEC, keys - 1u);
            let at = key_base_of_head + key * VEC + i % VEC;
            shared_vecs[i] = k[at];
            shared_vecs[TILE * VEC + i] = v[at];
        }
        for (var i = li; i < GROUP_ROWS * TILE_WORDS; i += WORKGROUP) {
            let row = min(group_first + i / TILE_WORDS, last);
            let first_word = ((row - params.row_start) * keys + start) >> 2u;
            shared_buckets[i] = pairs[min(first_word + i % TILE_WORDS, last_word)];
        }
        workgroupBarrier();

        for (var t = 0u; t < PER_MEMBER; t++) {
            let offset = member + t * TEAM;
            if (start + offset < keys) {
                for (var r = 0u; r < ROWS; r++) {
                    let local_row = team * ROWS + r;
                    let row = min(group_first + local_row, last);
                    let byte = (((row - params.row_start) * keys + start) & 3u) + offset;
                    let word = shared_buckets[local_row * TILE_WORDS + (byte >> 2u)];
                    let bucket = (word >> ((byte & 3u) * 8u)) & 0xffu;
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

    // The team's sums: member t writes columns t, t + TEAM, … of dq, then buckets one at a time.
    workgroupBarrier();
    for (var r = 0u; r < ROWS; r++) {
        for (var c = 0u; c < VEC; c++) {
            shared_vecs[(li * ROWS + r) * VEC + c] = dq[r][c];
        }
    }
    workgroupBarrier();
    let team_first = team * TEAM;
    for (var r = 0u; r < ROWS; r++) {
        let row = group_first + team * ROWS + r;
        if (row <= last) {
            for (var c = member; c < VEC; c += TEAM) {
                var total = vec4<f32>(0.0);
                for (var j = 0u; j < TEAM; j++) {
                    total += shared_vecs[((team_first + j) * ROWS + r) * VEC + c];
                }
                d_q[query_base + row * VEC + c] = total * params.scale;
            }
        }
    }
    for (var b = 0u; b < BUCKETS; b++) {
        for (var r = 0u; r < ROWS; r++) {
            shared_sums[li * ROWS + r] = db[r][b];
        }
        workgroupBarrier();
        if (member == 0u) {
            for (var r = 0u; r < ROWS; r++) {
                let row = group_first + team * ROWS + r;
                if (row <= last) {
                    var total = 0.0;
                    for (var j = 0u; j < TEAM; j++) {
                        total += shared_sums[(team_first + j) * ROWS + r];
                    }
                    d_bias[(head * params.rows + row) * BUCKETS + b] = total;
                }
            }
        }
        workgroupBarrier();
    }
}
