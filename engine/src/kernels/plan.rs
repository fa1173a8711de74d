//! What one launch of a shader of `shaders/` binds and dispatches, computed from shapes alone:
//! its specialised constants, its `Params`, its workgroups, and the least bytes each binding
//! must hold for every index the shader can form from those parameters.
//!
//! The wgpu backend checks its buffers against [`LaunchPlan::binding_bytes`] before every launch;
//! the bounds-check test (`tests/bounds_check.rs`) runs the same plans on buffers of exactly
//! those sizes with every storage access of the shaders rewritten to check `arrayLength` and
//! record a violation, so any index past them fails it.

use std::ops::Range;

use super::{
    dropout::DropoutMask,
    pairs::assert_in_table,
    shaders::{AttentionParams, ColumnSumParams, DropoutParams, HopsParams, Shader, SparseParams},
};

/// Invocations per workgroup, as in every shader's `@workgroup_size`.
pub const WORKGROUP: u32 = 64;

/// Most workgroups along one dispatch dimension (WebGPU's minimum limit).
pub const MAX_GROUPS_PER_DIMENSION: u32 = 65_535;

/// Largest head dimension of the fused attention kernels: each invocation keeps ROWS rows of
/// HEAD_DIM floats in several function-scope arrays (and, in the query kernel, ROWS × BUCKETS
/// bias-gradient sums), and WGSL bounds a function's variables to 8,192 bytes. At 68 and 256
/// buckets the query kernel, the largest, holds 8,012 bytes, at 72 it would need 8,236 (measured
/// with naga in `tests/shaders.rs`).
pub const MAX_FUSED_HEAD_DIM: usize = 68;

/// `value` as the `u32` a shader reads; panics naming `what` and the limit when it does not fit
/// (the shaders index in 32 bits; callers refuse such shapes earlier, as bad input).
pub fn shader_u32(what: &str, value: u64) -> u32 {
    u32::try_from(value).unwrap_or_else(|_| {
        panic!(
            "{what} = {value} exceeds the shaders' 32-bit limit of {}",
            u32::MAX
        )
    })
}

/// Workgroups for `invocations` (at least one) per layer, numbered
/// `gid.x + gid.y · (WORKGROUP · groups.x)`, folded into x and y as near a square as they go
/// (so that no dimension exceeds [`MAX_GROUPS_PER_DIMENSION`] below 2^32 workgroups, and every
/// launch of more than a few workgroups exercises the fold); `layers` (e.g. heads) in z.
pub fn folded_groups(invocations: usize, layers: usize) -> [u32; 3] {
    assert!(invocations > 0 && layers > 0, "an empty launch");
    let groups = shader_u32(
        "workgroups of one launch",
        invocations.div_ceil(WORKGROUP as usize) as u64,
    );
    let x = (groups as f64).sqrt().ceil() as u32;
    let x = x.clamp(1, MAX_GROUPS_PER_DIMENSION);
    let y = groups.div_ceil(x);
    let z = shader_u32("workgroups along z", layers as u64);
    assert!(
        y <= MAX_GROUPS_PER_DIMENSION && z <= MAX_GROUPS_PER_DIMENSION,
        "{groups} workgroups × {z} layers exceed {MAX_GROUPS_PER_DIMENSION} per dimension"
    );
    [x, y, z]
}

/// One launch: the shader, its constants, its `Params` bytes, its workgroups, and the least
/// bytes of each binding before the `Params` one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The shader.
    pub shader: Shader,
    /// Values of its specialised `const NAME: u32` lines.
    pub constants: Vec<(&'static str, u32)>,
    /// The bytes of its `struct Params` (the last binding).
    pub params: Vec<u8>,
    /// Workgroups in x, y, z.
    pub groups: [u32; 3],
    /// Bindings `0..n - 1`: the least bytes each must hold so that every index the shader forms
    /// from these parameters lies inside it.
    pub binding_bytes: Vec<u64>,
    /// Whether its team reductions go by subgroup shuffles ([`Shader::with_subgroups`]).
    pub subgroups: bool,
}

