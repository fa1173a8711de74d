//! The graph a command runs on (`--data FILE | --synthetic SPEC`), and checking before any
//! work that an output file can be written.

use std::fs::OpenOptions;
use std::path::Path;

use anyhow::Context;
use megagraph_engine::{
    graph::{Graph, SyntheticSpec, load_graph},
    progress::task,
};

/// The synthetic graph used when neither `--data` nor `--synthetic` is given.
pub const DEFAULT_SYNTHETIC: &str = "sbm:1000:4";

/// Loads `data`, or generates `synthetic` (the default synthetic graph when neither is given)
/// with `seed`.
pub fn load(data: Option<&Path>, synthetic: Option<&str>, seed: u64) -> anyhow::Result<Graph> {
    if let Some(path) = data {
        let _task = task(format!("loading {}", path.display()));
        return Ok(load_graph(path)?);
    }
    let text = synthetic.unwrap_or(DEFAULT_SYNTHETIC);
    let spec: SyntheticSpec = text
        .parse()
        .with_context(|| format!("--synthetic {text}"))?;
    let _task = task(format!("generating {spec}"));
    Ok(spec.generate(seed)?)
}

/// Fails, naming `flag` and `path`, unless `path` can be opened for writing; a file that did
/// not exist is removed again, one that did is left as it was.
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    let existed = path.exists();
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("{flag} {}: cannot write it", path.display()))?;
    if !existed {
        // Best effort: the file was created only to see that it could be.
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
