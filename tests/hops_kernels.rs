//! The hops-scope attention kernels (sparse pairs: near pairs of a K-hop neighbourhood and
//! global tokens) on wgpu, and their plain-op implementation on the CPU backend, against the
//! oracle: the same attention from gathers and segment sums, differentiated by burn itself
//! on the CPU backend. Checked: the output, the log-sum-exp, and the gradients of Q, K, V and
//! the bias table, with and without a gradient flowing into the log-sum-exp, with one
//! invocation per row and with every team of several (through workgroup memory and by subgroup
//! shuffles).
//!
//! Tolerance: per tensor, max |kernel − oracle| ≤ 1e-4 · max |oracle| + 1e-6 (f32 sums in
//! other orders).

use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    burn::tensor::{Tensor, TensorData, backend::AutodiffBackend},
    device::{CpuAutodiff, WgpuAutodiff, adapter_identity, open_wgpu},
    graph::{Csr, NearLimits, NearPairs, RmatParams, rmat},
    kernels::{
        HopsAttentionBackend, HopsIndex, HopsPattern,
        hops::reference,
        hops_attention, hops_attention_with_lse,
        plan::HopsTeam,
        tuning::{
            Selection, cache_file, hops_candidates_on, last_hops_teams, select_hops_team,
            select_kernels,
        },
    },
};
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::common::{TestError, TestResult, assert_close, gl_device, wgpu_device};

/// One case: a pattern of pairs and the attention's shape.
struct Case {
    name: String,
    heads: usize,
    head_dim: usize,
    buckets: usize,
    index: HopsIndex,
}

/// How a case is differentiated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Loss {
    /// A weighted sum of the output only.
    Output,
    /// Weighted sums of the output and of the log-sum-exp.
    OutputAndLse,
}

/// Output, log-sum-exp, dQ, dK, dV, dTable as host vectors.
type Results = [Vec<f32>; 6];

/// Which implementation runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Implementation {
    /// The backend's kernels under `Autodiff` (WGSL on wgpu, plain-op formulas on the CPU).
    Kernels,
    /// The oracle, differentiated by burn.
    Oracle,
}

fn run<B: AutodiffBackend + HopsAttentionBackend>(
    case: &Case,
    host: &[Vec<f32>; 6],
    loss: Loss,
    implementation: Implementation,
    device: &B::Device,
) -> Results {
    let (h, d, nb) = (case.heads, case.head_dim, case.buckets);
    let (r, s) = (case.index.rows(), case.index.keys());
    let t3 = |v: &Vec<f32>, n: usize| {
        Tensor::<B, 3>::from_data(TensorData::new(v.clone(), [h, n, d]), device).require_grad()
    };
    let (q, k, v) = (t3(&host[0], r), t3(&host[1], s), t3(&host[2], s));
    let table =
        Tensor::<B, 2>::from_data(TensorData::new(host[3].clone(), [h, nb]), device).require_grad();
    let w_out = Tensor::<B, 3>::from_data(TensorData::new(host[4].clone(), [h, r, d]), device);
    let w_lse = Tensor::<B, 2>::from_data(TensorData::new(host[5].clone(), [h, r]), device);
    let pattern = HopsPattern::<B>::new(&case.index, device);
    let (out, lse) = match (implementation, loss) {
        (Implementation::Oracle, _) => {
            reference::attention(q.clone(), k.clone(), v.clone(), table.clone(), &pattern)
        }
        (Implementation::Kernels, Loss::OutputAndLse) => {
            hops_attention_with_lse(q.clone(), k.clone(), v.clone(), table.clone(), &pattern)
        }
        (Implementation::Kernels, Loss::Output) => {
            let out = hops_attention(q.clone(), k.clone(), v.clone(), table.clone(), &pattern);
            let (_, lse) = reference::attention(
                q.clone().detach(),
                k.clone().detach(),
                v.clone().detach(),
                table.clone().detach(),
                &pattern,
            );
            (out, lse)
        }
    };
    let mut objective = (out.clone() * w_out).sum();
    if loss == Loss::OutputAndLse {
        objective = objective + (lse.clone() * w_lse).sum();
    }
    let grads = objective.backward();
    let host3 = |t: Tensor<B::InnerBackend, 3>| t.into_data().to_vec::<f32>().expect("f32");
    let host2 = |t: Tensor<B::InnerBackend, 2>| t.into_data().to_vec::<f32>().expect("f32");
    [
        host3(out.inner()),
        host2(lse.inner()),
        host3(q.grad(&grads).expect("q is tracked")),
        host3(k.grad(&grads).expect("k is tracked")),
        host3(v.grad(&grads).expect("v is tracked")),
        host2(table.grad(&grads).expect("table is tracked")),
    ]
}

