//! Checkpoint files in a directory: atomic writes, pruning, listing newest first, and loading
//! the newest one that verifies.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::format::{encode, read_checkpoint};
use super::{Checkpoint, CheckpointError};

/// Start of a checkpoint file's name.
const PREFIX: &str = "step-";
/// End of a checkpoint file's name.
const SUFFIX: &str = ".safetensors";
/// End of a temporary file's name (which starts with `.` and the final name).
const TEMP_SUFFIX: &str = ".tmp";

/// The step of the checkpoint file named `name`, if it is one (`step-{digits}.safetensors`).
fn step_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is one of our temporary files.
fn is_temp(name: &str) -> bool {
    name.strip_prefix('.')
        .is_some_and(|rest| rest.starts_with(PREFIX) && rest.ends_with(TEMP_SUFFIX))
}

/// Writes `bytes` to a new file `path` and syncs it to disk.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Syncs the directory entry list of `dir`, so that a rename in it survives a crash.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Removes `path`; one already gone is no error.
fn remove(path: &Path) -> Result<(), CheckpointError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(CheckpointError::io(path)(e)),
        _ => Ok(()),
    }
}

/// Writes `checkpoint` into `dir` (created if missing) as `step-{step:08}.safetensors`,
/// atomically: to a hidden temporary file in the same directory, synced, renamed onto the final
/// name, and the directory synced. A crash mid-write leaves at most a stray temporary file,
/// never a torn checkpoint under a final name; a checkpoint of the same step is replaced.
///
/// Then removes all but the `keep` newest checkpoints (by step; the one just written always
/// stays, even when older runs left higher steps) and the stray temporary files last modified
/// before this write began. `keep` must be at least 1. Returns the file's path.
pub fn write_checkpoint(
    dir: &Path,
    checkpoint: &Checkpoint,
    keep: usize,
) -> Result<PathBuf, CheckpointError> {
    let name = format!("{PREFIX}{:08}{SUFFIX}", checkpoint.meta.step);
    let path = dir.join(&name);
    if keep == 0 {
        return Err(CheckpointError::Invalid {
            path,
            reason: "at least one checkpoint must be kept (keep is 0)".into(),
        });
    }
    let bytes = encode(&path, checkpoint)?;
    let started = SystemTime::now();
    fs::create_dir_all(dir).map_err(CheckpointError::io(dir))?;
    write_atomic(&path, &bytes)?;
    prune(dir, &path, keep, started)?;
    Ok(path)
}

/// Writes `bytes` as the file `path` atomically: to a hidden temporary file
/// `.{name}.{pid}.tmp` beside it, synced, renamed onto `path`, and the directory synced. A
/// crash leaves at most the temporary, never a torn file under `path`.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.{}{TEMP_SUFFIX}", std::process::id()));
    let committed = write_synced(&temp, bytes)
        .map_err(CheckpointError::io(&temp))
        .and_then(|()| fs::rename(&temp, path).map_err(CheckpointError::io(path)));
    if let Err(e) = committed {
        // Best effort: the write already failed, and a leftover temporary is harmless.
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    sync_dir(dir).map_err(CheckpointError::io(dir))
}

/// Removes all but the `keep` newest checkpoints of `dir` (never `written`) and the temporary
/// files last modified before `started`.
fn prune(
    dir: &Path,
    written: &Path,
    keep: usize,
    started: SystemTime,
) -> Result<(), CheckpointError> {
    for old in list_checkpoints(dir)?.iter().skip(keep) {
        if old != written {
            remove(old)?;
        }
    }
    for entry in fs::read_dir(dir).map_err(CheckpointError::io(dir))? {
        let entry = entry.map_err(CheckpointError::io(dir))?;
        if !entry.file_name().to_str().is_some_and(is_temp) {
            continue;
        }
        let path = entry.path();
        let modified = entry.metadata().and_then(|m| m.modified());
        match modified {
            Ok(modified) if modified < started => remove(&path)?,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io(&path)(e)),
        }
    }
    Ok(())
}

