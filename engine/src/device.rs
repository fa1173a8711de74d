//! Compute devices: the wgpu adapters of this machine, opening one as a burn device, and the
//! device-memory probe used to report peak device bytes.

use burn::{
    backend::{
        Autodiff, NdArray,
        autodiff::checkpoint::strategy::CheckpointStrategy,
        wgpu::{RuntimeOptions, WgpuDevice, WgpuRuntime, WgpuSetup, init_device},
    },
    cubecl::Runtime,
    tensor::backend::Backend,
};
use serde::Serialize;

use crate::EngineError;

mod pools;

use pools::fitted_pools;

/// The wgpu backend MegaGraph runs on: burn's CubeCL backend without the fusion wrapper, so
/// that custom kernels can be bound into it.
pub type WgpuBackend = burn::backend::wgpu::CubeBackend<WgpuRuntime, f32, i32, u32>;
/// burn's CPU backend, used as a reference.
pub type CpuBackend = NdArray<f32>;
/// [`WgpuBackend`] with reverse-mode autodiff, for training.
pub type WgpuAutodiff = Autodiff<WgpuBackend>;
/// [`CpuBackend`] with reverse-mode autodiff, for training.
pub type CpuAutodiff = Autodiff<CpuBackend>;

/// What `megagraph devices` reports of one adapter.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterSummary {
    /// Position in the adapter list; pass it as `--adapter`.
    pub index: usize,
    /// Adapter name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Graphics API: Vulkan, Metal, Dx12 or Gl.
    pub backend: String,
    /// DiscreteGpu, IntegratedGpu, VirtualGpu, Cpu or Other.
    pub device_type: String,
    /// Driver name and version as reported.
    pub driver: String,
    /// Largest storage buffer binding in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer in bytes.
    pub max_buffer_size: u64,
    /// Workgroup (shared) memory per workgroup, bytes.
    pub max_compute_workgroup_storage_size: u32,
    /// Invocations per workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Smallest and largest subgroup size the driver reports.
    pub subgroup_sizes: [u32; 2],
    /// The compute features the kernels can use that this adapter has, by wgpu's names
    /// (`SUBGROUP`, `SHADER_F16`, `EXPERIMENTAL_COOPERATIVE_MATRIX`, …).
    pub features: Vec<String>,
    /// The cooperative-matrix (tensor-core) shapes the driver offers, as `MxNxK A->C` types;
    /// empty without `EXPERIMENTAL_COOPERATIVE_MATRIX`.
    pub cooperative_matrices: Vec<String>,
}

/// The adapter features a kernel variant may depend on, by wgpu's names.
fn kernel_features(features: wgpu::Features) -> Vec<String> {
    [
        wgpu::Features::SUBGROUP,
        wgpu::Features::SUBGROUP_BARRIER,
        wgpu::Features::SHADER_F16,
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        wgpu::Features::TIMESTAMP_QUERY,
    ]
    .into_iter()
    .filter(|f| features.contains(*f))
    .flat_map(|f| {
        f.iter_names()
            .map(|(name, _)| name.to_string())
            .collect::<Vec<_>>()
    })
    .collect()
}

/// An instance over the primary APIs (Vulkan, Metal, DX12) when they have an adapter, else
/// over every API (GL too), with its compute-capable adapters, most capable first.
fn instance() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    for backends in [wgpu::Backends::PRIMARY, wgpu::Backends::all()] {
        let (instance, adapters) = instance_of(backends);
        if !adapters.is_empty() {
            return (instance, adapters);
        }
    }
    instance_of(wgpu::Backends::empty())
}

/// An instance of `backends` and its compute-capable adapters, most capable first.
fn instance_of(backends: wgpu::Backends) -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let mut adapters: Vec<wgpu::Adapter> =
        pollster::block_on(instance.enumerate_adapters(backends))
            .into_iter()
            .filter(|a| {
                a.get_downlevel_capabilities()
                    .flags
                    .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            })
            .collect();
    adapters.sort_by_key(|a| preference(a.get_info().device_type));
    (instance, adapters)
}

