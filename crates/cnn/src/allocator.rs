//! The C allocator's settings for training on CPUs.
//!
//! libtorch (and Burn's flex backend) take every activation and gradient of a step from `malloc`
//! and free it before the next step. With glibc's defaults, blocks above its adaptive mmap
//! threshold are mapped fresh and unmapped on free, and freed memory at the top of the heap is
//! handed back to the kernel, so every step faults in its working set again: on a 2-core machine
//! a fifth of the reference CNN's step time went to page faults (perf), and the step took 1.1 to
//! 1.7 times its time with the settings below (`benches/cnn_step.sh`, docs/benchmarks/cnn.md).
//! Keeping freed memory for the next step is what PyTorch's caching allocator does on GPUs and
//! what tcmalloc or jemalloc give CPU users.

use std::sync::OnceLock;

/// Blocks smaller than this come from the heap and are reused (glibc's largest adaptive value).
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Freed memory at the top of the heap is returned to the kernel only above this.
pub const TRIM_THRESHOLD: usize = 512 << 20;

/// The `GLIBC_TUNABLES` setting equal to these settings (benches give it to PyTorch, to compare
/// like with like).
pub fn glibc_tunables() -> String {
    format!("glibc.malloc.mmap_threshold={MMAP_THRESHOLD}:glibc.malloc.trim_threshold={TRIM_THRESHOLD}")
}

/// Keep the memory a training step frees for the next step (set once per process). A user's own
/// malloc settings win: with `GLIBC_TUNABLES` naming malloc, or `MALLOC_MMAP_THRESHOLD_` or
/// `MALLOC_TRIM_THRESHOLD_` set, nothing changes. Returns true if these settings are in effect
/// (set by this call or an earlier one). Only glibc has them; elsewhere it does nothing.
pub fn keep_freed_memory() -> bool {
    static IN_EFFECT: OnceLock<bool> = OnceLock::new();
    *IN_EFFECT.get_or_init(|| !user_set_malloc() && set_thresholds())
}

/// True if the environment sets glibc's malloc thresholds itself.
fn user_set_malloc() -> bool {
    std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("malloc"))
        || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
        || std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    // SAFETY: mallopt only changes the allocator's thresholds; glibc takes its arena lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_fit_glibc_and_take_effect() {
        // glibc refuses an mmap threshold above 32 MiB on 64-bit systems (HEAP_MAX_SIZE / 2).
        assert!(MMAP_THRESHOLD <= 32 << 20 && TRIM_THRESHOLD <= i32::MAX as usize);
        assert_eq!(glibc_tunables(), "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=536870912");
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        // Other tests may have made a device (and so the first call) already: the answer is the same.
        for _ in 0..2 {
            assert_eq!(keep_freed_memory(), glibc && !user_set_malloc(), "glibc accepts the thresholds");
        }
    }
}
