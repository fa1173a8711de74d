//! `mpirun -np N megagraph …` on localhost (built with the `mpi` feature): plans across
//! processes train like the same plan in one process, checkpoints resume a run killed with
//! SIGKILL (also under another plan), a corrupted checkpoint is refused for the previous good
//! one, a hung process ends the job with its rank named, `profile` measures every process
//! into one cluster spec, and `train` without a plan profiles and plans across the processes
//! (a refusal before the job is one line from process 0, without an abort). Without `mpirun` on the PATH these tests fail: the feature
//! is on only where Open MPI is installed (CI installs it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cli_parallel::{RUN, plan_cluster};
use crate::common::{
    TestError, TestResult, assert_losses_close, have_adapter, megagraph, step_losses,
    test_environment, workspace_root,
};

/// What one `mpirun` did, and how long it took.
struct MpiRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    seconds: f64,
}

impl MpiRun {
    fn describe(&self) -> String {
        format!(
            "exit code {:?} after {:.0} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.seconds, self.stdout, self.stderr
        )
    }

    /// The step losses of the JSON report on the last line of standard output.
    fn step_losses(&self) -> Result<Vec<f64>, TestError> {
        step_losses(&self.stdout)
    }
}

/// Runs `mpirun -np processes megagraph args…` on localhost, with `env` set in every process.
fn mpirun(processes: usize, args: &[&str], env: &[(&str, &str)]) -> Result<MpiRun, TestError> {
    mpirun_programs(&[(processes, args)], env)
}

