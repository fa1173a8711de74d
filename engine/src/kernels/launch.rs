//! Running a WGSL shader of `shaders/` on the wgpu backend through cubecl's raw-source path:
//! the kernel identity cubecl compiles and caches, output allocation, and the checked launch of
//! a [`LaunchPlan`].

use burn::{
    backend::wgpu::{CubeTensor, KernelSource, SourceKernel, SourceTemplate, WgpuRuntime},
    cubecl::{
        CubeCount, CubeDim,
        bytes::Bytes,
        prelude::KernelId,
        server::{Handle, KernelArguments},
    },
    tensor::{DType, Shape},
};

use super::{
    plan::{LaunchPlan, WORKGROUP},
    shaders::Shader,
};

/// A tensor of the wgpu backend.
pub(super) type Cube = CubeTensor<WgpuRuntime>;

/// A shader with the values of its specialised constants, and whether its team reductions use
/// subgroups: what cubecl compiles and caches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct WgslKernel {
    shader: Shader,
    constants: Vec<(&'static str, u32)>,
    subgroups: bool,
}

impl WgslKernel {
    /// `shader` with its `const NAME: u32` lines set to `constants`, its team reductions by
    /// subgroup shuffles if `subgroups`.
    pub(super) fn new(
        shader: Shader,
        constants: Vec<(&'static str, u32)>,
        subgroups: bool,
    ) -> Self {
        Self {
            shader,
            constants,
            subgroups,
        }
    }
}

impl KernelSource for WgslKernel {
    fn source(&self) -> SourceTemplate {
        SourceTemplate::new(self.shader.kernel_source(&self.constants, self.subgroups))
    }

    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info(self.clone())
    }
}

/// An uninitialised f32 tensor of `shape` on the device of `like`.
pub(super) fn empty(like: &Cube, shape: Vec<usize>) -> Cube {
    let shape = Shape::from(shape);
    let handle = like.client.empty(shape.num_elements() * size_of::<f32>());
    CubeTensor::new_contiguous(
        like.client.clone(),
        like.device.clone(),
        shape,
        handle,
        DType::F32,
    )
}

/// Launches `plan` with `buffers` as its bindings 0, 1, … before the `Params` binding, which
/// it adds. Panics, naming the shader and the binding, if a buffer is smaller than the plan
/// says the shader can index: an index past a binding is undefined behaviour on a GPU.
pub(super) fn launch(like: &Cube, plan: LaunchPlan, buffers: Vec<Handle>) {
    let LaunchPlan {
        shader,
        constants,
        params,
        groups: [x, y, z],
        binding_bytes,
        subgroups,
    } = plan;
    assert_eq!(
        buffers.len() + 1,
        shader.binding_count(),
        "{} bindings",
        shader.file_name()
    );
    assert_eq!(
        params.len(),
        shader.params_bytes(),
        "{} params",
        shader.file_name()
    );
    let sizes: Vec<u64> = buffers.iter().map(|b| b.size_in_used()).collect();
    assert_bindings_hold(shader, &binding_bytes, &sizes);
    let mut bindings: Vec<_> = buffers.into_iter().map(Handle::binding).collect();
    bindings.push(like.client.create(Bytes::from_bytes_vec(params)).binding());
    like.client.launch(
        Box::new(SourceKernel::new(
            WgslKernel::new(shader, constants, subgroups),
            CubeDim::new_1d(WORKGROUP),
        )),
        CubeCount::Static(x, y, z),
        KernelArguments::new().with_buffers(bindings),
    );
}

/// Panics, naming the shader and the binding, if any buffer of `sizes` (bytes, by binding)
/// holds fewer bytes than `need` says the shader can index in it.
fn assert_bindings_hold(shader: Shader, need: &[u64], sizes: &[u64]) {
    for (binding, (&have, &need)) in sizes.iter().zip(need).enumerate() {
        assert!(
            have >= need,
            "{} binding {binding}: the shader can index {need} bytes, the buffer holds {have}",
            shader.file_name()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_as_large_as_the_plan_says_pass() {
        assert_bindings_hold(Shader::Dropout, &[400, 64], &[400, 100]);
    }

    #[test]
    #[should_panic(expected = "binding 1: the shader can index 64 bytes, the buffer holds 60")]
    fn a_buffer_smaller_than_the_plan_says_is_refused() {
        assert_bindings_hold(Shader::Dropout, &[400, 64], &[400, 60]);
    }
}
