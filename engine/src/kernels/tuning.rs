//! Which dense forward kernel runs on a device: the register-blocked one
//! (`attention_forward.wgsl`, shaped for CPUs: four query rows per invocation, keys read from
//! device memory) or the tiled one (`attention_forward_tiled.wgsl`, shaped for GPUs) at one of
//! its [`Tiling`]s.
//!
//! At first use on an adapter, per shape class, every candidate that fits the adapter's
//! workgroup memory is timed on the call's own inputs and the fastest is kept: in memory, and in
//! `megagraph/attention-forward.json` under cubecl's autotune cache directory, keyed by adapter,
//! driver and shape class, as cubecl keys its own autotune results. Calls below
//! [`TUNE_FROM_SCORES`] scores run the register-blocked kernel untimed. A device can be pinned to
//! one kernel ([`pin_forward_kernel`]): the benchmark times each variant that way, and the tests
//! check each one against the reference.

use std::{
    collections::HashMap,
    fmt,
    path::PathBuf,
    sync::{LazyLock, Mutex},
    time::Instant,
};

use burn::{
    backend::wgpu::{WgpuDevice, WgpuRuntime},
    cubecl::Runtime,
};
use cubecl_runtime::config::{CubeClRuntimeConfig, RuntimeConfig};
use serde::{Deserialize, Serialize};

use super::plan::{AttentionShape, Tiling};
use crate::device::adapter_identity;

/// Scores (heads · rows · keys) from which a call's forward kernel is chosen by timing.
pub const TUNE_FROM_SCORES: usize = 1 << 22;

/// One dense forward kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForwardKernel {
    /// `attention_forward.wgsl`: four query rows per invocation, keys from device memory.
    Registers,
    /// `attention_forward_tiled.wgsl` at this tiling.
    Tiled(Tiling),
}

impl fmt::Display for ForwardKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForwardKernel::Registers => write!(f, "registers"),
            ForwardKernel::Tiled(t) => write!(f, "tiled:{}:{}:{}", t.team, t.rows, t.tile),
        }
    }
}

impl std::str::FromStr for ForwardKernel {
    type Err = String;

    /// `registers` or `tiled:TEAM:ROWS:TILE`.
    fn from_str(text: &str) -> Result<Self, String> {
        if text == "registers" {
            return Ok(ForwardKernel::Registers);
        }
        let numbers: Option<Vec<u32>> = text
            .strip_prefix("tiled:")
            .map(|rest| rest.split(':').map(|n| n.parse().ok()).collect())
            .and_then(|n: Option<Vec<u32>>| n);
        match numbers.as_deref() {
            Some(&[team, rows, tile])
                if team > 0
                    && super::plan::WORKGROUP.is_multiple_of(team)
                    && rows > 0
                    && tile.is_multiple_of(4)
                    && tile.is_multiple_of(team)
                    && tile > 0 =>
            {
                Ok(ForwardKernel::Tiled(Tiling { team, rows, tile }))
            }
            _ => Err(format!(
                "{text:?}: expected registers or tiled:TEAM:ROWS:TILE (TEAM dividing 64, TILE a multiple of 4 and of TEAM)"
            )),
        }
    }
}

/// The candidates at `head_dim` on an adapter with `workgroup_limit` bytes of workgroup memory.
pub fn candidates(head_dim: usize, workgroup_limit: u64) -> Vec<ForwardKernel> {
    std::iter::once(ForwardKernel::Registers)
        .chain(
            Tiling::candidates(head_dim, workgroup_limit)
                .into_iter()
                .map(ForwardKernel::Tiled),
        )
        .collect()
}

/// What the process knows: pins per device, choices per adapter and shape class, and the last
/// kernel each device ran.
#[derive(Default)]
struct State {
    pins: HashMap<WgpuDevice, ForwardKernel>,
    last: HashMap<WgpuDevice, ForwardKernel>,
    choices: Option<HashMap<String, ForwardKernel>>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Default::default);

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    f(&mut STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// Runs every forward on `device` with `kernel` (`None`: choose again by timing).
pub fn pin_forward_kernel(device: &WgpuDevice, kernel: Option<ForwardKernel>) {
    with_state(|s| match kernel {
        Some(kernel) => s.pins.insert(device.clone(), kernel),
        None => s.pins.remove(device),
    });
}

/// The forward kernel `device` ran last, if any.
pub fn last_forward_kernel(device: &WgpuDevice) -> Option<ForwardKernel> {
    with_state(|s| s.last.get(device).copied())
}

/// The file the choices persist in.
fn cache_file() -> PathBuf {
    <CubeClRuntimeConfig as RuntimeConfig>::get()
        .autotune
        .cache
        .root()
        .join("megagraph")
        .join("attention-forward.json")
}

fn load_choices() -> HashMap<String, ForwardKernel> {
    std::fs::read_to_string(cache_file())
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Writes the choices; a cache that cannot be written costs a re-tune next time, nothing else.
fn save_choices(choices: &HashMap<String, ForwardKernel>) {
    let path = cache_file();
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, serde_json::to_vec_pretty(choices)?));
    if let Err(error) = written {
        eprintln!(
            "warning: cannot write the forward-kernel choices to {}: {error}",
            path.display()
        );
    }
}

