//! Bad input to `megagraph` gets one clear line on stderr naming the file (or flag) and the
//! problem, a non-zero exit code, and no panic or backtrace.
//!
//! Most cases run with `--backend ndarray`: their error comes before any device work, so this
//! keeps wgpu (and its shader compilation) out of the process. [`bad_model_shape_on_wgpu`]
//! checks an error path on the default wgpu backend.

use std::path::Path;

use crate::common::{
    NpzArray, Run, TestResult, adapters, cora_path, have_adapter, megagraph,
    megagraph_without_drivers, tiny_graph_arrays, tiny_graph_with, write_npz,
};

/// Asserts `run` failed with exit code `code` (any non-zero code if `None`) and printed
/// exactly one non-empty stderr line (wgpu's `XDG_RUNTIME_DIR` noise aside) that contains
/// every one of `needles`, and no panic or backtrace.
pub(crate) fn assert_one_line_error(run: &Run, code: Option<i32>, needles: &[&str]) {
    let all = run.describe();
    match code {
        Some(code) => assert_eq!(run.code, Some(code), "wrong exit code:\n{all}"),
        None => assert!(
            run.code.is_some_and(|c| c != 0),
            "expected a non-zero exit code:\n{all}"
        ),
    }
    assert!(!run.stderr.contains("panicked"), "panicked:\n{all}");
    assert!(
        !run.stderr.contains("stack backtrace"),
        "printed a backtrace:\n{all}"
    );
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "expected exactly one stderr line:\n{all}");
    let line = lines[0];
    assert!(!line.trim().is_empty(), "the error line is blank:\n{all}");
    for needle in needles {
        assert!(
            line.contains(needle),
            "the error line does not mention {needle:?}:\n{all}"
        );
    }
}

/// Runs `megagraph train --backend ndarray --data <path> extra...`.
fn train_ndarray_on(path: &Path, extra: &[&str]) -> Result<Run, crate::common::TestError> {
    let path = path.to_str().ok_or("temporary path is not UTF-8")?;
    let mut args = vec![
        "train",
        "--backend",
        "ndarray",
        "--epochs",
        "1",
        "--data",
        path,
    ];
    args.extend_from_slice(extra);
    megagraph(&args)
}

/// Writes `arrays` as `name` in a fresh temporary directory and trains on it.
fn train_on_npz(name: &str, arrays: &[(&str, NpzArray)]) -> Result<Run, crate::common::TestError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join(name);
    write_npz(&path, arrays)?;
    train_ndarray_on(&path, &[])
}

#[test]
fn truncated_npz() -> TestResult {
    let bytes = std::fs::read(cora_path())?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("cut-cora.npz");
    std::fs::write(&path, &bytes[..1000])?;
    let run = train_ndarray_on(&path, &[])?;
    assert_one_line_error(&run, Some(1), &["cut-cora.npz", "truncated"]);
    Ok(())
}

#[test]
fn non_zip_file_with_npz_extension() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("text.npz");
    std::fs::write(&path, "node,label\n0,1\n")?;
    let run = train_ndarray_on(&path, &[])?;
    assert_one_line_error(&run, Some(1), &["text.npz", "not a zip"]);
    Ok(())
}

#[test]
fn npz_missing_an_array() -> TestResult {
    let arrays: Vec<_> = tiny_graph_arrays()
        .into_iter()
        .filter(|(name, _)| *name != "labels")
        .collect();
    let run = train_on_npz("nolabels.npz", &arrays)?;
    assert_one_line_error(&run, Some(1), &["nolabels.npz", "missing array 'labels'"]);
    Ok(())
}

#[test]
fn npz_edge_index_out_of_range() -> TestResult {
    let run = train_on_npz(
        "badedge.npz",
        &tiny_graph_with("adj_indices", NpzArray::I64(vec![1, 2, 3, 4, 9], vec![5])),
    )?;
    assert_one_line_error(
        &run,
        Some(1),
        &["badedge.npz", "node index 9 out of range", "6 nodes"],
    );
    Ok(())
}

#[test]
fn npz_labels_of_wrong_length() -> TestResult {
    let run = train_on_npz(
        "shortlabels.npz",
        &tiny_graph_with("labels", NpzArray::I64(vec![0, 1, 0, 1], vec![4])),
    )?;
    assert_one_line_error(
        &run,
        Some(1),
        &["shortlabels.npz", "labels have 4 entries", "6 nodes"],
    );
    Ok(())
}

