// Column sums over row chunks: out[b, c, j] = sum of x[b, r, j] over the rows r of chunk c
// (rows c·CHUNK .. min((c + 1)·CHUNK, rows)), summed in row order. Applied until one chunk is
// left, it reduces [batch, rows, width] to [batch, width] deterministically, without atomics
// (the bias-table gradient from per-row partial sums).
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 x       f32 [batch, rows, width]
//   1 out     f32 [batch, ceil(rows / CHUNK), width]  (written)
//   2 params  Params
// Dispatch: workgroups (x, y, 1) with x · y · 64 ≥ batch · ceil(rows / CHUNK) · width, x ≤ 65535;
// one invocation per output element gid.x + gid.y · 64 · x (width fastest).
// CHUNK is specialised by the host before compilation.

struct Params {
    batch: u32,
    rows: u32,
    width: u32,
    chunks: u32,
}

const CHUNK: u32 = 256u;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let index = gid.x + gid.y * groups.x * 64u;
    let width = params.width;
    let chunks = params.chunks;
    if (index >= params.batch * chunks * width) {
        return;
    }
    let j = index % width;
    let c = (index / width) % chunks;
    let b = index / (width * chunks);
    let first = c * CHUNK;
    let last = min(first + CHUNK, params.rows);
    var sum = 0.0;
    for (var r = first; r < last; r++) {
        sum += x[(b * params.rows + r) * width + j];
    }
    out[index] = sum;
}
