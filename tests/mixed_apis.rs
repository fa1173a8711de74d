//! One job over two graphics APIs: lavapipe (Vulkan, SPIR-V from naga) and llvmpipe through
//! EGL (OpenGL, GLSL from naga): two driver stacks of Mesa with their own shader compilers and
//! limits, the stand-in for two vendors in CI. Each plan runs the 5 steps of
//! `tests/parallel.rs` and must give the one-lavapipe-device losses and parameters within its
//! tolerance (1e-4), dropout on.

use megagraph_engine::burn::backend::wgpu::WgpuDevice;

use crate::common::{GlDevice, TestError, TestResult, gl_device, wgpu_logical_devices};
use crate::parallel::{FULL, HOPS, check_equivalent_on, plan, stage};

/// The first logical Vulkan device of the shared four, and a GL device (with the GL lock:
/// see [`gl_device`]); `None` after saying why a test skipped.
fn vulkan_and_gl(test: &str) -> Result<Option<(GlDevice, [WgpuDevice; 2])>, TestError> {
    let Some(vulkan) = wgpu_logical_devices(test)? else {
        return Ok(None);
    };
    let Some(gl) = gl_device(test)? else {
        return Ok(None);
    };
    let devices = [vulkan[0].clone(), gl.device.clone()];
    Ok(Some((gl, devices)))
}

/// The one-device plan on device `which` (0: Vulkan, 1: GL) against one lavapipe device.
fn one_device_matches(name: &str, which: usize) -> TestResult {
    let Some((_gl, devices)) = vulkan_and_gl(name)? else {
        return Ok(());
    };
    let one = plan(
        "dp1-pp1-cp1",
        vec![stage([0, 4], vec![vec![0]])],
        vec![1.0],
        1,
    );
    check_equivalent_on(name, one, FULL, &devices[which..=which])
}

#[test]
fn one_vulkan_device_matches_one_lavapipe_device() -> TestResult {
    one_device_matches("one vulkan", 0)
}

#[test]
fn one_gl_device_matches_one_lavapipe_device() -> TestResult {
    one_device_matches("one gl", 1)
}

#[test]
fn context_parallel_over_vulkan_and_gl_matches_one_device() -> TestResult {
    let Some((_gl, devices)) = vulkan_and_gl("cp2 vulkan+gl")? else {
        return Ok(());
    };
    let cp2 = plan(
        "dp1-pp1-cp2",
        vec![stage([0, 4], vec![vec![0, 1]])],
        vec![0.6, 0.4],
        1,
    );
    check_equivalent_on("cp2 vulkan+gl", cp2.clone(), FULL, &devices)?;
    check_equivalent_on("hops cp2 vulkan+gl", cp2, HOPS, &devices)
}

#[test]
fn pipeline_over_vulkan_and_gl_matches_one_device() -> TestResult {
    let Some((_gl, devices)) = vulkan_and_gl("pp2 vulkan+gl")? else {
        return Ok(());
    };
    let pp2 = plan(
        "dp1-pp2-cp1",
        vec![stage([0, 1], vec![vec![0]]), stage([1, 4], vec![vec![1]])],
        vec![1.0, 1.0],
        2,
    );
    check_equivalent_on("pp2 vulkan+gl", pp2, FULL, &devices)
}