#[test]
fn npz_nan_feature() -> TestResult {
    let run = train_on_npz(
        "nan.npz",
        &tiny_graph_with(
            "attr_data",
            NpzArray::F32(vec![1.0, 2.0, f32::NAN, 1.0, 1.0, 0.5], vec![6]),
        ),
    )?;
    // Node 2's only feature is column 1.
    assert_one_line_error(&run, Some(1), &["nan.npz", "feature (2, 1) is NaN"]);
    Ok(())
}

#[test]
fn npz_empty_graph() -> TestResult {
    let arrays = [
        ("adj_indices", NpzArray::I64(vec![], vec![0])),
        ("adj_indptr", NpzArray::I64(vec![0], vec![1])),
        ("adj_shape", NpzArray::I64(vec![0, 0], vec![2])),
        ("attr_data", NpzArray::F32(vec![], vec![0])),
        ("attr_indices", NpzArray::I32(vec![], vec![0])),
        ("attr_indptr", NpzArray::I32(vec![0], vec![1])),
        ("attr_shape", NpzArray::I64(vec![0, 3], vec![2])),
        ("labels", NpzArray::I64(vec![], vec![0])),
    ];
    let run = train_on_npz("empty.npz", &arrays)?;
    assert_one_line_error(&run, Some(1), &["empty.npz", "no nodes"]);
    Ok(())
}

#[test]
fn split_leaving_a_set_empty() -> TestResult {
    // 6 nodes at random:0.8:0.1: round(4.8) = 5 train, round(0.6) = 1 validation, 0 test.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("tiny.npz");
    write_npz(&path, &tiny_graph_arrays())?;
    let run = train_ndarray_on(&path, &["--split", "random:0.8:0.1"])?;
    assert_one_line_error(
        &run,
        Some(1),
        &["cannot split", "random:0.8:0.1", "6 nodes", "0 test"],
    );
    Ok(())
}

#[test]
fn malformed_split_spec() -> TestResult {
    for spec in ["random:1.0:0.0", "random:0.9:0.1", "per-class:0", "halves"] {
        let run = megagraph(&[
            "train",
            "--backend",
            "ndarray",
            "--synthetic",
            "sbm:20:2",
            "--split",
            spec,
        ])?;
        assert_one_line_error(&run, Some(1), &["invalid split", spec]);
    }
    Ok(())
}

#[test]
fn unknown_flag() -> TestResult {
    let run = megagraph(&["train", "--bogus"])?;
    assert_one_line_error(&run, Some(2), &["--bogus"]);
    Ok(())
}

#[test]
fn malformed_flag_value() -> TestResult {
    let run = megagraph(&["train", "--epochs", "many"])?;
    assert_one_line_error(&run, Some(2), &["many", "--epochs"]);
    Ok(())
}

#[test]
fn unknown_subcommand() -> TestResult {
    let run = megagraph(&["frobnicate"])?;
    assert_one_line_error(&run, Some(2), &["frobnicate"]);
    Ok(())
}

#[test]
fn no_subcommand() -> TestResult {
    let run = megagraph(&[])?;
    assert_one_line_error(&run, Some(2), &["subcommand"]);
    Ok(())
}

#[test]
fn bad_synthetic_spec() -> TestResult {
    for (spec, problem) in [
        ("sbm:10", "sbm:NODES:CLASSES"),
        ("sbm:5:9", "CLASSES <= NODES"),
        ("er:10:2", "expected sbm"),
        ("rmat:40:2", "SCALE in 1..=31"),
    ] {
        let run = megagraph(&["train", "--backend", "ndarray", "--synthetic", spec])?;
        assert_one_line_error(&run, Some(1), &["--synthetic", spec, problem]);
    }
    Ok(())
}

#[test]
fn data_and_synthetic_conflict() -> TestResult {
    let run = megagraph(&["train", "--data", "graph.npz", "--synthetic", "sbm:20:2"])?;
    assert_one_line_error(&run, Some(2), &["--data", "--synthetic"]);
    Ok(())
}

#[test]
fn heads_not_dividing_hidden_on_ndarray() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:20:2",
        "--hidden",
        "10",
        "--heads",
        "3",
    ])?;
    assert_one_line_error(&run, Some(1), &["heads (3) must divide hidden (10)"]);
    Ok(())
}

