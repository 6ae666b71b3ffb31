//! How bytes move between ranks: one small trait, two implementations. `mpi` (rsmpi, behind the
//! default cargo feature) is the engine; `local` runs ranks as threads of one process, for tests and
//! for machines without MPI. The driver is written once against [`Communicator`].
//!
//! Sends are always non-blocking: the communicator owns the buffer until the send completes, and
//! `test_sends` / `wait_sends` complete them. Collectives have portable defaults built from
//! point-to-point messages on reserved tags; the MPI implementation overrides the hot ones.

pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
mod rendezvous;

use crate::error::{Error, Result};

/// A message tag. Tags at or above [`RESERVED_TAG_BASE`] belong to the collectives.
pub type Tag = i32;

/// First tag reserved for collectives built on point-to-point messages.
pub const RESERVED_TAG_BASE: Tag = 30_000;
const TAG_BARRIER: Tag = RESERVED_TAG_BASE;
const TAG_BCAST: Tag = RESERVED_TAG_BASE + 1;
const TAG_GATHER: Tag = RESERVED_TAG_BASE + 2;
const TAG_REDUCE: Tag = RESERVED_TAG_BASE + 3;
const TAG_REDUCE_SCATTER: Tag = RESERVED_TAG_BASE + 4;

/// A group of ranks that can exchange messages (MPI communicator or its in-process twin): its
/// point-to-point messages and its collectives.
pub trait Communicator: PointToPoint + Collectives {}

impl<T: PointToPoint + Collectives + ?Sized> Communicator for T {}

/// Messages between two ranks of a group, never blocking on send.
pub trait PointToPoint {
    /// This rank's index in the group.
    fn rank(&self) -> usize;
    /// Number of ranks in the group.
    fn size(&self) -> usize;
    /// Start sending `bytes` to `dest`; never blocks. The buffer is kept until the send completes.
    fn send(&mut self, dest: usize, tag: Tag, bytes: Vec<u8>) -> Result<()>;
    /// A message with `tag` from any rank, if one has arrived; never blocks.
    fn try_recv(&mut self, tag: Tag) -> Result<Option<(usize, Vec<u8>)>>;
    /// Wait for a message with `tag` from `source`.
    fn recv(&mut self, source: usize, tag: Tag) -> Result<Vec<u8>>;
    /// Wait for a message with `tag` from any rank.
    fn recv_any(&mut self, tag: Tag) -> Result<(usize, Vec<u8>)>;
    /// Complete the sends that can complete; returns how many are still pending.
    fn test_sends(&mut self) -> usize;
    /// Wait until every send started on this communicator has completed.
    fn wait_sends(&mut self) -> Result<()>;
    /// End the whole job with a message: the last resort when something cannot be recovered.
    fn abort(&mut self, code: i32, message: &str) -> !;
}

/// Operations every rank of the group calls together. The defaults are built from point-to-point
/// messages on reserved tags; the MPI implementation overrides the hot ones with native calls.
pub trait Collectives: PointToPoint {
    /// Split into sub-groups. Ranks with the same `color` form a group, ordered by `key`; `None`
    /// opts out and gets `None` back.
    fn split(&mut self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Communicator>>>;

    /// Block until every rank has reached the barrier.
    fn barrier(&mut self) -> Result<()> {
        let (rank, size) = (self.rank(), self.size());
        if rank == 0 {
            for r in 1..size {
                self.recv(r, TAG_BARRIER)?;
            }
            for r in 1..size {
                self.send(r, TAG_BARRIER, Vec::new())?;
            }
        } else {
            self.send(0, TAG_BARRIER, Vec::new())?;
            self.recv(0, TAG_BARRIER)?;
        }
        self.wait_sends()
    }

    /// Every rank ends with `root`'s `data`.
    fn broadcast(&mut self, root: usize, data: &mut Vec<u8>) -> Result<()> {
        if self.rank() == root {
            for r in (0..self.size()).filter(|&r| r != root) {
                self.send(r, TAG_BCAST, data.clone())?;
            }
            self.wait_sends()
        } else {
            *data = self.recv(root, TAG_BCAST)?;
            Ok(())
        }
    }

    /// Every rank gets every rank's `bytes`, in rank order.
    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let (rank, size) = (self.rank(), self.size());
        for r in (0..size).filter(|&r| r != rank) {
            self.send(r, TAG_GATHER, bytes.clone())?;
        }
        let mut out = Vec::with_capacity(size);
        for r in 0..size {
            out.push(if r == rank { bytes.clone() } else { self.recv(r, TAG_GATHER)? });
        }
        self.wait_sends()?;
        Ok(out)
    }

