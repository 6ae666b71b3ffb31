//! Adadelta (Zeiler 2012) in Burn's optimizer API, as PyTorch defines it (the reference tutorial's
//! optimizer; Burn 0.22 has none): per parameter, with decay `rho` and `epsilon`,
//!
//! ```text
//! square_avg = rho * square_avg + (1 - rho) * grad^2
//! delta      = sqrt(acc_delta + epsilon) / sqrt(square_avg + epsilon) * grad
//! acc_delta  = rho * acc_delta + (1 - rho) * delta^2
//! param      = param - lr * delta
//! ```
//!
//! with both accumulators starting at zero (PyTorch's defaults: rho 0.9, epsilon 1e-6, lr 1.0).

use burn::optim::{ModuleOptimizer, Optimizer, RecordState, StateSink, StateSource};
use burn::tensor::{Device, Tensor};

/// The Adadelta update rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adadelta {
    /// Decay of the running averages.
    pub rho: f32,
    /// Added under the square roots, for numerical stability.
    pub epsilon: f32,
}

impl Default for Adadelta {
    fn default() -> Self {
        Adadelta { rho: 0.9, epsilon: 1e-6 }
    }
}

impl Adadelta {
    /// The optimizer for a whole module (call `step(lr, module, grads)` on it).
    pub fn init(self) -> ModuleOptimizer {
        ModuleOptimizer::from(self)
    }
}

/// The running averages of one parameter.
#[derive(Clone)]
pub struct AdadeltaState<const D: usize> {
    square_avg: Tensor<D>,
    acc_delta: Tensor<D>,
}

// Written out because Burn's derive names paths inside burn-optim itself.
impl<const D: usize> RecordState for AdadeltaState<D> {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        out.push_tensor(prefix, "square_avg", self.square_avg.clone().into_data());
        out.push_tensor(prefix, "acc_delta", self.acc_delta.clone().into_data());
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, device: &Device) -> Option<Self> {
        Some(AdadeltaState {
            square_avg: Tensor::from_data(src.take_tensor(prefix, "square_avg")?, device),
            acc_delta: Tensor::from_data(src.take_tensor(prefix, "acc_delta")?, device),
        })
    }
}

impl Optimizer for Adadelta {
    type State<const D: usize> = AdadeltaState<D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let (square_avg, acc_delta) = match state {
            Some(s) => (s.square_avg, s.acc_delta),
            None => (grad.zeros_like(), grad.zeros_like()),
        };
        let (rho, eps) = (self.rho, self.epsilon);
        let square_avg = square_avg.mul_scalar(rho).add(grad.clone().square().mul_scalar(1.0 - rho));
        let std = square_avg.clone().add_scalar(eps).sqrt();
        let delta = acc_delta.clone().add_scalar(eps).sqrt().div(std).mul(grad);
        let acc_delta = acc_delta.mul_scalar(rho).add(delta.clone().square().mul_scalar(1.0 - rho));
        let tensor = tensor.sub(delta.mul_scalar(lr));
        (tensor, Some(AdadeltaState { square_avg, acc_delta }))
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &Device) -> Self::State<D> {
        AdadeltaState { square_avg: state.square_avg.to_device(device), acc_delta: state.acc_delta.to_device(device) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    /// The same update in f64, step by step, as PyTorch's `torch.optim.Adadelta` computes it.
    fn reference(mut p: f64, grads: &[f64], lr: f64) -> f64 {
        let (rho, eps) = (0.9, 1e-6);
        let (mut sq, mut acc) = (0.0f64, 0.0f64);
        for g in grads {
            sq = rho * sq + (1.0 - rho) * g * g;
            let delta = (acc + eps).sqrt() / (sq + eps).sqrt() * g;
            acc = rho * acc + (1.0 - rho) * delta * delta;
            p -= lr * delta;
        }
        p
    }

    #[test]
    fn three_steps_match_the_reference_formula() {
        let device = Device::flex();
        let opt = Adadelta::default();
        let grads = [[0.5, -2.0], [0.25, -1.0], [-0.75, 3.0]];
        let mut tensor = Tensor::<1>::from_data(TensorData::new(vec![1.0f32, -0.5], [2]), &device);
        let mut state = None;
        for g in grads {
            let grad = Tensor::<1>::from_data(TensorData::new(vec![g[0] as f32, g[1] as f32], [2]), &device);
            (tensor, state) = opt.step(0.5, tensor, grad, state);
        }
        let got: Vec<f32> = tensor.into_data().try_to_vec::<f32>().unwrap();
        let want = [reference(1.0, &[0.5, 0.25, -0.75], 0.5), reference(-0.5, &[-2.0, -1.0, 3.0], 0.5)];
        for (g, w) in got.iter().zip(want) {
            assert!((f64::from(*g) - w).abs() < 1e-6, "got {got:?}, want {want:?}");
        }
        // The first step moves by about lr * sqrt(eps / (0.1 g^2)) * g, far less than lr * g.
        assert!((f64::from(got[0]) - 1.0).abs() < 0.01);
    }
}