/// The checkpoint files of `dir` (`step-{digits}.safetensors`), newest (highest step) first;
/// none when `dir` does not exist. Temporary and other files are left out.
pub fn list_checkpoints(dir: &Path) -> Result<Vec<PathBuf>, CheckpointError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::io(dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(CheckpointError::io(dir))?;
        let path = entry.path();
        if let Some(step) = entry.file_name().to_str().and_then(step_of)
            && path.is_file()
        {
            found.push((step, path));
        }
    }
    found.sort_by(|a, b| b.cmp(a));
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// The newest checkpoint of `dir` that reads, verifies and holds the step its name says, with
/// the newer ones refused on the way (path and error each, newest first), so that the caller
/// can warn about them. Errors: [`CheckpointError::NoCheckpoint`] if `dir` has none,
/// [`CheckpointError::NoneValid`] if every one is refused.
#[allow(clippy::type_complexity)]
pub fn load_latest(
    dir: &Path,
) -> Result<(PathBuf, Checkpoint, Vec<(PathBuf, CheckpointError)>), CheckpointError> {
    let files = list_checkpoints(dir)?;
    if files.is_empty() {
        return Err(CheckpointError::NoCheckpoint {
            dir: dir.to_path_buf(),
        });
    }
    let mut refused = Vec::new();
    for path in files {
        match load_named(&path) {
            Ok(checkpoint) => return Ok((path, checkpoint, refused)),
            Err(e) => refused.push((path, e)),
        }
    }
    Err(CheckpointError::NoneValid {
        dir: dir.to_path_buf(),
        rejected: refused.iter().map(|(_, e)| e.to_string()).collect(),
    })
}

