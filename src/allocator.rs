//! The executables' allocator: mimalloc (glibc's `free` was the largest single cost of a large
//! resume), told to keep the pages it frees for a while instead of handing them back to the
//! kernel at once, and to commit its arenas' memory as it is used.
//!
//! Why: a resume builds each island in bulk through buffers of hundreds of megabytes that live a
//! moment each. Handed back to the kernel when freed, every next buffer came as fresh pages that
//! the kernel zeroes, a third of a million-evaluation resume's CPU time on the 2-core
//! machine (docs/benchmarks/checkpointing.md). Kept, they are reused. Memory stays at the
//! process's peak for that long, then is returned as before.
//!
//! Committed as used: with arenas committed at once (mimalloc's default on Linux), the pages each
//! thread had touched stayed in the process's resident memory after they were purged; with 1,024
//! in-process ranks (a thread each, 128 islands, 10 generations) that was 4.1 GB, 0.35 GB without
//! (`benches/scale.sh`, docs/benchmarks/scale.md).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long freed memory is kept before it goes back to the kernel, in milliseconds: longer than a
/// resume's rebuild takes (mimalloc's default is 1 s).
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e`, the same in mimalloc 2 and 3; the Rust
/// binding names no constant for it).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
/// mimalloc's `mi_option_arena_eager_commit` (0: commit as used; its default 2: at once where the
/// system overcommits, as Linux does).
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

unsafe extern "C" {
    /// mimalloc's option setter, linked with the allocator (libmimalloc-sys declares it only with
    /// its `extended` feature).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Set the purge delay and commit as used, each unless mimalloc's own variable sets it
/// (`MIMALLOC_PURGE_DELAY` or its older name `MIMALLOC_RESET_DELAY`; `MIMALLOC_ARENA_EAGER_COMMIT`):
/// those win, for measuring. Called first in `main`, before any thread.
pub fn set_options() {
    let unset = |names: &[&str]| names.iter().all(|v| std::env::var_os(v).is_none());
    if unset(&["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]) {
        // SAFETY: sets one integer option; mimalloc reads options atomically.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    if unset(&["MIMALLOC_ARENA_EAGER_COMMIT", "MIMALLOC_EAGER_REGION_COMMIT"]) {
        // SAFETY: as above.
        unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
    }
}

#[cfg(test)]
mod tests {
    /// The option numbers are the purge delay's and the arena commit's: before they are set,
    /// mimalloc reads them as their defaults (1,000 ms in mimalloc 3; 2), and after, as ours.
    #[test]
    fn the_options_set_are_the_purge_delay_and_the_arena_commit() {
        let set_outside = ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY", "MIMALLOC_ARENA_EAGER_COMMIT"];
        if set_outside.iter().any(|v| std::env::var_os(v).is_some()) {
            return; // the variables decide, and set_options leaves them
        }
        // SAFETY: reads and sets integer options.
        unsafe {
            assert_eq!(super::mi_option_get(super::MI_OPTION_PURGE_DELAY), 1000, "not mimalloc 3's purge delay");
            assert_eq!(super::mi_option_get(super::MI_OPTION_ARENA_EAGER_COMMIT), 2, "not the arena commit");
            super::set_options();
            assert_eq!(super::mi_option_get(super::MI_OPTION_PURGE_DELAY), super::PURGE_DELAY_MS);
            assert_eq!(super::mi_option_get(super::MI_OPTION_ARENA_EAGER_COMMIT), 0);
        }
    }
}