/// The graphics APIs named in `text`: `all`, or a comma-separated list of `vulkan`, `gl`,
/// `metal` and `dx12`.
pub fn parse_backends(text: &str) -> Result<wgpu::Backends, String> {
    if text == "all" {
        return Ok(wgpu::Backends::all());
    }
    text.split(',')
        .map(|name| match name.trim() {
            "vulkan" => Ok(wgpu::Backends::VULKAN),
            "gl" => Ok(wgpu::Backends::GL),
            "metal" => Ok(wgpu::Backends::METAL),
            "dx12" => Ok(wgpu::Backends::DX12),
            other => Err(format!(
                "{other:?} is no graphics API: expected all, or a comma-separated list of vulkan, gl, metal and dx12"
            )),
        })
        .try_fold(wgpu::Backends::empty(), |all, one| Ok(all | one?))
}

/// Discrete GPUs first, software adapters last.
fn preference(kind: wgpu::DeviceType) -> u8 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// Lists the compute-capable wgpu adapters of this machine, most capable first: those of the
/// primary APIs (Vulkan, Metal, DX12), or, where those find none, of any API.
pub fn list_adapters() -> Vec<AdapterSummary> {
    summaries(&instance().1)
}

/// Lists the compute-capable adapters of every API of `backends`, most capable first (one
/// physical adapter appears once per API that drives it).
pub fn list_adapters_of(backends: wgpu::Backends) -> Vec<AdapterSummary> {
    summaries(&instance_of(backends).1)
}

