//! Data-parallel training of the tutorial's CNN inside a loss closure: every rank of the worker holds
//! a replica, trains on its shard, and averages gradients with the other replicas after every step
//! (through a [`GradSync`]); the validation loss is summed over the ranks' validation shards, so all
//! ranks return the same number. Training stops early when the validation loss has not improved for
//! `patience` epochs.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::idx::ImageSet;
use super::model::{Activation, Net};
use crate::error::{Error, Result};
use propulate_ddp::{DistributedSampler, GradSync, replicas_agree};

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
    /// SGD learning rate.
    pub lr: f64,
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
        TrainSettings { max_epochs: 10, patience: 2, batch: 32 }
    }
}

/// What one training produced (the same on every rank of the worker).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainOutcome {
    /// Lowest validation cross-entropy over the epochs.
    pub best_loss: f64,
    /// Validation accuracy at that epoch.
    pub accuracy: f64,
    /// Epochs trained (fewer than the most when stopping early).
    pub epochs: u64,
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
fn batch(data: &ImageSet, indices: &[usize], device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
    let pixels: Vec<f32> =
        indices.iter().flat_map(|&i| data.image(i).iter().map(|&p| (f32::from(p) / 255.0 - MEAN) / STD)).collect();
    let labels: Vec<i64> = indices.iter().map(|&i| i64::from(data.labels[i])).collect();
    let images = Tensor::<4>::from_data(TensorData::new(pixels, [indices.len(), 1, data.rows, data.cols]), device);
    (images, Tensor::<1, Int>::from_data(TensorData::new(labels, [indices.len()]), device))
}

/// Train a fresh network with `hp` on `train` and return its validation results on `valid`.
/// Collective over the replicas of `sync` (all of them call it with the same arguments); `seed`
/// (the evaluation's seed, the same on every rank) sets the initial weights and the data order.
pub fn train(
    sync: &mut dyn GradSync,
    seed: u64,
    train: &ImageSet,
    valid: &ImageSet,
    hp: Hyperparameters,
    settings: TrainSettings,
) -> Result<TrainOutcome> {
    if !(hp.lr.is_finite() && hp.lr > 0.0) || settings.batch == 0 || settings.max_epochs == 0 {
        return Err(Error::InvalidConfig(format!(
            "training needs lr > 0, batch >= 1, epochs >= 1; got {hp:?} {settings:?}"
        )));
    }
    let device = Device::flex().autodiff();
    device.seed(seed);
    let mut model = Net::new(hp.conv_layers, hp.activation, train.rows, train.cols, &device)?;
    // Start every replica from the root's weights.
    let mut params = ParamsToFlat(Flat::default());
    model.visit(&mut params);
    let mut weights = params.0.values;
    sync.broadcast_from_root(&mut weights)?;
    model = model.map(&mut FlatToParams { values: &weights, at: 0 });

    let mut optim = SgdConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let (ranks, rank) = (sync.ranks(), sync.rank());
    let sampler = DistributedSampler::new(train.len(), ranks, rank, seed)?;
    let val_indices = DistributedSampler::new(valid.len(), ranks, rank, 0)?.without_shuffle().drop_last()?.indices(0);
    let inner = device.clone().inner();

    let mut best = TrainOutcome { best_loss: f64::INFINITY, accuracy: 0.0, epochs: 0 };
    let mut stale = 0;
    for epoch in 0..settings.max_epochs {
        for step in sampler.indices(epoch).chunks(settings.batch) {
            let (x, y) = batch(train, step, &device);
            let loss = loss_fn.forward(model.forward(x), y);
            let mut grads = GradientsParams::from_grads(loss.backward(), &model);
            let mut flat = GradsToFlat { grads: &mut grads, flat: Flat::default() };
            model.visit(&mut flat);
            let mut flat = flat.flat;
            sync.all_reduce_mean(&mut flat.values)?;
            model = optim.step(hp.lr, model, grads_from_flat(&flat));
        }
        // Validation without autodiff: sums over this rank's shard, then over the worker.
        let eval = model.valid();
        let eval_loss = CrossEntropyLossConfig::new().init(&inner);
        let mut totals = [0.0f64; 3]; // loss sum, correct, count
        for chunk in val_indices.chunks(256) {
            let (x, y) = batch(valid, chunk, &inner);
            let logits = eval.forward(x);
            let n = chunk.len();
            let correct = logits.clone().argmax(1).reshape([n]).equal(y.clone()).int().sum().into_scalar::<i64>();
            totals[0] += f64::from(eval_loss.forward(logits, y).into_scalar::<f32>()) * n as f64;
            totals[1] += correct as f64;
            totals[2] += n as f64;
        }
        sync.all_reduce_sum(&mut totals)?;
        let loss = totals[0] / totals[2];
        if loss < best.best_loss {
            best = TrainOutcome { best_loss: loss, accuracy: totals[1] / totals[2], epochs: epoch + 1 };
            stale = 0;
        } else {
            stale += 1;
            best.epochs = epoch + 1;
            if stale >= settings.patience {
                break;
            }
        }
        if !loss.is_finite() {
            break;
        }
    }
    let mut check = ParamsToFlat(Flat::default());
    model.visit(&mut check);
    if !replicas_agree(sync, &check.0.values)? {
        return Err(Error::InvalidConfig("the replicas of this worker diverged during training".into()));
    }
    Ok(best)
}
