//! The CNN task, the CLI's main job: the reference tutorial's network on MNIST-format data, each
//! candidate trained data-parallel by the ranks of one worker (`propulate::cnn`). A module of the
//! CNN executable only (`src/cnn_main.rs`): the main binary, which hands CNN runs over to it, does
//! not link libtorch.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use propulate::cnn::{self, Backend, CnnTask as Training, DeviceChoice, Split, TrainSettings};
use propulate::early_stop::EarlyStopper;
use propulate::{Error, Result, SearchSpace};

use propulate_cli::args::{CnnArgs, LrScaleArg, RunArgs, TrainingArgs};
use propulate_cli::early_stop_choice::early_stopper;
use propulate_cli::task::{Loss, Task};

/// The CNN task of a run's flags ([`propulate_cli::task::CnnTaskMaker`]).
pub fn make(args: &RunArgs, world_rank: usize) -> Result<Box<dyn Task>> {
    Ok(Box::new(CnnTask::new(&args.cnn, &args.training, world_rank)?))
}

pub struct CnnTask {
    space: SearchSpace,
    training: Training,
    args: CnnArgs,
    early_stop: String,
}

impl CnnTask {
    /// Check the flags, load the data (every rank reads it; all fail alike when it is missing) and
    /// check that the backend can run where asked, all before any rank trains.
    pub fn new(args: &CnnArgs, training_args: &TrainingArgs, world_rank: usize) -> Result<Self> {
        let bad = |what: String| Error::InvalidConfig(what);
        if args.batch == 0 {
            return Err(bad("--batch must be at least 1 image per rank".into()));
        }
        if args.epochs == 0 {
            return Err(bad("--epochs must be at least 1".into()));
        }
        if args.patience == 0 {
            return Err(bad("--patience must be at least 1 epoch".into()));
        }
        early_stopper(&training_args.early_stop)?;
        let cnn_error = |e: cnn::Error| Error::InvalidConfig(e.to_string());
        let backend = match &args.backend {
            Some(name) => Backend::from_name(name).map_err(cnn_error)?,
            None => Backend::fastest_built(),
        };
        let device = DeviceChoice::from_name(&args.device).map_err(cnn_error)?;
        let launch = propulate::launcher::LaunchInfo::detect();
        let load = |split| cnn::idx::load(&args.data, split).map_err(cnn_error);
        let (mut train, mut valid) = (load(Split::Train)?, load(Split::Test)?);
        cnn::idx::check_compatible(&train, &valid).map_err(cnn_error)?;
        if args.train_images > 0 {
            train = train.truncated(args.train_images);
        }
        if args.valid_images > 0 {
            valid = valid.truncated(args.valid_images);
        }
        // One compute thread per rank that shares this node's cores, at least one.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        cnn::backend::set_threads((cores / launch.local_size.unwrap_or(1).max(1)).max(1));
        let training = Training {
            train: Arc::new(train),
            valid: Arc::new(valid),
            settings: TrainSettings { max_epochs: args.epochs, patience: args.patience, batch: args.batch },
            backend,
            device,
            rendezvous_timeout: Duration::from_secs(120),
            gpus_per_rank: training_args.gpus_per_rank as usize,
        };
        training.placement(launch.device(), world_rank, launch.local_rank).map_err(cnn_error)?;
        let lr_scale = match args.lr_scale {
            LrScaleArg::Log => cnn::LrScale::Log,
            LrScaleArg::Linear => cnn::LrScale::Linear,
        };
        Ok(CnnTask {
            space: cnn::search_space_with(lr_scale),
            training,
            args: args.clone(),
            early_stop: training_args.early_stop.clone(),
        })
    }
}

impl Task for CnnTask {
    fn name(&self) -> String {
        "cnn".into()
    }

    fn space(&self) -> &SearchSpace {
        &self.space
    }

    fn loss(&self) -> Loss {
        let training = self.training.clone();
        Arc::new(move |p, ctx| Ok(training.evaluate(&p, ctx)?.best_loss))
    }

    fn checkpoint_facts(&self) -> serde_json::Map<String, serde_json::Value> {
        let a = &self.args;
        [
            ("task", json!("cnn")),
            ("data", json!(a.data)),
            ("train_images", json!(self.training.train.len())),
            ("valid_images", json!(self.training.valid.len())),
            ("epochs", json!(a.epochs)),
            ("patience", json!(a.patience)),
            ("batch", json!(a.batch)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn early_stopper(&self) -> Option<Box<dyn EarlyStopper>> {
        early_stopper(&self.early_stop).expect("checked in CnnTask::new")
    }

    fn default_generations(&self) -> u64 {
        // 4 workers x 4 generations of the default subset: about 5 minutes on 2 cores with 8 ranks.
        4
    }

    fn default_propagator(&self) -> &'static str {
        // Trainings are expensive and few per worker: a model of all of them (GP-EI) finds the
        // networks that learn where the genetic default wanders at chance (docs/benchmarks/cnn.md);
        // `auto` picks it for this mostly numeric space up to a thousand evaluations.
        propulate::propagator::AUTO
    }

    fn pbt_fixed(&self) -> &'static [&'static str] {
        // The network's shape: a state saved by one shape cannot be loaded by another.
        &["conv_layers", "activation"]
    }

    fn default_ranks_per_worker(&self, world_size: usize) -> usize {
        if world_size.is_multiple_of(2) { 2 } else { 1 }
    }

    fn loss_name(&self) -> &'static str {
        "validation loss"
    }

    fn prints_each_evaluation(&self) -> bool {
        true
    }
}
