//! The global allocator of the wasm builds (the app and `commlens-wasm`): dlmalloc, the
//! allocator std itself uses on `wasm32-unknown-unknown`, over a linear memory that grows in
//! large steps.
//!
//! Why: std's allocator asks the engine for exactly the pages each request lacks, so reading a
//! large dump grew the memory thousands of times. Every `memory.grow` replaces the JavaScript
//! view of the memory and counts against V8's external-memory budget, which starts garbage
//! collections. Profiled in Node on a 500k-node dump, a cold `plan_report` spent 24% of its
//! time in `memory.grow` and 25% in the collector (docs/performance.md has the figures).
//!
//! The policy: grow by half the current size (at least 16 MiB, at least the request), so a
//! read that ends at N bytes grows O(log N) times. Untouched pages of the last step cost
//! address space, not resident memory. When a large step does not fit under the engine's
//! limit, the exact request is tried, as std does.

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::cell::UnsafeCell;

#[cfg(target_feature = "atomics")]
compile_error!("wasm_heap assumes one thread: build without the atomics target feature");

const PAGE: usize = 64 * 1024;
/// The smallest step, in pages (16 MiB).
const MIN_STEP_PAGES: usize = 256;

/// dlmalloc's source of system memory: `memory.grow` in steps.
struct Pages;

/// The pages to grow by for a request of `need` pages when the memory holds `have`.
fn step(need: usize, have: usize) -> usize {
    need.max(have / 2).max(MIN_STEP_PAGES)
}

// SAFETY: the regions handed out come from `memory.grow`, which never overlap and are never
// given back (`free` and `free_part` refuse), as in dlmalloc's own wasm `System`.
unsafe impl dlmalloc::Allocator for Pages {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let need = size.div_ceil(PAGE);
        for pages in [step(need, wasm32::memory_size(0)), need] {
            let previous = wasm32::memory_grow(0, pages);
            if previous == usize::MAX {
                continue;
            }
            let base = previous * PAGE;
            let len = pages * PAGE;
            // A region that ends at the top of the address space would let a pointer wrap to
            // 0; dlmalloc's own wasm `System` leaves its last bytes out for the same reason.
            let len = if base.wrapping_add(len) == 0 {
                len - 16
            } else {
                len
            };
            return (base as *mut u8, len, 0);
        }
        (std::ptr::null_mut(), 0, 0)
    }

    fn remap(&self, _: *mut u8, _: usize, _: usize, _: bool) -> *mut u8 {
        std::ptr::null_mut()
    }

    fn free_part(&self, _: *mut u8, _: usize, _: usize) -> bool {
        false
    }

    fn free(&self, _: *mut u8, _: usize) -> bool {
        false
    }

    fn can_release_part(&self, _: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        PAGE
    }
}

/// `#[global_allocator] static HEAP: commlens::wasm_heap::Heap = commlens::wasm_heap::Heap::new();`
pub struct Heap(UnsafeCell<dlmalloc::Dlmalloc<Pages>>);

// SAFETY: `wasm32-unknown-unknown` without the atomics feature (checked above) runs one
// thread, and dlmalloc does not call back into the global allocator, so the cell is never
// borrowed twice at once.
unsafe impl Sync for Heap {}

impl Heap {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Heap {
        Heap(UnsafeCell::new(dlmalloc::Dlmalloc::new_with_allocator(
            Pages,
        )))
    }
}

// SAFETY: each method forwards to dlmalloc with the layout's size and alignment, which is
// dlmalloc's own `GlobalAlloc` contract; see `Sync` above for the exclusive borrow.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).malloc(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).calloc(layout.size(), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        (*self.0.get()).free(ptr, layout.size(), layout.align())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size)
    }
}
