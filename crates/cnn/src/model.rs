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
}

impl Net {
    /// A freshly initialised network on `device`.
    pub fn new(conv_layers: usize, activation: Activation, rows: usize, cols: usize, device: &Device) -> Result<Self> {
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
        let fc = LinearConfig::new(CHANNELS * rows * cols, 10).init(device);
        Ok(Net { convs, fc, activation })
    }

    /// Log-probabilities of the classes for a batch of images `[batch, 1, rows, cols]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let mut x = images;
        for conv in &self.convs {
            x = self.activation.apply(conv.forward(x));
        }
        log_softmax(self.fc.forward(x.flatten(1, 3)), 1)
    }
}