#[test]
fn zero_epochs() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:20:2",
        "--epochs",
        "0",
    ])?;
    assert_one_line_error(&run, Some(1), &["epochs must be at least 1"]);
    Ok(())
}

/// The same check on the default (wgpu) backend: the adapter is opened before the model
/// configuration is validated, so this also shows that opening a device and then failing
/// still ends in one clean line.
#[test]
fn bad_model_shape_on_wgpu() -> TestResult {
    if !have_adapter("cli_errors::bad_model_shape_on_wgpu")? {
        return Ok(());
    }
    let run = megagraph(&[
        "train",
        "--synthetic",
        "sbm:20:2",
        "--hidden",
        "16",
        "--heads",
        "3",
    ])?;
    assert_one_line_error(&run, Some(1), &["heads (3) must divide hidden (16)"]);
    Ok(())
}

/// With no adapter visible, training on the default wgpu backend fails with one line that
/// says so and names the way out (`--backend ndarray`). The drivers are hidden through the
/// Vulkan and EGL loaders' environment variables; where that does not hide every adapter
/// (other platforms), the test says so and checks nothing more.
#[test]
fn no_adapter_on_wgpu() -> TestResult {
    let devices = megagraph_without_drivers(&["devices", "--json"])?;
    if !devices.stdout.contains(r#""adapters":[]"#) {
        eprintln!(
            "SKIPPED cli_errors::no_adapter_on_wgpu: cannot hide the adapters here: {}",
            devices.stdout.trim()
        );
        return Ok(());
    }
    let run = megagraph_without_drivers(&["train", "--synthetic", "sbm:20:2", "--epochs", "1"])?;
    assert_one_line_error(&run, Some(1), &["no wgpu adapter", "--backend ndarray"]);
    Ok(())
}

#[test]
fn missing_data_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("absent.npz");
    let run = train_ndarray_on(&path, &[])?;
    assert_one_line_error(&run, Some(1), &["absent.npz", "cannot read"]);
    Ok(())
}

#[test]
fn data_file_of_unknown_format() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("graph.txt");
    std::fs::write(&path, "0 1\n1 2\n")?;
    let run = train_ndarray_on(&path, &[])?;
    assert_one_line_error(&run, Some(1), &["graph.txt", "unknown graph format"]);
    Ok(())
}

#[test]
fn ogb_directory_with_edge_out_of_range() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("node-feat.csv"),
        "0.5,0,1\n0,1,0\n1,0,0\n0,0,3\n",
    )?;
    std::fs::write(dir.path().join("node-label.csv"), "0\n1\n1\n0\n")?;
    std::fs::write(dir.path().join("edge.csv"), "0,1\n1,2\n2,7\n3,0\n")?;
    let run = train_ndarray_on(dir.path(), &[])?;
    assert_one_line_error(
        &run,
        Some(1),
        &["edge.csv line 3", "node index 7 out of range", "4 nodes"],
    );
    Ok(())
}

#[test]
fn ogb_directory_missing_a_table() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("node-feat.csv"), "0.5,0\n0,1\n")?;
    std::fs::write(dir.path().join("node-label.csv"), "0\n1\n")?;
    let run = train_ndarray_on(dir.path(), &[])?;
    assert_one_line_error(&run, Some(1), &["missing edge.csv"]);
    Ok(())
}

#[test]
fn head_dim_beyond_the_fused_kernels_arrays() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:20:2",
        "--hidden",
        "144",
        "--heads",
        "2",
    ])?;
    assert_one_line_error(&run, Some(1), &["(hidden / heads = 72)", "at most 68"]);
    Ok(())
}

/// A timeout too long for a `Duration` is refused in one line (it used to pass the check and
/// panic in `Duration::from_secs_f64`).
#[test]
fn comm_timeout_beyond_a_duration() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:20:2",
        "--devices",
        "2",
        "--comm-timeout",
        "1e30",
    ])?;
    assert_one_line_error(&run, Some(1), &["--comm-timeout", "1e30"]);
    Ok(())
}

