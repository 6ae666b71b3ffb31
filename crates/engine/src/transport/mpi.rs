//! MPI transport (rsmpi). Sends are `MPI_Isend`s whose buffers the communicator owns until `test`
//! reports them complete: nothing on the hot path blocks, unlike the reference's blocking sends
//! (its issue #159). Receives poll with a matched probe.
//!
//! A rank that waits (a worker done with its budget while others still run, a follower waiting
//! for its root, the end of the run) waits patiently: the blocking calls MPI offers poll in a
//! busy loop, yielding to the kernel when the machine is oversubscribed, which took a core's worth
//! of CPU per waiting rank from the ranks still working. Receives, the wait for sends to
//! complete, the barrier, `any` and the gathers here start the nonblocking operation and poll it, sleeping between polls longer
//! the longer it takes (after a millisecond of yielding; up to about a millisecond). The
//! broadcast (a follower's wait for its root's next child, every generation) and the gradient
//! sums of training, where every rank arrives at once, use MPI's blocking calls.

use mpi::Threading;
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, Scope, StaticScope};
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
    /// Whether waits sleep between polls ([`Collectives::set_patient`]; new communicators do).
    patient: bool,
}

/// Empty probes in a row after which [`MpiComm::try_recv`] says nothing has arrived.
const EMPTY_PROBES: usize = 3;

impl MpiComm {
    fn new(comm: SimpleCommunicator) -> Self {
        MpiComm { comm, pending: Vec::new(), patient: true }
    }