impl LaunchPlan {
    /// The WGSL it runs ([`Shader::kernel_source`]).
    pub fn source(&self) -> String {
        self.shader.kernel_source(&self.constants, self.subgroups)
    }
}

/// Bytes of `count` elements of `size` bytes, checked so that the shader's 32-bit element
/// indices reach all of them.
fn elements(what: &str, count: u64, size: u64) -> u64 {
    shader_u32(what, count);
    count * size
}

/// Bytes of the `[heads, buckets]` bias table `shader` can index: every column of the last
/// head's row where it loads a small table whole into registers, else up to the largest
/// bucket of any pair.
fn table_bytes(shader: Shader, heads: u64, buckets: u64, max_bucket: u8) -> u64 {
    let small_table = shader
        .constant("SMALL_TABLE")
        .is_some_and(|small| buckets <= u64::from(small));
    let columns = if small_table {
        buckets
    } else {
        u64::from(max_bucket) + 1
    };
    elements("bias-table entries", (heads - 1) * buckets + columns, 4)
}

/// The shape of one biased-attention call on one device: `rows` query rows against `keys`
/// keys, `buckets` table columns, and the largest bucket in the pair buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Attention heads.
    pub heads: usize,
    /// Query rows.
    pub rows: usize,
    /// Keys.
    pub keys: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Columns of the bias table.
    pub buckets: usize,
    /// The largest bucket of any pair.
    pub max_bucket: u8,
}

/// The shape of the tiled kernels (`attention_*_tiled.wgsl`): `team` invocations share each
/// query row (key column), each team holds `rows` of them, the other side is staged in
/// workgroup memory `tile` at a time, and the team's reductions go by subgroup shuffles or
/// through workgroup memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Tiling {
    /// Invocations per query row (divides [`WORKGROUP`]).
    pub team: u32,
    /// Query rows per team.
    pub rows: u32,
    /// Keys per tile (a multiple of 4 and of `team`).
    pub tile: u32,
    /// Whether the team reductions go by subgroup shuffles (adapters with `Features::SUBGROUP`;
    /// the kernels fall back to workgroup memory where a workgroup's subgroups do not hold its
    /// teams).
    pub subgroups: bool,
}

impl Tiling {
    /// Whether the kernels can take this tiling: a positive team dividing [`WORKGROUP`], at
    /// least one row, and a positive tile that is a multiple of 4 and of the team.
    pub fn is_valid(&self) -> bool {
        self.team > 0
            && WORKGROUP.is_multiple_of(self.team)
            && self.rows > 0
            && self.tile > 0
            && self.tile.is_multiple_of(4)
            && self.tile.is_multiple_of(self.team)
    }

    /// Query rows (key columns in the key kernel) per workgroup.
    pub fn group_rows(&self) -> u32 {
        WORKGROUP / self.team * self.rows
    }

    /// vec4s of the shared tile of two operands.
    fn shared_vecs(&self, head_dim: usize) -> u32 {
        2 * self.tile * head_dim as u32 / 4
    }

    /// Workgroup memory the largest of the three tiled kernels declares at `head_dim`, bytes:
    /// the shared vectors, the pair-bucket words (per row of the workgroup in the row kernels,
    /// per row of the tile in the key kernel), the key kernel's per-row scalars, the team
    /// reductions' vec4 per invocation and, 16 bytes each given a vector's alignment, the
    /// uniform loop bound and the subgroup check's two words.
    pub fn workgroup_bytes(&self, head_dim: usize) -> u64 {
        let vecs = u64::from(self.shared_vecs(head_dim)) * 16;
        let row_kernels = u64::from(self.group_rows() * (self.tile / 4 + 1)) * 4;
        let key_kernel =
            u64::from(self.tile * (self.group_rows() / 4 + 1)) * 4 + u64::from(self.tile) * 8;
        let team = u64::from(WORKGROUP) * 16;
        vecs + row_kernels.max(key_kernel) + team + 3 * 16
    }

