//! The device memory pools (`engine/src/device/pools.rs`) on wgpu: a large tensor gets a buffer
//! within one size class of its size (not a 128 MiB page), a freed buffer stays reserved for
//! reuse, and only an explicit cleanup gives it back, which is what lets the trainer's samples
//! see the pool's true high-water mark.

use megagraph_engine::{
    burn::tensor::{Tensor, backend::Backend},
    device::{MemoryProbe, WgpuBackend, open_wgpu},
};

use crate::common::{TestResult, wgpu_device};

#[test]
fn a_large_tensor_gets_a_fitted_buffer_kept_until_a_cleanup() -> TestResult {
    // The shared device first: its first opening sets the process's cubecl configuration,
    // which a device opened before it would fix instead (and the second setting would panic).
    if wgpu_device("a_large_tensor_gets_a_fitted_buffer_kept_until_a_cleanup")?.is_none() {
        return Ok(());
    }
    // A device of its own: the shared one's pool moves with the other tests.
    let device = open_wgpu(None)?;
    let reserved = || WgpuBackend::reserved_bytes(&device).ok_or("a wgpu pool");
    let before = reserved()?;
    // 70,000 × 256 floats: 71.7 MB, in a 128 MiB page under cubecl's default layout.
    let bytes = 70_000 * 256 * 4;
    let tensor = Tensor::<WgpuBackend, 2>::zeros([70_000, 256], &device);
    let held = reserved()? - before;
    assert!(
        held >= bytes && held as f64 <= bytes as f64 * 1.0906 + 4096.0,
        "a {bytes}-byte tensor reserved {held} bytes"
    );
    assert!(WgpuBackend::in_use_bytes(&device).ok_or("a wgpu pool")? >= bytes);
    drop(tensor);
    assert_eq!(reserved()?, before + held, "a freed buffer stays for reuse");
    WgpuBackend::memory_cleanup(&device);
    assert!(
        reserved()? < before + bytes,
        "a cleanup gives the free buffer back: {} reserved",
        reserved()?
    );
    Ok(())
}
