//! Helpers shared by the integration tests: running the `megagraph` binary, the wgpu-adapter
//! gate, the Cora file, and a small `.npz` writer.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use megagraph_engine::burn::backend::wgpu::WgpuDevice;
use megagraph_engine::burn::cubecl::config::{
    CubeClRuntimeConfig, RuntimeConfig, autotune::AutotuneLevel, cache::CacheConfig,
};
use megagraph_engine::device::{
    AdapterSelector, AdapterSummary, list_adapters, open_logical_devices, open_wgpu,
};
use megagraph_engine::graph::Graph;
use npyz::{AutoSerialize, Order, Serialize, WriterBuilder};
use zip::write::SimpleFileOptions;

/// The error type of every test.
pub type TestError = Box<dyn std::error::Error>;
/// The result type of every test.
pub type TestResult = Result<(), TestError>;

/// Set to `1` (as CI does) to make tests that need a wgpu adapter fail when there is none.
pub const REQUIRE_ADAPTER_VAR: &str = "MEGAGRAPH_REQUIRE_ADAPTER";

/// cubecl's autotune level variable; accepted values in cubecl 0.10 are `minimal`/`0`,
/// `balanced`/`1` (the default), `extensive`/`2` and `full`/`3`.
pub const AUTOTUNE_VAR: &str = "CUBECL_AUTOTUNE_LEVEL";

/// The autotune level the tests run at unless [`AUTOTUNE_VAR`] is set: `minimal` anchors
/// autotune keys to powers of 2.5 instead of 2, so fewer distinct shapes get tuned (the level
/// changes nothing else in cubecl 0.10, so results are unaffected; only kernel choice can be).
pub const TEST_AUTOTUNE_LEVEL: &str = "minimal";

/// The variable that, at `0`, leaves the model's overheads unmeasured in a profile (timing
/// the model takes minutes in a debug build).
pub const PROFILE_OVERHEADS_VAR: &str = "MEGAGRAPH_PROFILE_OVERHEADS";

/// The environment every `megagraph` of the tests runs in unless a test sets these itself:
/// the test autotune level (unless [`AUTOTUNE_VAR`] is set outside), and profiles without the
/// overheads (one test measures them).
pub fn test_environment() -> Vec<(&'static str, String)> {
    let autotune = std::env::var(AUTOTUNE_VAR).unwrap_or_else(|_| TEST_AUTOTUNE_LEVEL.into());
    vec![
        (AUTOTUNE_VAR, autotune),
        (PROFILE_OVERHEADS_VAR, "0".into()),
    ]
}

/// The workspace root (the directory above `cli/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent directory")
        .to_path_buf()
}

/// Path of `shared/data/cora.npz`, which sits beside the repository (`<clone>/../shared`) or
/// inside it.
pub fn cora_path() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("../../shared/data/cora.npz"),
        manifest.join("../shared/data/cora.npz"),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| candidates[0].clone())
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    fn from_output(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Lines of standard error, without wgpu's GL-probe noise about `XDG_RUNTIME_DIR`.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.contains("XDG_RUNTIME_DIR"))
            .collect()
    }

    /// Everything it printed, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "exit code {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `megagraph args...` from the workspace root (so cubecl's autotune cache lands in the
/// workspace `target/`), with backtraces enabled (so a panic or a `{:?}`-printed error would
/// show one) and the tests' autotune level unless the caller's environment sets one.
pub fn megagraph(args: &[&str]) -> Result<Run, TestError> {
    megagraph_with_env(args, &[])
}

/// Runs `megagraph args...` like [`megagraph`], with the variables `env` set.
pub fn megagraph_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<Run, TestError> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_megagraph"));
    command
        .envs(test_environment())
        .envs(env.iter().copied())
        .args(args)
        .current_dir(workspace_root())
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null());
    Ok(Run::from_output(command.output()?))
}

/// Runs `megagraph args...` like [`megagraph`], with the Vulkan and EGL loaders pointed at
/// manifests that do not exist, which hides Mesa's (and any other) Vulkan and GL drivers on
/// Linux.
pub fn megagraph_without_drivers(args: &[&str]) -> Result<Run, TestError> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_megagraph"));
    command
        .args(args)
        .current_dir(workspace_root())
        .env("RUST_BACKTRACE", "1")
        .env("VK_ICD_FILENAMES", "/nonexistent/megagraph-test-icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/megagraph-test-icd.json")
        .env(
            "__EGL_VENDOR_LIBRARY_FILENAMES",
            "/nonexistent/megagraph-test-egl.json",
        )
        .stdin(Stdio::null());
    Ok(Run::from_output(command.output()?))
}

