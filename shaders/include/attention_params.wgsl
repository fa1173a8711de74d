// The parameters of the dense attention shaders (the last binding of each), put before each of
// them by the host (`Shader::source`); the Rust side is `AttentionParams`.

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

