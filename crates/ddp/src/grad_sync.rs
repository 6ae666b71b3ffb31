//! Gradient synchronisation between the replicas of a data-parallel worker: after every step, each
//! rank's gradients are replaced by the mean over the worker's ranks, so that identical optimizer
//! steps keep the replicas identical. Parameters are broadcast from the root once at the start.

use crate::error::Result;
use propulate_engine::context::WorkerContext;

/// How the ranks of a worker average gradients and share parameters (flat `f32` buffers).
pub trait GradSync {
    /// Number of replicas.
    fn ranks(&self) -> usize;
    /// This replica's index among them (0 is the worker root).
    fn rank(&self) -> usize;
    /// Element-wise sum of `values` over the replicas (validation totals).
    fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()>;
    /// Replace `grads` by their element-wise mean over the replicas.
    fn all_reduce_mean(&mut self, grads: &mut [f32]) -> Result<()>;
    /// Give every replica the root's `params`.
    fn broadcast_from_root(&mut self, params: &mut [f32]) -> Result<()>;
    /// True on every replica if `flag` is true on any (early stopping, a failed replica).
    fn any(&mut self, flag: bool) -> Result<bool> {
        let mut votes = [f64::from(u8::from(flag))];
        self.all_reduce_sum(&mut votes)?;
        Ok(votes[0] > 0.0)
    }
}

/// Gradient averaging over the worker's communicator, in host memory (CPU training): native
/// `MPI_Allreduce` under MPI, channels between threads with in-process ranks. A single-rank worker
/// averages over itself: a no-op.
pub struct CommGradSync<'c, 'a> {
    ctx: &'c mut WorkerContext<'a>,
}

impl<'c, 'a> CommGradSync<'c, 'a> {
    /// Average over the ranks of `ctx`'s worker.
    pub fn new(ctx: &'c mut WorkerContext<'a>) -> Self {
        CommGradSync { ctx }
    }

    /// The worker's context, for what a training does besides averaging (reporting a validation
    /// loss with [`WorkerContext::report`]).
    pub fn context(&mut self) -> &mut WorkerContext<'a> {
        self.ctx
    }
}

impl GradSync for CommGradSync<'_, '_> {
    fn ranks(&self) -> usize {
        self.ctx.worker_size
    }

    fn rank(&self) -> usize {
        self.ctx.worker_rank
    }

    fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()> {
        Ok(self.ctx.all_reduce_sum(values)?)
    }

    fn all_reduce_mean(&mut self, grads: &mut [f32]) -> Result<()> {
        let n = self.ctx.worker_size as f32;
        if let Some(comm) = self.ctx.worker_comm() {
            comm.all_reduce_sum_f32(grads)?;
            for g in grads.iter_mut() {
                *g /= n;
            }
        }
        Ok(())
    }

    fn any(&mut self, flag: bool) -> Result<bool> {
        match self.ctx.worker_comm() {
            Some(comm) => Ok(comm.any(flag)?),
            None => Ok(flag),
        }
    }

    fn broadcast_from_root(&mut self, params: &mut [f32]) -> Result<()> {
        let Some(comm) = self.ctx.worker_comm() else { return Ok(()) };
        let mut bytes: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
        comm.broadcast(0, &mut bytes)?;
        for (p, b) in params.iter_mut().zip(bytes.chunks_exact(4)) {
            *p = f32::from_le_bytes(b.try_into().expect("4 bytes"));
        }
        Ok(())
    }
}

/// True when every replica holds bit-identical `params` (collective over the replicas): the root's
/// parameters are broadcast and every replica compares them with its own, bit for bit.
pub fn replicas_agree<S: GradSync + ?Sized>(sync: &mut S, params: &[f32]) -> Result<bool> {
    let mut root = params.to_vec();
    sync.broadcast_from_root(&mut root)?;
    let differs = root.iter().zip(params).any(|(a, b)| a.to_bits() != b.to_bits());
    Ok(!sync.any(differs)?)
}
