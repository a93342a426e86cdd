//! The process's allocator: mimalloc (the one the benches measure with; the system
//! allocator's bookkeeping took about a quarter of a large dump's read, docs/performance.md),
//! wrapped so that an allocation that fails ends the process with a message and exit code 1
//! instead of an abort (`crate::oom`), and told to give freed memory back soon.

#[global_allocator]
static ALLOCATOR: crate::oom::ExitOnOom<mimalloc::MiMalloc> =
    crate::oom::ExitOnOom(mimalloc::MiMalloc);

/// `mi_option_purge_delay` (its position in mimalloc's `mi_option_e`, v2 and v3 alike; the
/// binding names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed pages resident before returning them to the system, in
/// milliseconds. Its default (v3) is a second, longer than a whole run: every buffer a read
/// lets go (batches of text, a vector's old storage) stayed in the peak. At 10 ms, `render`
/// on a 500k-node dump peaks 30-40 MB lower for about 3% more time (docs/performance.md,
/// fifteenth session).
const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Sets the allocator's options; called first thing in `main`.
pub fn tune() {
    // SAFETY: mimalloc's option setter, called before any other thread exists (the option
    // table is not synchronised).
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_is_the_option_tuned() {
        // Before tuning it holds mimalloc v3's documented default: the position is the option.
        // SAFETY: reading and setting options on the test's thread.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 1000);
            tune();
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), PURGE_DELAY_MS);
        }
    }
}
