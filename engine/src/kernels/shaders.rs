//! The WGSL sources of `shaders/`, their specialisation (attention: head dimension and bucket
//! count; sparse product: transposed or not) before compilation, and the `Params` structs they
//! read.

/// The team reductions through workgroup memory only, as put before the shaders with teams.
const TEAM_WORKGROUP: &str = include_str!("../../../shaders/include/team_workgroup.wgsl");
/// The team reductions by subgroup shuffles, with the same functions.
const TEAM_SUBGROUPS: &str = include_str!("../../../shaders/include/team_subgroups.wgsl");

/// One WGSL shader of `shaders/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shader {
    /// `attention_forward.wgsl`.
    AttentionForward,
    /// `attention_forward_tiled.wgsl`: the forward with key tiles in workgroup memory.
    AttentionForwardTiled,
    /// `attention_backward_query.wgsl`.
    AttentionBackwardQuery,
    /// `attention_backward_key.wgsl`.
    AttentionBackwardKey,
    /// `attention_backward_query_tiled.wgsl`: the query backward with key tiles in workgroup
    /// memory.
    AttentionBackwardQueryTiled,
    /// `attention_backward_key_tiled.wgsl`: the key backward with query tiles in workgroup
    /// memory.
    AttentionBackwardKeyTiled,
    /// `sparse_matmul.wgsl`.
    SparseMatmul,
    /// `hops_forward.wgsl`.
    HopsForward,
    /// `hops_backward_query.wgsl`.
    HopsBackwardQuery,
    /// `hops_backward_key.wgsl`.
    HopsBackwardKey,
    /// `column_sums.wgsl`.
    ColumnSums,
    /// `dropout.wgsl`.
    Dropout,
}

impl Shader {
    /// Every shader, for validation.
    pub const ALL: [Shader; 12] = [
        Shader::AttentionForward,
        Shader::AttentionForwardTiled,
        Shader::AttentionBackwardQuery,
        Shader::AttentionBackwardKey,
        Shader::AttentionBackwardQueryTiled,
        Shader::AttentionBackwardKeyTiled,
        Shader::SparseMatmul,
        Shader::HopsForward,
        Shader::HopsBackwardQuery,
        Shader::HopsBackwardKey,
        Shader::ColumnSums,
        Shader::Dropout,
    ];

    /// The shaders a model of `config` may run with the fused kernels: the dense attention
    /// kernels (full scope, and the global tokens of the hops scope), the hops kernels under the
    /// hops scope, the sparse product, dropout and the column sums. None with the reference
    /// attention, whose model runs burn's own kernels.
    pub fn run_by(config: &crate::model::ModelConfig) -> Vec<Shader> {
        if config.attention != crate::model::AttentionKernel::Fused {
            return Vec::new();
        }
        let hops = !matches!(config.scope, crate::model::AttentionScope::Full);
        Shader::ALL
            .into_iter()
            .filter(|shader| {
                let is_hops = matches!(
                    shader,
                    Shader::HopsForward | Shader::HopsBackwardQuery | Shader::HopsBackwardKey
                );
                hops || !is_hops
            })
            .collect()
    }

    /// Storage buffers the shader binds (its parameters included).
    pub fn storage_buffers(self) -> u32 {
        self.source().matches("var<storage").count() as u32
    }

