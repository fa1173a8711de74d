//! Every WGSL shader parses, validates and translates with naga on the CPU, and declares
//! exactly the bindings the Rust side binds (no adapter needed).

use megagraph_engine::kernels::shaders::Shader;

use crate::common::TestResult;

#[test]
fn every_shader_validates_and_translates_to_all_targets() -> TestResult {
    for shader in Shader::ALL {
        let other = match shader {
            Shader::SparseMatmul => ("TRANSPOSED", 1),
            _ => ("HEAD_DIM", 64),
        };
        for source in [shader.source().to_string(), shader.specialised(&[other])] {
            let out = shader.translate(&source)?;
            assert!(
                !out.spirv.is_empty(),
                "{}: empty SPIR-V",
                shader.file_name()
            );
            for (target, text) in [("MSL", &out.msl), ("HLSL", &out.hlsl), ("GLSL", &out.glsl)] {
                assert!(
                    text.contains("main"),
                    "{}: {target} has no entry point",
                    shader.file_name()
                );
            }
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