/// Runs one `mpirun` of several programs on localhost (Open MPI's `A : B` form): `processes`
/// processes of `megagraph args…` for each entry, ranks in order, with `env` set in all.
fn mpirun_programs(
    programs: &[(usize, &[&str])],
    env: &[(&str, &str)],
) -> Result<MpiRun, TestError> {
    let mut command = Command::new("mpirun");
    command.args(["--oversubscribe", "--bind-to", "none"]);
    let defaults = test_environment();
    for (index, (processes, args)) in programs.iter().enumerate() {
        if index > 0 {
            command.arg(":");
        }
        command.arg("-np").arg(processes.to_string());
        let defaults = defaults.iter().map(|(key, value)| (*key, value.as_str()));
        for (key, value) in defaults.chain(env.iter().copied()) {
            command.args(["-x", &format!("{key}={value}")]);
        }
        command.arg(env!("CARGO_BIN_EXE_megagraph")).args(*args);
    }
    command
        .current_dir(workspace_root())
        // Containers run as root; Open MPI refuses that unless told twice.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // No CMA (ptrace) between processes in containers: copy through shared memory.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null());
    let start = Instant::now();
    let output = command.output().map_err(|e| {
        format!("cannot run mpirun ({e}): the mpi feature's tests need Open MPI (apt-get install openmpi-bin libopenmpi-dev)")
    })?;
    Ok(MpiRun {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn text(path: &Path) -> Result<String, TestError> {
    Ok(path.to_str().ok_or("temp path is not UTF-8")?.to_string())
}

/// Plans `degrees` for the model of [`RUN`] on equal devices, device `i` on process
/// `processes[i]`; returns the plan's path.
fn plan_for(dir: &Path, processes: &[usize], degrees: &str) -> Result<String, TestError> {
    plan_cluster(dir, processes, 8e9, Some(degrees))
}

/// `train` with [`RUN`], no dropout (so that runs differing only in how work is spread are
/// comparable step by step) and `extra`.
fn train_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["train"];
    args.extend(RUN);
    args.extend(["--dropout", "0"]);
    args.extend(extra);
    args
}

/// The arguments as `&str`.
fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn plans_across_processes_train_like_the_same_plan_in_one_process() -> TestResult {
    if !have_adapter("plans_across_processes_train_like_the_same_plan_in_one_process")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let cases: [(&str, &[usize]); 4] = [
        ("dp2-pp1-cp1", &[0, 1]),
        ("dp1-pp2-cp1", &[0, 1]),
        ("dp1-pp1-cp2", &[0, 1]),
        ("dp2-pp1-cp2", &[0, 1, 2, 3]),
    ];
    for (degrees, processes) in cases {
        let plan = plan_for(dir.path(), processes, degrees)?;
        let devices = processes.len().to_string();
        let single = megagraph(&train_args(&[
            "--plan",
            &plan,
            "--devices",
            &devices,
            "--steps",
            "5",
            "--json",
        ]))?;
        assert_eq!(single.code, Some(0), "{degrees}: {}", single.describe());
        let want = step_losses(&single.stdout)?;
        assert_eq!(want.len(), 5, "{degrees}: {}", single.describe());
        let spread = mpirun(
            processes.len(),
            &train_args(&["--plan", &plan, "--steps", "5", "--json"]),
            &[],
        )?;
        assert_eq!(spread.code, Some(0), "{degrees}: {}", spread.describe());
        assert!(
            spread
                .stderr
                .contains(&format!("on {} processes", processes.len())),
            "{degrees}: {}",
            spread.describe()
        );
        let got = spread.step_losses()?;
        assert_losses_close(&got, &want, 1e-4, degrees);
        if degrees == "dp2-pp1-cp1" {
            // One device per process: the gradients go through MPI_Allreduce.
            let fast = mpirun(
                processes.len(),
                &train_args(&[
                    "--plan",
                    &plan,
                    "--steps",
                    "5",
                    "--fast-allreduce",
                    "--json",
                ]),
                &[],
            )?;
            assert_eq!(fast.code, Some(0), "{degrees}: {}", fast.describe());
            let what = format!("{degrees} with --fast-allreduce");
            assert_losses_close(&fast.step_losses()?, &want, 1e-4, &what);
        }
    }
    Ok(())
}

/// Two processes, rank 0 on lavapipe (Vulkan) and rank 1 on llvmpipe (OpenGL), each naming its
/// adapter (`--adapter` per program), train a cp2 plan like one lavapipe device.
#[test]
fn processes_on_vulkan_and_gl_train_like_one_device() -> TestResult {
    if !have_adapter("processes_on_vulkan_and_gl_train_like_one_device")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let plan = plan_for(dir.path(), &[0, 1], "dp1-pp1-cp2")?;
    // The plan's batch: two sequences per step (see `plan_cluster`).
    let single = megagraph(&train_args(&["--batch", "2", "--steps", "5", "--json"]))?;
    assert_eq!(single.code, Some(0), "{}", single.describe());
    let want = step_losses(&single.stdout)?;
    assert_eq!(want.len(), 5, "{}", single.describe());
    let on = |adapter| {
        train_args(&[
            "--plan",
            &plan,
            "--steps",
            "5",
            "--json",
            "--adapter",
            adapter,
        ])
    };
    let (vulkan, gl) = (on("vulkan:0"), on("gl:0"));
    let mixed = mpirun_programs(&[(1, &vulkan), (1, &gl)], &[])?;
    assert_eq!(mixed.code, Some(0), "{}", mixed.describe());
    assert!(
        mixed.stderr.contains("on 2 processes"),
        "{}",
        mixed.describe()
    );
    assert_losses_close(
        &mixed.step_losses()?,
        &want,
        1e-4,
        "cp2 over Vulkan and GL processes",
    );
    let last = mixed.stdout.lines().last().ok_or("no output")?;
    let report: serde_json::Value = serde_json::from_str(last)?;
    let adapters: Vec<&str> = report["devices"]
        .as_array()
        .ok_or("devices is a list")?
        .iter()
        .filter_map(|d| d["adapter"].as_str())
        .collect();
    assert!(
        adapters.len() == 2 && adapters[0].ends_with("| Vulkan") && adapters[1].ends_with("| Gl"),
        "rank 0 on Vulkan, rank 1 on GL: {adapters:?}"
    );
    Ok(())
}

/// The checkpoints of `dir`, sorted by name (= by step).
fn checkpoints(dir: &Path) -> Result<Vec<PathBuf>, TestError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    found.sort();
    Ok(found)
}

#[test]
fn a_run_killed_with_sigkill_resumes_from_its_checkpoint_under_any_plan() -> TestResult {
    if !have_adapter("a_run_killed_with_sigkill_resumes_from_its_checkpoint_under_any_plan")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let dp2 = plan_for(dir.path(), &[0, 1], "dp2-pp1-cp1")?;
    let whole = dir.path().join("whole");
    let cut = dir.path().join("cut");
    let every5 = |ck: &Path| -> Result<Vec<String>, TestError> {
        Ok(vec![
            "--checkpoint".into(),
            text(ck)?,
            "--checkpoint-every".into(),
            "5".into(),
            "--steps".into(),
            "10".into(),
            "--json".into(),
        ])
    };
    let with = |plan: &str, extra: &[String]| -> Vec<String> {
        let mut args: Vec<String> = train_args(&["--plan", plan])
            .into_iter()
            .map(String::from)
            .collect();
        args.extend(extra.iter().cloned());
        args
    };

    let uninterrupted = mpirun(2, &refs(&with(&dp2, &every5(&whole)?)), &[])?;
    assert_eq!(uninterrupted.code, Some(0), "{}", uninterrupted.describe());
    let want = uninterrupted.step_losses()?;
    assert_eq!(want.len(), 10, "{}", uninterrupted.describe());

    let killed = mpirun(
        2,
        &refs(&with(&dp2, &every5(&cut)?)),
        &[("MEGAGRAPH_FAULT", "kill:1:7")],
    )?;
    assert_ne!(killed.code, Some(0), "{}", killed.describe());
    assert!(
        killed.stderr.contains("rank 1") && killed.stderr.contains("signal 9"),
        "mpirun names the killed rank: {}",
        killed.describe()
    );
    assert!(killed.seconds < 300.0, "{}", killed.describe());
    let saved = checkpoints(&cut)?;
    assert_eq!(saved.len(), 1, "only step 5 was saved: {saved:?}");
    assert!(saved[0].ends_with("step-00000005.safetensors"), "{saved:?}");
    let other = dir.path().join("other");
    std::fs::create_dir(&other)?;
    std::fs::copy(&saved[0], other.join("step-00000005.safetensors"))?;

    let mut resume = every5(&cut)?;
    resume.push("--resume".into());
    let resumed = mpirun(2, &refs(&with(&dp2, &resume)), &[])?;
    assert_eq!(resumed.code, Some(0), "{}", resumed.describe());
    assert!(
        resumed.stderr.contains("resuming from"),
        "{}",
        resumed.describe()
    );
    let got = resumed.step_losses()?;
    assert_eq!(got[..5], want[..5], "steps 1–5 come from the checkpoint");
    assert_losses_close(&got[5..], &want[5..], 1e-5, "resumed under dp2");

    // Another plan of the same batch (two sequences per step) on four processes.
    let dp2_cp2 = plan_for(dir.path(), &[0, 1, 2, 3], "dp2-pp1-cp2")?;
    let mut resume_other = every5(&other)?;
    resume_other.push("--resume".into());
    let moved = mpirun(4, &refs(&with(&dp2_cp2, &resume_other)), &[])?;
    assert_eq!(moved.code, Some(0), "{}", moved.describe());
    let got = moved.step_losses()?;
    assert_losses_close(&got[5..], &want[5..], 1e-4, "resumed under dp2-cp2");
    Ok(())
}

/// Seconds within which a job with a hung or panicked process must end: under the 900 s
/// warm-up timeout that a job left waiting would sit out.
const BOUNDED_SECONDS: f64 = 600.0;

#[test]
fn a_hung_process_or_runtime_thread_ends_the_job() -> TestResult {
    if !have_adapter("a_hung_process_or_runtime_thread_ends_the_job")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let dp2 = plan_for(dir.path(), &[0, 1], "dp2-pp1-cp1")?;
    let run = mpirun(
        2,
        &train_args(&["--plan", &dp2, "--steps", "6", "--comm-timeout", "20"]),
        &[("MEGAGRAPH_FAULT", "hang:1:3")],
    )?;
    assert_ne!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stderr.contains("from rank 1: it is hung or gone"),
        "{}",
        run.describe()
    );
    // The bound tells a job that ends from one left waiting out the 900 s warm-up timeout. A
    // debug build's first epoch on a cold shader cache, beside other tests on two cores, took
    // 301 s once (the hang itself is detected 20 s after it starts), so the bound is 600 s.
    assert!(run.seconds < BOUNDED_SECONDS, "bounded: {}", run.describe());
    // A runtime thread that panics (as cubecl's poll thread does when wgpu's OpenGL context
    // lock times out) ends its process, and so the job, instead of leaving its device waiting.
    let orphan = mpirun(
        2,
        &train_args(&["--plan", &dp2, "--steps", "6"]),
        &[("MEGAGRAPH_FAULT", "orphan-panic:1:3")],
    )?;
    assert_ne!(orphan.code, Some(0), "{}", orphan.describe());
    assert!(
        orphan
            .stderr
            .contains("a runtime thread (unnamed) panicked"),
        "{}",
        orphan.describe()
    );
    assert!(
        orphan.seconds < BOUNDED_SECONDS,
        "bounded: {}",
        orphan.describe()
    );
    Ok(())
}

