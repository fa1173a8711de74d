// The key tiles of the tiled row kernels (attention_forward_tiled.wgsl and
// attention_backward_query_tiled.wgsl), put before each by the host (`Shader::source`). A kernel
// declares TILE, VEC, GROUP_ROWS, SHARED_VECS, WORKGROUP and the bindings k, v, pairs and params.

const TILE_WORDS: u32 = TILE / 4u + 1u;

// Keys (first TILE · VEC) and values (next TILE · VEC) of a tile.
var<workgroup> shared_vecs: array<vec4<f32>, SHARED_VECS>;
// Pair buckets of the tile: TILE_WORDS words per row of the workgroup, from the word that holds
// the row's first key of the tile.
var<workgroup> shared_buckets: array<u32, GROUP_ROWS * TILE_WORDS>;

// The key count, through workgroup memory: `params` is a read_write storage binding, so by
// WGSL's uniformity rules a value read from it is not workgroup-uniform, and the tile loop it
// bounds holds barriers.
var<workgroup> uniform_keys: u32;

// `params.keys`, workgroup-uniform (every invocation of the workgroup calls this, in uniform
// control flow).
fn uniform_key_count(li: u32) -> u32 {
    if (li == 0u) {
        uniform_keys = params.keys;
    }
    return workgroupUniformLoad(&uniform_keys);
}

// Invocation `li`'s share of staging the tile from key `start` for the workgroup's rows from
// `group_first` (rows past `last` repeat it; keys past the end repeat the last key; bucket words
// past the block's last repeat it): between two workgroup barriers.
fn stage_key_tile(li: u32, start: u32, group_first: u32, last: u32, key_base_of_head: u32) {
    let keys = params.keys;
    let last_word = (params.row_count * keys - 1u) >> 2u;
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
}

// The bucket of row `row` (the workgroup's row `local_row`) and key `start + offset`, from the
// staged tile.
fn tile_bucket(local_row: u32, row: u32, start: u32, offset: u32) -> u32 {
    let byte = (((row - params.row_start) * params.keys + start) & 3u) + offset;
    let word = shared_buckets[local_row * TILE_WORDS + (byte >> 2u)];
    return (word >> ((byte & 3u) * 8u)) & 0xffu;
}

