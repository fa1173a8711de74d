//! The fused attention kernels on wgpu against the reference built from plain burn ops on the
//! CPU backend: forward output and the gradients of Q, K, V and the bias table.
//!
//! Tolerance: per tensor, max |fused − reference| ≤ 1e-4 · max |reference| + 1e-6 (f32; the two
//! sum in different orders); tensors that are zero in exact arithmetic must be within 1e-6 per
//! 1,024 terms their entries sum (the rounding of a cancelling sum grows with its length: the
//! all-far bias gradient sums rows · keys terms, and the subgroup butterfly's order left
//! 1.01e-6 at 2,500 terms).

use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    burn::tensor::{Tensor, TensorData},
    device::{CpuAutodiff, MemoryProbe, WgpuAutodiff, adapter_identity, open_wgpu},
    kernels::{
        MAX_BLOCK_BYTES, PairBuckets, biased_attention,
        plan::AttentionShape,
        reference,
        tuning::{self, AttentionKernel, Pass, Selection, select_kernels},
    },
};
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::common::{TestResult, assert_close, gl_device, wgpu_device};

const TOLERANCE: f32 = 1e-4;
const ABSOLUTE_FLOOR: f32 = 1e-6;

/// One case: shape and how the pair buckets are drawn. `rows` query rows attend to `keys`
/// keys (a context-parallel shard has fewer rows than keys; a whole sequence has as many).
struct Case {
    heads: usize,
    rows: usize,
    keys: usize,
    head_dim: usize,
    buckets: usize,
    all_far: bool,
    /// Bytes per block of pair buckets for the fused run (the reference gets one block).
    block_bytes: usize,
}

impl Case {
    /// Heads, rows, keys, head dimension, buckets.
    fn dims(&self) -> [usize; 5] {
        [
            self.heads,
            self.rows,
            self.keys,
            self.head_dim,
            self.buckets,
        ]
    }
}

/// Outputs and gradients as host vectors: out, dq, dk, dv, dtable.
type Results = [Vec<f32>; 5];

fn run<
    B: megagraph_engine::burn::tensor::backend::AutodiffBackend
        + megagraph_engine::kernels::BiasedAttentionBackend,
>(
    case: &Case,
    host: &[Vec<f32>; 5],
    buckets: &[u8],
    fused: bool,
    device: &B::Device,
) -> Results {
    let [h, r, s, d, nb] = case.dims();
    let t3 = |v: &Vec<f32>, n: usize| {
        Tensor::<B, 3>::from_data(TensorData::new(v.clone(), [h, n, d]), device).require_grad()
    };
    let (q, k, v) = (t3(&host[0], r), t3(&host[1], s), t3(&host[2], s));
    let table =
        Tensor::<B, 2>::from_data(TensorData::new(host[3].clone(), [h, nb]), device).require_grad();
    let weight = Tensor::<B, 3>::from_data(TensorData::new(host[4].clone(), [h, r, d]), device);
    let block_bytes = if fused {
        case.block_bytes
    } else {
        MAX_BLOCK_BYTES
    };
    let pairs = PairBuckets::<B>::with_block_bytes(buckets, s, block_bytes, device);
    let out = if fused {
        biased_attention(q.clone(), k.clone(), v.clone(), table.clone(), pairs)
    } else {
        reference::attention(q.clone(), k.clone(), v.clone(), table.clone(), pairs)
    };
    let grads = (out.clone() * weight).sum().backward();
    let host_of = |t: Tensor<B::InnerBackend, 3>| t.into_data().to_vec::<f32>().expect("f32");
    [
        host_of(out.inner()),
        host_of(q.grad(&grads).expect("q is tracked")),
        host_of(k.grad(&grads).expect("k is tracked")),
        host_of(v.grad(&grads).expect("v is tracked")),
        table
            .grad(&grads)
            .expect("table is tracked")
            .into_data()
            .to_vec::<f32>()
            .expect("f32"),
    ]
}