/// The compute-capable wgpu adapters, enumerated once per process.
pub fn adapters() -> &'static [AdapterSummary] {
    static ADAPTERS: OnceLock<Vec<AdapterSummary>> = OnceLock::new();
    ADAPTERS.get_or_init(list_adapters)
}

/// Whether a test that needs a wgpu adapter can run: `Ok(true)` if there is one; an error if
/// there is none and `MEGAGRAPH_REQUIRE_ADAPTER=1`; otherwise `Ok(false)` after saying loudly
/// on stderr that `test` skipped.
pub fn have_adapter(test: &str) -> Result<bool, TestError> {
    if !adapters().is_empty() {
        return Ok(true);
    }
    if std::env::var(REQUIRE_ADAPTER_VAR).is_ok_and(|v| v == "1") {
        return Err(format!(
            "{test}: no wgpu adapter found and {REQUIRE_ADAPTER_VAR}=1 (install mesa-vulkan-drivers for lavapipe)"
        )
        .into());
    }
    eprintln!("SKIPPED {test}: no wgpu adapter; set {REQUIRE_ADAPTER_VAR}=1 to fail instead");
    Ok(false)
}

/// Opens the default wgpu device for in-process tests, or `None` (after [`have_adapter`]
/// said why) when there is no adapter.
///
/// The device is opened once per process and shared by the tests (a second device would
/// compile and tune every kernel again). The first call also configures cubecl for this
/// process ([`configure_cubecl`]).
pub fn wgpu_device(test: &str) -> Result<Option<WgpuDevice>, TestError> {
    if !have_adapter(test)? {
        return Ok(None);
    }
    static DEVICE: OnceLock<Result<WgpuDevice, String>> = OnceLock::new();
    let device = DEVICE.get_or_init(|| {
        configure_cubecl();
        open_wgpu(None).map_err(|e| e.to_string())
    });
    Ok(Some(device.clone()?))
}

/// A device of the first OpenGL adapter (`gl:0`, Mesa's llvmpipe through EGL in CI), with the
/// process's GL lock held while it lives.
pub struct GlDevice {
    /// The device, of its own (see [`gl_device`]).
    pub device: WgpuDevice,
    _only_gl_test: std::sync::MutexGuard<'static, ()>,
}

/// Opens a device of the first OpenGL adapter for an in-process test, or `None` after saying
/// loudly that `test` skipped when there is none; an error instead when there is none and
/// `MEGAGRAPH_REQUIRE_ADAPTER=1`.
///
/// One GL test runs at a time, each on a device of its own. Measured here (llvmpipe GL, Mesa
/// 22.3.6): two tests sharing one GL device from two threads ran 100× slower than each alone
/// (650 s against 5 s); two GL devices busy in two threads, one of them waiting on a
/// burn-autotune timing, stalled for minutes. One GL device beside Vulkan devices (a mixed
/// job) runs at full speed, and GL kernels compile in seconds, so a device per test costs
/// little.
pub fn gl_device(test: &str) -> Result<Option<GlDevice>, TestError> {
    static ONLY_ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    configure_cubecl();
    let guard = ONLY_ONE.lock().unwrap_or_else(|p| p.into_inner());
    match open_wgpu(Some(&GL)) {
        Ok(device) => Ok(Some(GlDevice {
            device,
            _only_gl_test: guard,
        })),
        Err(e) if std::env::var(REQUIRE_ADAPTER_VAR).is_ok_and(|v| v == "1") => Err(format!(
            "{test}: no OpenGL adapter ({e}) and {REQUIRE_ADAPTER_VAR}=1 (install libegl1 libegl-mesa0 libgl1-mesa-dri for llvmpipe)"
        )
        .into()),
        Err(e) => {
            eprintln!(
                "SKIPPED {test}: no OpenGL adapter ({e}); set {REQUIRE_ADAPTER_VAR}=1 to fail instead"
            );
            Ok(None)
        }
    }
}

/// The first OpenGL adapter.
pub const GL: AdapterSelector = AdapterSelector::OfApi {
    api: wgpu::Backend::Gl,
    ordinal: 0,
};