/// What [`list_adapters`] says of each of `adapters`, numbered in order.
fn summaries(adapters: &[wgpu::Adapter]) -> Vec<AdapterSummary> {
    adapters
        .iter()
        .enumerate()
        .map(|(index, adapter)| {
            let info = adapter.get_info();
            let limits = adapter.limits();
            AdapterSummary {
                index,
                name: info.name,
                backend: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                driver: format!("{} {}", info.driver, info.driver_info)
                    .trim()
                    .to_string(),
                max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
                max_buffer_size: limits.max_buffer_size,
                max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
                max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
                subgroup_sizes: [info.subgroup_min_size, info.subgroup_max_size],
                features: kernel_features(adapter.features()),
                cooperative_matrices: adapter
                    .cooperative_matrix_properties()
                    .iter()
                    .map(|p| {
                        format!(
                            "{}x{}x{} {:?}->{:?}",
                            p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The device request for an adapter with `features` and `limits`, as cubecl makes its own:
/// every feature but `MAPPABLE_PRIMARY_BUFFERS` (mapping device-local memory is slow where it
/// works at all, and cubecl stages through buffers of its own), all the limits, and memory hints
/// for low use (cubecl pools its allocations already).
fn device_descriptor(
    features: wgpu::Features,
    limits: wgpu::Limits,
) -> wgpu::DeviceDescriptor<'static> {
    wgpu::DeviceDescriptor {
        label: Some("megagraph"),
        required_features: features.difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
        required_limits: limits,
        memory_hints: wgpu::MemoryHints::MemoryUsage,
        ..Default::default()
    }
}

/// Opens adapter `index` of [`list_adapters`] (the first, most capable one when `None`) as a
/// burn wgpu device, its memory pooled by [`pools`]' layout.
pub fn open_wgpu(index: Option<usize>) -> Result<WgpuDevice, EngineError> {
    let (instance, adapters) = instance();
    if adapters.is_empty() {
        return Err(EngineError::NoAdapter);
    }
    let index = index.unwrap_or(0);
    let available = adapters.len();
    let adapter = adapters
        .into_iter()
        .nth(index)
        .ok_or(EngineError::AdapterOutOfRange { index, available })?;
    let info = adapter.get_info();
    let limits = adapter.limits();
    let memory_config = fitted_pools(
        limits.max_storage_buffer_binding_size,
        u64::from(limits.min_uniform_buffer_offset_alignment),
    );
    let descriptor = device_descriptor(adapter.features(), limits);
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| {
        EngineError::DeviceRequest {
            index,
            name: info.name.clone(),
            reason: e.to_string(),
        }
    })?;
    let setup = WgpuSetup {
        instance,
        adapter,
        device,
        queue,
        backend: info.backend,
    };
    let options = RuntimeOptions {
        memory_config,
        ..RuntimeOptions::default()
    };
    let identity = AdapterIdentity {
        key: format!(
            "{} | {} {} | {:?}",
            info.name, info.driver, info.driver_info, info.backend
        ),
        software: info.device_type == wgpu::DeviceType::Cpu,
        subgroups: setup.device.features().contains(wgpu::Features::SUBGROUP),
    };
    let device = init_device(setup, options);
    identities().insert(device.clone(), identity);
    Ok(device)
}

/// Which adapter a device runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterIdentity {
    /// "adapter name | driver | API": what per-adapter choices are keyed by.
    pub key: String,
    /// Whether the adapter is a CPU implementation (lavapipe, WARP, SwiftShader).
    pub software: bool,
    /// Whether its devices run subgroup operations (`Features::SUBGROUP` requested and granted).
    pub subgroups: bool,
}

/// The adapter, driver and API of each device [`open_wgpu`] opened.
fn identities()
-> std::sync::MutexGuard<'static, std::collections::HashMap<WgpuDevice, AdapterIdentity>> {
    static IDENTITIES: std::sync::LazyLock<
        std::sync::Mutex<std::collections::HashMap<WgpuDevice, AdapterIdentity>>,
    > = std::sync::LazyLock::new(Default::default);
    IDENTITIES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The adapter of a device [`open_wgpu`] opened (an unknown, non-software one for a device
/// opened otherwise).
pub fn adapter_identity(device: &WgpuDevice) -> AdapterIdentity {
    identities()
        .get(device)
        .cloned()
        .unwrap_or_else(|| AdapterIdentity {
            key: "unknown adapter".to_string(),
            software: false,
            subgroups: false,
        })
}

/// Opens `count` logical devices on adapter `index` (the first when `None`): separate wgpu
/// devices with their own queues and memory pools, so that a plan for several devices runs on
/// one adapter.
pub fn open_logical_devices(
    index: Option<usize>,
    count: usize,
) -> Result<Vec<WgpuDevice>, EngineError> {
    (0..count).map(|_| open_wgpu(index)).collect()
}

/// A backend whose device memory can be measured.
pub trait MemoryProbe: Backend {
    /// Bytes the device's memory pool has reserved right now, or `None` where the backend
    /// keeps no device memory of its own (CPU backends).
    fn reserved_bytes(device: &Self::Device) -> Option<u64>;

    /// Bytes of the pool held by live tensors right now (the pool keeps freed buffers for
    /// reuse and slices small tensors out of shared pages, so this is the finer measure of what
    /// a computation keeps).
    fn in_use_bytes(device: &Self::Device) -> Option<u64>;

    /// The largest buffer the device can allocate in one piece (`None`: no fixed limit).
    fn max_buffer_bytes(device: &Self::Device) -> Option<u64>;
}

impl MemoryProbe for WgpuBackend {
    fn reserved_bytes(device: &Self::Device) -> Option<u64> {
        WgpuRuntime::client(device)
            .memory_usage()
            .ok()
            .map(|usage| usage.bytes_reserved)
    }

    fn in_use_bytes(device: &Self::Device) -> Option<u64> {
        WgpuRuntime::client(device)
            .memory_usage()
            .ok()
            .map(|usage| usage.bytes_in_use)
    }

    fn max_buffer_bytes(device: &Self::Device) -> Option<u64> {
        Some(
            WgpuRuntime::client(device)
                .properties()
                .memory
                .max_page_size,
        )
    }
}

impl MemoryProbe for CpuBackend {
    fn reserved_bytes(_device: &Self::Device) -> Option<u64> {
        None
    }

    fn in_use_bytes(_device: &Self::Device) -> Option<u64> {
        None
    }

    fn max_buffer_bytes(_device: &Self::Device) -> Option<u64> {
        None
    }
}

impl<B: MemoryProbe, C: CheckpointStrategy> MemoryProbe for Autodiff<B, C> {
    fn reserved_bytes(device: &Self::Device) -> Option<u64> {
        B::reserved_bytes(device)
    }

    fn in_use_bytes(device: &Self::Device) -> Option<u64> {
        B::in_use_bytes(device)
    }

    fn max_buffer_bytes(device: &Self::Device) -> Option<u64> {
        B::max_buffer_bytes(device)
    }
}

#[cfg(test)]
mod tests {
    use super::device_descriptor;

    #[test]
    fn the_device_request_is_cubecls() {
        let descriptor = device_descriptor(wgpu::Features::all(), wgpu::Limits::default());
        assert!(
            !descriptor
                .required_features
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        );
        assert_eq!(
            descriptor.required_features,
            wgpu::Features::all().difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        );
        assert!(matches!(
            descriptor.memory_hints,
            wgpu::MemoryHints::MemoryUsage
        ));
    }
}