    /// The constants of tiled `shader` at `head_dim` (besides `HEAD_DIM` and `BUCKETS`).
    pub fn constants(&self, shader: Shader, head_dim: usize) -> Vec<(&'static str, u32)> {
        assert!(
            self.is_valid(),
            "{self:?}: team must divide {WORKGROUP}, tile must be a multiple of 4 and of team"
        );
        let group = if shader == Shader::AttentionBackwardKeyTiled {
            "GROUP_COLS"
        } else {
            "GROUP_ROWS"
        };
        vec![
            ("TEAM", self.team),
            ("ROWS", self.rows),
            ("TILE", self.tile),
            (group, self.group_rows()),
            ("SHARED_VECS", self.shared_vecs(head_dim)),
        ]
    }

    /// The tilings worth timing at `head_dim` whose workgroup memory fits `workgroup_limit`
    /// bytes: teams of 1, 4 and 8 invocations, one or two rows per team, each with the larger
    /// tile (64 or 32 keys) that fits; teams of several invocations once through workgroup
    /// memory and, where the adapter has `subgroups`, once by subgroup shuffles.
    pub fn candidates(head_dim: usize, workgroup_limit: u64, subgroups: bool) -> Vec<Tiling> {
        let mut all = Vec::new();
        for team in [1, 4, 8] {
            for rows in [1, 2] {
                let fits = [64, 32]
                    .into_iter()
                    .map(|tile| Tiling {
                        team,
                        rows,
                        tile,
                        subgroups: false,
                    })
                    .find(|t| t.workgroup_bytes(head_dim) <= workgroup_limit);
                all.extend(fits);
                if let Some(tiling) = fits.filter(|_| subgroups && team > 1) {
                    all.push(Tiling {
                        subgroups: true,
                        ..tiling
                    });
                }
            }
        }
        all
    }
}

impl AttentionShape {
    /// `[heads, rows, keys, head_dim, buckets]`: what the backward's gradient buffers are
    /// shaped by.
    pub fn gradient_dims(&self) -> [usize; 5] {
        [
            self.heads,
            self.rows,
            self.keys,
            self.head_dim,
            self.buckets,
        ]
    }

    /// Panics, with the numbers, on a shape the fused kernels cannot run: a head dimension
    /// that is not a multiple of 4 or above [`MAX_FUSED_HEAD_DIM`], more than 256 buckets, or a
    /// pair bucket outside the table (it would read another head's bias, or write past an
    /// array). The model refuses such configurations as bad input before.
    pub fn check(&self) {
        let Self {
            head_dim,
            buckets,
            max_bucket,
            ..
        } = *self;
        assert!(
            head_dim % 4 == 0 && head_dim <= MAX_FUSED_HEAD_DIM,
            "the fused kernels read heads as vec4 into arrays of at most {MAX_FUSED_HEAD_DIM}: head_dim {head_dim} must be a multiple of 4 up to {MAX_FUSED_HEAD_DIM}"
        );
        assert!(
            (1..=256).contains(&buckets),
            "{buckets} buckets: between 1 and 256 fit a byte"
        );
        assert_in_table(max_bucket, buckets);
    }

    /// The launch of `shader` over query rows `rows` (a block of the pair buckets);
    /// `accumulate` adds to the outputs (the key kernel after the first block).
    pub fn launch(&self, shader: Shader, rows: Range<usize>, accumulate: bool) -> LaunchPlan {
        let per_invocation = shader
            .constant("ROWS")
            .expect("attention shaders declare ROWS");
        let by_columns = shader == Shader::AttentionBackwardKey;
        let items = if by_columns { self.keys } else { rows.len() };
        let invocations = items.div_ceil(per_invocation as usize);
        let constants = self.constants(shader);
        self.plan(shader, rows, accumulate, constants, invocations)
    }

