//! A device's memory high-water marks during training: bytes held by live tensors and bytes its
//! pool has reserved.

use std::cell::Cell;

use crate::device::MemoryProbe;

/// The largest of the samples taken, if any.
#[derive(Debug, Clone, Default)]
struct Peak(Cell<Option<u64>>);

impl Peak {
    /// Takes a sample.
    fn sample(&self, bytes: Option<u64>) {
        if let Some(bytes) = bytes {
            self.0
                .set(Some(self.0.get().map_or(bytes, |p| p.max(bytes))));
        }
    }
}

/// Samples a device's memory after every pass, then has its pool give back every buffer no
/// tensor holds. The pool frees nothing on its own (see `device::pools`), so its reservation
/// only grows between two samples, and the largest sample is its true high-water mark.
#[derive(Debug, Clone, Default)]
pub(super) struct MemoryWatch {
    in_use: Peak,
    reserved: Peak,
}

impl MemoryWatch {
    /// Samples `device` and releases its free buffers.
    pub fn after_pass<B: MemoryProbe>(&self, device: &B::Device) {
        self.in_use.sample(B::in_use_bytes(device));
        self.reserved.sample(B::reserved_bytes(device));
        B::memory_cleanup(device);
    }

    /// The most bytes live tensors held at a sample.
    pub fn peak_in_use(&self) -> Option<u64> {
        self.in_use.0.get()
    }

    /// The most bytes the pool held reserved.
    pub fn peak_reserved(&self) -> Option<u64> {
        self.reserved.0.get()
    }
}
