//! Gradient averaging over NCCL between the GPUs of a data-parallel worker (cargo feature `nccl`).
//! The worker root creates the NCCL unique id and hands it to its ranks through the worker's
//! [`TcpStore`]; each rank then joins the NCCL communicator on its own GPU.
//!
//! Joining is collective inside NCCL: a rank that never arrives leaves the others waiting for ever.
//! So before anyone joins, the ranks check what each can check alone (a GPU, the libraries, a CUDA
//! context, the unique id) and agree over the worker's MPI communicator that all are ready; a
//! failure on any rank, or two ranks on one GPU, fails the set-up on every rank with a message
//! that names the rank, its host, its GPU and the cause.
//!
//! CUDA and NCCL are loaded when first used, so this builds on machines without them; there,
//! [`NcclGradSync::new`] returns an error that says what is missing instead of crashing.

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use cudarc::nccl::result::NcclError;
use cudarc::nccl::sys::ncclResult_t;
use cudarc::nccl::{Comm, Id, ReduceOp};

use super::grad_sync::GradSync;
use super::tcp_store::TcpStore;
use crate::error::{Error, Result};
use propulate_engine::context::WorkerContext;
use propulate_engine::launcher::Device;
use propulate_engine::transport::Communicator;

/// The store key of the NCCL unique id.
const ID_KEY: &str = "nccl/unique-id";

/// Bytes of an NCCL unique id.
const ID_LEN: usize = 128;

/// The advice that ends most set-up errors: training goes on without NCCL.
const ON_CPUS: &str = "or average on CPUs with CommGradSync";

/// True when the CUDA driver and NCCL libraries can be loaded on this machine.
pub fn nccl_available() -> bool {
    // SAFETY: these only try to load the shared libraries; nothing is called through them.
    unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nccl::sys::is_culib_present() }
}

/// What an NCCL result code means for the person running the job. cudarc shows every NCCL error as
/// `NcclError`; the code is what tells a driver problem from a network one.
fn nccl_meaning(code: ncclResult_t) -> &'static str {
    match code {
        ncclResult_t::ncclUnhandledCudaError => {
            "a CUDA call inside NCCL failed (a driver error, a GPU out of memory, or a GPU in exclusive mode held by \
             another process)"
        }
        ncclResult_t::ncclSystemError => {
            "a system call failed (a network interface, sockets, or shared memory in /dev/shm); NCCL_DEBUG=INFO \
             names the call"
        }
        ncclResult_t::ncclInternalError => "an internal NCCL error; NCCL_DEBUG=INFO shows where",
        ncclResult_t::ncclInvalidArgument => {
            "an invalid argument (a rank outside the group, a damaged unique id, or a null buffer)"
        }
        ncclResult_t::ncclInvalidUsage => {
            "NCCL was used wrongly (two ranks on one GPU, which NCCL reports as \"Duplicate GPU detected\", or ranks \
             that call different collectives)"
        }
        ncclResult_t::ncclRemoteError => {
            "another rank of the group failed or its connection broke (a rank died, or the network between nodes)"
        }
        ncclResult_t::ncclInProgress => "the operation had not finished (a non-blocking communicator)",
        _ => "a result code this build of propulate does not know",
    }
}

/// An NCCL failure: the operation, the GPU, the result code and its meaning.
fn nccl_failure(what: &str, gpu: usize, e: &NcclError) -> String {
    format!("{what} on GPU {gpu} failed with {:?}: {}", e.0, nccl_meaning(e.0))
}

/// A CUDA driver failure: the operation, the GPU, the driver's code and its description.
fn cuda_failure(what: &str, gpu: usize, e: &DriverError) -> String {
    let description = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{what} on GPU {gpu} failed with {:?}: {description}", e.0)
}

fn collective_error(what: &str, gpu: usize, e: &NcclError) -> Error {
    Error::Nccl(nccl_failure(what, gpu, e))
}

/// What one rank found when it checked whether it can join: its host, its GPU (the index it sees,
/// and the physical GPU's PCI address, which tells two ranks on one GPU apart from two ranks that
/// see different GPUs under the same index) and, if it cannot join, why.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Readiness {
    host: String,
    gpu: Option<usize>,
    pci: Option<String>,
    failure: Option<String>,
}

