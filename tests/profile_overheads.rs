//! The profile's shared-overhead measurement on logical devices of one adapter (the CLI's
//! whole profile runs in `cli_plan`, with the overheads left out where devices share).

use megagraph_engine::profile::shared_overhead;

use crate::common::{TestResult, wgpu_logical_devices};

#[test]
fn the_model_is_timed_alone_and_with_every_device_at_once() -> TestResult {
    let Some(devices) =
        wgpu_logical_devices("the_model_is_timed_alone_and_with_every_device_at_once")?
    else {
        return Ok(());
    };
    let shared = shared_overhead(&devices[..2], 32);
    assert_eq!((shared.nodes, shared.devices), (32, 2), "{shared:?}");
    assert!(
        shared.alone_seconds > 0.0 && shared.alone_seconds < 60.0,
        "{shared:?}"
    );
    // Two devices on one CPU adapter share its cores and the host: each round waits for the
    // slower of them, so at once is not faster than alone beyond the timing noise.
    assert!(
        shared.slowdown > 0.9 && shared.at_once_seconds > 0.9 * shared.alone_seconds,
        "{shared:?}"
    );
    assert!(shared.contention().is_finite(), "{shared:?}");
    Ok(())
}
