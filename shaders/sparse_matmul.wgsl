// Sparse matrix × dense matrix with X in CSR: out = X · W (the sparse-feature projection, and an
// embedding gather when X is one-hot), or, with TRANSPOSED = 1, out = Xᵀ · W read through X's
// column index (the weight gradient of that projection, and the scatter-add backward of the
// gather), without atomics.
//
// Bindings (group 0), all storage read_write (cubecl may alias buffers):
//   0 offsets   u32 [out_rows + 1]   entries of output row i are offsets[i] .. offsets[i + 1]:
//                                    X's row offsets, or (TRANSPOSED) its column offsets
//   1 entries   u32 [nnz]            TRANSPOSED: entry numbers grouped by column, ascending within
//                                    a column (built once on the host); otherwise not read
//   2 partner   u32 [nnz]            per entry, the row of W it multiplies: its column of X, or
//                                    (TRANSPOSED) its row of X
//   3 values    f32 [nnz]            value of each entry
//   4 w         f32 [inner, width]   dense right-hand side, row-major
//   5 out       f32 [out_rows, width]  written: every element, zero for a row without entries
//   6 params    Params               out_rows, width
// Dispatch: workgroups (x, y, 1) with x · y ≥ ceil(out_rows · width / 64) and x ≤ 65535; one
// invocation per (output row, output column), numbered gid.x + gid.y · (64 · x), columns fastest
// so that a workgroup reads consecutive elements of each row of W.
// Deterministic: each output element is summed by one invocation, in entry order.
// TRANSPOSED is specialised by the host before compilation.

struct Params {
    out_rows: u32,
    width: u32,
    _pad0: u32,
    _pad1: u32,
}

const TRANSPOSED: u32 = 0u;

@group(0) @binding(0) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(1) var<storage, read_write> entries: array<u32>;
@group(0) @binding(2) var<storage, read_write> partner: array<u32>;
@group(0) @binding(3) var<storage, read_write> values: array<f32>;
@group(0) @binding(4) var<storage, read_write> w: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let index = gid.x + gid.y * groups.x * 64u;
    let width = params.width;
    if (index >= params.out_rows * width) {
        return;
    }
    let row = index / width;
    let col = index % width;
    var sum = 0.0;
    for (var t = offsets[row]; t < offsets[row + 1u]; t++) {
        var e = t;
        if (TRANSPOSED == 1u) {
            e = entries[t];
        }
        sum += values[e] * w[partner[e] * width + col];
    }
    out[index] = sum;
}