/// Configures cubecl for this test process, once: the tests' autotune level (unless
/// [`AUTOTUNE_VAR`] is set), and an autotune cache of this process alone under the workspace's
/// `target/tmp/autotune/` (not `cli/target/`, the tests' working directory). The process opens
/// Vulkan and GL devices in an order its threads decide, and cubecl keys saved results by
/// the order devices were opened, so results saved by another run would reach another adapter
/// (see `device::declare_adapters`). Directories of processes no longer running are removed.
pub fn configure_cubecl() {
    static CONFIGURED: OnceLock<()> = OnceLock::new();
    CONFIGURED.get_or_init(|| {
        let parent = workspace_root().join("target/tmp/autotune");
        for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let running = Path::new("/proc").join(&name).exists();
            if !running {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        if std::env::var_os(AUTOTUNE_VAR).is_none() {
            config.autotune.level = AutotuneLevel::Minimal;
        }
        config.autotune.cache = CacheConfig::File(parent.join(std::process::id().to_string()));
        CubeClRuntimeConfig::set(config);
    });
}

/// Four logical wgpu devices on the first adapter, shared by the tests of this process (each
/// device compiles its own kernels, so reusing them saves minutes on lavapipe); `None` after
/// saying so when there is no adapter and none is required.
pub fn wgpu_logical_devices(test: &str) -> Result<Option<Vec<WgpuDevice>>, TestError> {
    if wgpu_device(test)?.is_none() {
        return Ok(None);
    }
    static DEVICES: OnceLock<Result<Vec<WgpuDevice>, String>> = OnceLock::new();
    let devices = DEVICES.get_or_init(|| open_logical_devices(None, 4).map_err(|e| e.to_string()));
    Ok(Some(devices.clone()?))
}

/// An array to write into a test archive: data and shape.
#[derive(Debug, Clone)]
pub enum NpzArray {
    /// `<i4`, row-major.
    I32(Vec<i32>, Vec<u64>),
    /// `<i8`, row-major.
    I64(Vec<i64>, Vec<u64>),
    /// `<f4`, row-major.
    F32(Vec<f32>, Vec<u64>),
    /// `<U16` strings, 1-D.
    Unicode(Vec<String>),
}

/// Writes `arrays` as an `.npz` (deflate-compressed, as `np.savez_compressed` does).
pub fn write_npz(path: &Path, arrays: &[(&str, NpzArray)]) -> TestResult {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path)?);
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, array) in arrays {
        zip.start_file(format!("{name}.npy"), options)?;
        match array {
            NpzArray::I32(d, s) => write_array(&mut zip, d, s)?,
            NpzArray::I64(d, s) => write_array(&mut zip, d, s)?,
            NpzArray::F32(d, s) => write_array(&mut zip, d, s)?,
            NpzArray::Unicode(strings) => {
                let mut writer = npyz::WriteOptions::<str>::new()
                    .dtype(npyz::DType::new_scalar("<U16".parse()?))
                    .shape(&[strings.len() as u64])
                    .writer(&mut zip)
                    .begin_nd()?;
                for string in strings {
                    writer.push(string.as_str())?;
                }
                writer.finish()?;
            }
        }
    }
    zip.finish()?.flush()?;
    Ok(())
}

/// Writes one numeric array, row-major.
fn write_array<T: Serialize + AutoSerialize + Copy>(
    out: &mut impl Write,
    data: &[T],
    shape: &[u64],
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .order(Order::C)
        .writer(out)
        .begin_nd()?;
    writer.extend(data.iter().copied())?;
    writer.finish()
}

/// The arrays of a valid 6-node graph in the gnn-benchmark CSR layout: a path 0-1-2-3-4-5,
/// 3 features per node (CSR), 2 classes.
pub fn tiny_graph_arrays() -> Vec<(&'static str, NpzArray)> {
    vec![
        ("adj_data", NpzArray::F32(vec![1.0; 5], vec![5])),
        ("adj_indices", NpzArray::I64(vec![1, 2, 3, 4, 5], vec![5])),
        (
            "adj_indptr",
            NpzArray::I64(vec![0, 1, 2, 3, 4, 5, 5], vec![7]),
        ),
        ("adj_shape", NpzArray::I64(vec![6, 6], vec![2])),
        (
            "attr_data",
            NpzArray::F32(vec![1.0, 2.0, 3.0, 1.0, 1.0, 0.5], vec![6]),
        ),
        (
            "attr_indices",
            NpzArray::I32(vec![0, 2, 1, 0, 1, 2], vec![6]),
        ),
        (
            "attr_indptr",
            NpzArray::I32(vec![0, 1, 2, 3, 4, 5, 6], vec![7]),
        ),
        ("attr_shape", NpzArray::I64(vec![6, 3], vec![2])),
        ("labels", NpzArray::I64(vec![0, 0, 0, 1, 1, 1], vec![6])),
    ]
}