/// `case` on `wgpu` with each of `teams` (its own selection when empty) and, once, the CPU
/// formulas, against the oracle.
fn check(case: &Case, seed: u64, wgpu: &WgpuDevice, teams: &[HopsTeam]) -> TestResult {
    let mut rng = StdRng::seed_from_u64(seed);
    let (h, d, nb) = (case.heads, case.head_dim, case.buckets);
    let (r, s) = (case.index.rows(), case.index.keys());
    let mut uniform =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect() };
    let host = [
        uniform(h * r * d),
        uniform(h * s * d),
        uniform(h * s * d),
        uniform(h * nb),
        uniform(h * r * d),
        uniform(h * r),
    ];
    let cpu = Default::default();
    for loss in [Loss::Output, Loss::OutputAndLse] {
        let oracle = run::<CpuAutodiff>(case, &host, loss, Implementation::Oracle, &cpu);
        let mut results = Vec::new();
        if teams.is_empty() {
            let on_wgpu = run::<WgpuAutodiff>(case, &host, loss, Implementation::Kernels, wgpu);
            results.push(("wgpu kernels".to_string(), on_wgpu));
            let on_cpu = run::<CpuAutodiff>(case, &host, loss, Implementation::Kernels, &cpu);
            results.push(("cpu formulas".to_string(), on_cpu));
        }
        for &team in teams {
            select_hops_team(wgpu, team);
            let on_wgpu = run::<WgpuAutodiff>(case, &host, loss, Implementation::Kernels, wgpu);
            results.push((format!("wgpu kernels, {team}"), on_wgpu));
        }
        for (implementation, got) in &results {
            for (name, (g, want)) in ["output", "lse", "dQ", "dK", "dV", "dTable"]
                .iter()
                .zip(got.iter().zip(&oracle))
            {
                let what = format!("{} ({implementation}, {loss:?}): {name}", case.name);
                assert_close(&what, g, want, true)?;
            }
        }
    }
    Ok(())
}

/// The near pairs of an R-MAT graph's nodes (hubs, leaves and isolated nodes), with `tokens`
/// global tokens appended as keys of every row.
fn near_case(name: &str, limits: NearLimits, tokens: usize, heads: usize, head_dim: usize) -> Case {
    let graph = rmat(&RmatParams::new(7, 4, 11)).expect("a valid R-MAT");
    let adj: &Csr = graph.adjacency();
    let near = NearPairs::build(adj, limits);
    let n = near.rows();
    let global = limits.max_distance + 2;
    let rows = (0..n).map(|i| {
        let (keys, buckets) = near.row(i);
        let near_pairs: Vec<(u32, u8)> =
            keys.iter().copied().zip(buckets.iter().copied()).collect();
        near_pairs
            .into_iter()
            .chain((0..tokens).map(move |t| ((n + t) as u32, global)))
    });
    let index = HopsIndex::new(n + tokens, rows);
    Case {
        name: name.to_string(),
        heads,
        head_dim,
        buckets: global as usize + usize::from(tokens > 0),
        index,
    }
}

