//! Which attention kernels run on a device. Dense, per pass (forward, backward): the
//! register-blocked ones (`attention_forward.wgsl`, `attention_backward_*.wgsl`, shaped for
//! CPUs: four rows per invocation, the other operand read from device memory) or the tiled
//! ones (`*_tiled.wgsl`, shaped for GPUs) at one of their [`Tiling`]s. Hops, per pass: the team
//! of invocations per row ([`HopsTeam`]). Tiled kernels and teams of several reduce through
//! workgroup memory or, where the adapter has subgroups, by shuffles.
//!
//! At first use on an adapter, per pass and shape class, every candidate that fits the
//! adapter's workgroup memory is timed on the call's own inputs and the fastest is kept: in
//! memory, and in `megagraph/attention-kernels.json` under cubecl's autotune cache directory,
//! keyed by adapter, driver, pass and shape class, as cubecl keys its own autotune results.
//! Calls below [`TUNE_FROM_SCORES`] scores (pairs times heads for hops), and calls on software
//! adapters, run the CPU-shaped kernels untimed: on lavapipe every tiled shape measured 3.4 to
//! 5.7 times slower than the register-blocked kernels at S = 4096, forward + backward, and
//! hops teams of 4 and 8 1.8 to 3.7 times slower than one invocation per row at S = 2^16. A
//! device can be pinned to one kernel (and one hops team), or made to tune every call's shape
//! class whatever its adapter and size ([`select_kernels`], [`select_hops_team`]): the
//! benchmark times each variant that way, and the tests check each one against the reference
//! and the tuner on lavapipe.

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

use super::{
    plan::{AttentionShape, HopsShape, HopsTeam, Tiling},
    shaders::Shader,
};
use crate::device::adapter_identity;

/// Scores (heads · rows · keys) from which a call's forward kernel is chosen by timing.
pub const TUNE_FROM_SCORES: usize = 1 << 22;

/// The pass a kernel choice is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    /// `attention_forward*.wgsl`.
    Forward,
    /// `attention_backward_query*.wgsl` and `attention_backward_key*.wgsl` together.
    Backward,
}

/// One shape of the dense attention kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKernel {
    /// The register-blocked kernels: four rows per invocation, the other operand from device
    /// memory.
    Registers,
    /// The `*_tiled.wgsl` kernels at this tiling.
    Tiled(Tiling),
}

impl fmt::Display for AttentionKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttentionKernel::Registers => write!(f, "registers"),
            AttentionKernel::Tiled(t) => {
                write!(f, "tiled:{}:{}:{}", t.team, t.rows, t.tile)?;
                if t.subgroups {
                    write!(f, ":subgroups")?;
                }
                Ok(())
            }
        }
    }
}

impl std::str::FromStr for AttentionKernel {
    type Err = String;

    /// `registers` or `tiled:TEAM:ROWS:TILE`, optionally followed by `:subgroups`.
    fn from_str(text: &str) -> Result<Self, String> {
        if text == "registers" {
            return Ok(AttentionKernel::Registers);
        }
        let (rest, subgroups) = match text.strip_suffix(":subgroups") {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        let numbers: Option<Vec<u32>> = rest
            .strip_prefix("tiled:")
            .map(|rest| rest.split(':').map(|n| n.parse().ok()).collect())
            .and_then(|n: Option<Vec<u32>>| n);
        let tiling = match numbers.as_deref() {
            Some(&[team, rows, tile]) => Some(Tiling {
                team,
                rows,
                tile,
                subgroups,
            }),
            _ => None,
        };
        match tiling {
            Some(tiling) if tiling.is_valid() => Ok(AttentionKernel::Tiled(tiling)),
            _ => Err(format!(
                "{text:?}: expected registers or tiled:TEAM:ROWS:TILE[:subgroups] (TEAM dividing 64, TILE a multiple of 4 and of TEAM)"
            )),
        }
    }
}

/// The candidates at `head_dim` on an adapter with `workgroup_limit` bytes of workgroup memory,
/// with subgroup operations or not.
pub fn candidates(head_dim: usize, workgroup_limit: u64, subgroups: bool) -> Vec<AttentionKernel> {
    std::iter::once(AttentionKernel::Registers)
        .chain(
            Tiling::candidates(head_dim, workgroup_limit, subgroups)
                .into_iter()
                .map(AttentionKernel::Tiled),
        )
        .collect()
}

/// The candidates at `head_dim` on `device`'s adapter: within its workgroup memory, with
/// subgroup reductions where its device was opened with them.
pub fn candidates_on(device: &WgpuDevice, head_dim: usize) -> Vec<AttentionKernel> {
    let limit = WgpuRuntime::client(device)
        .properties()
        .hardware
        .max_shared_memory_size as u64;
    candidates(head_dim, limit, adapter_identity(device).subgroups)
}

/// How a device's kernels are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// By timing, on hardware adapters, for calls of [`TUNE_FROM_SCORES`] scores or more; the
    /// register-blocked kernels otherwise (the default).
    Automatic,
    /// By timing, for every call, whatever the adapter and size.
    Tuned,
    /// This kernel for both passes.
    Pinned(AttentionKernel),
}

