//! Gradient averaging over NCCL between the GPUs of a data-parallel worker (cargo feature `nccl`).
//! The worker root creates the NCCL unique id and hands it to its ranks through the worker's
//! [`TcpStore`]; each rank then joins the NCCL communicator on its own GPU.
//!
//! CUDA and NCCL are loaded when first used, so this builds on machines without them; there,
//! [`NcclGradSync::new`] returns an error that says what is missing instead of crashing.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use cudarc::nccl::{Comm, Id, ReduceOp};

use super::grad_sync::GradSync;
use super::tcp_store::TcpStore;
use crate::error::{Error, Result};
use propulate_engine::context::WorkerContext;
use propulate_engine::launcher::Device;

/// The store key of the NCCL unique id.
const ID_KEY: &str = "nccl/unique-id";

/// True when the CUDA driver and NCCL libraries can be loaded on this machine.
pub fn nccl_available() -> bool {
    // SAFETY: these only try to load the shared libraries; nothing is called through them.
    unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nccl::sys::is_culib_present() }
}

fn nccl_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Nccl(format!("{what}: {e:?}"))
}

/// Gradient averaging on the GPUs of a worker, one GPU per rank.
pub struct NcclGradSync {
    comm: Comm,
    stream: Arc<CudaStream>,
    ranks: usize,
    rank: usize,
}

impl NcclGradSync {
    /// Join the worker's NCCL group on the GPU the launcher gave this rank (`ctx.device`), using
    /// `store` (one NCCL group per store) to pass the unique id from the worker root to the others.
    /// Collective over the worker's ranks.
    pub fn new(ctx: &WorkerContext<'_>, store: &mut TcpStore) -> Result<Self> {
        let Device::Gpu(gpu) = ctx.device else {
            return Err(Error::Nccl(
                "this rank has no GPU (set CUDA_VISIBLE_DEVICES, or average on CPUs with CommGradSync)".into(),
            ));
        };
        if !nccl_available() {
            return Err(Error::Nccl(
                "the CUDA driver (libcuda.so) or NCCL (libnccl.so) cannot be loaded on this machine; \
                 load the CUDA module, or average on CPUs with CommGradSync"
                    .into(),
            ));
        }
        let id = if ctx.is_worker_root() {
            if store.check(&[ID_KEY])? {
                return Err(Error::Nccl("this store already set up an NCCL group; use a new worker store".into()));
            }
            let id = Id::new().map_err(|e| nccl_error("creating the unique id", e))?;
            let bytes: Vec<u8> = id.internal().iter().map(|&c| c as u8).collect();
            store.set(ID_KEY, &bytes)?;
            id
        } else {
            let bytes = store.get(ID_KEY)?;
            let internal: [std::ffi::c_char; 128] = std::array::from_fn(|i| bytes.get(i).copied().unwrap_or(0) as _);
            if bytes.len() != 128 {
                return Err(Error::Nccl(format!("the unique id in the store has {} bytes, not 128", bytes.len())));
            }
            Id::uninit(internal)
        };
        let context = CudaContext::new(gpu).map_err(|e| nccl_error(&format!("opening GPU {gpu}"), e))?;
        let stream = context.default_stream();
        let comm = Comm::from_rank(Arc::clone(&stream), ctx.worker_rank, ctx.worker_size, id)
            .map_err(|e| nccl_error("joining the worker's group", e))?;
        Ok(NcclGradSync { comm, stream, ranks: ctx.worker_size, rank: ctx.worker_rank })
    }

    fn on_gpu<T: cudarc::driver::DeviceRepr + Copy>(
        &mut self,
        values: &mut [T],
        op: impl FnOnce(&Comm, &mut cudarc::driver::CudaSlice<T>) -> Result<()>,
    ) -> Result<()> {
        let mut buf = self.stream.clone_htod(values).map_err(|e| nccl_error("copying to the GPU", e))?;
        op(&self.comm, &mut buf)?;
        let back = self.stream.clone_dtoh(&buf).map_err(|e| nccl_error("copying from the GPU", e))?;
        values.copy_from_slice(&back);
        Ok(())
    }
}

impl GradSync for NcclGradSync {
    fn ranks(&self) -> usize {
        self.ranks
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()> {
        self.on_gpu(values, |comm, buf| {
            comm.all_reduce_in_place(buf, &ReduceOp::Sum).map(|_| ()).map_err(|e| nccl_error("all-reduce", e))
        })
    }

    fn all_reduce_mean(&mut self, grads: &mut [f32]) -> Result<()> {
        self.on_gpu(grads, |comm, buf| {
            comm.all_reduce_in_place(buf, &ReduceOp::Avg).map(|_| ()).map_err(|e| nccl_error("all-reduce", e))
        })
    }

    fn broadcast_from_root(&mut self, params: &mut [f32]) -> Result<()> {
        self.on_gpu(params, |comm, buf| {
            comm.broadcast_in_place(buf, 0).map(|_| ()).map_err(|e| nccl_error("broadcast", e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_or_the_libraries_setting_up_is_a_clear_error() {
        let token = super::super::StoreToken::random().unwrap();
        let server = super::super::TcpStoreServer::bind("127.0.0.1", 0, token.clone()).unwrap();
        let mut store =
            TcpStore::connect(&server.addr().to_string(), &token, std::time::Duration::from_secs(5)).unwrap();
        for device in [Device::Cpu, Device::Gpu(0)] {
            let ctx = WorkerContext::standalone(0, device);
            match NcclGradSync::new(&ctx, &mut store) {
                Err(e) if device == Device::Cpu => assert!(e.to_string().contains("this rank has no GPU"), "{e}"),
                Err(e) => assert!(!nccl_available() && e.to_string().contains("cannot be loaded"), "{e}"),
                // A machine with a GPU and NCCL: a one-rank group averages to the same values.
                Ok(mut sync) => {
                    let mut v = vec![1.5f32, -2.0];
                    sync.all_reduce_mean(&mut v).unwrap();
                    assert_eq!(v, vec![1.5, -2.0]);
                }
            }
        }
    }
}