    /// The file name under `shaders/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Shader::AttentionForward => "attention_forward.wgsl",
            Shader::AttentionForwardTiled => "attention_forward_tiled.wgsl",
            Shader::AttentionBackwardQuery => "attention_backward_query.wgsl",
            Shader::AttentionBackwardKey => "attention_backward_key.wgsl",
            Shader::AttentionBackwardQueryTiled => "attention_backward_query_tiled.wgsl",
            Shader::AttentionBackwardKeyTiled => "attention_backward_key_tiled.wgsl",
            Shader::SparseMatmul => "sparse_matmul.wgsl",
            Shader::HopsForward => "hops_forward.wgsl",
            Shader::HopsBackwardQuery => "hops_backward_query.wgsl",
            Shader::HopsBackwardKey => "hops_backward_key.wgsl",
            Shader::ColumnSums => "column_sums.wgsl",
            Shader::Dropout => "dropout.wgsl",
        }
    }

    /// The WGSL source, valid with its default constants: the file under `shaders/` after the
    /// shared pieces of `shaders/include/` it uses (the dense attention parameters, the bias
    /// lookup, the key tiles of the tiled row kernels, the team reductions through workgroup
    /// memory), which WGSL cannot include itself.
    pub fn source(self) -> &'static str {
        macro_rules! shader {
            ($($file:literal),+) => {
                concat!($(include_str!(concat!("../../../shaders/", $file))),+)
            };
        }
        match self {
            Shader::AttentionForward => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "attention_forward.wgsl"
            ),
            Shader::AttentionForwardTiled => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "include/row_tiles.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "attention_forward_tiled.wgsl"
            ),
            Shader::AttentionBackwardQuery => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "attention_backward_query.wgsl"
            ),
            Shader::AttentionBackwardKey => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "attention_backward_key.wgsl"
            ),
            Shader::AttentionBackwardQueryTiled => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "include/row_tiles.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "attention_backward_query_tiled.wgsl"
            ),
            Shader::AttentionBackwardKeyTiled => shader!(
                "include/attention_params.wgsl",
                "include/bias.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "attention_backward_key_tiled.wgsl"
            ),
            Shader::SparseMatmul => shader!("sparse_matmul.wgsl"),
            Shader::HopsForward => shader!(
                "include/bias.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "hops_forward.wgsl"
            ),
            Shader::HopsBackwardQuery => shader!(
                "include/bias.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "hops_backward_query.wgsl"
            ),
            Shader::HopsBackwardKey => shader!(
                "include/bias.wgsl",
                "include/team.wgsl",
                "include/team_workgroup.wgsl",
                "hops_backward_key.wgsl"
            ),
            Shader::ColumnSums => shader!("column_sums.wgsl"),
            Shader::Dropout => shader!("dropout.wgsl"),
        }
    }

    /// Number of storage bindings the shader declares (the Rust side binds exactly these).
    pub fn binding_count(self) -> usize {
        match self {
            Shader::AttentionForward | Shader::AttentionForwardTiled => 8,
            Shader::AttentionBackwardQuery
            | Shader::AttentionBackwardKey
            | Shader::AttentionBackwardQueryTiled
            | Shader::AttentionBackwardKeyTiled => 11,
            Shader::SparseMatmul => 7,
            Shader::HopsForward => 11,
            Shader::HopsBackwardQuery | Shader::HopsBackwardKey => 14,
            Shader::ColumnSums | Shader::Dropout => 3,
        }
    }

    /// Bytes of the `Params` struct the shader reads: the size of the Rust struct the host
    /// binds (checked against naga's layout of the WGSL struct in the shader tests).
    pub fn params_bytes(self) -> usize {
        match self {
            Shader::AttentionForward
            | Shader::AttentionForwardTiled
            | Shader::AttentionBackwardQuery
            | Shader::AttentionBackwardKey
            | Shader::AttentionBackwardQueryTiled
            | Shader::AttentionBackwardKeyTiled => size_of::<AttentionParams>(),
            Shader::SparseMatmul => size_of::<SparseParams>(),
            Shader::HopsForward | Shader::HopsBackwardQuery | Shader::HopsBackwardKey => {
                size_of::<HopsParams>()
            }
            Shader::ColumnSums => size_of::<ColumnSumParams>(),
            Shader::Dropout => size_of::<DropoutParams>(),
        }
    }

    /// The register-blocked shader a tiled one computes the same results as (itself for the
    /// others).
    pub fn untiled(self) -> Shader {
        match self {
            Shader::AttentionForwardTiled => Shader::AttentionForward,
            Shader::AttentionBackwardQueryTiled => Shader::AttentionBackwardQuery,
            Shader::AttentionBackwardKeyTiled => Shader::AttentionBackwardKey,
            other => other,
        }
    }

    /// The tiled variant of a register-blocked attention shader, if it has one.
    pub fn tiled(self) -> Option<Shader> {
        match self {
            Shader::AttentionForward => Some(Shader::AttentionForwardTiled),
            Shader::AttentionBackwardQuery => Some(Shader::AttentionBackwardQueryTiled),
            Shader::AttentionBackwardKey => Some(Shader::AttentionBackwardKeyTiled),
            _ => None,
        }
    }

    /// Whether the shader reduces over teams of invocations (`shaders/include/team.wgsl`), and so
    /// has a variant that does it by subgroup shuffles ([`Shader::with_subgroups`]).
    pub fn has_teams(self) -> bool {
        self.source().contains(TEAM_WORKGROUP)
    }

    /// `source` (this shader's, specialised or not) with its team reductions by subgroup
    /// shuffles where the workgroup's subgroups allow them: `include/team_subgroups.wgsl` for
    /// `include/team_workgroup.wgsl`. For adapters with `Features::SUBGROUP` only. (WGSL
    /// spells the extension `enable subgroups;`, but naga 29 refuses that directive as not yet
    /// implemented and takes the subgroup built-ins without it, under its SUBGROUP capability.)
    ///
    /// Panics on a shader without teams: the shaders and this code ship together.
    pub fn with_subgroups(self, source: &str) -> String {
        assert!(
            source.contains(TEAM_WORKGROUP),
            "{} has no team reductions",
            self.file_name()
        );
        source.replacen(TEAM_WORKGROUP, TEAM_SUBGROUPS, 1)
    }

    /// The value of the shader's `const NAME: u32 = ...u;` as written, if it declares one.
    pub fn constant(self, name: &str) -> Option<u32> {
        let prefix = format!("const {name}: u32 = ");
        let source = self.source();
        let start = source.find(&prefix)? + prefix.len();
        let text = &source[start..start + source[start..].find(';')?];
        text.trim_end_matches('u').parse().ok()
    }

    /// What runs: the source [`Shader::specialised`] to `values`, its team reductions by
    /// subgroup shuffles if `subgroups` ([`Shader::with_subgroups`]).
    pub fn kernel_source(self, values: &[(&str, u32)], subgroups: bool) -> String {
        let source = self.specialised(values);
        if subgroups {
            self.with_subgroups(&source)
        } else {
            source
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
            let end = start
                + source[start..]
                    .find(';')
                    .expect("a const declaration ends with ';'");
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
    /// Query rows in `q` (a block of the sequence under context parallelism, else S).
    pub rows: u32,
    /// Keys: the sequence length S.
    pub keys: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Distance buckets (table columns).
    pub buckets: u32,
    /// Score scale, 1/√head_dim.
    pub scale: f32,
    /// First query row of the launch's block of pair buckets.
    pub row_start: u32,
    /// Query rows in the block.
    pub row_count: u32,
    /// 1: add to the outputs (the key kernel after the first block); 0: write them.
    pub accumulate: u32,
    /// Padding to 48 bytes.
    pub _pad: [u32; 3],
}

/// The parameters of the sparse shaders, mirrored by their `struct Params` in WGSL.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SparseParams {
    /// Rows of the output.
    pub out_rows: u32,
    /// Columns of the output (and of the dense operand).
    pub width: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
}