    /// The launch of the tiled variant of `shader` (an attention shader) over query rows `rows`,
    /// shaped by `tiling`; `accumulate` as in [`AttentionShape::launch`].
    pub fn launch_tiled(
        &self,
        shader: Shader,
        tiling: Tiling,
        rows: Range<usize>,
        accumulate: bool,
    ) -> LaunchPlan {
        let tiled = shader
            .tiled()
            .unwrap_or_else(|| panic!("{} has no tiled variant", shader.file_name()));
        let by_columns = shader == Shader::AttentionBackwardKey;
        let items = if by_columns { self.keys } else { rows.len() };
        let invocations = items.div_ceil(tiling.group_rows() as usize) * WORKGROUP as usize;
        let mut constants = self.constants(tiled);
        constants.extend(tiling.constants(tiled, self.head_dim));
        let mut plan = self.plan(tiled, rows, accumulate, constants, invocations);
        plan.subgroups = tiling.subgroups;
        plan
    }

    /// The plan of `shader` with `constants`, over `invocations` invocations per head.
    fn plan(
        &self,
        shader: Shader,
        rows: Range<usize>,
        accumulate: bool,
        constants: Vec<(&'static str, u32)>,
        invocations: usize,
    ) -> LaunchPlan {
        self.check();
        let Self {
            heads,
            keys,
            head_dim,
            buckets,
            ..
        } = *self;
        assert!(
            !rows.is_empty() && rows.end <= self.rows && keys > 0 && heads > 0,
            "a launch over rows {rows:?} of {} against {keys} keys",
            self.rows
        );
        let u = |what: &str, value: usize| shader_u32(what, value as u64);
        let params = AttentionParams {
            heads: u("heads", heads),
            rows: u("query rows", self.rows),
            keys: u("keys", keys),
            head_dim: u("head_dim", head_dim),
            buckets: u("buckets", buckets),
            scale: (head_dim as f32).sqrt().recip(),
            row_start: u("first row of a block", rows.start),
            row_count: u("rows of a block", rows.len()),
            accumulate: u32::from(accumulate),
            _pad: [0; 3],
        };
        LaunchPlan {
            shader,
            constants,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: folded_groups(invocations, heads),
            binding_bytes: self.binding_bytes(shader, &rows),
            subgroups: false,
        }
    }

    /// `HEAD_DIM`, and `BUCKETS` where the shader declares it.
    fn constants(&self, shader: Shader) -> Vec<(&'static str, u32)> {
        let mut constants = vec![("HEAD_DIM", self.head_dim as u32)];
        if shader.constant("BUCKETS").is_some() {
            constants.push(("BUCKETS", self.buckets as u32));
        }
        constants
    }

    /// The least bytes of each binding of `shader` over `rows`, from the index expressions of
    /// the WGSL (a head's block starts at `head · rows` or `head · keys`; rows run to
    /// `rows.end`; key columns are clamped to `keys - 1`; the pair of (row, column) is byte
    /// `(row - row_start) · keys + column` of the block).
    fn binding_bytes(&self, shader: Shader, rows: &Range<usize>) -> Vec<u64> {
        let [heads, all_rows, keys, vec, buckets] = [
            self.heads,
            self.rows,
            self.keys,
            self.head_dim / 4,
            self.buckets,
        ]
        .map(|x| x as u64);
        let end = rows.end as u64;
        let per_row = (heads - 1) * all_rows + end;
        let query = elements("vec4s of the query rows", per_row * vec, 16);
        let key = elements("vec4s of the keys", heads * keys * vec, 16);
        let table = table_bytes(shader, heads, buckets, self.max_bucket);
        let pair_bytes = rows.len() as u64 * keys;
        shader_u32("pair buckets of one block", pair_bytes);
        let pairs = pair_bytes.div_ceil(4) * 4;
        let row_scalars = elements("per-row scalars", per_row, 4);
        let inputs = [query, key, key, table, pairs];
        let outputs: &[u64] = match shader.untiled() {
            Shader::AttentionForward => &[query, row_scalars],
            Shader::AttentionBackwardQuery => &[
                query,
                row_scalars,
                row_scalars,
                query,
                elements("bias-gradient partial sums", per_row * buckets, 4),
            ],
            Shader::AttentionBackwardKey => &[query, row_scalars, row_scalars, key, key],
            _ => unreachable!("{} is not a dense attention shader", shader.file_name()),
        };
        inputs.iter().chain(outputs).copied().collect()
    }
}

/// The shape of one sparse × dense product: `out_rows × width` outputs from `nnz` entries
/// that pick rows of a `[inner, width]` dense operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseShape {
    /// Rows of the output.
    pub out_rows: usize,
    /// Columns of the output and of the dense operand.
    pub width: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Rows of the dense operand.
    pub inner: usize,
    /// Whether this is the transposed product.
    pub transposed: bool,
}

