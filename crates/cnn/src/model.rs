//! The network of the reference's MNIST tutorial: `conv_layers` 3x3 convolutions with 10 channels
//! (padding 1, so the 28x28 maps keep their size), each followed by the chosen activation, then one
//! linear layer from the flattened maps to the 10 classes, and log-softmax (the tutorial trains with
//! negative log-likelihood on these log-probabilities).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{log_softmax, relu, sigmoid, tanh};
use burn::tensor::{Device, Tensor};

use crate::error::{Error, Result};

/// Channels of every convolution.
pub const CHANNELS: usize = 10;

/// The activation after each convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activation {
    /// max(0, x)
    #[default]
    Relu,
    /// 1 / (1 + e^-x)
    Sigmoid,
    /// tanh x
    Tanh,
}

impl Activation {
    /// The names the search space uses.
    pub const NAMES: [&'static str; 3] = ["relu", "sigmoid", "tanh"];

    /// The activation called `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "relu" => Ok(Activation::Relu),
            "sigmoid" => Ok(Activation::Sigmoid),
            "tanh" => Ok(Activation::Tanh),
            _ => Err(Error::UnknownName { kind: "activation", name: name.into(), valid: Self::NAMES.join(", ") }),
        }
    }

    fn apply(self, x: Tensor<4>) -> Tensor<4> {
        match self {
            Activation::Relu => relu(x),
            Activation::Sigmoid => sigmoid(x),
            Activation::Tanh => tanh(x),
        }
    }
}

/// The tutorial's CNN for `rows` x `cols` single-channel images.
#[derive(Module, Debug)]
pub struct Net {
    convs: Vec<Conv2d>,
    fc: Linear,
    #[module(skip)]
    activation: Activation,
    /// The classifier lives on another device than the convolutions (model parallelism across a
    /// rank's GPUs): activations move to it between the two.
    #[module(skip)]
    split: bool,
}

impl Net {
    /// A freshly initialised network on `device`.
    pub fn new(conv_layers: usize, activation: Activation, rows: usize, cols: usize, device: &Device) -> Result<Self> {
        Self::placed(conv_layers, activation, rows, cols, device, None)
    }

    /// A freshly initialised network with its convolutions on `conv_device` and its classifier on
    /// `classifier_device` (a rank's first and last GPU with `--gpus-per-rank`); the batch enters
    /// on `conv_device`, the log-probabilities leave on `classifier_device`.
    pub fn split(
        conv_layers: usize,
        activation: Activation,
        rows: usize,
        cols: usize,
        conv_device: &Device,
        classifier_device: &Device,
    ) -> Result<Self> {
        Self::placed(conv_layers, activation, rows, cols, conv_device, Some(classifier_device))
    }

    fn placed(
        conv_layers: usize,
        activation: Activation,
        rows: usize,
        cols: usize,
        device: &Device,
        classifier_device: Option<&Device>,
    ) -> Result<Self> {
        if conv_layers == 0 {
            return Err(Error::InvalidConfig("the CNN needs at least one convolution".into()));
        }
        let convs = (0..conv_layers)
            .map(|i| {
                let input = if i == 0 { 1 } else { CHANNELS };
                Conv2dConfig::new([input, CHANNELS], [3, 3])
                    .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                    .init(device)
            })
            .collect();
        let fc = LinearConfig::new(CHANNELS * rows * cols, 10).init(classifier_device.unwrap_or(device));
        Ok(Net { convs, fc, activation, split: classifier_device.is_some() })
    }

    /// Log-probabilities of the classes for a batch of images `[batch, 1, rows, cols]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let mut x = images;
        for conv in &self.convs {
            x = self.activation.apply(conv.forward(x));
        }
        let mut features = x.flatten(1, 3);
        if self.split {
            features = features.to_device(&self.fc.weight.val().device());
        }
        log_softmax(self.fc.forward(features), 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    #[test]
    fn a_split_network_computes_what_the_whole_one_does() {
        let (device, other) = (Device::flex(), Device::flex());
        let whole = Net::new(3, Activation::Tanh, 28, 28, &device).unwrap();
        let split =
            Net::split(3, Activation::Tanh, 28, 28, &device, &other).unwrap().load_record(whole.clone().into_record());
        let pixels: Vec<f32> = (0..2 * 28 * 28).map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0).collect();
        let images = Tensor::<4>::from_data(TensorData::new(pixels, [2, 1, 28, 28]), &device);
        let (a, b) = (whole.forward(images.clone()).into_data(), split.forward(images).into_data());
        assert_eq!(a.as_slice::<f32>().unwrap(), b.as_slice::<f32>().unwrap());
    }
}
