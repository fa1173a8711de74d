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

mod autotune;
mod pools;
mod selector;

pub use autotune::declare_adapters;
use pools::fitted_pools;
use selector::stable_ids;
pub use selector::{AdapterSelector, api_name, parse_api};
/// A set of graphics APIs, as `--backends` names them.
pub use wgpu::Backends;

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
    /// The adapter's stable id (`API:NAME#N`), which `--adapter` and cluster specs take too and
    /// which survives a reordering of the list.
    pub id: String,
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
    /// Storage buffers one shader stage may bind.
    pub max_storage_buffers_per_shader_stage: u32,
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

impl AdapterSummary {
    /// The selector that names this adapter whatever the list's order: its stable id.
    pub fn selector(&self) -> AdapterSelector {
        self.id.parse().expect("a stable id parses")
    }
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

/// The graphics APIs whose adapters this process lists and numbers, when `--backends` set them.
static BACKENDS: std::sync::OnceLock<wgpu::Backends> = std::sync::OnceLock::new();

/// Makes `backends` the graphics APIs whose adapters this process lists and numbers
/// (`--backends`), instead of the primary APIs (or every API where those find none). Call it
/// once, before any adapter is listed; a later call is refused.
pub fn use_backends(backends: wgpu::Backends) -> Result<(), EngineError> {
    BACKENDS.set(backends).map_err(|_| {
        EngineError::InvalidOptions("the graphics APIs of this process are already set".into())
    })
}

/// The process's adapter list: those of `--backends`' APIs, or of the primary APIs (Vulkan,
/// Metal, DX12), or of every API (GL too) where those find none; most capable first.
fn instance() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    if let Some(backends) = BACKENDS.get() {
        return instance_of(*backends);
    }
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
        .map(|name| {
            parse_api(name)
                .map(wgpu::Backends::from)
                .map_err(|e| format!("{e} (or all)"))
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

/// Lists the compute-capable wgpu adapters of the process's graphics APIs (see
/// [`use_backends`]), most capable first. One physical adapter appears once per API that
/// drives it.
pub fn list_adapters() -> Vec<AdapterSummary> {
    summaries(&instance().1)
}

/// The API and name of each adapter, in list order: what selectors match.
fn names(adapters: &[wgpu::Adapter]) -> Vec<(wgpu::Backend, String)> {
    adapters
        .iter()
        .map(|a| {
            let info = a.get_info();
            (info.backend, info.name)
        })
        .collect()
}

/// What [`list_adapters`] says of each of `adapters`, numbered in order.
fn summaries(adapters: &[wgpu::Adapter]) -> Vec<AdapterSummary> {
    let ids = stable_ids(&names(adapters));
    adapters
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(index, (adapter, id))| {
            let info = adapter.get_info();
            let limits = adapter.limits();
            AdapterSummary {
                index,
                id: id.to_string(),
                name: info.name,
                backend: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                driver: format!("{} {}", info.driver, info.driver_info)
                    .trim()
                    .to_string(),
                max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
                max_buffer_size: limits.max_buffer_size,
                max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
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

/// The instance, adapter and stable id of the adapter `selector` names (the first of the list
/// when `None`): a position counts in the process's list, an API or id among that API's
/// adapters.
fn find_adapter(
    selector: Option<&AdapterSelector>,
) -> Result<(wgpu::Instance, wgpu::Adapter, AdapterSelector), EngineError> {
    let selector = selector.cloned().unwrap_or(AdapterSelector::Position(0));
    let (instance, adapters) = match selector.api() {
        Some(api) => instance_of(api.into()),
        None => instance(),
    };
    if adapters.is_empty() && selector.api().is_none() {
        return Err(EngineError::NoAdapter);
    }
    let listed = names(&adapters);
    match selector.find(&listed) {
        Some(index) => {
            // Adapters of one API and name are told apart by order: the ordinal counts the
            // same ones before it in any list that holds that API's adapters.
            let id = stable_ids(&listed).swap_remove(index);
            let adapter = adapters.into_iter().nth(index).expect("found in the list");
            Ok((instance, adapter, id))
        }
        None => Err(EngineError::AdapterNotFound {
            selector: selector.to_string(),
            present: stable_ids(&listed)
                .iter()
                .enumerate()
                .map(|(i, id)| format!("{i}: {id}"))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// What [`list_adapters`] says of the adapter `selector` names (the first when `None`).
pub fn describe_adapter(selector: Option<&AdapterSelector>) -> Result<AdapterSummary, EngineError> {
    let (_, adapter, id) = find_adapter(selector)?;
    let mut summary = summaries(std::slice::from_ref(&adapter))
        .pop()
        .expect("one adapter, one summary");
    summary.id = id.to_string();
    Ok(summary)
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

/// Opens the adapter `selector` names (the first, most capable one of the list when `None`)
/// as a burn wgpu device of its own (`WgpuDevice::Existing`), its memory pooled by [`pools`]'
/// layout. A process that opens several adapters declares them first ([`declare_adapters`]);
/// one that did not declares this adapter as its only one.
pub fn open_wgpu(selector: Option<&AdapterSelector>) -> Result<WgpuDevice, EngineError> {
    let (instance, adapter, id) = find_adapter(selector)?;
    declare_adapters(&[id.to_string()])?;
    let info = adapter.get_info();
    let limits = adapter.limits();
    let memory_config = fitted_pools(
        limits.max_storage_buffer_binding_size,
        u64::from(limits.min_uniform_buffer_offset_alignment),
    );
    let descriptor = device_descriptor(adapter.features(), limits);
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| {
        EngineError::DeviceRequest {
            adapter: format!("{} ({})", info.name, api_name(info.backend)),
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
        storage_buffers: Some(setup.device.limits().max_storage_buffers_per_shader_stage),
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
    /// Storage buffers one shader may bind on its devices (`None`: not known).
    pub storage_buffers: Option<u32>,
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
            storage_buffers: None,
        })
}

/// Opens `count` logical devices on the adapter `selector` names (the first when `None`):
/// separate wgpu devices with their own queues and memory pools, so that a plan for several
/// devices runs on one adapter.
pub fn open_logical_devices(
    selector: Option<&AdapterSelector>,
    count: usize,
) -> Result<Vec<WgpuDevice>, EngineError> {
    (0..count).map(|_| open_wgpu(selector)).collect()
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

    /// The storage buffers one shader may bind on the device, where the backend runs WGSL
    /// shaders with such a limit (`None` elsewhere).
    fn storage_buffer_limit(device: &Self::Device) -> Option<u32>;

    /// The device's adapter, "name | driver | API" (`None` where the backend has none).
    fn adapter_name(device: &Self::Device) -> Option<String>;
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

    fn storage_buffer_limit(device: &Self::Device) -> Option<u32> {
        adapter_identity(device).storage_buffers
    }

    fn adapter_name(device: &Self::Device) -> Option<String> {
        Some(adapter_identity(device).key)
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

    fn storage_buffer_limit(_device: &Self::Device) -> Option<u32> {
        None
    }

    fn adapter_name(_device: &Self::Device) -> Option<String> {
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

    fn storage_buffer_limit(device: &Self::Device) -> Option<u32> {
        B::storage_buffer_limit(device)
    }

    fn adapter_name(device: &Self::Device) -> Option<String> {
        B::adapter_name(device)
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