impl Readiness {
    /// Lines `host`, `gpu`, `pci`, `failure`; `-` for none (a failure may span lines: it is last).
    fn encode(&self) -> Vec<u8> {
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let gpu = or_dash(self.gpu.map(|g| g.to_string()));
        format!("{}\n{gpu}\n{}\n{}", self.host, or_dash(self.pci.clone()), or_dash(self.failure.clone())).into_bytes()
    }

    fn decode(bytes: &[u8]) -> Readiness {
        let text = String::from_utf8_lossy(bytes);
        let mut lines = text.splitn(4, '\n');
        let mut next = || lines.next().filter(|l| !l.is_empty() && *l != "-").map(str::to_string);
        let (host, gpu, pci, failure) = (next(), next(), next(), next());
        let gpu_index = gpu.as_deref().and_then(|g| g.parse().ok());
        let damaged = (host.is_none() || gpu.is_some() != gpu_index.is_some())
            .then(|| format!("its readiness report was damaged ({text:?})"));
        Readiness { host: host.unwrap_or_else(|| "?".into()), gpu: gpu_index, pci, failure: failure.or(damaged) }
    }

    fn gpu_name(&self) -> String {
        self.gpu.map_or_else(|| "no GPU".into(), |g| format!("GPU {g}"))
    }
}

/// The error every rank returns when the readiness reports of the worker's ranks (in rank order)
/// say that the group cannot form: the first rank that failed, or the first two ranks on one GPU.
/// `None` when every rank is ready.
fn agreed_failure(ranks: &[Readiness]) -> Option<String> {
    let failed: Vec<(usize, &Readiness)> = ranks.iter().enumerate().filter(|(_, r)| r.failure.is_some()).collect();
    if let Some(&(rank, r)) = failed.first() {
        let others = match failed.len() - 1 {
            0 => String::new(),
            1 => " (and 1 other rank)".into(),
            n => format!(" (and {n} other ranks)"),
        };
        return Some(format!(
            "rank {rank} of this worker (host {}, {}) cannot join the NCCL group{others}: {}",
            r.host,
            r.gpu_name(),
            r.failure.as_deref().unwrap_or_default()
        ));
    }
    for (b, rb) in ranks.iter().enumerate() {
        let same = |ra: &&Readiness| ra.host == rb.host && ra.pci.is_some() && ra.pci == rb.pci;
        if let Some(a) = ranks[..b].iter().position(|ra| same(&ra)) {
            let ra = &ranks[a];
            return Some(format!(
                "ranks {a} and {b} of this worker both use the GPU at PCI {} on {} (their {} and {}); NCCL needs \
                 a GPU of its own for each rank (it would fail with \"Duplicate GPU detected\"): give each rank its \
                 own GPU (CUDA_VISIBLE_DEVICES, or no more ranks per node than GPUs), {ON_CPUS}",
                rb.pci.as_deref().unwrap_or_default(),
                rb.host,
                ra.gpu_name(),
                rb.gpu_name()
            ));
        }
    }
    None
}

/// Exchange this rank's readiness with the worker's other ranks (collective) and fail on every rank
/// if any is not ready. A single-rank worker (`comm` = `None`) decides alone.
fn agree(comm: Option<&mut (dyn Communicator + '_)>, mine: Readiness) -> Result<()> {
    let ranks = match comm {
        Some(comm) => comm.all_gather(mine.encode())?.iter().map(|b| Readiness::decode(b)).collect(),
        None => vec![mine],
    };
    agreed_failure(&ranks).map_or(Ok(()), |e| Err(Error::Nccl(e)))
}

/// The PCI address of the context's GPU, as NCCL identifies GPUs (`domain:bus:device`).
fn pci_address(context: &CudaContext) -> Option<String> {
    let attribute = |a| context.attribute(a).ok();
    let domain = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
    let bus = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
    let device = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}"))
}

