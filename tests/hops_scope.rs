//! The hops attention scope as a model option: equal to the full scope where it sees every
//! pair, and its bad input refused in one line.

use megagraph_engine::{
    device::WgpuAutodiff,
    graph::{Csr, Graph, SplitSpec, SyntheticSpec, split},
    model::{AttentionScope, ModelConfig},
    train::{TrainOptions, train},
};

use crate::cli_errors::assert_one_line_error;
use crate::common::{TestError, TestResult, megagraph, wgpu_device};

/// An `sbm:120:3` graph with a ring through its nodes added, so that it is connected (a
/// sequence of it has no "far" pairs the near pairs could miss).
fn connected_graph() -> Result<Graph, TestError> {
    let sbm = "sbm:120:3".parse::<SyntheticSpec>()?.generate(4)?;
    let n = sbm.num_nodes() as u32;
    let mut edges: Vec<(u32, u32)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    for i in 0..n as usize {
        edges.extend(sbm.adjacency().neighbors(i).iter().map(|&j| (i as u32, j)));
    }
    let adjacency = Csr::from_edges(n as usize, &edges)?;
    Ok(Graph::new(
        adjacency,
        sbm.features().clone(),
        sbm.labels().to_vec(),
        sbm.num_classes(),
        "connected-sbm",
    )?)
}

#[test]
fn hops_covering_the_whole_sequence_matches_the_full_scope() -> TestResult {
    let Some(device) = wgpu_device("hops_covering_the_whole_sequence_matches_the_full_scope")?
    else {
        return Ok(());
    };
    let graph = connected_graph()?;
    let split = split(&graph, &"random:0.6:0.2".parse::<SplitSpec>()?, 1)?;
    let options = |scope: AttentionScope| TrainOptions {
        epochs: 4,
        patience: 10,
        seq_len: 200,
        seed: 3,
        model: ModelConfig {
            layers: 2,
            hidden: 16,
            heads: 2,
            ffn_hidden: 32,
            dropout: 0.0,
            input_dropout: 0.0,
            scope,
            global_tokens: 0,
            ..ModelConfig::new(graph.feature_dim(), graph.num_classes())
        },
        ..TrainOptions::default()
    };
    // K beyond the diameter and MAX beyond the sequence: every pair is near, with the bucket
    // the full scope gives it (distances past max_distance share the far bucket in both).
    let every_pair = AttentionScope::Hops {
        hops: 255,
        max_pairs: 1000,
    };
    let full = train::<WgpuAutodiff>(
        &graph,
        &split,
        &options(AttentionScope::Full),
        &device,
        &mut |_| {},
    )?;
    let hops = train::<WgpuAutodiff>(&graph, &split, &options(every_pair), &device, &mut |_| {})?;
    assert_eq!(full.step_losses.len(), 4);
    for (step, (h, f)) in hops.step_losses.iter().zip(&full.step_losses).enumerate() {
        assert!(
            (h - f).abs() <= 1e-4 * f.abs(),
            "step {}: hops loss {h} vs full {f}",
            step + 1
        );
    }
    let scale = full.parameters.iter().fold(0f32, |m, x| m.max(x.abs()));
    let worst = hops
        .parameters
        .iter()
        .zip(&full.parameters)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert_eq!(hops.parameters.len(), full.parameters.len());
    assert!(
        worst <= 1e-4 * scale,
        "parameters differ by {worst:e} (scale {scale:e})"
    );
    // Two hops of the same graph see fewer pairs and must train differently, or the
    // comparison above could not fail.
    let near = AttentionScope::Hops {
        hops: 2,
        max_pairs: 1000,
    };
    let local = train::<WgpuAutodiff>(&graph, &split, &options(near), &device, &mut |_| {})?;
    assert!(
        (local.step_losses[3] - full.step_losses[3]).abs() > 1e-4 * full.step_losses[3],
        "hops:2 trained exactly like the full scope: {:?}",
        local.step_losses
    );
    Ok(())
}

#[test]
fn bad_scopes_are_refused_in_one_line() -> TestResult {
    let base = [
        "train",
        "--backend",
        "ndarray",
        "--synthetic",
        "sbm:60:2",
        "--epochs",
        "1",
    ];
    for (extra, needles) in [
        (
            &["--scope", "hops:0"][..],
            &["hops:0", "K must be at least 1"][..],
        ),
        (
            &["--scope", "hops:2:0"],
            &["hops:2:0", "MAX must be at least 1"],
        ),
        (
            &["--scope", "near"],
            &["near", "expected full or hops:K[:MAX]"],
        ),
        (
            &["--global-tokens", "2"],
            &["global tokens (2) need a hops scope"],
        ),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let run = megagraph(&args)?;
        assert_one_line_error(&run, None, needles);
    }
    Ok(())
}

#[test]
fn a_checkpoint_of_another_scope_is_refused_in_one_line() -> TestResult {
    if !crate::common::have_adapter("a_checkpoint_of_another_scope_is_refused_in_one_line")? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let checkpoints = dir.path().join("ck");
    let checkpoints = checkpoints.to_str().ok_or("temporary path is not UTF-8")?;
    let train = |scope: &str, resume: bool| {
        let mut args = vec![
            "train",
            "--synthetic",
            "sbm:60:2",
            "--seq-len",
            "30",
            "--layers",
            "1",
            "--hidden",
            "8",
            "--heads",
            "2",
            "--steps",
            "1",
            "--scope",
            scope,
            "--checkpoint",
            checkpoints,
            "--checkpoint-every",
            "1",
        ];
        if resume {
            args.push("--resume");
        }
        megagraph(&args)
    };
    let first = train("hops:2", false)?;
    assert_eq!(first.code, Some(0), "{}", first.describe());
    let refused = train("full", true)?;
    let all = refused.describe();
    assert!(refused.code.is_some_and(|c| c != 0), "{all}");
    assert!(!refused.stderr.contains("panicked"), "{all}");
    let last = refused.stderr_lines().last().copied().unwrap_or_default();
    assert!(
        last.starts_with("error: checkpoint: ")
            && last.ends_with(
                "was written for another model: global_tokens 1 (this run: 0), scope hops:2:256 (this run: full)"
            ),
        "{all}"
    );
    Ok(())
}
