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

use crate::backend::{Backend, Compute, cuda_devices, rank_gpus};
use crate::error::{Error, Result};
use crate::idx::ImageSet;
use crate::model::Activation;
use crate::train::{Hyperparameters, TrainOutcome, TrainSettings, Training};

/// The reference tutorial's search space: 2 to 10 convolutions, the activation, Adadelta's learning
/// rate (1e-4 to 1e-2, log scale) and the learning rate's factor per epoch.
pub fn search_space() -> SearchSpace {
    search_space_with(LrScale::Log)
}

/// How the learning rate's range is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LrScale {
    /// Evenly in its logarithm: each decade alike (the default).
    Log,
    /// Evenly in its value, as the reference searches it: 9 in 10 draws are above 1e-3.
    Linear,
}

/// [`search_space`] with the learning rate searched on `lr` scale.
pub fn search_space_with(lr: LrScale) -> SearchSpace {
    let builder = SearchSpace::builder().int("conv_layers", 2, 10).categorical("activation", &Activation::NAMES);
    let builder = match lr {
        LrScale::Log => builder.log_float("lr", 1e-4, 1e-2),
        LrScale::Linear => builder.float("lr", 1e-4, 1e-2),
    };
    builder.float("gamma", 0.5, 0.999).build().expect("a valid space")
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
    /// GPUs each rank trains one replica on (`--gpus-per-rank`): with more than 1, the
    /// convolutions on the first and the classifier on the last (model parallelism inside the
    /// replica, data parallelism across the worker's ranks as always).
    pub gpus_per_rank: usize,
}

/// Where one rank trains: the device of the convolutions, and the classifier's when it is another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Where the batch enters and the convolutions run.
    pub convolutions: Compute,
    /// The classifier's GPU with several GPUs per rank.
    pub classifier: Option<Compute>,
}

impl CnnTask {
    /// Where the rank with launcher device `assigned`, `world_rank` and `local_rank` (its index on
    /// its node) trains, checked without touching a device: what every rank checks before any
    /// trains.
    pub fn placement(&self, assigned: RankDevice, world_rank: usize, local_rank: usize) -> Result<Placement> {
        let placement = if self.gpus_per_rank <= 1 {
            Placement { convolutions: self.device.compute(self.backend, assigned, world_rank), classifier: None }
        } else {
            if self.device == DeviceChoice::Cpu || self.backend != Backend::Tch {
                return Err(Error::InvalidConfig(format!(
                    "--gpus-per-rank {} places each replica on GPUs: it needs --backend tch and --device cuda or auto",
                    self.gpus_per_rank
                )));
            }
            let gpus = rank_gpus(local_rank, self.gpus_per_rank, cuda_devices())?;
            Placement { convolutions: Compute::Cuda(gpus.start), classifier: Some(Compute::Cuda(gpus.end - 1)) }
        };
        self.backend.check(placement.convolutions)?;
        if let Some(c) = placement.classifier {
            self.backend.check(c)?;
        }
        Ok(placement)
    }