/// What the process knows: selections per device, choices per adapter, pass and shape class,
/// the last kernel each device ran per pass, and each device's hops team.
#[derive(Default)]
struct State {
    selections: HashMap<WgpuDevice, Selection>,
    hops_teams: HashMap<WgpuDevice, HopsTeam>,
    last_hops: HashMap<(WgpuDevice, bool), HopsTeam>,
    last: HashMap<(WgpuDevice, Pass), AttentionKernel>,
    choices: Option<HashMap<String, serde_json::Value>>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Default::default);

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    f(&mut STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// Chooses `device`'s kernels as `selection` says from now on.
///
/// Panics on a kernel pinned with subgroup reductions on a device without them: its shader
/// would not compile there.
pub fn select_kernels(device: &WgpuDevice, selection: Selection) {
    if let Selection::Pinned(AttentionKernel::Tiled(tiling)) = selection {
        assert_subgroups(device, tiling.subgroups, &AttentionKernel::Tiled(tiling));
    }
    with_state(|s| s.selections.insert(device.clone(), selection));
}

/// Runs `device`'s hops kernels with `team` from now on, whatever its selection (until then
/// they are chosen as dense kernels are: by timing on hardware adapters, one invocation per
/// row on software ones).
///
/// Panics on an invalid team, or one with subgroup reductions on a device without them.
pub fn select_hops_team(device: &WgpuDevice, team: HopsTeam) {
    assert!(team.is_valid(), "{team}: a team is a power of two up to 64");
    assert_subgroups(device, team.subgroups, &team);
    with_state(|s| s.hops_teams.insert(device.clone(), team));
}

/// The team `device`'s hops kernels ran with last, per pass (forward, backward), if they ran.
pub fn last_hops_teams(device: &WgpuDevice) -> [Option<HopsTeam>; 2] {
    with_state(|s| {
        [false, true].map(|backward| s.last_hops.get(&(device.clone(), backward)).copied())
    })
}

/// The hops teams worth timing on `device`'s adapter (with subgroup reductions where its
/// device was opened with them).
pub fn hops_candidates_on(device: &WgpuDevice) -> Vec<HopsTeam> {
    HopsTeam::candidates(adapter_identity(device).subgroups)
}

/// Panics, naming `what`, if it needs subgroups and `device` has none.
fn assert_subgroups(device: &WgpuDevice, needs: bool, what: &dyn fmt::Display) {
    let adapter = adapter_identity(device);
    assert!(
        !needs || adapter.subgroups,
        "{what} reduces by subgroup shuffles, which {} does not run (no Features::SUBGROUP)",
        adapter.key
    );
}

/// The kernel `device` ran last for `pass`, if any.
pub fn last_kernel(device: &WgpuDevice, pass: Pass) -> Option<AttentionKernel> {
    with_state(|s| s.last.get(&(device.clone(), pass)).copied())
}

/// The file the choices persist in: a JSON object from [`choice_key`]s to kernels (dense) and
/// teams (hops).
pub fn cache_file() -> PathBuf {
    <CubeClRuntimeConfig as RuntimeConfig>::get()
        .autotune
        .cache
        .root()
        .join("megagraph")
        .join("attention-kernels.json")
}

fn load_choices() -> HashMap<String, serde_json::Value> {
    std::fs::read_to_string(cache_file())
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Writes the choices; a cache that cannot be written costs a re-tune next time, nothing else.
/// Another process's choices written since this one loaded the file are replaced (they are
/// timed again when next needed).
fn save_choices(choices: &HashMap<String, serde_json::Value>) {
    let path = cache_file();
    // Written aside and renamed over, so that another process never reads half a file.
    let aside = path.with_extension(format!("json.{}", std::process::id()));
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&aside, serde_json::to_vec_pretty(choices)?))
        .and_then(|()| std::fs::rename(&aside, &path));
    if let Err(error) = written {
        eprintln!(
            "warning: cannot write the attention-kernel choices to {}: {error}",
            path.display()
        );
    }
}

