//! Running a WGSL shader of `shaders/` on the wgpu backend through cubecl's raw-source path:
//! the kernel identity cubecl compiles and caches, output allocation, parameters and launch.

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

use super::shaders::Shader;

/// A tensor of the wgpu backend.
pub(super) type Cube = CubeTensor<WgpuRuntime>;

/// Invocations per workgroup, as in every shader's `@workgroup_size`.
pub(super) const WORKGROUP: u32 = 64;

/// Most workgroups along one dispatch dimension (WebGPU's minimum limit).
const MAX_GROUPS_PER_DIMENSION: u32 = 65_535;

/// A shader with the values of its specialised constants: what cubecl compiles and caches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct WgslKernel {
    shader: Shader,
    constants: Vec<(&'static str, u32)>,
}

impl WgslKernel {
    /// `shader` with its `const NAME: u32` lines set to `constants`.
    pub(super) fn new(shader: Shader, constants: Vec<(&'static str, u32)>) -> Self {
        Self { shader, constants }
    }
}

impl KernelSource for WgslKernel {
    fn source(&self) -> SourceTemplate {
        SourceTemplate::new(self.shader.specialised(&self.constants))
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

/// A storage buffer holding the `Params` struct of `shader`, on the device of `like`.
pub(super) fn params_handle<P: bytemuck::Pod + Send + Sync>(
    like: &Cube,
    shader: Shader,
    params: P,
) -> Handle {
    assert_eq!(
        size_of::<P>(),
        shader.params_bytes(),
        "{} params",
        shader.file_name()
    );
    like.client.create(Bytes::from_elems(vec![params]))
}

/// Workgroups for `invocations` (at least one) numbered `gid.x + gid.y · (WORKGROUP · groups.x)`,
/// folded into two dimensions when one would exceed the per-dimension limit.
pub(super) fn linear_count(invocations: usize) -> CubeCount {
    assert!(invocations > 0, "an empty launch");
    let groups = u32::try_from(invocations.div_ceil(WORKGROUP as usize))
        .expect("fewer than 2^32 workgroups");
    let x = groups.min(MAX_GROUPS_PER_DIMENSION);
    CubeCount::Static(x, groups.div_ceil(x), 1)
}

/// Launches `kernel` on `count` workgroups of [`WORKGROUP`] invocations with `buffers` as its
/// bindings 0, 1, … (checked against the shader's binding count).
pub(super) fn launch(like: &Cube, kernel: WgslKernel, count: CubeCount, buffers: Vec<Handle>) {
    assert_eq!(
        buffers.len(),
        kernel.shader.binding_count(),
        "{} bindings",
        kernel.shader.file_name()
    );
    like.client.launch(
        Box::new(SourceKernel::new(kernel, CubeDim::new_1d(WORKGROUP))),
        count,
        KernelArguments::new().with_buffers(buffers.into_iter().map(Handle::binding).collect()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(count: CubeCount) -> (u32, u32, u32) {
        match count {
            CubeCount::Static(x, y, z) => (x, y, z),
            CubeCount::Dynamic(_) => unreachable!("linear_count is static"),
        }
    }

    #[test]
    fn linear_count_covers_every_invocation_within_the_limit() {
        assert_eq!(dims(linear_count(64)), (1, 1, 1));
        assert_eq!(dims(linear_count(65)), (2, 1, 1));
        let many = 64 * 65_535 * 3 + 1;
        let (x, y, _) = dims(linear_count(many));
        assert!(x <= MAX_GROUPS_PER_DIMENSION);
        assert!((x as usize) * (y as usize) * 64 >= many);
    }
}
