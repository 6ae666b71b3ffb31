//! Data-parallel training of the tutorial's CNN inside a loss closure: every rank of the worker holds
//! a replica, trains on its shard, and averages gradients with the other replicas after every step
//! (through a [`GradSync`]); the validation loss is summed over the ranks' validation shards, so all
//! ranks return the same number. Training stops early when the validation loss has not improved for
//! `patience` epochs.
//!
//! The recipe is the reference tutorial's: negative log-likelihood of the network's log-softmax,
//! Adadelta with the individual's learning rate, multiplied by `gamma` after every epoch (Burn's
//! step schedule with a step of one epoch), at most 20 epochs, batches of 8 per rank. One fix: the
//! tutorial counts every epoch without a new best towards its limit of 5, also after a later
//! improvement; here `patience` counts consecutive epochs without one.

use burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::lr_scheduler::step::StepLrSchedulerConfig;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::adadelta::Adadelta;
use super::idx::ImageSet;
use super::model::{Activation, Net};
use crate::error::{Error, Result};
use propulate_ddp::{DistributedSampler, GradSync, replicas_agree};
use propulate_engine::TrainingState;

/// Mean and standard deviation of MNIST's pixels (the reference tutorial normalises with them).
const MEAN: f32 = 0.1307;
const STD: f32 = 0.3081;

/// What to train: the hyperparameters the optimizer searches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyperparameters {
    /// Number of convolutions.
    pub conv_layers: usize,
    /// Activation after each convolution.
    pub activation: Activation,
    /// Adadelta's learning rate in the first epoch.
    pub lr: f64,
    /// Factor on the learning rate after every epoch.
    pub gamma: f64,
}

/// How to train: fixed for a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainSettings {
    /// Most epochs per evaluation.
    pub max_epochs: u64,
    /// Stop after this many epochs without a better validation loss.
    pub patience: u64,
    /// Images per step on each rank.
    pub batch: usize,
}

impl Default for TrainSettings {
    fn default() -> Self {
        TrainSettings { max_epochs: 20, patience: 5, batch: 8 }
    }
}

/// What one training produced (the same on every rank of the worker).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainOutcome {
    /// Lowest validation loss (mean negative log-likelihood over the whole validation set) over the
    /// epochs.
    pub best_loss: f64,
    /// Validation accuracy at that epoch.
    pub accuracy: f64,
    /// Epochs trained (fewer than the most when stopping early).
    pub epochs: u64,
    /// True when the report after an epoch stopped the training (an early stopper judged it
    /// hopeless), not the patience or the most epochs.
    pub pruned: bool,
    /// The network's trainable parameters (weights and biases): its size, an objective to trade
    /// against the loss.
    pub params: usize,
}

/// Flat `f32` copies of parameters or gradients, in the module's visiting order (the same on
/// every rank for the same architecture), with what is needed to put them back.
#[derive(Default)]
struct Flat {
    values: Vec<f32>,
    layout: Vec<(ParamId, Vec<usize>, Device)>,
}

fn push_tensor<const D: usize>(flat: &mut Flat, id: ParamId, t: Tensor<D>) {
    let (device, dims) = (t.device(), t.dims().to_vec());
    let data = t.into_data().convert::<f32>();
    flat.values.extend_from_slice(data.as_slice::<f32>().expect("converted to f32"));
    flat.layout.push((id, dims, device));
}

struct GradsToFlat<'a> {
    grads: &'a mut GradientsParams,
    flat: Flat,
}

impl ModuleVisitor for GradsToFlat<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.remove::<D>(param.id) {
            push_tensor(&mut self.flat, param.id, g);
        }
    }
}

struct ParamsToFlat(Flat);

impl ModuleVisitor for ParamsToFlat {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        push_tensor(&mut self.0, param.id, param.val());
    }
}

/// Replaces every parameter by the next values of a flat buffer (same order as [`ParamsToFlat`]).
struct FlatToParams<'a> {
    values: &'a [f32],
    at: usize,
}

impl ModuleMapper for FlatToParams<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (values, at) = (self.values, &mut self.at);
        param.map(|t| {
            let dims = t.dims();
            let n: usize = dims.iter().product();
            let data = TensorData::new(values[*at..*at + n].to_vec(), dims);
            *at += n;
            // Without require_grad the parameter would no longer be tracked by autodiff.
            Tensor::<D>::from_data(data, &t.device()).require_grad()
        })
    }
}