/// The shape class of a call: head dimension, small or large bias table, and the powers of two
/// of rows, keys and heads.
fn shape_class(shape: &AttentionShape) -> String {
    let log2 = |n: usize| n.next_power_of_two().trailing_zeros();
    format!(
        "d{}-b{}-r{}-k{}-h{}",
        shape.head_dim,
        if shape.buckets <= 16 {
            "small"
        } else {
            "large"
        },
        log2(shape.rows),
        log2(shape.keys),
        log2(shape.heads)
    )
}

/// Seconds of `run(kernel)` on `device`: the faster of two runs after one that compiles.
fn time_kernel(device: &WgpuDevice, kernel: ForwardKernel, run: &dyn Fn(ForwardKernel)) -> f64 {
    let client = WgpuRuntime::client(device);
    let sync = || {
        pollster::block_on(client.sync()).expect("the device finishes the forward kernel");
    };
    run(kernel);
    sync();
    (0..2)
        .map(|_| {
            let start = Instant::now();
            run(kernel);
            sync();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The forward kernel for a call of `shape` on `device`; `run` launches the call's forward
/// with a kernel (its outputs are overwritten by each run, so timing on them is harmless).
pub(super) fn choose(
    device: &WgpuDevice,
    shape: &AttentionShape,
    run: &dyn Fn(ForwardKernel),
) -> ForwardKernel {
    let pinned = with_state(|s| s.pins.get(device).copied());
    let kernel = pinned.unwrap_or_else(|| {
        if shape.heads * shape.rows * shape.keys < TUNE_FROM_SCORES {
            return ForwardKernel::Registers;
        }
        let key = format!("{}|{}", adapter_identity(device), shape_class(shape));
        let known = with_state(|s| {
            s.choices
                .get_or_insert_with(load_choices)
                .get(&key)
                .copied()
        });
        known.unwrap_or_else(|| {
            let limit = WgpuRuntime::client(device)
                .properties()
                .hardware
                .max_shared_memory_size as u64;
            let fastest = candidates(shape.head_dim, limit)
                .into_iter()
                .map(|kernel| (kernel, time_kernel(device, kernel, run)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map_or(ForwardKernel::Registers, |(kernel, _)| kernel);
            with_state(|s| {
                let choices = s.choices.get_or_insert_with(load_choices);
                choices.insert(key, fastest);
                save_choices(choices);
            });
            fastest
        })
    });
    with_state(|s| s.last.insert(device.clone(), kernel));
    kernel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_read_back_as_written() {
        for kernel in [
            ForwardKernel::Registers,
            ForwardKernel::Tiled(Tiling {
                team: 4,
                rows: 2,
                tile: 64,
            }),
        ] {
            assert_eq!(kernel.to_string().parse::<ForwardKernel>(), Ok(kernel));
        }
        for bad in [
            "tiled:3:1:64",
            "tiled:4:1:30",
            "tiled:4:0:64",
            "tiled:4",
            "fast",
        ] {
            assert!(bad.parse::<ForwardKernel>().is_err(), "{bad}");
        }
    }

    #[test]
    fn candidates_fit_the_workgroup_memory() {
        let all = candidates(32, 32 << 10);
        assert_eq!(all[0], ForwardKernel::Registers);
        assert_eq!(all.len(), 7, "{all:?}");
        for kernel in &all[1..] {
            let ForwardKernel::Tiled(t) = kernel else {
                panic!("{kernel:?}")
            };
            assert!(t.workgroup_bytes(32) <= 32 << 10, "{t:?}");
        }
        // WebGPU's minimum of 16 KiB at head dimension 64 leaves only small tiles, if any.
        for kernel in &candidates(64, 16 << 10)[1..] {
            let ForwardKernel::Tiled(t) = kernel else {
                panic!("{kernel:?}")
            };
            assert!(t.workgroup_bytes(64) <= 16 << 10, "{t:?}");
        }
    }

    #[test]
    fn shape_classes_round_to_powers_of_two() {
        let shape = |rows, keys| AttentionShape {
            heads: 4,
            rows,
            keys,
            head_dim: 32,
            buckets: 7,
            max_bucket: 6,
        };
        assert_eq!(shape_class(&shape(3000, 4096)), "d32-bsmall-r12-k12-h2");
        assert_eq!(
            shape_class(&shape(4096, 4096)),
            shape_class(&shape(3000, 4096))
        );
        assert_ne!(
            shape_class(&shape(4097, 4096)),
            shape_class(&shape(4096, 4096))
        );
    }
}
