//! The CNN search as a task: the reference tutorial's search space, and one evaluation as every rank
//! of a worker runs it: meet through the worker's TCP store, pick the backend's device, average
//! gradients after every step (over the worker communicator on CPUs; over an NCCL group whose id
//! passes through the store on GPUs), train with the reference's recipe, and record the validation
//! accuracy and the epochs trained next to the loss.

use std::sync::Arc;
use std::time::Duration;

use propulate_core::{Params, SearchSpace};
use propulate_ddp::{CommGradSync, worker_store};
use propulate_engine::WorkerContext;
use propulate_engine::launcher::Device as RankDevice;

use crate::backend::{Backend, Compute, cuda_devices};
use crate::error::{Error, Result};
use crate::idx::ImageSet;
use crate::model::Activation;
use crate::train::{Hyperparameters, TrainOutcome, TrainSettings, train};

/// The reference tutorial's search space: 2 to 10 convolutions, the activation, Adadelta's learning
/// rate (log scale) and the learning rate's factor per epoch.
pub fn search_space() -> SearchSpace {
    SearchSpace::builder()
        .int("conv_layers", 2, 10)
        .categorical("activation", &Activation::NAMES)
        .log_float("lr", 1e-4, 1e-2)
        .float("gamma", 0.5, 0.999)
        .build()
        .expect("a valid space")
}

/// The hyperparameters of a point of [`search_space`].
pub fn hyperparameters(p: &Params<'_>) -> Result<Hyperparameters> {
    Ok(Hyperparameters {
        conv_layers: p.int("conv_layers") as usize,
        activation: Activation::from_name(p.category("activation"))?,
        lr: p.float("lr"),
        gamma: p.float("gamma"),
    })
}

/// Where the network trains: `--device cpu|cuda|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// The rank's CUDA GPU.
    Cuda,
    /// The rank's GPU when the backend sees one, the CPU otherwise.
    Auto,
}

impl DeviceChoice {
    /// The names `--device` takes.
    pub const NAMES: [&'static str; 3] = ["cpu", "cuda", "auto"];

    /// The choice called `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "cpu" => Ok(DeviceChoice::Cpu),
            "cuda" => Ok(DeviceChoice::Cuda),
            "auto" => Ok(DeviceChoice::Auto),
            _ => Err(Error::UnknownName { kind: "device", name: name.into(), valid: Self::NAMES.join(", ") }),
        }
    }

    /// What a rank computes on, given the device the launcher assigned it (a GPU from its local
    /// rank when `CUDA_VISIBLE_DEVICES` lists some) and its world rank.
    pub fn compute(self, backend: Backend, assigned: RankDevice, world_rank: usize) -> Compute {
        let gpus = if backend == Backend::Tch { cuda_devices() } else { 0 };
        let gpu = match assigned {
            RankDevice::Gpu(i) => i,
            RankDevice::Cpu => world_rank % gpus.max(1),
        };
        match self {
            DeviceChoice::Cpu => Compute::Cpu,
            DeviceChoice::Cuda => Compute::Cuda(gpu),
            DeviceChoice::Auto if gpus > 0 => Compute::Cuda(gpu),
            DeviceChoice::Auto => Compute::Cpu,
        }
    }
}

/// Everything an evaluation needs besides the point: the data, the recipe and where to train.
#[derive(Debug, Clone)]
pub struct CnnTask {
    /// The training images (every rank trains on its shard).
    pub train: Arc<ImageSet>,
    /// The validation images (every rank validates its shard; the loss covers all of them).
    pub valid: Arc<ImageSet>,
    /// Epochs, patience, batch.
    pub settings: TrainSettings,
    /// The Burn backend.
    pub backend: Backend,
    /// CPU or GPU.
    pub device: DeviceChoice,
    /// How long the worker's ranks wait for each other at the rendezvous and in the store.
    pub rendezvous_timeout: Duration,
}

impl CnnTask {
    /// Train the network of point `p` on the worker of `ctx` (collective over its ranks: all call
    /// it). Returns the same outcome on every rank; records `accuracy` and `epochs` as metrics.
    pub fn evaluate(&self, p: &Params<'_>, ctx: &mut WorkerContext<'_>) -> Result<TrainOutcome> {
        let hp = hyperparameters(p)?;
        let compute = self.device.compute(self.backend, ctx.device, ctx.world_rank);
        let device = self.backend.device(compute)?;
        // The worker's ranks meet for every evaluation, as the reference's do; the store also
        // carries the NCCL group's id on GPUs.
        let mut rendezvous = worker_store(ctx, 0, self.rendezvous_timeout)?;
        let seed = ctx.seed;
        let outcome = match compute {
            Compute::Cuda(_) if ctx.worker_size > 1 => {
                self.train_on_gpus(ctx, &mut rendezvous.store, &device, seed, hp)?
            }
            _ => train(&mut CommGradSync::new(ctx), &device, seed, &self.train, &self.valid, hp, self.settings)?,
        };
        ctx.record("accuracy", outcome.accuracy);
        ctx.record("epochs", outcome.epochs as f64);
        Ok(outcome)
    }

    /// A multi-rank worker on GPUs averages through an NCCL group whose id passes through the
    /// worker's store; without NCCL in the build, over the worker communicator (host memory).
    fn train_on_gpus(
        &self,
        ctx: &mut WorkerContext<'_>,
        store: &mut propulate_ddp::TcpStore,
        device: &burn::tensor::Device,
        seed: u64,
        hp: Hyperparameters,
    ) -> Result<TrainOutcome> {
        #[cfg(feature = "nccl")]
        let mut sync = propulate_ddp::NcclGradSync::new(ctx, store)?;
        #[cfg(not(feature = "nccl"))]
        let mut sync = {
            let _ = store;
            CommGradSync::new(ctx)
        };
        train(&mut sync, device, seed, &self.train, &self.valid, hp, self.settings)
    }
}
