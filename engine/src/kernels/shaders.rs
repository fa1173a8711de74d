//! The WGSL sources of `shaders/`, and their specialisation to a head dimension and bucket
//! count before compilation.

/// One WGSL shader of `shaders/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shader {
    /// `attention_forward.wgsl`.
    AttentionForward,
    /// `attention_backward_query.wgsl`.
    AttentionBackwardQuery,
    /// `attention_backward_key.wgsl`.
    AttentionBackwardKey,
}

impl Shader {
    /// Every shader, for validation.
    pub const ALL: [Shader; 3] = [
        Shader::AttentionForward,
        Shader::AttentionBackwardQuery,
        Shader::AttentionBackwardKey,
    ];

    /// The file name under `shaders/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Shader::AttentionForward => "attention_forward.wgsl",
            Shader::AttentionBackwardQuery => "attention_backward_query.wgsl",
            Shader::AttentionBackwardKey => "attention_backward_key.wgsl",
        }
    }

    /// The WGSL source as written (valid WGSL on its own, with default constants).
    pub fn source(self) -> &'static str {
        match self {
            Shader::AttentionForward => include_str!("../../../shaders/attention_forward.wgsl"),
            Shader::AttentionBackwardQuery => include_str!("../../../shaders/attention_backward_query.wgsl"),
            Shader::AttentionBackwardKey => include_str!("../../../shaders/attention_backward_key.wgsl"),
        }
    }

    /// Number of storage bindings the shader declares (the Rust side binds exactly these).
    pub fn binding_count(self) -> usize {
        match self {
            Shader::AttentionForward => 8,
            Shader::AttentionBackwardQuery | Shader::AttentionBackwardKey => 11,
        }
    }

    /// The source with its `const NAME: u32 = ...;` lines replaced by `values`.
    ///
    /// Panics if a named constant is not declared: the shaders and this code ship together.
    pub fn specialised(self, values: &[(&str, u32)]) -> String {
        let mut source = self.source().to_string();
        for (name, value) in values {
            let prefix = format!("const {name}: u32 = ");
            let start = source
                .find(&prefix)
                .unwrap_or_else(|| panic!("{} declares no constant {name}", self.file_name()));
            let end = start + source[start..].find(';').expect("a const declaration ends with ';'");
            source.replace_range(start..=end, &format!("{prefix}{value}u;"));
        }
        source
    }
}

/// The uniform parameters every attention shader reads, mirrored by `struct Params` in WGSL.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AttentionParams {
    /// Attention heads.
    pub heads: u32,
    /// Sequence length S.
    pub seq: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Distance buckets (table columns).
    pub buckets: u32,
    /// Score scale, 1/√head_dim.
    pub scale: f32,
    /// Padding to 32 bytes.
    pub _pad: [u32; 3],
}