/// The cases: R-MAT near pairs with and without tokens, distances past the table, a
/// context-parallel shard, and token rows.
fn cases() -> Result<Vec<Case>, TestError> {
    let limits = |hops, max_pairs| NearLimits {
        hops,
        max_pairs,
        max_distance: 5,
    };
    let graph_stats = {
        let graph = rmat(&RmatParams::new(7, 4, 11))?;
        let near = NearPairs::build(graph.adjacency(), limits(2, 12));
        let alone = (0..near.rows())
            .filter(|&i| near.row(i).0.len() == 1)
            .count();
        let capped = (0..near.rows())
            .filter(|&i| near.row(i).0.len() == 12)
            .count();
        (alone, capped)
    };
    assert!(
        graph_stats.0 > 0 && graph_stats.1 > 0,
        "the R-MAT case must have rows with only themselves and rows at MAX: {graph_stats:?}"
    );
    let mut cases = vec![
        near_case("hops:2:12, no tokens", limits(2, 12), 0, 2, 16),
        near_case("hops:1, one token", limits(1, 256), 1, 4, 32),
        near_case("hops:2:12, three tokens", limits(2, 12), 3, 2, 16),
        near_case(
            "hops:3:40, distances beyond max_distance 1",
            NearLimits {
                hops: 3,
                max_pairs: 40,
                max_distance: 1,
            },
            2,
            1,
            8,
        ),
    ];
    // A context-parallel shard: 40 query rows whose keys are 90 (their own rows, a halo and
    // tokens), some keys paired with no row.
    let mut rng = StdRng::seed_from_u64(7);
    let shard_rows: Vec<Vec<(u32, u8)>> = (0..40)
        .map(|i| {
            let mut keys: Vec<u32> = (0..rng.random_range(0..6))
                .map(|_| rng.random_range(0..88))
                .collect();
            keys.push(i);
            keys.sort_unstable();
            keys.dedup();
            keys.into_iter()
                .map(|k| (k, (k % 7) as u8))
                .chain([(88, 7), (89, 7)])
                .collect()
        })
        .collect();
    cases.push(Case {
        name: "a shard: 40 rows over 90 keys".into(),
        heads: 3,
        head_dim: 12,
        buckets: 8,
        index: HopsIndex::new(90, shard_rows),
    });
    // Global tokens as queries over a shard's own rows (they combine across shards by their
    // log-sum-exp).
    cases.push(Case {
        name: "two token rows over 300 keys".into(),
        heads: 2,
        head_dim: 16,
        buckets: 9,
        index: HopsIndex::new(300, (0..2).map(|_| (0..300u32).map(|k| (k, 8u8)))),
    });
    Ok(cases)
}

#[test]
fn hops_attention_matches_the_oracle() -> TestResult {
    let Some(device) = wgpu_device("hops_attention_matches_the_oracle")? else {
        return Ok(());
    };
    for (seed, case) in cases()?.iter().enumerate() {
        check(case, seed as u64, &device, &[])?;
    }
    Ok(())
}

#[test]
fn every_hops_team_matches_the_oracle() -> TestResult {
    if wgpu_device("every_hops_team_matches_the_oracle")?.is_none() {
        return Ok(());
    }
    // A device of its own: the team is set per device.
    every_hops_team_on(&open_wgpu(None)?)
}

/// The GL device runs one invocation per row and every team through workgroup memory (GL has
/// no subgroups) against the same oracle.
#[test]
fn every_hops_team_matches_the_oracle_on_gl() -> TestResult {
    let Some(gl) = gl_device("every_hops_team_matches_the_oracle_on_gl")? else {
        return Ok(());
    };
    let device = gl.device.clone();
    assert!(
        hops_candidates_on(&device)
            .iter()
            .all(|team| !team.subgroups),
        "GL has no subgroups"
    );
    for (seed, case) in cases()?.iter().enumerate() {
        check(case, seed as u64, &device, &[])?;
    }
    every_hops_team_on(&device)
}

/// Every team of several invocations [`hops_candidates_on`] `device`, over [`cases`].
fn every_hops_team_on(device: &WgpuDevice) -> TestResult {
    let teams: Vec<HopsTeam> = hops_candidates_on(device)
        .into_iter()
        .filter(|team| *team != HopsTeam::SINGLE)
        .collect();
    assert!(!teams.is_empty(), "no team of several invocations");
    for (seed, case) in cases()?.iter().enumerate() {
        check(case, seed as u64, device, &teams)?;
    }
    Ok(())
}

#[test]
fn the_hops_tuner_keeps_a_candidate_per_pass() -> TestResult {
    if wgpu_device("the_hops_tuner_keeps_a_candidate_per_pass")?.is_none() {
        return Ok(());
    }
    // A device of its own, made to tune whatever its adapter and size.
    let device = open_wgpu(None)?;
    select_kernels(&device, Selection::Tuned);
    check(&cases()?[0], 31, &device, &[])?;

    let candidates = hops_candidates_on(&device);
    let adapter = adapter_identity(&device).key;
    let saved: std::collections::HashMap<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(cache_file())?)?;
    for (pass, team) in ["HopsForward", "HopsBackward"]
        .into_iter()
        .zip(last_hops_teams(&device))
    {
        let team = team.ok_or("the pass ran no team")?;
        assert!(candidates.contains(&team), "{pass}: {team} is no candidate");
        let value = serde_json::to_value(team)?;
        assert!(
            saved
                .iter()
                .any(|(key, v)| key.starts_with(&format!("{adapter}|{pass}|")) && *v == value),
            "{pass}: the cache file at {} holds no {team}",
            cache_file().display()
        );
    }
    Ok(())
}