/// What a rank checks alone before the group forms: its GPU's context, and on the root a fresh
/// unique id (so that a root that cannot make one fails everyone instead of leaving them waiting
/// for it in the store).
fn prepare(
    gpu: Option<usize>,
    root: bool,
    store: &mut TcpStore,
) -> std::result::Result<(Arc<CudaContext>, Option<Id>), String> {
    let Some(gpu) = gpu else {
        return Err(format!("this rank has no GPU (give it one with CUDA_VISIBLE_DEVICES, {ON_CPUS})"));
    };
    if !nccl_available() {
        return Err(format!(
            "the CUDA driver (libcuda.so) or NCCL (libnccl.so) cannot be loaded on this machine; load the CUDA \
             module, {ON_CPUS}"
        ));
    }
    super::nccl_library::check_single_nccl()?;
    let context = CudaContext::new(gpu).map_err(|e| cuda_failure("opening a CUDA context", gpu, &e))?;
    if !root {
        return Ok((context, None));
    }
    if store.check(&[ID_KEY]).map_err(|e| e.to_string())? {
        return Err("this store already set up an NCCL group; use a new worker store".into());
    }
    let id = Id::new().map_err(|e| nccl_failure("creating the unique id", gpu, &e))?;
    Ok((context, Some(id)))
}

/// Gradient averaging on the GPUs of a worker, one GPU per rank.
pub struct NcclGradSync {
    comm: Comm,
    stream: Arc<CudaStream>,
    ranks: usize,
    rank: usize,
    gpu: usize,
}

impl NcclGradSync {
    /// Join the worker's NCCL group on the GPU the launcher gave this rank (`ctx.device`), using
    /// `store` (one NCCL group per store) to pass the unique id from the worker root to the others.
    /// Collective over the worker's ranks: they agree over the worker's communicator that every
    /// one of them is ready before any joins, so that a rank without a GPU, without the libraries,
    /// or sharing its GPU with another rank fails the set-up on all of them instead of leaving the
    /// others waiting inside NCCL.
    pub fn new(ctx: &mut WorkerContext<'_>, store: &mut TcpStore) -> Result<Self> {
        let (rank, ranks, root) = (ctx.worker_rank, ctx.worker_size, ctx.is_worker_root());
        let host = propulate_engine::launcher::hostname();
        let gpu = match ctx.device {
            Device::Gpu(g) => Some(g),
            _ => None,
        };
        let report = |pci: Option<String>, failure: Option<String>| Readiness { host: host.clone(), gpu, pci, failure };

        let prepared = prepare(gpu, root, store);
        let pci = prepared.as_ref().ok().and_then(|(context, _)| pci_address(context));
        agree(ctx.worker_comm(), report(pci.clone(), prepared.as_ref().err().cloned()))?;
        let (context, id) = prepared.map_err(Error::Nccl)?;
        let gpu = gpu.unwrap_or_default();

        // The id goes from the root to the others through the store; a rank that cannot read it
        // says so to everyone before anyone joins.
        let id = match id {
            Some(id) => {
                let bytes: Vec<u8> = id.internal().iter().map(|&c| c as u8).collect();
                store.set(ID_KEY, &bytes).map(|()| id).map_err(|e| e.to_string())
            }
            None => store.get(ID_KEY).map_err(|e| e.to_string()).and_then(|bytes| {
                if bytes.len() != ID_LEN {
                    return Err(format!("the unique id in the store has {} bytes, not {ID_LEN}", bytes.len()));
                }
                Ok(Id::uninit(std::array::from_fn(|i| bytes[i] as std::ffi::c_char)))
            }),
        };
        agree(ctx.worker_comm(), report(pci.clone(), id.as_ref().err().cloned()))?;
        let id = id.map_err(Error::Nccl)?;

        let stream = context.default_stream();
        let comm = Comm::from_rank(Arc::clone(&stream), rank, ranks, id)
            .map_err(|e| nccl_failure("joining the worker's NCCL group", gpu, &e));
        // Whoever joined learns whether everyone did, so that no rank trains alone.
        agree(ctx.worker_comm(), report(pci, comm.as_ref().err().cloned()))?;
        let comm = comm.map_err(Error::Nccl)?;
        Ok(NcclGradSync { comm, stream, ranks, rank, gpu })
    }

    /// `values` copied into a new buffer on this rank's GPU.
    pub fn upload(&self, values: &[f32]) -> Result<cudarc::driver::CudaSlice<f32>> {
        self.stream.clone_htod(values).map_err(|e| Error::Nccl(cuda_failure("copying to the GPU", self.gpu, &e)))
    }

