//! `megagraph profile` and `megagraph plan` end to end: a measured cluster spec of the adapters
//! of every graphics API (lavapipe's Vulkan and llvmpipe's GL) that the planner accepts, a plan
//! on it that names those adapters, a run that opens them, and one-line errors for bad specs.

use megagraph_planner::{Overhead, Plan, load_cluster};

use crate::cli_errors::assert_one_line_error;
use crate::common::{
    PROFILE_OVERHEADS_VAR, TestResult, have_adapter, megagraph, megagraph_with_env, workspace_root,
};

#[test]
fn profile_writes_a_cluster_that_plan_accepts() -> TestResult {
    if !have_adapter("profile_writes_a_cluster_that_plan_accepts")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let cluster = dir.path().join("cluster.json");
    let cluster_arg = cluster.to_str().ok_or("temp path is not UTF-8")?;
    // The one profile of the tests that times the model's overheads, on both APIs, at the
    // sequence length of a run to come.
    let run = megagraph_with_env(
        &[
            "--backends",
            "all",
            "profile",
            "--seq-len",
            "128",
            "--out",
            cluster_arg,
        ],
        &[(PROFILE_OVERHEADS_VAR, "1")],
    )?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(
        run.stderr.matches("(timed at 32 and 128 nodes)").count(),
        2,
        "both devices' overheads timed at the run's length: {}",
        run.describe()
    );
    let spec = load_cluster(&cluster)?;
    assert_eq!(spec.devices.len(), 2, "lavapipe's Vulkan and llvmpipe's GL");
    for device in &spec.devices {
        assert!(
            device.flops > 0.0 && device.mem_bandwidth > 0.0 && device.memory_bytes > 0.0,
            "{device:?}"
        );
        assert!(
            device.max_buffer_bytes.is_some_and(|b| b >= 1e6),
            "{device:?}"
        );
        // A layer's overhead is positive; the ends' is what the 1-layer run leaves after a
        // layer (a difference of two timings), which load from other tests can take to its
        // floor of 0.
        let sane = |o: Overhead| o.fixed >= 0.0 && o.per_row >= 0.0 && o.fixed + o.per_row < 1e3;
        assert!(
            device
                .layer_overhead
                .is_some_and(|o| sane(o) && o.fixed + o.per_row * 256.0 > 0.0)
                && device.end_overhead.is_some_and(sane),
            "overheads measured: {device:?}"
        );
        assert!(
            device
                .step_overhead
                .is_some_and(|o| o.per_layer + o.ends > 0.0
                    && o.per_layer.is_finite()
                    && o.ends.is_finite()),
            "optimizer step overhead measured: {device:?}"
        );
    }
    let ids: Vec<String> = spec
        .devices
        .iter()
        .filter_map(|d| d.adapter.clone())
        .collect();
    assert!(
        ids.len() == 2 && ids[0].starts_with("vulkan:") && ids[1].starts_with("gl:"),
        "{ids:?}"
    );
    assert!(
        spec.link.bandwidth > 0.0 && spec.link.latency >= 0.0,
        "{:?}",
        spec.link
    );

    let model = workspace_root().join("examples/models/cora-gt.json");
    let plan_path = dir.path().join("plan.json");
    let run = megagraph(&[
        "plan",
        "--cluster",
        cluster_arg,
        "--model",
        model.to_str().ok_or("path is not UTF-8")?,
        "--out",
        plan_path.to_str().ok_or("temp path is not UTF-8")?,
        "--json",
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let printed: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().ok_or("no output")?)?;
    for key in [
        "config",
        "stages",
        "node_shares",
        "micro_batches",
        "predicted_step_seconds",
        "predicted_peak_bytes",
        "fits",
        "baselines",
    ] {
        assert!(
            printed.get(key).is_some(),
            "plan JSON lacks {key}: {printed}"
        );
    }
    let saved = Plan::load(&plan_path)?;
    assert_eq!(serde_json::to_value(&saved)?["config"], printed["config"]);
    let named: Vec<String> = saved.adapters.iter().flatten().cloned().collect();
    assert_eq!(named, ids, "the plan names the spec's adapters");

    // Planned on the spec now, the run opens the adapters it names (the default list has
    // no GL adapter: the ids reach it).
    let run = megagraph(&[
        "train",
        "--synthetic",
        "sbm:200:3",
        "--cluster",
        cluster_arg,
        "--degrees",
        "dp1-pp1-cp2",
        "--steps",
        "2",
        "--json",
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let report = crate::cli_train::last_json_line(&run)?;
    let apis: Vec<&str> = report["devices"]
        .as_array()
        .ok_or("devices")?
        .iter()
        .filter_map(|d| d["adapter"].as_str()?.rsplit("| ").next())
        .collect();
    assert_eq!(apis, ["Vulkan", "Gl"], "{}", run.describe());
    Ok(())
}

#[test]
fn logical_devices_of_one_adapter_are_profiled_alike() -> TestResult {
    if !have_adapter("logical_devices_of_one_adapter_are_profiled_alike")? {
        return Ok(());
    }
    // Measured once for the adapter: were each measured alone, this machine's noise would
    // give them rates up to 1.7x apart, and the planner would balance shares by the noise.
    let dir = tempfile::tempdir()?;
    let cluster = dir.path().join("cluster.json");
    let run = megagraph(&[
        "profile",
        "--devices",
        "3",
        "--out",
        cluster.to_str().ok_or("temp path is not UTF-8")?,
    ])?;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let spec = load_cluster(&cluster)?;
    assert_eq!(spec.devices.len(), 3, "{}", run.describe());
    let unnamed = |i: usize| megagraph_planner::DeviceSpec {
        name: String::new(),
        ..spec.devices[i].clone()
    };
    assert!(spec.devices[0].flops > 0.0, "{:?}", spec.devices[0]);
    assert!(
        spec.devices[0].hardware.is_some(),
        "they share their adapter: {:?}",
        spec.devices[0]
    );
    for i in 1..3 {
        assert_ne!(spec.devices[i].name, spec.devices[0].name);
        assert_eq!(unnamed(i), unnamed(0), "device {i} against device 0");
    }
    Ok(())
}

#[test]
fn plan_rejects_bad_specs_in_one_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let model = workspace_root().join("examples/models/cora-gt.json");
    let model = model.to_str().ok_or("path is not UTF-8")?;
    let cases = [
        (
            "negative.json",
            r#"{"schema_version":1,"devices":[{"name":"a","memory_bytes":-5,"flops":1e12,"mem_bandwidth":1e11}],"link":{"bandwidth":1e9,"latency":1e-6}}"#,
            "memory_bytes",
        ),
        (
            "empty.json",
            r#"{"schema_version":1,"devices":[],"link":{"bandwidth":1e9,"latency":1e-6}}"#,
            "device",
        ),
        (
            "version.json",
            r#"{"schema_version":7,"devices":[],"link":{"bandwidth":1e9,"latency":1e-6}}"#,
            "schema_version",
        ),
        (
            "broken.json",
            r#"{"schema_version":1,"devices":["#,
            "broken.json",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text)?;
        let run = megagraph(&[
            "plan",
            "--cluster",
            path.to_str().ok_or("temp path is not UTF-8")?,
            "--model",
            model,
        ])?;
        assert_one_line_error(&run, Some(1), &[name, needle]);
    }
    Ok(())
}