impl SparseShape {
    /// The launch of `sparse_matmul.wgsl`.
    pub fn launch(&self) -> LaunchPlan {
        let Self {
            out_rows,
            width,
            nnz,
            inner,
            transposed,
        } = *self;
        let outputs = elements("sparse product outputs", (out_rows * width) as u64, 4);
        let params = SparseParams {
            out_rows: shader_u32("sparse product rows", out_rows as u64),
            width: shader_u32("sparse product width", width as u64),
            _pad: [0; 2],
        };
        let entry = elements("sparse entries", nnz as u64, 4);
        LaunchPlan {
            shader: Shader::SparseMatmul,
            constants: vec![("TRANSPOSED", u32::from(transposed))],
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: folded_groups(out_rows * width, 1),
            binding_bytes: vec![
                elements("sparse offsets", out_rows as u64 + 1, 4),
                entry,
                entry,
                entry,
                elements("dense operand", (inner * width) as u64, 4),
                outputs,
            ],
            subgroups: false,
        }
    }
}

/// The shape of one hops-attention call on one device: `rows` query rows, each over its pairs
/// of `keys` keys, `buckets` table columns, and the largest bucket of any pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopsShape {
    /// Attention heads.
    pub heads: usize,
    /// Query rows.
    pub rows: usize,
    /// Keys.
    pub keys: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Columns of the bias table.
    pub buckets: usize,
    /// Pairs of the pattern.
    pub pairs: usize,
    /// The largest bucket of any pair.
    pub max_bucket: u8,
}

/// How the hops kernels share a query row (a key in the key kernel): `size` invocations, each
/// taking every `size`-th pair with its own online softmax or sums, the team reducing at the
/// end by subgroup shuffles or through workgroup memory. One invocation per row is
/// [`HopsTeam::SINGLE`], the shape for CPUs and the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HopsTeam {
    /// Invocations per row (a power of two up to [`WORKGROUP`]).
    pub size: u32,
    /// Whether the team reduces by subgroup shuffles (adapters with `Features::SUBGROUP`).
    pub subgroups: bool,
}

impl HopsTeam {
    /// One invocation per row.
    pub const SINGLE: HopsTeam = HopsTeam {
        size: 1,
        subgroups: false,
    };

    /// Whether the kernels can take this team: a power of two up to [`WORKGROUP`].
    pub fn is_valid(&self) -> bool {
        self.size.is_power_of_two() && self.size <= WORKGROUP
    }

    /// The teams worth timing: one invocation per row, and teams of 4 and 8 through workgroup
    /// memory and, where the adapter has `subgroups`, by shuffles.
    pub fn candidates(subgroups: bool) -> Vec<HopsTeam> {
        let mut all = vec![HopsTeam::SINGLE];
        for size in [4, 8] {
            all.push(HopsTeam {
                size,
                subgroups: false,
            });
            if subgroups {
                all.push(HopsTeam {
                    size,
                    subgroups: true,
                });
            }
        }
        all
    }
}

impl std::fmt::Display for HopsTeam {
    /// `team:SIZE`, followed by `:subgroups` where it shuffles.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "team:{}", self.size)?;
        if self.subgroups {
            write!(f, ":subgroups")?;
        }
        Ok(())
    }
}