fn grads_from_flat(flat: &Flat) -> GradientsParams {
    let mut grads = GradientsParams::new();
    let mut at = 0;
    for (id, dims, device) in &flat.layout {
        let n: usize = dims.iter().product();
        let data = TensorData::new(flat.values[at..at + n].to_vec(), dims.clone());
        at += n;
        match dims.len() {
            1 => grads.register::<1>(*id, Tensor::from_data(data, device)),
            2 => grads.register::<2>(*id, Tensor::from_data(data, device)),
            3 => grads.register::<3>(*id, Tensor::from_data(data, device)),
            4 => grads.register::<4>(*id, Tensor::from_data(data, device)),
            d => unreachable!("the CNN has no parameter of rank {d}"),
        }
    }
    grads
}

/// A batch of images as a normalised `[batch, 1, rows, cols]` tensor and its labels.
pub fn batch(data: &ImageSet, indices: &[usize], device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
    let pixels: Vec<f32> =
        indices.iter().flat_map(|&i| data.image(i).iter().map(|&p| (f32::from(p) / 255.0 - MEAN) / STD)).collect();
    let labels: Vec<i64> = indices.iter().map(|&i| i64::from(data.labels[i])).collect();
    let images = Tensor::<4>::from_data(TensorData::new(pixels, [indices.len(), 1, data.rows, data.cols]), device);
    (images, Tensor::<1, Int>::from_data(TensorData::new(labels, [indices.len()]), device))
}

/// Early stopping: a training stops after `patience` consecutive epochs without a lower validation
/// loss than the best so far.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlyStopping {
    best: f64,
    stale: u64,
    patience: u64,
}

impl EarlyStopping {
    /// Nothing seen yet.
    pub fn new(patience: u64) -> Self {
        EarlyStopping { best: f64::INFINITY, stale: 0, patience }
    }

    /// Record an epoch's validation loss; true if it is the best so far.
    pub fn improved(&mut self, loss: f64) -> bool {
        if loss < self.best {
            self.best = loss;
            self.stale = 0;
            true
        } else {
            self.stale += 1;
            false
        }
    }

    /// True once `patience` epochs in a row brought no improvement.
    pub fn should_stop(&self) -> bool {
        self.stale >= self.patience
    }
}

/// One data-parallel training step on a batch `x` with labels `y` (on the model's autodiff
/// device): forward, loss, backward, gradients averaged over the replicas of `sync`, one optimizer
/// step with `lr`. Returns the updated model and the batch's loss (not read here, so that nothing
/// waits for it). The step the benchmarks time.
pub fn step<S: GradSync + ?Sized>(
    model: Net,
    optim: &mut ModuleOptimizer,
    sync: &mut S,
    lr: ModuleLearningRate,
    x: Tensor<4>,
    y: Tensor<1, Int>,
) -> Result<(Net, Tensor<1>)> {
    let loss = nll(model.forward(x), y);
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    if sync.ranks() == 1 {
        // Nothing to average with: the gradients stay where they are (no copy to the host).
        return Ok((optim.step(lr, model, grads), loss));
    }
    let mut flat = GradsToFlat { grads: &mut grads, flat: Flat::default() };
    model.visit(&mut flat);
    let mut flat = flat.flat;
    sync.all_reduce_mean(&mut flat.values)?;
    Ok((optim.step(lr, model, grads_from_flat(&flat)), loss))
}

/// Mean negative log-likelihood of `targets` under the rows of `log_probs`.
fn nll(log_probs: Tensor<2>, targets: Tensor<1, Int>) -> Tensor<1> {
    let n = targets.dims()[0];
    log_probs.gather(1, targets.reshape([n, 1])).mean().neg()
}

/// The learning rate of every epoch: `lr`, then multiplied by `gamma` after each epoch.
fn schedule(hp: &Hyperparameters) -> Result<burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler> {
    StepLrSchedulerConfig::new(hp.lr, 1).with_gamma(hp.gamma).init().map_err(Error::InvalidConfig)
}

/// Train a fresh network with `hp` on `train` and return its validation results on `valid`, on
/// `device` (a backend's device, without autodiff). Collective over the replicas of `sync` (all of
/// them call it with the same arguments); `seed` (the evaluation's seed, the same on every rank)
/// sets the initial weights and the data order.
pub fn train(
    sync: &mut dyn GradSync,
    device: &Device,
    seed: u64,
    train: &ImageSet,
    valid: &ImageSet,
    hp: Hyperparameters,
    settings: TrainSettings,
) -> Result<TrainOutcome> {
    Training { train, valid, hp, settings, seed, classifier_device: None, state: None }.run(
        sync,
        device,
        &mut |_, _, _| Ok(false),
    )
}