/// The arrays of `graph` in the gnn-benchmark CSR layout, with `node_names` (`node-I`) and
/// `class_names` (`class-C`).
pub fn named_graph_arrays(graph: &Graph) -> Vec<(&'static str, NpzArray)> {
    let n = graph.num_nodes();
    let (mut indptr, mut indices) = (vec![0i64], Vec::new());
    let (mut attr_indptr, mut attr_indices, mut attr_data) = (vec![0i64], Vec::new(), Vec::new());
    for node in 0..n {
        indices.extend(
            graph
                .adjacency()
                .neighbors(node)
                .iter()
                .map(|&m| i64::from(m)),
        );
        indptr.push(indices.len() as i64);
        let (cols, values) = graph.features().row(node);
        attr_indices.extend(cols.iter().map(|&c| i64::from(c)));
        attr_data.extend_from_slice(values);
        attr_indptr.push(attr_indices.len() as i64);
    }
    let (edges, nnz) = (indices.len() as u64, attr_indices.len() as u64);
    let labels = graph.labels().iter().map(|&l| i64::from(l)).collect();
    vec![
        ("adj_indices", NpzArray::I64(indices, vec![edges])),
        ("adj_indptr", NpzArray::I64(indptr, vec![n as u64 + 1])),
        (
            "adj_shape",
            NpzArray::I64(vec![n as i64, n as i64], vec![2]),
        ),
        ("attr_data", NpzArray::F32(attr_data, vec![nnz])),
        ("attr_indices", NpzArray::I64(attr_indices, vec![nnz])),
        (
            "attr_indptr",
            NpzArray::I64(attr_indptr, vec![n as u64 + 1]),
        ),
        (
            "attr_shape",
            NpzArray::I64(vec![n as i64, graph.feature_dim() as i64], vec![2]),
        ),
        ("labels", NpzArray::I64(labels, vec![n as u64])),
        (
            "node_names",
            NpzArray::Unicode((0..n).map(|i| format!("node-{i}")).collect()),
        ),
        (
            "class_names",
            NpzArray::Unicode(
                (0..graph.num_classes())
                    .map(|c| format!("class-{c}"))
                    .collect(),
            ),
        ),
    ]
}

/// [`tiny_graph_arrays`] with array `name` replaced by `array`.
pub fn tiny_graph_with(name: &str, array: NpzArray) -> Vec<(&'static str, NpzArray)> {
    tiny_graph_arrays()
        .into_iter()
        .map(|(n, a)| {
            if n == name {
                (n, array.clone())
            } else {
                (n, a)
            }
        })
        .collect()
}

/// Checks `got` against `want` element by element: max |got − want| ≤ 1e-4 · max |want| + 1e-6
/// (f32 sums in different orders differ by a few ulps of the largest terms). With `nonzero`,
/// `want` must not be all zero (else the check could not fail).
pub fn assert_close(what: &str, got: &[f32], want: &[f32], nonzero: bool) -> TestResult {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()).into());
    }
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    if !(err <= 1e-4 * scale + 1e-6) {
        return Err(format!("{what}: differs by {err:e} (scale {scale:e})").into());
    }
    if nonzero && scale == 0.0 {
        return Err(format!("{what}: the reference is all zero: the check could not fail").into());
    }
    Ok(())
}

/// The step losses of the JSON report on the last line of `stdout`.
pub fn step_losses(stdout: &str) -> Result<Vec<f64>, TestError> {
    let last = stdout.lines().last().ok_or("no output")?;
    let report: serde_json::Value = serde_json::from_str(last)?;
    Ok(report["step_losses"]
        .as_array()
        .ok_or("step_losses is a list")?
        .iter()
        .filter_map(serde_json::Value::as_f64)
        .collect())
}

/// Asserts `got[i]` equals `want[i]` within `relative` for every step.
pub fn assert_losses_close(got: &[f64], want: &[f64], relative: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} against {want:?}");
    for (step, (g, w)) in got.iter().zip(want).enumerate() {
        let error = (g - w).abs() / w.abs().max(1e-12);
        assert!(
            error <= relative,
            "{what}: step {} loss {g} against {w} (relative error {error:.2e} > {relative:e})",
            step + 1
        );
    }
}
