//! Every WGSL shader, with its team reductions through workgroup memory and by subgroup
//! shuffles, parses, validates and translates with naga on the CPU, and declares exactly the
//! bindings the Rust side binds (no adapter needed).

use megagraph_engine::kernels::{
    plan::{MAX_FUSED_HEAD_DIM, WORKGROUP},
    shaders::Shader,
};
use naga::{AddressSpace, ShaderStage, proc::Layouter};

use crate::common::{TestError, TestResult};

#[test]
fn every_shader_validates_and_translates_to_all_targets() -> TestResult {
    for shader in Shader::ALL {
        let other = match shader {
            Shader::SparseMatmul => Some(("TRANSPOSED", 1)),
            Shader::ColumnSums => Some(("CHUNK", 64)),
            Shader::Dropout => None,
            _ => Some(("HEAD_DIM", 64)),
        };
        let specialised = other.map(|constant| shader.specialised(&[constant]));
        let sources: Vec<String> = std::iter::once(shader.source().to_string())
            .chain(specialised)
            .collect();
        // Shaders with team reductions also run them by subgroup shuffles.
        let with_subgroups: Vec<String> = sources
            .iter()
            .filter(|_| shader.has_teams())
            .map(|source| shader.with_subgroups(source))
            .collect();
        for source in sources.into_iter().chain(with_subgroups) {
            let out = shader.translate(&source)?;
            assert!(
                !out.spirv.is_empty(),
                "{}: empty SPIR-V",
                shader.file_name()
            );
            let entry_points: Vec<_> = out
                .module
                .entry_points
                .iter()
                .map(|e| (e.name.as_str(), e.stage, e.workgroup_size))
                .collect();
            assert_eq!(
                entry_points,
                [("main", ShaderStage::Compute, [WORKGROUP, 1, 1])],
                "{}: one compute entry point `main` (cubecl's raw-WGSL path needs that name) of the host's workgroup size",
                shader.file_name()
            );
            let expected: Vec<u32> = (0..shader.binding_count() as u32).collect();
            assert_eq!(out.bindings, expected, "{}: bindings", shader.file_name());
            assert_eq!(
                out.params_bytes,
                Some(shader.params_bytes() as u32),
                "{}: struct Params against the Rust Params",
                shader.file_name()
            );
        }
    }
    Ok(())
}

#[test]
fn specialisation_replaces_the_constant_and_keeps_the_shader_valid() -> TestResult {
    let source = Shader::AttentionBackwardQuery.specialised(&[("HEAD_DIM", 16), ("BUCKETS", 9)]);
    assert!(source.contains("const HEAD_DIM: u32 = 16u;"));
    assert!(source.contains("const BUCKETS: u32 = 9u;"));
    Shader::AttentionBackwardQuery.translate(&source)?;
    assert_eq!(Shader::AttentionBackwardQuery.constant("BUCKETS"), Some(7));
    assert_eq!(Shader::SparseMatmul.constant("TRANSPOSED"), Some(0));
    assert_eq!(Shader::SparseMatmul.constant("HEAD_DIM"), None);
    Ok(())
}

#[test]
fn a_broken_shader_is_reported_with_its_name() {
    let err = Shader::AttentionForward
        .translate("fn main( {")
        .expect_err("invalid WGSL must not translate");
    assert!(
        err.to_string().starts_with("attention_forward.wgsl: parse"),
        "{err}"
    );
}

/// WGSL's bound on the bytes of one function's variables (and on a shader's private ones).
const FUNCTION_BYTES_LIMIT: u32 = 8192;

/// Bytes of the function-scope variables of the largest function of `source`, and of its
/// private variables, as naga lays them out.
fn variable_bytes(shader: Shader, source: &str) -> Result<(u32, u32), TestError> {
    let module = shader.translate(source)?.module;
    let mut layouter = Layouter::default();
    layouter.update(module.to_ctx())?;
    let size = |ty| layouter[ty].size;
    let functions = module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function));
    let function = functions
        .map(|f| f.local_variables.iter().map(|(_, v)| size(v.ty)).sum())
        .max()
        .unwrap_or(0);
    let private = module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == AddressSpace::Private)
        .map(|(_, v)| size(v.ty))
        .sum();
    Ok((function, private))
}

#[test]
fn the_fused_kernels_fit_the_variable_limit_up_to_their_head_dimension_cap() -> TestResult {
    let attention = [
        Shader::AttentionForward,
        Shader::AttentionBackwardQuery,
        Shader::AttentionBackwardKey,
    ];
    let cap = MAX_FUSED_HEAD_DIM as u32;
    let mut largest = 0;
    for shader in attention {
        let source = shader.specialised(&[("HEAD_DIM", cap), ("BUCKETS", 256)]);
        let (function, private) = variable_bytes(shader, &source)?;
        eprintln!(
            "{} at head_dim {cap}, 256 buckets: {function} function bytes, {private} private",
            shader.file_name()
        );
        assert!(
            function <= FUNCTION_BYTES_LIMIT && private <= FUNCTION_BYTES_LIMIT,
            "{}: {function} function and {private} private bytes exceed {FUNCTION_BYTES_LIMIT}",
            shader.file_name()
        );
        largest = largest.max(function);
    }
    // The cap is the largest multiple of 4 that fits: one step more does not.
    let over = attention
        .iter()
        .map(|&s| {
            variable_bytes(
                s,
                &s.specialised(&[("HEAD_DIM", cap + 4), ("BUCKETS", 256)]),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    assert!(
        over.iter().any(|(f, _)| *f > FUNCTION_BYTES_LIMIT),
        "head_dim {} still fits ({over:?}): raise MAX_FUSED_HEAD_DIM",
        cap + 4
    );
    assert!(
        largest > 0,
        "no variables measured: the check could not fail"
    );
    Ok(())
}