impl HopsShape {
    /// The dense attention of the same operands: what the two scopes' checks, gradient
    /// buffers and shape classes have in common.
    pub(crate) fn operands(&self) -> AttentionShape {
        AttentionShape {
            heads: self.heads,
            rows: self.rows,
            keys: self.keys,
            head_dim: self.head_dim,
            buckets: self.buckets,
            max_bucket: self.max_bucket,
        }
    }

    /// `[heads, rows, keys, head_dim, buckets]`, as [`AttentionShape::gradient_dims`].
    pub fn gradient_dims(&self) -> [usize; 5] {
        self.operands().gradient_dims()
    }

    /// Panics, with the numbers, on a shape the kernels cannot run (as
    /// [`AttentionShape::check`], and an empty pattern).
    pub fn check(&self) {
        self.operands().check();
        assert!(
            self.heads > 0 && self.rows > 0 && self.keys > 0 && self.pairs > 0,
            "an empty hops launch: {self:?}"
        );
    }

    /// The launch of a hops shader with `team` invocations per row: the forward and the
    /// query-side backward over the rows, the key-side backward over the keys.
    pub fn launch(&self, shader: Shader, team: HopsTeam) -> LaunchPlan {
        self.check();
        assert!(
            team.is_valid(),
            "{team}: a team is a power of two up to {WORKGROUP}"
        );
        let u = |what: &str, value: usize| shader_u32(what, value as u64);
        let params = HopsParams {
            heads: u("heads", self.heads),
            rows: u("query rows", self.rows),
            keys: u("keys", self.keys),
            head_dim: u("head_dim", self.head_dim),
            buckets: u("buckets", self.buckets),
            scale: (self.head_dim as f32).sqrt().recip(),
            pairs: u("pairs", self.pairs),
            _pad: 0,
        };
        let items = match shader {
            Shader::HopsForward | Shader::HopsBackwardQuery => self.rows,
            Shader::HopsBackwardKey => self.keys,
            _ => unreachable!("{} is not a hops shader", shader.file_name()),
        };
        LaunchPlan {
            shader,
            constants: vec![
                ("HEAD_DIM", self.head_dim as u32),
                ("BUCKETS", self.buckets as u32),
                ("TEAM", team.size),
            ],
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: folded_groups(items * team.size as usize, self.heads),
            binding_bytes: self.binding_bytes(shader),
            subgroups: team.subgroups,
        }
    }

    /// The least bytes of each binding of `shader`, from the index expressions of the WGSL (a
    /// head's rows start at `head · rows`, its keys at `head · keys`; the pattern's arrays are
    /// indexed by pair, by row or key + 1, or by invocation slot (the orders); keys and rows read
    /// from them are below `keys` and `rows`, as [`HopsIndex`](super::HopsIndex) guarantees).
    fn binding_bytes(&self, shader: Shader) -> Vec<u64> {
        let [heads, rows, keys, vec, buckets, pairs] = [
            self.heads,
            self.rows,
            self.keys,
            self.head_dim / 4,
            self.buckets,
            self.pairs,
        ]
        .map(|x| x as u64);
        let query = elements("vec4s of the query rows", heads * rows * vec, 16);
        let key = elements("vec4s of the keys", heads * keys * vec, 16);
        let table = table_bytes(shader, heads, buckets, self.max_bucket);
        let per_row = elements("per-row scalars", heads * rows, 4);
        let pair_ids = elements("pair ids", pairs, 4);
        let pair_buckets = pairs.div_ceil(4) * 4;
        let row_order = elements("row order", rows, 4);
        let inputs = [query, key, key, table];
        let pattern_and_outputs: Vec<u64> = match shader {
            Shader::HopsForward => vec![
                elements("row offsets", rows + 1, 4),
                pair_ids,
                pair_buckets,
                query,
                per_row,
                row_order,
            ],
            Shader::HopsBackwardQuery => vec![
                elements("row offsets", rows + 1, 4),
                pair_ids,
                pair_buckets,
                query,
                per_row,
                per_row,
                query,
                elements("bias-gradient partial sums", heads * rows * buckets, 4),
                row_order,
            ],
            Shader::HopsBackwardKey => vec![
                elements("key offsets", keys + 1, 4),
                pair_ids,
                pair_buckets,
                query,
                per_row,
                per_row,
                key,
                key,
                elements("key order", keys, 4),
            ],
            _ => unreachable!("{} is not a hops shader", shader.file_name()),
        };
        inputs.into_iter().chain(pattern_and_outputs).collect()
    }
}