/// A learning rate that blows the parameters up ends in one line that says training diverged,
/// as its own error, not as invalid options.
#[test]
fn a_diverged_loss_is_reported_as_divergence() -> TestResult {
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:60:2",
        "--seq-len",
        "20",
        "--epochs",
        "2",
        "--hidden",
        "8",
        "--heads",
        "2",
        "--layers",
        "1",
        "--lr",
        "1e30",
    ])?;
    // Training has started (the graph's description is the first line): the error is the last.
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
    let last = run.stderr_lines().last().copied().unwrap_or_default();
    assert!(
        last.starts_with("error: training diverged at epoch 1")
            && last.contains("lower learning rate")
            && !last.contains("invalid training options"),
        "{}",
        run.describe()
    );
    Ok(())
}

/// Asserts that no clause (the parts of `line` between `: `) appears twice: each cause of an
/// error is printed once.
pub(crate) fn assert_no_repeated_clause(line: &str) {
    let clauses: Vec<&str> = line.split(": ").map(str::trim).collect();
    for (i, clause) in clauses.iter().enumerate() {
        assert!(
            !clauses[i + 1..].contains(clause),
            "the clause {clause:?} repeats in: {line}"
        );
    }
}

#[test]
fn no_error_line_repeats_a_clause() -> TestResult {
    let dir = tempfile::tempdir()?;
    let model = crate::common::workspace_root().join("examples/models/cora-gt.json");
    let model = model.to_str().ok_or("path is not UTF-8")?;
    let malformed = dir.path().join("c.json");
    std::fs::write(&malformed, r#"{"schema_version": 1, "devices": [}"#)?;
    let zero_flops = dir.path().join("zero.json");
    std::fs::write(
        &zero_flops,
        r#"{"schema_version": 1, "devices": [{"name": "a", "memory_bytes": 1e9, "flops": 0, "mem_bandwidth": 1e9}], "link": {"bandwidth": 1e9, "latency": 1e-6}}"#,
    )?;
    let absent = dir.path().join("absent.json");
    let mut runs = Vec::new();
    for (cluster, needle) in [
        (&malformed, "expected value"),
        (&zero_flops, "flops must be > 0"),
        (&absent, "cannot read"),
    ] {
        let cluster = cluster.to_str().ok_or("path is not UTF-8")?;
        let run = megagraph(&["plan", "--cluster", cluster, "--model", model])?;
        assert_one_line_error(&run, Some(1), &[needle]);
        runs.push(run);
    }
    runs.push(train_ndarray_on(&dir.path().join("absent.npz"), &[])?);
    for run in &runs {
        let lines = run.stderr_lines();
        assert_no_repeated_clause(lines.first().ok_or("no error line")?);
    }
    Ok(())
}

#[test]
fn synthetic_graph_beyond_memory_is_refused_before_it_is_generated() -> TestResult {
    let start = std::time::Instant::now();
    let run = megagraph(&[
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:1000000000000:4",
    ])?;
    assert_one_line_error(
        &run,
        Some(1),
        &["sbm:1000000000000:4", "needs about", "available"],
    );
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    Ok(())
}

/// On a software adapter (lavapipe) the device's memory is the host's: a sequence whose pair
/// buckets fit the host once (about 0.6 of what it has available) but not once more on the
/// device is refused before any device work, in one line.
#[test]
fn a_sequence_beyond_a_software_devices_share_of_host_memory_is_refused() -> TestResult {
    if !have_adapter("a_sequence_beyond_a_software_devices_share_of_host_memory_is_refused")? {
        return Ok(());
    }
    if adapters()[0].device_type != "Cpu" {
        eprintln!("SKIPPED: the first adapter is not a software one");
        return Ok(());
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo")?;
    let available_kib: f64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .ok_or("no MemAvailable")?
        .parse()?;
    // One sequence of all N nodes holds N² bucket bytes on the host and as many on the device.
    let nodes = ((0.6 * available_kib * 1024.0).sqrt() as usize).to_string();
    let spec = format!("sbm:{nodes}:4");
    let run = megagraph(&["train", "--synthetic", &spec, "--seq-len", &nodes, "--json"])?;
    assert_one_line_error(
        &run,
        Some(1),
        &["software adapter", "needs about", "available"],
    );
    Ok(())
}

#[test]
fn fast_allreduce_outside_mpirun_is_refused() -> TestResult {
    let run = megagraph(&["train", "--epochs", "1", "--fast-allreduce"])?;
    assert_one_line_error(&run, Some(1), &["--fast-allreduce", "under mpirun only"]);
    Ok(())
}
