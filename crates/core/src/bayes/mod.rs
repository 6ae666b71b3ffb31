//! Bayesian optimization's parts, as the strongest samplers build them (Optuna 5's GPSampler,
//! BoTorch): a Matérn-5/2 Gaussian process with a length scale per parameter fitted by maximum a
//! posteriori (`matern`), the logarithm of expected improvement (`log_ei`; the normal distribution, plain EI and the
//! standardization of losses in `stats`; the normal scores and rank correlation of losses in
//! `ranks`), its maximization over
//! a space of continuous, int and categorical parameters (`acquisition`), and the bounded
//! L-BFGS both climb with (`lbfgs`); constraints' processes around a plane (`trend`); the fit's
//! dense linear algebra (`dense`). The GP propagator (propagator/bayesian/gp.rs) puts them
//! together.

pub(crate) mod acquisition;
pub(crate) mod dense;
pub(crate) mod lbfgs;
pub(crate) mod log_ei;
pub(crate) mod matern;
pub(crate) mod ranks;
pub(crate) mod stats;
pub(crate) mod trend;
pub(crate) mod warp;