/// One launch of `dropout.wgsl`: a `[rows, width]` tensor through a mask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DropoutShape {
    /// Rows of the tensor.
    pub rows: usize,
    /// Columns.
    pub width: usize,
    /// The mask.
    pub mask: DropoutMask,
}

impl DropoutShape {
    /// The launch of `dropout.wgsl`.
    pub fn launch(&self) -> LaunchPlan {
        let Self { rows, width, mask } = *self;
        let bytes = elements("dropout elements", (rows * width) as u64, 4);
        let params = DropoutParams {
            rows: shader_u32("dropout rows", rows as u64),
            width: shader_u32("dropout width", width as u64),
            row_shift: mask.rows.shift,
            nodes: mask.rows.nodes,
            first_node: mask.rows.first_node,
            first_token: mask.rows.first_token,
            stream: mask.stream,
            threshold: mask.threshold,
            scale: mask.scale,
            _pad: [0; 3],
        };
        LaunchPlan {
            shader: Shader::Dropout,
            constants: Vec::new(),
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: folded_groups(rows * width, 1),
            binding_bytes: vec![bytes, bytes],
            subgroups: false,
        }
    }
}

/// One pass of `column_sums.wgsl`: `[batch, rows, width]` summed over chunks of `chunk` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSumShape {
    /// Leading dimension.
    pub batch: usize,
    /// Rows summed.
    pub rows: usize,
    /// Columns.
    pub width: usize,
    /// Rows per chunk (the shader's `CHUNK`).
    pub chunk: usize,
}

impl ColumnSumShape {
    /// Chunks of the output.
    pub fn chunks(&self) -> usize {
        self.rows.div_ceil(self.chunk)
    }

