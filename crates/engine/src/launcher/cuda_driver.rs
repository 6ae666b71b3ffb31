//! How many GPUs the CUDA driver sees, asked at run time: `libcuda.so.1` is opened with dlopen, so
//! the engine builds and runs on machines without CUDA, where the answer is an error to report (no
//! GPUs), never a panic.

use std::sync::OnceLock;

use libloading::Library;

/// `CUresult CUDAAPI cuInit(unsigned int Flags)`.
type CuInit = unsafe extern "C" fn(flags: u32) -> i32;
/// `CUresult CUDAAPI cuDeviceGetCount(int *count)`.
type CuDeviceGetCount = unsafe extern "C" fn(count: *mut i32) -> i32;

/// `CUDA_SUCCESS`.
const CUDA_SUCCESS: i32 = 0;
/// `CUDA_ERROR_NO_DEVICE`: a driver is installed but no GPU is usable, an answer rather than a fault.
const CUDA_ERROR_NO_DEVICE: i32 = 100;

/// The number of GPUs the driver reports, or why it could not be asked. Asked once per process:
/// in-process ranks share the answer, and cuInit costs a noticeable fraction of a second.
pub(crate) fn device_count() -> Result<usize, String> {
    static COUNT: OnceLock<Result<usize, String>> = OnceLock::new();
    COUNT.get_or_init(query).clone()
}

fn query() -> Result<usize, String> {
    // SAFETY: libcuda.so.1 is the NVIDIA driver's library; its initializers have no preconditions.
    let lib = unsafe { Library::new("libcuda.so.1") }.map_err(|e| format!("libcuda.so.1 not loaded ({})", why(&e)))?;
    // SAFETY: the signatures are those of the CUDA driver API (cuda.h), stable since CUDA 2.0.
    let (init, count) = unsafe {
        let init = lib.get::<CuInit>(b"cuInit\0").map_err(|e| format!("libcuda.so.1 has no cuInit ({})", why(&e)))?;
        let count = lib
            .get::<CuDeviceGetCount>(b"cuDeviceGetCount\0")
            .map_err(|e| format!("libcuda.so.1 has no cuDeviceGetCount ({})", why(&e)))?;
        (*init, *count)
    };
    // SAFETY: cuInit takes flags that must be 0; cuDeviceGetCount writes one int.
    let found = unsafe {
        match init(0) {
            CUDA_SUCCESS => {}
            CUDA_ERROR_NO_DEVICE => return Ok(0),
            code => return Err(format!("cuInit failed with CUDA error {code}")),
        }
        let mut n: i32 = 0;
        match count(&mut n) {
            CUDA_SUCCESS => Ok(usize::try_from(n).unwrap_or(0)),
            code => Err(format!("cuDeviceGetCount failed with CUDA error {code}")),
        }
    };
    // The driver stays loaded: closing it after cuInit would pull its code from under the threads
    // it started, and libtorch or NCCL open the same library again later anyway.
    std::mem::forget(lib);
    found
}

/// libloading's own message ("dlopen failed") with the system's reason, which it keeps as source.
fn why(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(reason) => reason.to_string(),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the machine has (a driver or none), asking never panics and gives one stable answer.
    #[test]
    fn asking_the_driver_is_safe_and_cached() {
        let first = device_count();
        assert_eq!(first, device_count());
        if let Err(why) = &first {
            assert!(why.contains("libcuda.so.1") || why.contains("CUDA error"), "{why}");
        }
    }
}