    /// Train the network of point `p` on the worker of `ctx` (collective over its ranks: all call
    /// it). Returns the same outcome on every rank; records `accuracy`, `epochs`, `seconds` (the
    /// training's wall time) and `params` (the network's parameter count) as metrics, which
    /// `--objectives` can name.
    pub fn evaluate(&self, p: &Params<'_>, ctx: &mut WorkerContext<'_>) -> Result<TrainOutcome> {
        let hp = hyperparameters(p)?;
        let local_rank = propulate_engine::launcher::LaunchInfo::detect().local_rank;
        let placement = self.placement(ctx.device, ctx.world_rank, local_rank)?;
        let (compute, device) = (placement.convolutions, self.backend.device(placement.convolutions)?);
        let classifier = placement.classifier.map(|c| self.backend.device(c)).transpose()?;
        if let Compute::Cuda(first) = compute {
            // The rank's first GPU is its GPU for everything else too (the NCCL group).
            ctx.device = RankDevice::Gpu(first);
        }
        // The worker's ranks meet for every evaluation, as the reference's do; the store also
        // carries the NCCL group's id on GPUs.
        let mut rendezvous = worker_store(ctx, 0, self.rendezvous_timeout)?;
        let seed = ctx.seed;
        let training_state = ctx.training().cloned();
        let started = std::time::Instant::now();
        let training = Training {
            train: &self.train,
            valid: &self.valid,
            hp,
            settings: self.settings,
            seed,
            classifier_device: classifier.as_ref(),
            state: training_state.as_ref(),
        };
        let outcome = match compute {
            Compute::Cuda(_) if ctx.worker_size > 1 => {
                Self::train_on_gpus(ctx, &mut rendezvous.store, &device, training)?
            }
            _ => training.run(&mut CommGradSync::new(ctx), &device, &mut |sync, epoch, loss| {
                report_epoch(sync.context(), epoch, loss)
            })?,
        };
        ctx.record("accuracy", outcome.accuracy);
        ctx.record("epochs", outcome.epochs as f64);
        ctx.record("seconds", started.elapsed().as_secs_f64());
        ctx.record("params", outcome.params as f64);
        Ok(outcome)
    }

    /// A multi-rank worker on GPUs averages through an NCCL group whose id passes through the
    /// worker's store; without NCCL in the build, over the worker communicator (host memory).
    fn train_on_gpus(
        ctx: &mut WorkerContext<'_>,
        store: &mut propulate_ddp::TcpStore,
        device: &burn::tensor::Device,
        training: Training<'_>,
    ) -> Result<TrainOutcome> {
        #[cfg(feature = "nccl")]
        {
            let mut sync = propulate_ddp::NcclGradSync::new(ctx, store)?;
            training.run(&mut sync, device, &mut |_, epoch, loss| report_epoch(ctx, epoch, loss))
        }
        #[cfg(not(feature = "nccl"))]
        {
            let _ = store;
            training.run(&mut CommGradSync::new(ctx), device, &mut |sync, epoch, loss| {
                report_epoch(sync.context(), epoch, loss)
            })
        }
    }
}

/// Report an epoch's validation loss to the run (its early stopper, if any); true to stop.
fn report_epoch(ctx: &mut WorkerContext<'_>, epoch: u64, loss: f64) -> Result<bool> {
    let decision = ctx.report(epoch, loss).map_err(propulate_ddp::Error::from)?;
    Ok(decision.is_stop())
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::rng::worker_rng;

    /// The share of 2000 random draws of the learning rate above 1e-3.
    fn above_1e3(space: &SearchSpace) -> f64 {
        let lr = space.index_of("lr").unwrap();
        let mut rng = worker_rng(7, 0);
        let draws: Vec<f64> = (0..2000).map(|_| space.sample_param(lr, &mut rng).as_f64()).collect();
        assert!(draws.iter().all(|x| (1e-4..=1e-2).contains(x)));
        draws.iter().filter(|&&x| x > 1e-3).count() as f64 / draws.len() as f64
    }

    #[test]
    fn the_learning_rate_is_searched_on_the_scale_asked_for() {
        assert_eq!(search_space(), search_space_with(LrScale::Log));
        // Log: one decade of two above 1e-3; linear: 9 in 10 (the reference's sampling).
        let (log, linear) = (above_1e3(&search_space()), above_1e3(&search_space_with(LrScale::Linear)));
        assert!((0.45..0.55).contains(&log), "{log}");
        assert!((0.88..0.93).contains(&linear), "{linear}");
        // Everything else is the same space.
        let (a, b) = (search_space(), search_space_with(LrScale::Linear));
        let others = |s: &SearchSpace| s.params().iter().filter(|p| p.name != "lr").cloned().collect::<Vec<_>>();
        assert_eq!(others(&a), others(&b));
    }
}
