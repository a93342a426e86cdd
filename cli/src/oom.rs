//! Running out of memory ends the process with a message and exit code 1, not SIGABRT.
//!
//! The input-size limit (`--max-input-mb`) and the reader's per-value limits keep memory in
//! proportion to the input, but a machine (or a `ulimit -v`) can still have less than a
//! large input needs. Rust's default on a failed allocation is to abort; this allocator
//! wraps the system one and, when an allocation fails, writes what happened to stderr (with
//! no allocation of its own) and exits with status 1 without running anything else.

use std::alloc::{GlobalAlloc, Layout};

/// An allocator (`System`, or another such as mimalloc), with a clear exit when it fails.
pub struct ExitOnOom<A>(pub A);

const MESSAGE: &[u8] = b"commlens: out of memory: the input needs more memory than this machine \
allows the process; lower --max-input-mb to refuse such inputs early, or free memory\n";

#[cold]
fn out_of_memory() -> ! {
    // SAFETY: `write` on fd 2 with a static buffer, then `_exit`: neither allocates nor runs
    // destructors or atexit handlers, which might allocate.
    unsafe {
        libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
        libc::_exit(1)
    }
}

// SAFETY: every call is forwarded to the inner allocator; a null result never returns to the caller.
unsafe impl<A: GlobalAlloc> GlobalAlloc for ExitOnOom<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc(layout);
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc_zeroed(layout);
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = self.0.realloc(ptr, layout, new_size);
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}