/// Reads the checkpoint file `path` (named by [`list_checkpoints`]) and checks that it holds
/// the step of its name.
fn load_named(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let checkpoint = read_checkpoint(path)?;
    let named = (path.file_name().and_then(|n| n.to_str())).and_then(step_of);
    let step = checkpoint.meta.step;
    if named != Some(step as u64) {
        return Err(CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it holds step {step}, not the step of its name"),
        });
    }
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::checkpoint::testutil::sample;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// The steps of `dir`'s checkpoints, newest first.
    fn steps(dir: &Path) -> Result<Vec<u64>, CheckpointError> {
        Ok(list_checkpoints(dir)?
            .iter()
            .filter_map(|p| p.file_name()?.to_str().and_then(step_of))
            .collect())
    }

    /// Cuts the last `bytes` bytes off `path`.
    fn truncate(path: &Path, bytes: u64) -> std::io::Result<()> {
        let file = fs::OpenOptions::new().write(true).open(path)?;
        let len = file.metadata()?.len();
        file.set_len(len - bytes)
    }

    #[test]
    fn names_parse_strictly() {
        assert_eq!(step_of("step-00000120.safetensors"), Some(120));
        assert_eq!(step_of("step-123456789.safetensors"), Some(123_456_789));
        for name in [
            "step-.safetensors",
            "step-12a.safetensors",
            "step-+1.safetensors",
            "step-00000001.safetensors.1.tmp",
            ".step-00000001.safetensors.1.tmp",
            "step-00000001.json",
        ] {
            assert_eq!(step_of(name), None, "{name}");
        }
        assert!(is_temp(".step-00000001.safetensors.77.tmp"));
        assert!(!is_temp("step-00000001.safetensors"));
    }

    #[test]
    fn write_then_read_back() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ckpt = dir.path().join("nested/ckpt");
        let path = write_checkpoint(&ckpt, &sample(7), 3)?;
        assert_eq!(path, ckpt.join("step-00000007.safetensors"));
        let read = read_checkpoint(&path)?;
        assert_eq!(read.meta, sample(7).meta);
        let (latest, loaded, refused) = load_latest(&ckpt)?;
        assert_eq!((latest, loaded.meta.step, refused.len()), (path, 7, 0));
        let names: Vec<String> = fs::read_dir(&ckpt)?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect::<std::io::Result<_>>()?;
        assert_eq!(names, ["step-00000007.safetensors"], "no temporary left");
        Ok(())
    }

    #[test]
    fn falls_back_past_a_truncated_newest() -> TestResult {
        let dir = tempfile::tempdir()?;
        for step in 1..=3 {
            write_checkpoint(dir.path(), &sample(step), 5)?;
        }
        let newest = dir.path().join("step-00000003.safetensors");
        truncate(&newest, 7)?;
        let (path, checkpoint, refused) = load_latest(dir.path())?;
        assert_eq!(path, dir.path().join("step-00000002.safetensors"));
        assert_eq!(checkpoint.meta.step, 2);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, newest);
        assert!(matches!(&refused[0].1, CheckpointError::Corrupt { path, .. } if *path == newest));
        Ok(())
    }

    #[test]
    fn refuses_a_file_renamed_to_another_step() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = write_checkpoint(dir.path(), &sample(4), 1)?;
        fs::rename(&path, dir.path().join("step-00000009.safetensors"))?;
        let err = load_latest(dir.path()).expect_err("the only file is misnamed");
        assert!(err.to_string().contains("holds step 4"), "{err}");
        Ok(())
    }

    #[test]
    fn none_valid_lists_every_refusal() -> TestResult {
        let dir = tempfile::tempdir()?;
        for step in [10, 20] {
            let path = write_checkpoint(dir.path(), &sample(step), 5)?;
            truncate(&path, 1)?;
        }
        match load_latest(dir.path()) {
            Err(CheckpointError::NoneValid { dir: d, rejected }) => {
                assert_eq!(d, dir.path());
                assert_eq!(rejected.len(), 2);
                assert!(
                    rejected[0].contains("step-00000020.safetensors"),
                    "{rejected:?}"
                );
                assert!(
                    rejected[1].contains("step-00000010.safetensors"),
                    "{rejected:?}"
                );
            }
            other => panic!("expected NoneValid, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn no_checkpoint_in_an_empty_or_missing_dir() -> TestResult {
        let dir = tempfile::tempdir()?;
        fs::write(dir.path().join("notes.txt"), "not a checkpoint")?;
        for d in [dir.path().to_path_buf(), dir.path().join("missing")] {
            let err = load_latest(&d).expect_err("nothing to load");
            assert!(matches!(&err, CheckpointError::NoCheckpoint { dir } if *dir == d));
            assert!(err.to_string().contains(&*d.to_string_lossy()), "{err}");
        }
        Ok(())
    }

    #[test]
    fn keeps_only_the_newest() -> TestResult {
        let dir = tempfile::tempdir()?;
        for step in 1..=5 {
            write_checkpoint(dir.path(), &sample(step), 2)?;
        }
        assert_eq!(steps(dir.path())?, [5, 4]);
        write_checkpoint(dir.path(), &sample(6), 1)?;
        assert_eq!(steps(dir.path())?, [6]);
        // An older run's higher step does not push out the checkpoint just written.
        write_checkpoint(dir.path(), &sample(3), 1)?;
        assert_eq!(steps(dir.path())?, [6, 3]);
        let err = write_checkpoint(dir.path(), &sample(7), 0).expect_err("keep 0");
        assert!(matches!(err, CheckpointError::Invalid { .. }), "{err}");
        Ok(())
    }

    #[test]
    fn stray_temporaries_are_never_listed_and_old_ones_are_removed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let old = dir.path().join(".step-00000009.safetensors.4242.tmp");
        let fresh = dir.path().join(".step-00000010.safetensors.4243.tmp");
        let hour = Duration::from_secs(3600);
        let now = SystemTime::now();
        for (path, modified) in [(&old, now - hour), (&fresh, now + hour)] {
            let mut file = File::create(path)?;
            file.write_all(b"partial")?;
            file.set_modified(modified)?;
        }
        assert!(list_checkpoints(dir.path())?.is_empty());
        assert!(matches!(
            load_latest(dir.path()),
            Err(CheckpointError::NoCheckpoint { .. })
        ));
        write_checkpoint(dir.path(), &sample(1), 1)?;
        assert!(!old.exists(), "a temporary older than the write is removed");
        assert!(
            fresh.exists(),
            "one newer than the write may be another writer's"
        );
        assert_eq!(steps(dir.path())?, [1]);
        Ok(())
    }
}
