// Counter-based dropout: out[r, c] = x[r, c] · scale where the hash of (stream, counter row of
// r, c) is at or above the threshold, else 0. The mask is a function of those numbers alone, so
// the backward recomputes it (the same shader on the gradient) instead of storing it, and every
// shard, block or device that holds a row draws that row's mask.
//
// A row's counter row is its place in the whole sequence, not in this tensor: local row r is the
// shard's row r + row_shift; shard rows below `nodes` are nodes, counted from `first_node`; the
// rows after them are global tokens, counted from `first_token`.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 x       f32 [rows, width]
//   1 out     f32 [rows, width]   written: every element
//   2 params  Params
// Dispatch: workgroups (x, y, 1) with x · y · 64 ≥ rows · width, x ≤ 65535; one invocation per
// element gid.x + gid.y · 64 · x (columns fastest).

struct Params {
    rows: u32,
    width: u32,
    row_shift: u32,
    nodes: u32,
    first_node: u32,
    first_token: u32,
    stream: u32,
    threshold: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> params: Params;

// MurmurHash3's 32-bit finaliser: a bijection that mixes every input bit into every output bit.
fn fmix(h0: u32) -> u32 {
    var h = h0;
    h ^= h >> 16u;
    h *= 0x85ebca6bu;
    h ^= h >> 13u;
    h *= 0xc2b2ae35u;
    h ^= h >> 16u;
    return h;
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let index = gid.x + gid.y * groups.x * 64u;
    let width = params.width;
    if (index >= params.rows * width) {
        return;
    }
    let shard_row = index / width + params.row_shift;
    let col = index % width;
    var counter_row = params.first_token + (shard_row - params.nodes);
    if (shard_row < params.nodes) {
        counter_row = params.first_node + shard_row;
    }
    let hash = fmix(fmix(params.stream ^ counter_row) ^ (col * 0x9e3779b9u + 0x7f4a7c15u));
    var kept = 0.0;
    if (hash >= params.threshold) {
        kept = x[index] * params.scale;
    }
    out[index] = kept;
}
