//! How a wgpu device's memory is pooled: the pool layout handed to cubecl's allocator.
//!
//! cubecl's default layout on wgpu slices every allocation above 16 MiB out of pages as large
//! as the device's largest binding (128 MiB on lavapipe). A shard of a large sequence holds
//! tensors of tens of MiB (`[262144, 64]` floats are 64 MiB), and two of them rarely share a
//! page: the million-node run reserved up to 1.6× the bytes its tensors held. [`fitted_pools`]
//! keeps sliced pages for small allocations and gives each larger one a buffer of its own, from
//! size classes [`CLASS_RATIO`] apart, so a buffer exceeds its tensor by at most that ratio.
//!
//! No pool frees anything on its own: buffers of a size class no longer used would otherwise
//! stay reserved until an idle period ran out, at a moment no one samples. The trainer instead
//! samples the pool after every pass and then has it give back every free buffer (an explicit
//! cleanup), so the reservation only grows between samples and the samples see its peak.

use cubecl_runtime::memory_management::{MemoryConfiguration, MemoryPoolOptions, PoolType};

/// The sliced pools, as (page size, largest slice): cubecl's two smaller ones.
const SLICED: [(u64, u64); 2] = [(8 << 20, 2 << 20), (32 << 20, 8 << 20)];

/// The ratio between neighbouring size classes of the allocations too large to slice:
/// 2^(1/8), so a buffer is at most 9% larger than what it holds.
pub const CLASS_RATIO: f64 = 1.090_507_732_665_257_7;

/// The pool layout for a device whose largest binding is `max_page` bytes and whose buffer
/// offsets align to `alignment` bytes.
pub fn fitted_pools(max_page: u64, alignment: u64) -> MemoryConfiguration {
    let alignment = alignment.max(1);
    let max_page = (max_page / alignment * alignment).max(alignment);
    let align = |bytes: u64| bytes.next_multiple_of(alignment).min(max_page);
    // Size-zero allocations cannot take an offset, so they get buffers of their own, as in
    // cubecl's layout.
    let mut pools = vec![exclusive(0)];
    let mut largest = 0;
    for (page, slice) in SLICED {
        let slice = align(slice);
        if slice > largest {
            pools.push(MemoryPoolOptions {
                pool_type: PoolType::SlicedPages {
                    page_size: align(page),
                    max_slice_size: slice,
                },
                dealloc_period: None,
            });
            largest = slice;
        }
    }
    let mut class = largest as f64;
    while largest < max_page {
        class *= CLASS_RATIO;
        let size = align(class as u64);
        if size > largest {
            pools.push(exclusive(size));
            largest = size;
        }
    }
    MemoryConfiguration::Custom {
        pool_options: pools,
    }
}

/// A pool that gives every allocation of at most `max_alloc_size` bytes a buffer of its own,
/// kept for reuse until an explicit cleanup.
fn exclusive(max_alloc_size: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::ExclusivePages { max_alloc_size },
        dealloc_period: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pools' largest accepted sizes, in order, each with whether the pool slices pages.
    fn limits(config: &MemoryConfiguration) -> Vec<(u64, bool)> {
        let MemoryConfiguration::Custom { pool_options } = config else {
            panic!("a custom layout");
        };
        pool_options
            .iter()
            .map(|p| match p.pool_type {
                PoolType::ExclusivePages { max_alloc_size } => (max_alloc_size, false),
                PoolType::SlicedPages { max_slice_size, .. } => (max_slice_size, true),
            })
            .collect()
    }

    #[test]
    fn every_size_up_to_the_binding_lands_in_a_pool_at_most_one_class_larger() {
        let (max_page, alignment) = (128 << 20, 256);
        let pools = limits(&fitted_pools(max_page, alignment));
        assert_eq!(pools.last(), Some(&(max_page, false)), "{pools:?}");
        assert!(pools.windows(2).all(|p| p[0].0 < p[1].0), "{pools:?}");
        assert!(pools.iter().all(|&(l, _)| l % alignment == 0), "{pools:?}");
        for size in [
            1,
            1000,
            2 << 20,
            9 << 20,
            70_856_192,
            max_page - 1,
            max_page,
        ] {
            let &(limit, sliced) = pools.iter().find(|(l, _)| *l >= size).expect("a pool");
            let bound = size as f64 * CLASS_RATIO + alignment as f64;
            assert!(
                sliced || (limit as f64) <= bound,
                "{size} lands in a class of {limit}"
            );
        }
    }

    #[test]
    fn a_small_binding_limit_keeps_every_pool_within_it() {
        let pools = limits(&fitted_pools(4 << 20, 16));
        assert!(pools.iter().all(|&(l, _)| l <= 4 << 20), "{pools:?}");
        assert_eq!(pools.last(), Some(&(4 << 20, true)), "{pools:?}");
    }
}
