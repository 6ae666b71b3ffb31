//! The executables' allocator: mimalloc (glibc's `free` was the largest single cost of a large
//! resume), told to keep the pages it frees for a while instead of handing them back to the
//! kernel at once.
//!
//! Why: a resume builds each island in bulk through buffers of hundreds of megabytes that live a
//! moment each. Handed back to the kernel when freed, every next buffer came as fresh pages that
//! the kernel zeroes, a third of a million-evaluation resume's CPU time on the 2-core
//! machine (docs/benchmarks/checkpointing.md). Kept, they are reused. Memory stays at the
//! process's peak for that long, then is returned as before.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long freed memory is kept before it goes back to the kernel, in milliseconds: longer than a
/// resume's rebuild takes (mimalloc's default is 1 s).
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e`, the same in mimalloc 2 and 3; the Rust
/// binding names no constant for it).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

unsafe extern "C" {
    /// mimalloc's option setter, linked with the allocator (libmimalloc-sys declares it only with
    /// its `extended` feature).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Set the purge delay, unless `MIMALLOC_PURGE_DELAY` (or its older name `MIMALLOC_RESET_DELAY`)
/// sets it: mimalloc's own variables win, for measuring.
pub fn keep_freed_pages() {
    if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"].iter().all(|v| std::env::var_os(v).is_none()) {
        // SAFETY: sets one integer option; mimalloc reads options atomically.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

#[cfg(test)]
mod tests {
    /// The option number is the purge delay's: before it is set, mimalloc reads it as the purge
    /// delay's default (1,000 ms in mimalloc 3), and after, as ours.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"].iter().any(|v| std::env::var_os(v).is_some()) {
            return; // the variable decides, and keep_freed_pages leaves it
        }
        // SAFETY: reads and sets one integer option.
        unsafe {
            assert_eq!(super::mi_option_get(super::MI_OPTION_PURGE_DELAY), 1000, "not mimalloc 3's purge delay");
            super::keep_freed_pages();
            assert_eq!(super::mi_option_get(super::MI_OPTION_PURGE_DELAY), super::PURGE_DELAY_MS);
        }
    }
}