    /// The launch of the pass.
    pub fn launch(&self) -> LaunchPlan {
        let Self {
            batch,
            rows,
            width,
            chunk,
        } = *self;
        assert!(
            batch > 0 && rows > 0 && width > 0 && chunk > 0,
            "an empty column sum: {self:?}"
        );
        let chunks = self.chunks();
        let u = |what: &str, value: usize| shader_u32(what, value as u64);
        let params = ColumnSumParams {
            batch: u("column-sum batch", batch),
            rows: u("column-sum rows", rows),
            width: u("column-sum width", width),
            chunks: u("column-sum chunks", chunks),
        };
        LaunchPlan {
            shader: Shader::ColumnSums,
            constants: vec![("CHUNK", u("column-sum chunk", chunk))],
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: folded_groups(batch * chunks * width, 1),
            binding_bytes: vec![
                elements("column-sum inputs", (batch * rows * width) as u64, 4),
                elements("column-sum outputs", (batch * chunks * width) as u64, 4),
            ],
            subgroups: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers([x, y, z]: [u32; 3], invocations: usize, layers: usize) -> bool {
        x.max(y).max(z) <= MAX_GROUPS_PER_DIMENSION
            && (x as usize) * (y as usize) * WORKGROUP as usize >= invocations
            && z as usize == layers
    }

    #[test]
    fn tiled_launches_take_a_workgroup_per_block_of_rows_or_columns() {
        let shape = AttentionShape {
            heads: 3,
            rows: 100,
            keys: 300,
            head_dim: 16,
            buckets: 7,
            max_bucket: 6,
        };
        let tiling = Tiling {
            team: 4,
            rows: 2,
            tile: 64,
            subgroups: true,
        };
        assert_eq!(tiling.group_rows(), 32);
        let groups = |shader| shape.launch_tiled(shader, tiling, 0..100, false).groups;
        // ceil(100 / 32) = 4 workgroups of rows; ceil(300 / 32) = 10 of key columns.
        assert_eq!(groups(Shader::AttentionForward), [2, 2, 3]);
        assert_eq!(groups(Shader::AttentionBackwardQuery), [2, 2, 3]);
        assert_eq!(groups(Shader::AttentionBackwardKey), [4, 3, 3]);
        let plan = shape.launch_tiled(Shader::AttentionBackwardKey, tiling, 0..100, false);
        assert_eq!(plan.shader, Shader::AttentionBackwardKeyTiled);
        assert!(plan.constants.contains(&("GROUP_COLS", 32)));
        assert!(plan.constants.contains(&("SHARED_VECS", 128 * 4)));
        assert!(plan.subgroups && plan.source().contains("subgroupShuffleXor"));
    }

    #[test]
    fn folded_groups_cover_every_invocation_within_the_limit() {
        assert_eq!(folded_groups(64, 1), [1, 1, 1]);
        assert_eq!(folded_groups(65, 3), [2, 1, 3]);
        for invocations in [1, 64 * 16, 64 * 65_535 * 3 + 1, 20_000_000] {
            assert!(covers(folded_groups(invocations, 4), invocations, 4));
        }
    }

    #[test]
    fn the_key_kernel_folds_above_sixteen_million_keys() {
        // ceil(20M / (64 · 4)) = 78,125 workgroups: more than one dimension holds.
        let shape = AttentionShape {
            heads: 2,
            rows: 1,
            keys: 20_000_000,
            head_dim: 4,
            buckets: 7,
            max_bucket: 6,
        };
        let plan = shape.launch(Shader::AttentionBackwardKey, 0..1, false);
        assert!(covers(plan.groups, 20_000_000 / 4, 2), "{:?}", plan.groups);
    }

    #[test]
    fn the_pair_block_needs_only_its_own_words() {
        // 3 rows × 8 keys = 24 bytes: six words, not a spare seventh.
        let shape = AttentionShape {
            heads: 1,
            rows: 3,
            keys: 8,
            head_dim: 4,
            buckets: 7,
            max_bucket: 6,
        };
        for shader in [
            Shader::AttentionForward,
            Shader::AttentionBackwardQuery,
            Shader::AttentionBackwardKey,
        ] {
            let plan = shape.launch(shader, 0..3, false);
            assert_eq!(plan.binding_bytes.len() + 1, shader.binding_count());
            assert_eq!(plan.binding_bytes[4], 24, "{shader:?}");
            assert_eq!(plan.params.len(), shader.params_bytes());
        }
    }

    #[test]
    #[should_panic(expected = "bucket 7, outside the bias table of 7 buckets")]
    fn a_bucket_outside_the_table_is_refused() {
        let shape = AttentionShape {
            heads: 1,
            rows: 1,
            keys: 1,
            head_dim: 4,
            buckets: 7,
            max_bucket: 7,
        };
        shape.launch(Shader::AttentionForward, 0..1, false);
    }

    #[test]
    #[should_panic(expected = "head_dim 72 must be a multiple of 4 up to 68")]
    fn a_head_dimension_beyond_the_arrays_is_refused() {
        let shape = AttentionShape {
            heads: 1,
            rows: 1,
            keys: 1,
            head_dim: 72,
            buckets: 7,
            max_bucket: 0,
        };
        shape.launch(Shader::AttentionForward, 0..1, false);
    }

    #[test]
    #[should_panic(expected = "exceeds the shaders' 32-bit limit")]
    fn a_block_beyond_32_bit_indices_is_refused() {
        let shape = AttentionShape {
            heads: 1,
            rows: 70_000,
            keys: 70_000,
            head_dim: 4,
            buckets: 7,
            max_bucket: 0,
        };
        shape.launch(Shader::AttentionForward, 0..70_000, false);
    }
}