    /// `buf` copied back from this rank's GPU (after everything queued before it).
    pub fn download(&self, buf: &cudarc::driver::CudaSlice<f32>) -> Result<Vec<f32>> {
        self.stream.clone_dtoh(buf).map_err(|e| Error::Nccl(cuda_failure("copying from the GPU", self.gpu, &e)))
    }

    /// Average `buf`, which is on this rank's GPU already, over the worker's ranks in place: no
    /// round trip through host memory. Queued on the stream: [`NcclGradSync::synchronize`] waits.
    pub fn all_reduce_mean_device(&mut self, buf: &mut cudarc::driver::CudaSlice<f32>) -> Result<()> {
        let gpu = self.gpu;
        self.comm
            .all_reduce_in_place(buf, &ReduceOp::Avg)
            .map(|_| ())
            .map_err(|e| collective_error("all-reduce", gpu, &e))
    }

    /// Wait until this rank's GPU has done everything queued on the group's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| Error::Nccl(cuda_failure("waiting for the GPU", self.gpu, &e)))
    }

    fn on_gpu<T: cudarc::driver::DeviceRepr + Copy>(
        &mut self,
        values: &mut [T],
        op: impl FnOnce(&Comm, &mut cudarc::driver::CudaSlice<T>) -> Result<()>,
    ) -> Result<()> {
        let gpu = self.gpu;
        let mut buf =
            self.stream.clone_htod(values).map_err(|e| Error::Nccl(cuda_failure("copying to the GPU", gpu, &e)))?;
        op(&self.comm, &mut buf)?;
        let back =
            self.stream.clone_dtoh(&buf).map_err(|e| Error::Nccl(cuda_failure("copying from the GPU", gpu, &e)))?;
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
        let gpu = self.gpu;
        self.on_gpu(values, |comm, buf| {
            comm.all_reduce_in_place(buf, &ReduceOp::Sum)
                .map(|_| ())
                .map_err(|e| collective_error("all-reduce", gpu, &e))
        })
    }

    fn all_reduce_mean(&mut self, grads: &mut [f32]) -> Result<()> {
        let gpu = self.gpu;
        self.on_gpu(grads, |comm, buf| {
            comm.all_reduce_in_place(buf, &ReduceOp::Avg)
                .map(|_| ())
                .map_err(|e| collective_error("all-reduce", gpu, &e))
        })
    }

    fn broadcast_from_root(&mut self, params: &mut [f32]) -> Result<()> {
        let gpu = self.gpu;
        self.on_gpu(params, |comm, buf| {
            comm.broadcast_in_place(buf, 0).map(|_| ()).map_err(|e| collective_error("broadcast", gpu, &e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp_store::{StoreToken, TcpStoreServer};
    use propulate_engine::transport::PointToPoint;
    use propulate_engine::transport::local::run_local;

    fn ready(host: &str, gpu: usize, pci: &str) -> Readiness {
        Readiness { host: host.into(), gpu: Some(gpu), pci: Some(pci.into()), failure: None }
    }

    #[test]
    fn without_a_gpu_or_the_libraries_setting_up_is_a_clear_error() {
        let token = StoreToken::random().unwrap();
        let server = TcpStoreServer::bind("127.0.0.1", 0, token.clone()).unwrap();
        let mut store =
            TcpStore::connect(&server.addr().to_string(), &token, std::time::Duration::from_secs(5)).unwrap();
        for device in [Device::Cpu, Device::Gpu(0)] {
            let mut ctx = WorkerContext::standalone(0, device);
            match NcclGradSync::new(&mut ctx, &mut store) {
                Err(e) if device == Device::Cpu => {
                    let e = e.to_string();
                    assert!(e.contains("rank 0 of this worker (host ") && e.contains("no GPU) cannot join"), "{e}");
                    assert!(e.contains("this rank has no GPU"), "{e}");
                }
                Err(e) => assert!(!nccl_available() && e.to_string().contains("GPU 0) cannot join the NCCL group: the CUDA driver (libcuda.so) or NCCL (libnccl.so) cannot be loaded"), "{e}"),
                // A machine with a GPU and NCCL: a one-rank group averages to the same values.
                Ok(mut sync) => {
                    let mut v = vec![1.5f32, -2.0];
                    sync.all_reduce_mean(&mut v).unwrap();
                    assert_eq!(v, vec![1.5, -2.0]);
                }
            }
        }
    }

    #[test]
    fn readiness_reports_survive_the_exchange_and_damaged_ones_count_as_failures() {
        let mut r = ready("node-1", 3, "0000:3b:00");
        assert_eq!(Readiness::decode(&r.encode()), r);
        r.failure = Some("line one\nline two".into());
        r.pci = None;
        assert_eq!(Readiness::decode(&r.encode()), r);
        for damaged in [&b""[..], b"host\nnot-a-number\n-\n-"] {
            let d = Readiness::decode(damaged);
            assert!(d.failure.unwrap().contains("readiness report was damaged"));
        }
    }

    #[test]
    fn the_agreed_failure_names_the_first_failing_rank_or_the_two_ranks_on_one_gpu() {
        let mut ranks = vec![ready("a", 0, "0000:01:00"), ready("a", 1, "0000:02:00"), ready("b", 0, "0000:01:00")];
        assert_eq!(agreed_failure(&ranks), None, "the same PCI address on two hosts is two GPUs");

        // Two ranks that both see their GPU as index 0, but different ones (a GPU per task): fine.
        ranks.push(ready("b", 0, "0000:02:00"));
        assert_eq!(agreed_failure(&ranks), None);

        ranks.push(ready("a", 0, "0000:02:00"));
        let e = agreed_failure(&ranks).unwrap();
        assert!(
            e.starts_with(
                "ranks 1 and 4 of this worker both use the GPU at PCI 0000:02:00 on a (their GPU 1 and GPU 0)"
            ),
            "{e}"
        );
        assert!(
            e.contains("Duplicate GPU detected") && e.contains("CUDA_VISIBLE_DEVICES") && e.contains("CommGradSync"),
            "{e}"
        );

        ranks[2].failure = Some("opening a CUDA context on GPU 0 failed with CUDA_ERROR_NO_DEVICE".into());
        ranks[3].failure = Some("something else".into());
        let e = agreed_failure(&ranks).unwrap();
        assert_eq!(
            e,
            "rank 2 of this worker (host b, GPU 0) cannot join the NCCL group (and 1 other rank): opening a CUDA \
             context on GPU 0 failed with CUDA_ERROR_NO_DEVICE"
        );
    }

    #[test]
    fn nccl_result_codes_are_explained() {
        let e = nccl_failure("joining the worker's NCCL group", 2, &NcclError(ncclResult_t::ncclInvalidUsage));
        assert!(e.starts_with("joining the worker's NCCL group on GPU 2 failed with ncclInvalidUsage: "), "{e}");
        assert!(e.contains("two ranks on one GPU"), "{e}");
        for (code, words) in [
            (ncclResult_t::ncclUnhandledCudaError, "a CUDA call inside NCCL failed"),
            (ncclResult_t::ncclSystemError, "a system call failed"),
            (ncclResult_t::ncclInternalError, "internal NCCL error"),
            (ncclResult_t::ncclInvalidArgument, "invalid argument"),
            (ncclResult_t::ncclRemoteError, "another rank of the group failed"),
        ] {
            assert!(nccl_meaning(code).contains(words), "{code:?}");
        }
    }

    #[test]
    fn a_failure_on_one_in_process_rank_fails_the_set_up_on_every_rank() {
        let results = run_local(3, |mut comm| {
            let rank = comm.rank();
            let mut mine = ready("node", rank, &format!("0000:0{rank}:00"));
            if rank == 1 {
                mine.failure = Some("opening a CUDA context on GPU 1 failed with CUDA_ERROR_OUT_OF_MEMORY".into());
            }
            agree(Some(&mut comm), mine).map_err(|e| e.to_string())
        });
        for r in results {
            let e = r.unwrap().unwrap_err();
            assert!(
                e.contains("NCCL: rank 1 of this worker (host node, GPU 1) cannot join the NCCL group: opening"),
                "{e}"
            );
        }
        let results = run_local(2, |mut comm| {
            let rank = comm.rank();
            agree(Some(&mut comm), ready("node", 0, &format!("0000:0{rank}:00"))).map_err(|e| e.to_string())
        });
        assert!(results.into_iter().all(|r| r.unwrap().is_ok()));
    }
}