    /// A communicator of a program that initialised MPI itself (a Python front whose mpi4py owns
    /// MPI, so that no [`MpiRuntime`] may exist): the run uses `comm`, which it frees when
    /// dropped. Give it a duplicate of the program's own, so that the run's tags never meet the
    /// program's messages.
    pub fn from_communicator(comm: SimpleCommunicator) -> Self {
        MpiComm::new(comm)
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
        // A probe that finds nothing does not mean that nothing has arrived: Open MPI matches
        // what arrived as its progress engine runs, and an empty probe has often just moved
        // messages along. Measured (4 workers, trials of 2-6 s): a worker's drain after its trial
        // stopped at an empty probe while the next probe found the 5-10 results its island had
        // sent during the trial, so every worker bred one evaluation behind its island (and PBT
        // exploited states their owners had moved on from, and deleted). Nothing is missed with
        // two empty probes in a row; three leave a margin.
        for _ in 0..EMPTY_PROBES {
            if let Some(matched) = self.comm.any_process().immediate_matched_probe_with_tag(tag) {
                let source = matched.1.source_rank() as usize;
                let (bytes, _status) = matched.matched_receive_vec::<u8>();
                return Ok(Some((source, bytes)));
            }
        }
        Ok(None)
    }
    fn recv(&mut self, source: usize, tag: Tag) -> Result<Vec<u8>> {
        let mut patience = Patience::default();
        let process = self.comm.process_at_rank(source as i32);
        if !self.patient {
            return Ok(process.receive_vec_with_tag::<u8>(tag).0);
        }
        loop {
            if let Some(matched) = process.immediate_matched_probe_with_tag(tag) {
                return Ok(matched.matched_receive_vec::<u8>().0);
            }
            patience.pause();
        }
    }
    fn recv_any(&mut self, tag: Tag) -> Result<(usize, Vec<u8>)> {
        let mut patience = Patience::default();
        if !self.patient {
            let (message, status) = self.comm.any_process().matched_probe_with_tag(tag);
            return Ok((status.source_rank() as usize, (message, status).matched_receive_vec::<u8>().0));
        }
        loop {
            if let Some((from, bytes)) = self.try_recv(tag)? {
                return Ok((from, bytes));
            }
            patience.pause();
        }
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
        if self.patient {
            let mut patience = Patience::default();
            while self.test_sends() > 0 {
                patience.pause();
            }
            return Ok(());
        }
        for p in self.pending.drain(..) {
            p.request.wait();
            // SAFETY: the send completed, MPI no longer reads the buffer.
            drop(unsafe { Box::from_raw(p.buffer) });
        }
        Ok(())
    }
    fn abort(&mut self, code: i32, message: &str) -> ! {
        // One write: eprintln! writes each piece of its format separately, and Open MPI's own
        // MPI_ABORT banner, printed by the launcher, could land between them.
        let line = format!("propulate-rs: rank {} aborts the job: {message}\n", self.comm.rank());
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
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
        if self.patient {
            wait_patiently(self.comm.immediate_barrier());
        } else {
            self.comm.barrier();
        }
        Ok(())
    }
    fn broadcast(&mut self, root: usize, data: &mut Vec<u8>) -> Result<()> {
        let root_process = self.comm.process_at_rank(root as i32);
        let mut len = data.len() as u64;
        // MPI's blocking broadcast: a follower waits in it for its root's next child every
        // generation, and the nonblocking one made cheap multi-rank evaluations 15 % slower.
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
        // The lengths are what the ranks wait for each other on; the bytes follow at once.
        if self.patient {
            mpi::request::scope(|scope| {
                wait_patiently(self.comm.immediate_all_gather_into(scope, &len, &mut lens[..]))
            });
        } else {
            self.comm.all_gather_into(&len, &mut lens[..]);
        }
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
    fn reduce_scatter_sum_u64(&mut self, values: &[u64]) -> Result<u64> {
        super::check_one_per_rank(values, self.size())?;
        let (mut sum, op) = (0u64, mpi::collective::SystemOperation::sum());
        // Patient: a root done with its generations waits here for the others (termination.rs).
        if self.patient {
            mpi::request::scope(|scope| {
                wait_patiently(self.comm.immediate_reduce_scatter_block_into(scope, values, &mut sum, op))
            });
        } else {
            self.comm.reduce_scatter_block_into(values, &mut sum, op);
        }
        Ok(sum)
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
        let (flag, mut out) = (u8::from(flag), 0u8);
        let max = mpi::collective::SystemOperation::max();
        if self.patient {
            mpi::request::scope(|scope| {
                wait_patiently(self.comm.immediate_all_reduce_into(scope, &flag, &mut out, max))
            });
        } else {
            self.comm.all_reduce_into(&flag, &mut out, max);
        }
        Ok(out == 1)
    }
    fn set_patient(&mut self, patient: bool) {
        self.patient = patient;
    }
    fn as_mpi(&self) -> Option<&SimpleCommunicator> {
        Some(&self.comm)
    }
}

/// How long a wait only yields the core between polls (a partner that is about to arrive, such as
/// a root breeding its next child, costs no sleep).
const YIELDING: std::time::Duration = std::time::Duration::from_millis(1);
/// The longest sleep between two polls: 10 us doubled this many times (1.28 ms).
const MAX_DOUBLINGS: u32 = 7;

/// Pauses between polls of something not there yet: for the first millisecond a yield of the core
/// (what MPI's own wait does on an oversubscribed node), then sleeps from 20 us that double up to
/// about a millisecond, so that a long wait costs a waiting rank almost no CPU and a short one
/// almost no latency.
#[derive(Debug, Default)]
struct Patience {
    since: Option<std::time::Instant>,
    sleeps: u32,
}

impl Patience {
    fn pause(&mut self) {
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() < YIELDING {
            std::thread::yield_now();
            return;
        }
        self.sleeps = (self.sleeps + 1).min(MAX_DOUBLINGS);
        std::thread::sleep(std::time::Duration::from_micros(10 << self.sleeps));
    }
}

/// Wait for `request` to complete, polling it with [`Patience`].
fn wait_patiently<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) {
    let mut patience = Patience::default();
    loop {
        match request.test() {
            Ok(_status) => return,
            Err(pending) => {
                request = pending;
                patience.pause();
            }
        }
    }
}
