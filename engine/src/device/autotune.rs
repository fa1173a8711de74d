//! Keeping burn's autotune results apart per adapter.
//!
//! cubecl saves the kernel each burn operation chose under a device number that counts the
//! devices a process opened, in order, not under the adapter. A process whose first device is
//! an OpenGL adapter would read what another process saved for its first device on Vulkan,
//! and replay a choice GL cannot run (an f32-atomic reduction: "Atomic add not supported").
//! So a process that opens devices of one adapter keeps its results in that adapter's own
//! directory (saved across runs, as before), and one that opens several adapters keeps them
//! in a directory of its own, that no other process reads.

use std::path::PathBuf;

use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig, cache::CacheConfig};

use crate::EngineError;

/// Where this process keeps burn's autotune results, once chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Keeping {
    /// Saved across runs for this one adapter (its stable id).
    Adapter(String),
    /// Kept for this process alone, whatever adapters it opens.
    Private,
    /// Kept where the program configured cubecl itself before opening a device (a test
    /// harness, an application embedding the engine): its choice, for every adapter.
    Program,
}

/// This process's choice.
static KEEPING: std::sync::Mutex<Option<Keeping>> = std::sync::Mutex::new(None);

/// Declares the adapters (stable ids) this process is about to open devices on, before it
/// opens them: the first declaration chooses where burn's autotune results are kept (see the
/// module's doc), unless the program configured cubecl itself first (then that choice stands
/// and is the program's to make safe). Declaring more adapters later is refused when the
/// results are kept for one other adapter (cubecl's directory is chosen once per process);
/// with results kept privately, any adapter may follow.
pub fn declare_adapters(ids: &[String]) -> Result<(), EngineError> {
    let mut distinct: Vec<&String> = ids.iter().collect();
    distinct.sort();
    distinct.dedup();
    let mut keeping = KEEPING.lock().unwrap_or_else(|p| p.into_inner());
    match (&*keeping, distinct.as_slice()) {
        (_, []) | (Some(Keeping::Private | Keeping::Program), _) => Ok(()),
        (Some(Keeping::Adapter(kept)), [one]) if kept == *one => Ok(()),
        (Some(Keeping::Adapter(kept)), _) => Err(EngineError::InvalidOptions(format!(
            "this process keeps burn's autotune results for adapter {kept}, and cannot open {} as well: declare every adapter of the process before opening the first (device::declare_adapters)",
            distinct
                .iter()
                .filter(|id| **id != kept)
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        (None, chosen) => {
            let choice = match chosen {
                [one] => Keeping::Adapter((*one).clone()),
                _ => Keeping::Private,
            };
            *keeping = Some(if keep_results(root_of(&choice)) {
                choice
            } else {
                Keeping::Program
            });
            Ok(())
        }
    }
}

/// The directory burn's autotune results are kept in under `keeping` (one the engine chose).
fn root_of(keeping: &Keeping) -> PathBuf {
    match keeping {
        Keeping::Program => unreachable!("the program chose its own directory"),
        Keeping::Adapter(id) => CacheConfig::Target
            .root()
            .join("adapters")
            .join(directory_name(id)),
        Keeping::Private => {
            std::env::temp_dir().join(format!("megagraph-autotune-{}", std::process::id()))
        }
    }
}

/// A directory name for an adapter id: its letters and digits, other characters as `_`.
fn directory_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Points cubecl's autotune cache at `root`, with the rest of its configuration as it would
/// read it (cubecl.toml, environment); false, leaving it, where the program configured cubecl
/// already.
fn keep_results(root: PathBuf) -> bool {
    let mut stored = CubeClRuntimeConfig::storage().lock();
    if stored.is_some() {
        return false;
    }
    let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
    config.autotune.cache = CacheConfig::File(root);
    *stored = Some(std::sync::Arc::new(config));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_ids_make_plain_directory_names() {
        assert_eq!(
            directory_name("gl:llvmpipe (LLVM 15.0.6, 256 bits)#0"),
            "gl_llvmpipe__LLVM_15.0.6__256_bits__0"
        );
        assert_ne!(
            root_of(&Keeping::Adapter("vulkan:x#0".into())),
            root_of(&Keeping::Adapter("gl:x#0".into()))
        );
    }
}