/// The shape class of a call: head dimension, small or large bias table, and the powers of two
/// of rows, keys and heads.
fn shape_class(shape: &AttentionShape) -> String {
    let log2 = |n: usize| n.next_power_of_two().trailing_zeros();
    let small_table = Shader::AttentionForward
        .constant("SMALL_TABLE")
        .expect("the attention shaders declare SMALL_TABLE");
    format!(
        "d{}-b{}-r{}-k{}-h{}",
        shape.head_dim,
        if shape.buckets <= small_table as usize {
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
fn time_kernel<K: Copy>(device: &WgpuDevice, kernel: K, run: &dyn Fn(K)) -> f64 {
    let client = WgpuRuntime::client(device);
    let sync = || {
        pollster::block_on(client.sync()).expect("the device finishes the attention kernels");
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

/// The kernel for `pass` of a call of `shape` on `device`; `run` launches the call's pass with
/// a kernel (each run overwrites the pass's outputs, so timing on them is harmless).
pub(super) fn choose(
    device: &WgpuDevice,
    shape: &AttentionShape,
    pass: Pass,
    run: &dyn Fn(AttentionKernel),
) -> AttentionKernel {
    let selection = with_state(|s| s.selections.get(device).copied());
    let scores = shape.heads * shape.rows * shape.keys;
    let kernel = match selection.unwrap_or(Selection::Automatic) {
        Selection::Pinned(kernel) => kernel,
        selection if !worth_timing(device, selection, scores) => AttentionKernel::Registers,
        _ => tuned(
            device,
            choice_key(&adapter_identity(device).key, pass, shape),
            candidates_on(device, shape.head_dim),
            run,
        )
        .unwrap_or(AttentionKernel::Registers),
    };
    with_state(|s| s.last.insert((device.clone(), pass), kernel));
    kernel
}

/// The team for the hops kernels of one pass (`backward` or not) of a call of `shape` on
/// `device`: the one set by [`select_hops_team`], else chosen as [`choose`] chooses dense
/// kernels (by timing on hardware adapters from [`TUNE_FROM_SCORES`] pair scores, or always
/// under [`Selection::Tuned`]; one invocation per row otherwise). `run` launches the pass.
pub(super) fn choose_hops_team(
    device: &WgpuDevice,
    shape: &HopsShape,
    backward: bool,
    run: &dyn Fn(HopsTeam),
) -> HopsTeam {
    let (pinned, selection) = with_state(|s| {
        (
            s.hops_teams.get(device).copied(),
            s.selections.get(device).copied(),
        )
    });
    let pass = if backward {
        "HopsBackward"
    } else {
        "HopsForward"
    };
    let team = match pinned {
        Some(team) => team,
        None if !worth_timing(
            device,
            selection.unwrap_or(Selection::Automatic),
            shape.heads * shape.pairs,
        ) =>
        {
            HopsTeam::SINGLE
        }
        None => {
            let adapter = adapter_identity(device).key;
            let key = format!("{adapter}|{pass}|{}", hops_shape_class(shape));
            tuned(device, key, hops_candidates_on(device), run).unwrap_or(HopsTeam::SINGLE)
        }
    };
    with_state(|s| s.last_hops.insert((device.clone(), backward), team));
    team
}

/// Whether a call of `scores` scores on `device` is chosen by timing under `selection`.
fn worth_timing(device: &WgpuDevice, selection: Selection, scores: usize) -> bool {
    match selection {
        Selection::Tuned => true,
        Selection::Automatic => !adapter_identity(device).software && scores >= TUNE_FROM_SCORES,
        Selection::Pinned(_) => false,
    }
}

/// The choice under `key`: from memory, from the cache file, or the fastest of `candidates`
/// timed now with `run` (then remembered and written); `None` without candidates.
fn tuned<K>(device: &WgpuDevice, key: String, candidates: Vec<K>, run: &dyn Fn(K)) -> Option<K>
where
    K: Copy + Serialize + serde::de::DeserializeOwned,
{
    let known = with_state(|s| {
        s.choices
            .get_or_insert_with(load_choices)
            .get(&key)
            .and_then(|value| serde_json::from_value(value.clone()).ok())
    });
    known.or_else(|| {
        let fastest = candidates
            .into_iter()
            .map(|kernel| (kernel, time_kernel(device, kernel, run)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(kernel, _)| kernel)?;
        let value = serde_json::to_value(fastest).expect("kernels serialise");
        with_state(|s| {
            let choices = s.choices.get_or_insert_with(load_choices);
            choices.insert(key, value);
            save_choices(choices);
        });
        Some(fastest)
    })
}

/// The shape class of a hops call: head dimension, small or large bias table, and the powers
/// of two of rows, pairs per row (rounded) and heads.
fn hops_shape_class(shape: &HopsShape) -> String {
    let log2 = |n: usize| n.next_power_of_two().trailing_zeros();
    format!(
        "{}-p{}",
        shape_class(&shape.operands()),
        log2(shape.pairs.div_ceil(shape.rows))
    )
}

/// The key of a choice in memory and in [`cache_file`].
pub fn choice_key(adapter: &str, pass: Pass, shape: &AttentionShape) -> String {
    format!("{adapter}|{pass:?}|{}", shape_class(shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_read_back_as_written() {
        for kernel in [
            AttentionKernel::Registers,
            AttentionKernel::Tiled(Tiling {
                team: 4,
                rows: 2,
                tile: 64,
                subgroups: false,
            }),
            AttentionKernel::Tiled(Tiling {
                team: 8,
                rows: 1,
                tile: 32,
                subgroups: true,
            }),
        ] {
            assert_eq!(kernel.to_string().parse::<AttentionKernel>(), Ok(kernel));
        }
        for bad in [
            "tiled:3:1:64",
            "tiled:4:1:30",
            "tiled:4:0:64",
            "tiled:4",
            "tiled:4:1:64:shuffles",
            "fast",
        ] {
            assert!(bad.parse::<AttentionKernel>().is_err(), "{bad}");
        }
    }

    #[test]
    fn candidates_fit_the_workgroup_memory() {
        let all = candidates(32, 32 << 10, false);
        assert_eq!(all[0], AttentionKernel::Registers);
        assert_eq!(all.len(), 7, "{all:?}");
        // Teams of 4 and 8 over one and two rows again, by subgroups.
        let with_subgroups = candidates(32, 32 << 10, true);
        assert_eq!(with_subgroups.len(), 11, "{with_subgroups:?}");
        assert!(with_subgroups[1..].iter().all(|kernel| match kernel {
            AttentionKernel::Tiled(t) => !t.subgroups || t.team > 1,
            AttentionKernel::Registers => false,
        }));
        for kernel in &all[1..] {
            let AttentionKernel::Tiled(t) = kernel else {
                panic!("{kernel:?}")
            };
            assert!(t.workgroup_bytes(32) <= 32 << 10, "{t:?}");
        }
        // WebGPU's minimum of 16 KiB at head dimension 64 leaves only small tiles, if any.
        for kernel in &candidates(64, 16 << 10, true)[1..] {
            let AttentionKernel::Tiled(t) = kernel else {
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