#[test]
fn a_truncated_checkpoint_is_refused_and_the_previous_one_used() -> TestResult {
    if !have_adapter("a_truncated_checkpoint_is_refused_and_the_previous_one_used")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ck = text(&dir.path().join("ck"))?;
    let args = |extra: &[&'static str]| {
        let mut a = train_args(&["--checkpoint", &ck, "--checkpoint-every", "3"]);
        a.extend(["--steps", "6", "--json"]);
        a.extend(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |extra: &[&'static str]| -> Result<crate::common::Run, TestError> {
        let owned = args(extra);
        megagraph(&owned.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let whole = run(&[])?;
    assert_eq!(whole.code, Some(0), "{}", whole.describe());
    let losses = |r: &crate::common::Run| -> Result<Vec<f64>, TestError> {
        let last = r.stdout.lines().last().ok_or("no output")?;
        Ok(
            serde_json::from_str::<serde_json::Value>(last)?["step_losses"]
                .as_array()
                .ok_or("step_losses")?
                .iter()
                .filter_map(serde_json::Value::as_f64)
                .collect(),
        )
    };
    let want = losses(&whole)?;
    let saved = checkpoints(&dir.path().join("ck"))?;
    assert_eq!(saved.len(), 2, "steps 3 and 6: {saved:?}");
    let newest = &saved[1];
    let bytes = std::fs::read(newest)?;
    std::fs::write(newest, &bytes[..bytes.len() / 2])?;
    let resumed = run(&["--resume"])?;
    assert_eq!(resumed.code, Some(0), "{}", resumed.describe());
    assert!(
        resumed.stderr.contains("step-00000006.safetensors refused")
            && resumed.stderr.contains("step-00000003.safetensors"),
        "{}",
        resumed.describe()
    );
    assert_losses_close(&losses(&resumed)?, &want, 1e-5, "resumed from step 3");
    // With every checkpoint broken, resuming is refused with the reasons.
    for path in checkpoints(&dir.path().join("ck"))? {
        std::fs::write(&path, b"not a checkpoint")?;
    }
    let refused = run(&["--resume"])?;
    assert_eq!(refused.code, Some(1), "{}", refused.describe());
    assert!(
        refused.stderr.contains("no valid checkpoint"),
        "{}",
        refused.describe()
    );
    // A new run into a directory of another run's checkpoints is refused, not mixed in.
    let mixed = run(&[])?;
    assert_eq!(mixed.code, Some(1), "{}", mixed.describe());
    assert!(
        mixed.stderr.contains("already holds 2 checkpoint(s)"),
        "{}",
        mixed.describe()
    );
    Ok(())
}

#[test]
fn profile_under_mpirun_measures_every_process_and_the_link_between() -> TestResult {
    if !have_adapter("profile_under_mpirun_measures_every_process_and_the_link_between")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let out = text(&dir.path().join("cluster.json"))?;
    let run = mpirun(2, &["profile", "--out", &out], &[])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let cluster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out)?)?;
    let devices = cluster["devices"].as_array().ok_or("devices")?;
    assert_eq!(devices.len(), 2, "{cluster}");
    assert_eq!(devices[1]["process"], 1, "{cluster}");
    let links = cluster["links"]
        .as_array()
        .ok_or("links between processes")?;
    assert_eq!(links.len(), 1, "{cluster}");
    assert!(
        links[0]["bandwidth"].as_f64().is_some_and(|b| b > 1e6),
        "{cluster}"
    );
    assert!(
        links[0]["latency"]
            .as_f64()
            .is_some_and(|l| l > 0.0 && l < 0.1),
        "{cluster}"
    );
    let bench = mpirun(
        2,
        &[
            "bench",
            "comm",
            "--sizes",
            "4096,1048576",
            "--rounds",
            "5",
            "--json",
        ],
        &[],
    )?;
    assert_eq!(bench.code, Some(0), "{}", bench.describe());
    let rows: serde_json::Value =
        serde_json::from_str(bench.stdout.lines().last().ok_or("no output")?)?;
    let rows = rows.as_array().ok_or("rows")?;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        for key in [
            "mpi_send_recv",
            "job_send_recv",
            "mpi_all_reduce",
            "job_all_reduce",
            "job_all_reduce_gathered",
        ] {
            assert!(row[key].as_f64().is_some_and(|v| v > 0.0), "{key} in {row}");
        }
    }
    Ok(())
}

#[test]
fn train_under_mpirun_without_a_plan_profiles_plans_and_refuses_once() -> TestResult {
    if !have_adapter("train_under_mpirun_without_a_plan_profiles_plans_and_refuses_once")? {
        return Ok(());
    }
    // The degrees are fixed so that the measured speeds of the moment cannot make one
    // device the fastest plan for so small a graph; the profile and the plan still run.
    let run = mpirun(
        2,
        &train_args(&["--degrees", "dp2-pp1-cp1", "--steps", "1", "--json"]),
        &[],
    )?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stderr.contains("planned ") && run.stderr.contains("over 2 processes' devices"),
        "{}",
        run.describe()
    );
    let report: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    assert_eq!(
        report["devices"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    // A refusal before the job: one line from process 0, no abort.
    let refused = mpirun(2, &train_args(&["--epochs", "0"]), &[])?;
    assert_ne!(refused.code, Some(0), "{}", refused.describe());
    let errors: Vec<&str> = (refused.stderr.lines())
        .filter(|l| l.starts_with("error:") && !l.contains("XDG_RUNTIME_DIR"))
        .collect();
    assert_eq!(
        errors,
        ["error: invalid training options: epochs must be at least 1"],
        "{}",
        refused.describe()
    );
    for noise in ["MPI_ABORT", "ORTE_ERROR_LOG"] {
        assert!(!refused.stderr.contains(noise), "{}", refused.describe());
    }
    Ok(())
}
