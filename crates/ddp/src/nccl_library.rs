//! One NCCL library per process. cudarc opens NCCL by the name `libnccl.so`; a process that
//! trains with libtorch (burn-tch) already holds libtorch's own NCCL, `libnccl.so.2` of the torch
//! wheel's `nvidia-nccl`. Where `libnccl.so` names another file (a system NCCL), the process would
//! hold two, and they break each other: measured on an H100 machine on 2026-11-26 (system NCCL
//! 2.28.3 and the torch wheel's 2.28.9), every all-reduce failed with "corrupted comm object
//! detected" (ncclInvalidArgument); with `libnccl.so` pointing at the torch wheel's file, the same
//! binary averaged correctly. So before NCCL is first used, a rank checks that `libnccl.so` is the
//! NCCL already loaded, if one is, and otherwise fails with the fix.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

/// The file of the NCCL library `name` opens with `flags` (`RTLD_NOLOAD`: only if already loaded),
/// found through one of its symbols; `None` when it does not open.
fn nccl_file(name: &str, flags: libc::c_int) -> Option<PathBuf> {
    let name = CString::new(name).ok()?;
    // SAFETY: dlopen/dlsym/dladdr/dlclose with valid C strings; the handle is closed before
    // returning and the path is copied out of `info` while the library is still open.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), flags);
        if handle.is_null() {
            return None;
        }
        let symbol = libc::dlsym(handle, c"ncclGetVersion".as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        let path = (!symbol.is_null() && libc::dladdr(symbol, &mut info) != 0 && !info.dli_fname.is_null())
            .then(|| PathBuf::from(CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned()));
        libc::dlclose(handle);
        path
    }
}

fn same_file(a: &PathBuf, b: &PathBuf) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// An error naming both files when the NCCL that cudarc would open is not the one this process
/// already holds (libtorch's); `Ok` when there is one NCCL (or none loaded yet).
pub(crate) fn check_single_nccl() -> Result<(), String> {
    let Some(loaded) = nccl_file("libnccl.so.2", libc::RTLD_LAZY | libc::RTLD_NOLOAD) else { return Ok(()) };
    let Some(by_name) = nccl_file("libnccl.so", libc::RTLD_LAZY | libc::RTLD_LOCAL) else { return Ok(()) };
    if same_file(&loaded, &by_name) {
        return Ok(());
    }
    let loaded = std::fs::canonicalize(&loaded).unwrap_or(loaded);
    Err(format!(
        "this process would hold two NCCL libraries, libtorch's {} and {}, which the name libnccl.so finds, and \
         two break each other (\"corrupted comm object\"); put a directory with a link libnccl.so -> {} first on \
         LD_LIBRARY_PATH (`source scripts/libtorch-env.sh` makes one)",
        loaded.display(),
        by_name.display(),
        loaded.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without any NCCL in the process (these machines have none), there is nothing to refuse.
    #[test]
    fn no_nccl_loaded_is_fine() {
        if nccl_file("libnccl.so.2", libc::RTLD_LAZY | libc::RTLD_NOLOAD).is_none() {
            assert_eq!(check_single_nccl(), Ok(()));
        }
        assert!(nccl_file("libpropulate-no-such-library.so", libc::RTLD_LAZY).is_none());
    }
}
