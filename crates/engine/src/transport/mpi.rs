//! MPI transport (rsmpi). Sends are `MPI_Isend`s whose buffers the communicator owns until `test`
//! reports them complete: nothing on the hot path blocks, unlike the reference's blocking sends
//! (its issue #159). Receives poll with a matched probe.

use mpi::Threading;
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Color, Communicator as _, SimpleCommunicator};
use mpi::traits::*;

use super::{Collectives, Communicator, PointToPoint, Tag};
use crate::error::{Error, Result};

/// The MPI environment. Create it first and drop it last: communicators must be freed before
/// `MPI_Finalize` (dropping a split communicator after the universe aborts the job).
pub struct MpiRuntime {
    universe: Universe,
}

impl MpiRuntime {
    /// Initialise MPI (at most once per process).
    pub fn init() -> Result<Self> {
        let (universe, _threading) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| Error::Transport("MPI was already initialised in this process".into()))?;
        Ok(MpiRuntime { universe })
    }

    /// The world communicator.
    pub fn world(&self) -> MpiComm {
        MpiComm::new(self.universe.world().duplicate())
    }
}

/// An in-flight send: the request and the buffer it reads from, freed once the request completes.
struct PendingSend {
    request: Request<'static, [u8], StaticScope>,
    buffer: *mut [u8],
}

// SAFETY: the raw buffer pointer is owned exclusively by this struct (it came from a leaked Box);
// moving it between threads together with its request is sound.
unsafe impl Send for PendingSend {}

/// One rank's end of an MPI communicator.
pub struct MpiComm {
    comm: SimpleCommunicator,
    pending: Vec<PendingSend>,
}

impl MpiComm {
    fn new(comm: SimpleCommunicator) -> Self {
        MpiComm { comm, pending: Vec::new() }
    }
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        // rsmpi aborts on requests dropped before completion; finish them first.
        let _ = self.wait_sends();
    }
}

impl PointToPoint for MpiComm {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }
    fn size(&self) -> usize {
        self.comm.size() as usize
    }
    fn send(&mut self, dest: usize, tag: Tag, bytes: Vec<u8>) -> Result<()> {
        if dest >= self.size() {
            return Err(Error::Transport(format!("send to rank {dest} of a group of {}", self.size())));
        }
        let leaked: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let buffer: *mut [u8] = leaked;
        // SAFETY: `buffer` stays allocated until the request has completed (see `test_sends`).
        let shared: &'static [u8] = unsafe { &*buffer };
        let request = self.comm.process_at_rank(dest as i32).immediate_send_with_tag(StaticScope, shared, tag);
        self.pending.push(PendingSend { request, buffer });
        Ok(())
    }
    fn try_recv(&mut self, tag: Tag) -> Result<Option<(usize, Vec<u8>)>> {
        match self.comm.any_process().immediate_matched_probe_with_tag(tag) {
            Some(matched) => {
                let source = matched.1.source_rank() as usize;
                let (bytes, _status) = matched.matched_receive_vec::<u8>();
                Ok(Some((source, bytes)))
            }
            None => Ok(None),
        }
    }
    fn recv(&mut self, source: usize, tag: Tag) -> Result<Vec<u8>> {
        let (bytes, _status) = self.comm.process_at_rank(source as i32).receive_vec_with_tag::<u8>(tag);
        Ok(bytes)
    }
    fn recv_any(&mut self, tag: Tag) -> Result<(usize, Vec<u8>)> {
        let matched = self.comm.any_process().matched_probe_with_tag(tag);
        let source = matched.1.source_rank() as usize;
        let (bytes, _status) = matched.matched_receive_vec::<u8>();
        Ok((source, bytes))
    }
    fn test_sends(&mut self) -> usize {
        let mut still = Vec::with_capacity(self.pending.len());
        for p in self.pending.drain(..) {
            match p.request.test() {
                // SAFETY: the send completed, MPI no longer reads the buffer.
                Ok(_status) => drop(unsafe { Box::from_raw(p.buffer) }),
                Err(request) => still.push(PendingSend { request, buffer: p.buffer }),
            }
        }
        self.pending = still;
        self.pending.len()
    }
    fn wait_sends(&mut self) -> Result<()> {
        for p in self.pending.drain(..) {
            p.request.wait();
            // SAFETY: the send completed, MPI no longer reads the buffer.
            drop(unsafe { Box::from_raw(p.buffer) });
        }
        Ok(())
    }
    fn abort(&mut self, code: i32, message: &str) -> ! {
        eprintln!("propulate-rs: rank {} aborts the job: {message}", self.comm.rank());
        self.comm.abort(code)
    }
}

impl Collectives for MpiComm {
    fn split(&mut self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Communicator>>> {
        let color = match color {
            Some(c) => Color::with_value(c as i32),
            None => Color::undefined(),
        };
        Ok(self
            .comm
            .split_by_color_with_key(color, key as i32)
            .map(|c| Box::new(MpiComm::new(c)) as Box<dyn Communicator>))
    }
    fn barrier(&mut self) -> Result<()> {
        self.comm.barrier();
        Ok(())
    }
    fn broadcast(&mut self, root: usize, data: &mut Vec<u8>) -> Result<()> {
        let root_process = self.comm.process_at_rank(root as i32);
        let mut len = data.len() as u64;
        root_process.broadcast_into(&mut len);
        data.resize(len as usize, 0);
        root_process.broadcast_into(&mut data[..]);
        Ok(())
    }
    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        // Native MPI_Allgatherv: the portable point-to-point version took 28 s for 120 MB on 8
        // oversubscribed ranks (resume of a million-evaluation journal), this one about a second.
        let len = bytes.len() as u64;
        let mut lens = vec![0u64; self.size()];
        self.comm.all_gather_into(&len, &mut lens[..]);
        let total: u64 = lens.iter().sum();
        if total == 0 {
            return Ok(vec![Vec::new(); lens.len()]); // MPI_Allgatherv rejects an empty receive buffer
        }
        if total > i32::MAX as u64 {
            return Err(Error::Transport(format!("all_gather of {total} bytes exceeds MPI's 2 GiB count limit")));
        }
        let counts: Vec<mpi::Count> = lens.iter().map(|&l| l as mpi::Count).collect();
        let displs: Vec<mpi::Count> = counts
            .iter()
            .scan(0, |acc, &c| {
                let d = *acc;
                *acc += c;
                Some(d)
            })
            .collect();
        let mut buf = vec![0u8; total as usize];
        {
            let mut partition = mpi::datatype::PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(&bytes[..], &mut partition);
        }
        Ok(displs.iter().zip(&counts).map(|(&d, &c)| buf[d as usize..(d + c) as usize].to_vec()).collect())
    }
    fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()> {
        let send = values.to_vec();
        self.comm.all_reduce_into(&send[..], values, mpi::collective::SystemOperation::sum());
        Ok(())
    }
    fn all_reduce_sum_f32(&mut self, values: &mut [f32]) -> Result<()> {
        let send = values.to_vec();
        self.comm.all_reduce_into(&send[..], values, mpi::collective::SystemOperation::sum());
        Ok(())
    }
    fn any(&mut self, flag: bool) -> Result<bool> {
        let mut out = 0u8;
        self.comm.all_reduce_into(&u8::from(flag), &mut out, mpi::collective::SystemOperation::max());
        Ok(out == 1)
    }
    fn as_mpi(&self) -> Option<&SimpleCommunicator> {
        Some(&self.comm)
    }
}