/// The parameters of the hops-scope attention shaders, mirrored by their `struct Params`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HopsParams {
    /// Attention heads.
    pub heads: u32,
    /// Query rows.
    pub rows: u32,
    /// Keys.
    pub keys: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Bias-table columns.
    pub buckets: u32,
    /// Score scale, 1/√head_dim.
    pub scale: f32,
    /// Pairs of the pattern.
    pub pairs: u32,
    /// Padding to 32 bytes.
    pub _pad: u32,
}

/// The parameters of `column_sums.wgsl`, mirrored by its `struct Params`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ColumnSumParams {
    /// Leading (batch) dimension.
    pub batch: u32,
    /// Rows summed.
    pub rows: u32,
    /// Columns.
    pub width: u32,
    /// Chunks of rows in the output.
    pub chunks: u32,
}

/// What naga made of one shader: the translations to every target it supports.
#[derive(Debug, Clone)]
pub struct Translations {
    /// SPIR-V words (Vulkan).
    pub spirv: Vec<u32>,
    /// Metal Shading Language (Apple).
    pub msl: String,
    /// HLSL (DX12).
    pub hlsl: String,
    /// GLSL 4.50 compute (OpenGL).
    pub glsl: String,
    /// Storage bindings declared in group 0, sorted by binding number.
    pub bindings: Vec<u32>,
    /// Bytes of the WGSL `struct Params`, if the shader declares one.
    pub params_bytes: Option<u32>,
    /// The validated module naga parsed (entry points, variables, types).
    pub module: naga::Module,
}

