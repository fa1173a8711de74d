//! Counter-based dropout on wgpu (`shaders/dropout.wgsl`) against the host reference
//! ([`DropoutMask::apply`]): the same masks bit for bit, for node rows, global-token rows, a
//! row block's shift and one-column tensors (feature values); and the backward, which must be
//! the same mask applied to the upstream gradient.

use megagraph_engine::{
    burn::backend::wgpu::WgpuDevice,
    burn::tensor::{Tensor, TensorData},
    device::{WgpuAutodiff, WgpuBackend},
    kernels::{DropoutMask, DropoutStreams, RowNumbering, counter_dropout},
};
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::common::{TestResult, gl_device, wgpu_device};

/// `count` values in [-1, 1) drawn from `seed`.
fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| rng.random::<f32>() * 2.0 - 1.0)
        .collect()
}

/// The cases: (rows, width, probability, where the rows sit).
fn cases() -> Vec<(usize, usize, f64, RowNumbering)> {
    let rows = |shift, nodes, first_node, first_token| RowNumbering {
        shift,
        nodes,
        first_node,
        first_token,
    };
    vec![
        // A shard of 5 node rows (sequence rows 3..8) and 2 global tokens.
        (7, 5, 0.5, rows(0, 5, 3, 100)),
        // The second row block of 130 rows of a shard, past its 200 node rows into the tokens.
        (130, 64, 0.1, rows(130, 200, 4000, 9000)),
        // Feature values: one column, numbered by entry.
        (1000, 1, 0.5, rows(0, 1000, 123_456, 0)),
    ]
}

#[test]
fn the_kernel_draws_the_host_masks_bit_for_bit() -> TestResult {
    let Some(device) = wgpu_device("the_kernel_draws_the_host_masks_bit_for_bit")? else {
        return Ok(());
    };
    host_masks_on(&device)
}

#[test]
fn the_kernel_draws_the_host_masks_bit_for_bit_on_gl() -> TestResult {
    let Some(gl) = gl_device("the_kernel_draws_the_host_masks_bit_for_bit_on_gl")? else {
        return Ok(());
    };
    let device = gl.device.clone();
    host_masks_on(&device)
}

/// The dropout kernel's masks on `device` against the host's, bit for bit.
fn host_masks_on(device: &WgpuDevice) -> TestResult {
    let streams = DropoutStreams::new(11, 4, 2);
    for (case, (rows, width, prob, numbering)) in cases().into_iter().enumerate() {
        let mask = DropoutMask::new(streams.site(case as u32), prob, numbering);
        let host = values(rows * width, case as u64);
        let x = Tensor::<WgpuBackend, 2>::from_data(
            TensorData::new(host.clone(), [rows, width]),
            device,
        );
        let got = counter_dropout(x, &mask).into_data().to_vec::<f32>()?;
        let want = mask.apply(&host, width);
        let differ = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            differ, 0,
            "case {case}: {differ} elements differ from the host mask"
        );
        let dropped = want.iter().filter(|&&v| v == 0.0).count() as f64 / want.len() as f64;
        assert!(
            (dropped - prob).abs() < 0.1,
            "case {case}: dropped {dropped} at p = {prob}"
        );
    }
    Ok(())
}

#[test]
fn the_backward_is_the_same_mask_on_the_gradient() -> TestResult {
    let Some(device) = wgpu_device("the_backward_is_the_same_mask_on_the_gradient")? else {
        return Ok(());
    };
    let (rows, width, prob, numbering) = cases()[1];
    let mask = DropoutMask::new(DropoutStreams::new(1, 2, 3).site(4), prob, numbering);
    let x = Tensor::<WgpuAutodiff, 2>::from_data(
        TensorData::new(values(rows * width, 8), [rows, width]),
        &device,
    )
    .require_grad();
    let weights = values(rows * width, 9);
    let w = Tensor::<WgpuAutodiff, 2>::from_data(
        TensorData::new(weights.clone(), [rows, width]),
        &device,
    );
    let grads = (counter_dropout(x.clone(), &mask) * w).sum().backward();
    let got = x
        .grad(&grads)
        .ok_or("x has a gradient")?
        .into_data()
        .to_vec::<f32>()?;
    // d(sum(mask(x) · w))/dx = mask(w).
    let want = mask.apply(&weights, width);
    assert_eq!(got, want);
    Ok(())
}