/// Checks `case` on `device` against the CPU reference, once with each of `kernels` pinned as
/// the device's attention kernels (`None`: as the device's selection says).
fn check_case(
    case: &Case,
    seed: u64,
    device: &WgpuDevice,
    kernels: &[Option<AttentionKernel>],
) -> TestResult {
    let mut rng = StdRng::seed_from_u64(seed);
    let [h, r, s, d, nb] = case.dims();
    let mut normal =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect() };
    let host = [
        normal(h * r * d),
        normal(h * s * d),
        normal(h * s * d),
        normal(h * nb),
        normal(h * r * d),
    ];
    let buckets: Vec<u8> = (0..r * s)
        .map(|p| {
            if case.all_far {
                (nb - 1) as u8
            } else {
                ((p * 2_654_435_761usize) >> 7) as u8 % nb as u8
            }
        })
        .collect();
    let oracle = run::<CpuAutodiff>(case, &host, &buckets, false, &Default::default());
    for kernel in kernels {
        if let Some(kernel) = kernel {
            select_kernels(device, Selection::Pinned(*kernel));
        }
        let fused = run::<WgpuAutodiff>(case, &host, &buckets, true, device);
        if kernel.is_some() {
            select_kernels(device, Selection::Automatic);
        }
        compare(case, &fused, &oracle, *kernel)?;
    }
    Ok(())
}

/// Every result of `fused` against `oracle` within the tolerance.
fn compare(
    case: &Case,
    fused: &Results,
    oracle: &Results,
    kernel: Option<AttentionKernel>,
) -> TestResult {
    let [h, _, s, d, nb] = case.dims();
    for (name, (f, r)) in ["output", "dQ", "dK", "dV", "dTable"]
        .iter()
        .zip(fused.iter().zip(oracle))
    {
        assert_eq!(f.len(), r.len(), "{name}: lengths");
        let scale = r.iter().fold(0f32, |m, x| m.max(x.abs()));
        let err = f.iter().zip(r).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        // Mathematically zero: with one key the softmax is constant (dQ = dK = 0), and the
        // bias-table gradient sums dS over whole rows when every pair is in one bucket.
        let zero = (case.keys == 1 && *name != "output" && *name != "dV")
            || (*name == "dTable" && case.all_far);
        let bound = if zero {
            let terms = if *name == "dTable" {
                case.rows * case.keys
            } else {
                case.keys
            };
            ABSOLUTE_FLOOR * (terms as f32 / 1024.0).max(1.0)
        } else {
            TOLERANCE * scale + ABSOLUTE_FLOOR
        };
        assert!(
            err <= bound,
            "heads {h} rows {rows} keys {s} head_dim {d} buckets {nb} all_far {} block_bytes {} kernels {kernel:?}: {name} differs by {err:e} (scale {scale:e})",
            case.all_far,
            case.block_bytes,
            rows = case.rows
        );
        assert!(
            zero || scale > 0.0,
            "{name} is all zero: the check could not fail"
        );
    }
    Ok(())
}