/// A shader that naga rejected, with naga's message.
#[derive(Debug, thiserror::Error)]
#[error("{shader}: {stage}: {message}")]
pub struct ShaderError {
    /// The file name under `shaders/`.
    pub shader: &'static str,
    /// parse, validate, or the target that failed.
    pub stage: &'static str,
    /// naga's message.
    pub message: String,
}

impl Shader {
    /// Parses and validates `source` with naga and translates it to SPIR-V, MSL, HLSL and GLSL,
    /// all on the CPU.
    pub fn translate(self, source: &str) -> Result<Translations, ShaderError> {
        use naga::back::{glsl, hlsl, msl, spv};
        let fail = |stage: &'static str, message: String| ShaderError {
            shader: self.file_name(),
            stage,
            message,
        };
        let module = naga::front::wgsl::parse_str(source)
            .map_err(|e| fail("parse", e.emit_to_string(source)))?;
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .map_err(|e| fail("validate", e.emit_to_string(source)))?;
        let mut bindings: Vec<u32> = module
            .global_variables
            .iter()
            .filter_map(|(_, var)| var.binding.as_ref())
            .filter(|b| b.group == 0)
            .map(|b| b.binding)
            .collect();
        bindings.sort_unstable();
        let params_bytes = module.types.iter().find_map(|(_, ty)| match &ty.inner {
            naga::TypeInner::Struct { span, .. } if ty.name.as_deref() == Some("Params") => {
                Some(*span)
            }
            _ => None,
        });
        let spirv = spv::write_vec(&module, &info, &spv::Options::default(), None)
            .map_err(|e| fail("spir-v", e.to_string()))?;
        let (msl, _) = msl::write_string(
            &module,
            &info,
            &msl::Options::default(),
            &msl::PipelineOptions::default(),
        )
        .map_err(|e| fail("msl", e.to_string()))?;
        let mut hlsl = String::new();
        hlsl::Writer::new(
            &mut hlsl,
            &hlsl::Options::default(),
            &hlsl::PipelineOptions::default(),
        )
        .write(&module, &info, None)
        .map_err(|e| fail("hlsl", e.to_string()))?;
        let mut glsl = String::new();
        let options = glsl::Options {
            version: glsl::Version::Desktop(450),
            ..glsl::Options::default()
        };
        let pipeline = glsl::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".into(),
            multiview: None,
        };
        glsl::Writer::new(
            &mut glsl,
            &module,
            &info,
            &options,
            &pipeline,
            naga::proc::BoundsCheckPolicies::default(),
        )
        .and_then(|mut w| w.write().map(|_| ()))
        .map_err(|e| fail("glsl", e.to_string()))?;
        Ok(Translations {
            spirv,
            msl,
            hlsl,
            glsl,
            bindings,
            params_bytes,
            module,
        })
    }
}

/// The parameters of `dropout.wgsl`, mirrored by its `struct Params`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DropoutParams {
    /// Rows of the tensor.
    pub rows: u32,
    /// Columns.
    pub width: u32,
    /// The tensor's first row among the shard's rows.
    pub row_shift: u32,
    /// Node rows of the shard (later rows are global tokens).
    pub nodes: u32,
    /// Number in the sequence of the shard's first node row.
    pub first_node: u32,
    /// Number of the first global token.
    pub first_token: u32,
    /// The (seed, step, sequence, site) stream.
    pub stream: u32,
    /// Hashes below this are dropped.
    pub threshold: u32,
    /// Multiplier of the kept elements.
    pub scale: f32,
    /// Padding to 48 bytes.
    pub _pad: [u32; 3],
}