/// One training: the data, the point and the recipe.
#[derive(Debug, Clone, Copy)]
pub struct Training<'d> {
    /// The training images (each replica trains on its shard).
    pub train: &'d ImageSet,
    /// The validation images (each replica validates a share; the loss covers all of them).
    pub valid: &'d ImageSet,
    /// The point being evaluated.
    pub hp: Hyperparameters,
    /// Epochs, patience, batch.
    pub settings: TrainSettings,
    /// The initial weights and the data order (the same on every replica).
    pub seed: u64,
    /// Where the classifier trains when not on the device of the convolutions (a rank's last GPU
    /// with `--gpus-per-rank`); `None`: the whole network on one device.
    pub classifier_device: Option<&'d Device>,
    /// Population-based training: the state to continue (network, optimizer, epochs done), the
    /// directory to save into, and the epochs to train (instead of `settings.max_epochs`, with no
    /// patience: the member trains its interval, and its loss is the last epoch's). `None`: a
    /// fresh training, as the reference's.
    pub state: Option<&'d TrainingState>,
}

impl Training<'_> {
    /// [`train`], telling `report` the validation loss after every epoch (`report(sync, epoch,
    /// loss)`, the same values on every replica); when it answers `true` the training stops there
    /// and its outcome says `pruned`. `report` must answer the same on every replica (an early
    /// stopper's answer through `WorkerContext::report` is).
    pub fn run<S: GradSync + ?Sized>(
        self,
        sync: &mut S,
        device: &Device,
        report: &mut dyn FnMut(&mut S, u64, f64) -> Result<bool>,
    ) -> Result<TrainOutcome> {
        let Training { train, valid, hp, settings, seed, classifier_device, state } = self;
        let lr_ok = hp.lr.is_finite() && hp.lr > 0.0;
        let gamma_ok = hp.gamma.is_finite() && hp.gamma > 0.0 && hp.gamma <= 1.0;
        if !lr_ok || !gamma_ok || settings.batch == 0 || settings.max_epochs == 0 {
            return Err(Error::InvalidConfig(format!(
                "training needs lr > 0, 0 < gamma <= 1, batch >= 1, epochs >= 1; got {hp:?} {settings:?}"
            )));
        }
        let inner = device.clone();
        let device = device.clone().autodiff();
        device.seed(seed);
        let mut model = match classifier_device {
            None => Net::new(hp.conv_layers, hp.activation, train.rows, train.cols, &device)?,
            Some(other) => {
                let other = other.clone().autodiff();
                if other != device {
                    // Another GPU has a generator of its own; seeded from the evaluation's too, so
                    // that the classifier's initial weights are reproducible.
                    other.seed(seed.rotate_left(32));
                }
                Net::split(hp.conv_layers, hp.activation, train.rows, train.cols, &device, &other)?
            }
        };
        let mut optim = Adadelta::default().init();
        if let Some(from) = state.and_then(|s| s.restore_from.as_deref()) {
            (model, optim) = crate::state::load(from, model, optim)?;
        }
        // Start every replica from the root's weights.
        let mut params = ParamsToFlat(Flat::default());
        model.visit(&mut params);
        let mut weights = params.0.values;
        sync.broadcast_from_root(&mut weights)?;
        model = model.map(&mut FlatToParams { values: &weights, at: 0 });

        // The labels meet the log-probabilities on the classifier's device.
        // (training, with autodiff; validation, without)
        let labels_on = classifier_device.map(|d| (d.clone().autodiff(), d.clone()));
        let mut lr_schedule = schedule(&hp)?;
        // A continued state: the epochs it trained, in the schedule and the data order.
        let (first, epochs, patience) = match state {
            Some(s) => (s.step, s.steps, u64::MAX),
            None => (0, settings.max_epochs, settings.patience),
        };
        for _ in 0..first {
            lr_schedule.step();
        }
        let (ranks, rank) = (sync.ranks(), sync.rank());
        let sampler = DistributedSampler::new(train.len(), ranks, rank, seed)?;
        // Each rank validates a contiguous share; together they cover every validation image once.
        let val_indices: Vec<usize> = (rank * valid.len() / ranks..(rank + 1) * valid.len() / ranks).collect();

        let size = weights.len();
        let mut best = TrainOutcome { best_loss: f64::INFINITY, accuracy: 0.0, epochs: 0, pruned: false, params: size };
        let mut stopping = EarlyStopping::new(patience);
        for epoch in first..first.saturating_add(epochs) {
            let lr = lr_schedule.step();
            for indices in sampler.indices(epoch).chunks(settings.batch) {
                let (x, mut y) = batch(train, indices, &device);
                if let Some((d, _)) = &labels_on {
                    y = y.to_device(d);
                }
                (model, _) = step(model, &mut optim, sync, lr.clone(), x, y)?;
            }
            // Validation without autodiff: sums over this rank's shard, then over the worker.
            let eval = model.valid();
            let mut totals = [0.0f64; 3]; // loss sum, correct, count
            for chunk in val_indices.chunks(256) {
                let (x, mut y) = batch(valid, chunk, &inner);
                if let Some((_, d)) = &labels_on {
                    y = y.to_device(d);
                }
                let log_probs = eval.forward(x);
                let n = chunk.len();
                let correct =
                    log_probs.clone().argmax(1).reshape([n]).equal(y.clone()).int().sum().into_scalar::<i64>();
                totals[0] += f64::from(nll(log_probs, y).into_scalar::<f32>()) * n as f64;
                totals[1] += correct as f64;
                totals[2] += n as f64;
            }
            sync.all_reduce_sum(&mut totals)?;
            let loss = totals[0] / totals[2];
            best.epochs = epoch + 1 - first;
            // A member's loss is where its state is: the last epoch's.
            if stopping.improved(loss) || state.is_some() {
                let accuracy = totals[1] / totals[2];
                best =
                    TrainOutcome { best_loss: loss, accuracy, epochs: epoch + 1 - first, pruned: false, params: size };
            }
            if report(sync, epoch + 1, loss)? {
                best.pruned = true;
                break;
            }
            if stopping.should_stop() || !loss.is_finite() {
                break;
            }
        }
        let mut check = ParamsToFlat(Flat::default());
        model.visit(&mut check);
        if !replicas_agree(sync, &check.0.values)? {
            return Err(Error::InvalidConfig("the replicas of this worker diverged during training".into()));
        }
        // The replicas agree: the root's is the state.
        if let Some(s) = state
            && rank == 0
        {
            crate::state::save(&s.save_to, &model, &optim)?;
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_stopping_counts_consecutive_epochs_without_improvement() {
        let mut s = EarlyStopping::new(2);
        let losses = [2.0, 1.5, 1.6, 1.4, 1.45, 1.41, 1.3];
        let mut stopped_after = None;
        for (epoch, loss) in losses.into_iter().enumerate() {
            s.improved(loss);
            if s.should_stop() {
                stopped_after = Some(epoch + 1);
                break;
            }
        }
        // The reference would stop after epoch 5 (two non-improving epochs in total, 3 and 5);
        // consecutive ones first come at epochs 5 and 6.
        assert_eq!(stopped_after, Some(6));
        assert!(!EarlyStopping::new(1).should_stop());
    }

    #[test]
    fn bad_settings_are_errors_before_training() {
        let set = ImageSet { rows: 2, cols: 2, pixels: vec![0; 4], labels: vec![0] };
        let hp = Hyperparameters { conv_layers: 2, activation: Activation::Relu, lr: 0.01, gamma: 0.5 };
        let good = TrainSettings::default();
        let mut ctx = propulate_engine::WorkerContext::standalone(0, propulate_engine::launcher::Device::Cpu);
        let cases = [
            (Hyperparameters { lr: f64::NAN, ..hp }, good),
            (Hyperparameters { gamma: 1.5, ..hp }, good),
            (hp, TrainSettings { batch: 0, ..good }),
            (hp, TrainSettings { max_epochs: 0, ..good }),
        ];
        for (hp, settings) in cases {
            let training =
                Training { train: &set, valid: &set, hp, settings, seed: 0, classifier_device: None, state: None };
            let mut sync = propulate_ddp::CommGradSync::new(&mut ctx);
            let e = training.run(&mut sync, &Device::flex(), &mut |_, _, _| Ok(false)).unwrap_err().to_string();
            assert!(e.contains("training needs lr > 0"), "{e}");
        }
    }

    #[test]
    fn the_learning_rate_falls_by_gamma_every_epoch() {
        let hp = Hyperparameters { conv_layers: 2, activation: Activation::Relu, lr: 0.01, gamma: 0.5 };
        let mut schedule = schedule(&hp).unwrap();
        let rates: Vec<f64> = (0..4).map(|_| schedule.step().base()).collect();
        assert_eq!(rates, vec![0.01, 0.005, 0.0025, 0.00125]);
    }
}