/// Shapes that exercise every path of the kernels: one key, odd S, S below a tile and above
/// several, context-parallel shards (fewer rows than keys, and more), the large-table path
/// (> 16 buckets), every pair in one bucket, and pair buckets in blocks.
fn cases() -> [Case; 10] {
    [
        Case {
            heads: 1,
            rows: 1,
            keys: 1,
            head_dim: 16,
            buckets: 7,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        Case {
            heads: 2,
            rows: 37,
            keys: 37,
            head_dim: 16,
            buckets: 7,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        Case {
            heads: 4,
            rows: 130,
            keys: 130,
            head_dim: 32,
            buckets: 7,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        Case {
            heads: 3,
            rows: 65,
            keys: 65,
            head_dim: 64,
            buckets: 12,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        Case {
            heads: 2,
            rows: 50,
            keys: 50,
            head_dim: 32,
            buckets: 7,
            all_far: true,
            block_bytes: MAX_BLOCK_BYTES,
        },
        // Context-parallel shapes: a block of query rows against the whole sequence's keys,
        // and more rows than keys.
        Case {
            heads: 2,
            rows: 13,
            keys: 70,
            head_dim: 32,
            buckets: 7,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        Case {
            heads: 1,
            rows: 70,
            keys: 9,
            head_dim: 16,
            buckets: 7,
            all_far: false,
            block_bytes: MAX_BLOCK_BYTES,
        },
        // Pair buckets in blocks of 31 rows (the last of 6), of one row each, and a shard's
        // rows in blocks: the kernels launch per block and the key kernel accumulates.
        Case {
            heads: 2,
            rows: 130,
            keys: 130,
            head_dim: 32,
            buckets: 7,
            all_far: false,
            block_bytes: 130 * 31,
        },
        Case {
            heads: 1,
            rows: 37,
            keys: 37,
            head_dim: 16,
            buckets: 20,
            all_far: false,
            block_bytes: 1,
        },
        Case {
            heads: 2,
            rows: 21,
            keys: 70,
            head_dim: 32,
            buckets: 7,
            all_far: false,
            block_bytes: 70 * 5,
        },
    ]
}

#[test]
fn fused_attention_matches_the_reference() -> TestResult {
    let Some(device) = wgpu_device("fused_attention_matches_the_reference")? else {
        return Ok(());
    };
    for (seed, case) in cases().iter().enumerate() {
        check_case(case, seed as u64, &device, &[None])?;
    }
    Ok(())
}

#[test]
fn every_kernel_shape_matches_the_reference() -> TestResult {
    if wgpu_device("every_kernel_shape_matches_the_reference")?.is_none() {
        return Ok(());
    }
    // A device of its own: the kernels are pinned per device.
    every_kernel_shape_on(&open_wgpu(None)?)
}

/// The GL device (llvmpipe through EGL: naga's GLSL, another compiler) runs every kernel shape
/// its adapter allows against the same CPU reference.
#[test]
fn every_kernel_shape_matches_the_reference_on_gl() -> TestResult {
    let Some(gl) = gl_device("every_kernel_shape_matches_the_reference_on_gl")? else {
        return Ok(());
    };
    let device = gl.device.clone();
    assert!(
        tuning::candidates_on(&device, 16)
            .iter()
            .all(|kernel| !kernel.to_string().ends_with(":subgroups")),
        "GL has no subgroups: no subgroup variant is a candidate there"
    );
    every_kernel_shape_on(&device)
}

/// Every kernel shape [`tuning::candidates_on`] `device` pinned in turn, over [`cases`].
fn every_kernel_shape_on(device: &WgpuDevice) -> TestResult {
    for (seed, case) in cases().iter().enumerate() {
        let kernels: Vec<_> = tuning::candidates_on(&device, case.head_dim)
            .into_iter()
            .map(Some)
            .collect();
        assert!(
            kernels.len() > 1,
            "head_dim {}: no tiled kernel fits the adapter's workgroup memory",
            case.head_dim
        );
        check_case(case, seed as u64, device, &kernels)?;
    }
    Ok(())
}

#[test]
fn fused_attention_keeps_no_square_buffer() -> TestResult {
    if wgpu_device("fused_attention_keeps_no_square_buffer")?.is_none() {
        return Ok(());
    }
    // A fresh device: the shared one's pool keeps what other tests reserved.
    let device = open_wgpu(None)?;
    // At S = 4096 one S×S f32 matrix per head is 64 MiB, 256 MiB for four heads: beyond
    // lavapipe's 128 MiB binding limit, so the reference cannot run this on one binding.
    let (h, s, d, rows) = (4, 4096, 16, 64);
    let square_bytes = (4 * h * s * s) as u64;
    let mut rng = StdRng::seed_from_u64(11);
    let mut uniform =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect() };
    let [q, k, v] = [uniform(h * s * d), uniform(h * s * d), uniform(h * s * d)];
    let table = uniform(h * 7);
    let buckets: Vec<u8> = (0..s * s)
        .map(|p| ((p * 2_654_435_761usize) >> 7) as u8 % 7)
        .collect();

    let before = WgpuAutodiff::reserved_bytes(&device).ok_or("the wgpu pool reports no bytes")?;
    let t3 = |x: &[f32], n: usize| TensorData::new(x[..h * n * d].to_vec(), [h, n, d]);
    let q_fused = Tensor::<WgpuAutodiff, 3>::from_data(t3(&q, s), &device).require_grad();
    let [k_fused, v_fused] =
        [&k, &v].map(|x| Tensor::<WgpuAutodiff, 3>::from_data(t3(x, s), &device));
    let table_fused =
        Tensor::<WgpuAutodiff, 2>::from_data(TensorData::new(table.clone(), [h, 7]), &device);
    let pairs = PairBuckets::<WgpuAutodiff>::new(&buckets, s, &device);
    let out = biased_attention(q_fused.clone(), k_fused, v_fused, table_fused, pairs);
    let grads = out.clone().sum().backward();
    let out_host: Vec<f32> = out.inner().into_data().to_vec()?;
    let d_q: Vec<f32> = q_fused
        .grad(&grads)
        .ok_or("q is tracked")?
        .into_data()
        .to_vec()?;
    let peak = WgpuAutodiff::reserved_bytes(&device).ok_or("the wgpu pool reports no bytes")?;
    let grew = peak - before;
    eprintln!(
        "S = {s}, {h} heads: the pool grew by {grew} bytes; one [heads, S, S] f32 buffer is {square_bytes}"
    );
    assert!(
        grew < square_bytes / 2,
        "the pool grew by {grew} bytes: half of one [heads, S, S] f32 buffer ({square_bytes}) or more"
    );

    // The first rows against the CPU reference of those rows (the loss is a sum over rows, so
    // a row's output and query gradient depend on that row alone).
    let cpu = Default::default();
    let per_head = |x: &[f32], n: usize| -> Vec<f32> {
        (0..h)
            .flat_map(|head| x[head * s * d..(head * s + n) * d].to_vec())
            .collect()
    };
    let q_ref = Tensor::<CpuAutodiff, 3>::from_data(
        TensorData::new(per_head(&q, rows), [h, rows, d]),
        &cpu,
    )
    .require_grad();
    let [k_ref, v_ref] = [&k, &v].map(|x| Tensor::<CpuAutodiff, 3>::from_data(t3(x, s), &cpu));
    let table_ref = Tensor::<CpuAutodiff, 2>::from_data(TensorData::new(table, [h, 7]), &cpu);
    let pairs_ref = PairBuckets::<CpuAutodiff>::new(&buckets[..rows * s], s, &cpu);
    let out_ref = reference::attention(q_ref.clone(), k_ref, v_ref, table_ref, pairs_ref);
    let grads_ref = out_ref.clone().sum().backward();
    let d_q_ref: Vec<f32> = q_ref
        .grad(&grads_ref)
        .ok_or("q is tracked")?
        .into_data()
        .to_vec()?;
    let out_ref: Vec<f32> = out_ref.inner().into_data().to_vec()?;
    assert_close("output rows", &per_head(&out_host, rows), &out_ref, true)?;
    assert_close("dQ rows", &per_head(&d_q, rows), &d_q_ref, true)?;
    Ok(())
}

#[test]
fn the_tuner_keeps_the_fastest_candidate_per_adapter_and_shape() -> TestResult {
    if wgpu_device("the_tuner_keeps_the_fastest_candidate_per_adapter_and_shape")?.is_none() {
        return Ok(());
    }
    // A device of its own, made to tune whatever its adapter and size.
    let device = open_wgpu(None)?;
    select_kernels(&device, Selection::Tuned);
    let case = &cases()[2];
    check_case(case, 21, &device, &[None])?;

    let candidates = tuning::candidates_on(&device, case.head_dim);
    let shape = AttentionShape {
        heads: case.heads,
        rows: case.rows,
        keys: case.keys,
        head_dim: case.head_dim,
        buckets: case.buckets,
        max_bucket: (case.buckets - 1) as u8,
    };
    let saved: std::collections::HashMap<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(tuning::cache_file())?)?;
    for pass in [Pass::Forward, Pass::Backward] {
        let chosen = tuning::last_kernel(&device, pass).ok_or("the pass ran no kernel")?;
        assert!(
            candidates.contains(&chosen),
            "{pass:?}: {chosen} is no candidate"
        );
        let key = tuning::choice_key(&adapter_identity(&device).key, pass, &shape);
        assert_eq!(
            saved.get(&key),
            Some(&serde_json::to_value(chosen)?),
            "{pass:?}: the cache file at {} holds the choice under {key}",
            tuning::cache_file().display()
        );
    }
    Ok(())
}