    /// Rank r gets the sum over every rank of its `values[r]` (MPI's reduce-scatter with one
    /// value per rank): what a rank holds grows with the group, not with its square, as an
    /// all-gather of every rank's vector would.
    fn reduce_scatter_sum_u64(&mut self, values: &[u64]) -> Result<u64> {
        let (rank, size) = (self.rank(), self.size());
        check_one_per_rank(values, size)?;
        for r in (0..size).filter(|&r| r != rank) {
            self.send(r, TAG_REDUCE_SCATTER, values[r].to_le_bytes().to_vec())?;
        }
        let mut sum = values[rank];
        for r in (0..size).filter(|&r| r != rank) {
            let bytes: [u8; 8] = self.recv(r, TAG_REDUCE_SCATTER)?.try_into().map_err(|b: Vec<u8>| {
                Error::Transport(format!("reduce-scatter: {} bytes from rank {r}, not 8", b.len()))
            })?;
            sum += u64::from_le_bytes(bytes);
        }
        self.wait_sends()?;
        Ok(sum)
    }

    /// Element-wise sum of `values` over all ranks, left in `values` on every rank.
    fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (rank, size) = (self.rank(), self.size());
        if rank == 0 {
            for r in 1..size {
                let other = self.recv(r, TAG_REDUCE)?;
                add_le_f64(values, &other)?;
            }
        } else {
            self.send(0, TAG_REDUCE, bytes)?;
        }
        let mut total: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.broadcast(0, &mut total)?;
        for (v, c) in values.iter_mut().zip(total.chunks_exact(8)) {
            *v = f64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        self.wait_sends()
    }

    /// Element-wise sum of `f32` values (gradients) over all ranks. The default goes through
    /// `all_reduce_sum` in f64; every rank rounds the same total, so replicas stay identical.
    fn all_reduce_sum_f32(&mut self, values: &mut [f32]) -> Result<()> {
        let mut wide: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        self.all_reduce_sum(&mut wide)?;
        for (v, w) in values.iter_mut().zip(wide) {
            *v = w as f32;
        }
        Ok(())
    }

    /// True on every rank if `flag` is true on any rank.
    fn any(&mut self, flag: bool) -> Result<bool> {
        let all = self.all_gather(vec![u8::from(flag)])?;
        Ok(all.iter().any(|b| b.first() == Some(&1)))
    }

    /// Whether this communicator's waits sleep between polls (`true`: long waits, such as a worker
    /// done with its budget waiting for the others) or poll as fast as the transport can (a
    /// worker's ranks meeting every generation). Transports without the distinction ignore it.
    fn set_patient(&mut self, patient: bool) {
        let _ = patient;
    }

    /// The underlying MPI communicator, for loss closures that do their own collectives.
    #[cfg(feature = "mpi")]
    fn as_mpi(&self) -> Option<&::mpi::topology::SimpleCommunicator> {
        None
    }
}

/// Reborrow an optional communicator for a shorter time (the trait object's lifetime shrinks too,
/// which `Option::as_deref_mut` cannot express).
pub fn reborrow<'s>(comm: &'s mut Option<&mut dyn Communicator>) -> Option<&'s mut dyn Communicator> {
    match comm {
        Some(c) => Some(&mut **c),
        None => None,
    }
}

/// Borrow an optional boxed communicator.
pub fn borrow_boxed(comm: &mut Option<Box<dyn Communicator>>) -> Option<&mut dyn Communicator> {
    match comm {
        Some(c) => Some(&mut **c),
        None => None,
    }
}

fn add_le_f64(acc: &mut [f64], bytes: &[u8]) -> Result<()> {
    if bytes.len() != acc.len() * 8 {
        return Err(Error::Transport(format!(
            "all_reduce: ranks disagree on the vector length ({} vs {} values)",
            acc.len(),
            bytes.len() / 8
        )));
    }
    for (a, c) in acc.iter_mut().zip(bytes.chunks_exact(8)) {
        *a += f64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    Ok(())
}

/// A reduce-scatter of one value per rank takes one value per rank of the group.
fn check_one_per_rank(values: &[u64], size: usize) -> Result<()> {
    if values.len() == size {
        Ok(())
    } else {
        Err(Error::Transport(format!("reduce-scatter of {} values in a group of {size} ranks", values.len())))
    }
}
