//! The GP as its configuration ([`GpConfig`]) composes it, as Optuna's AutoSampler composes its
//! samplers: the process ([`Gp`]), which owns its own model only; where the configuration asks,
//! the quadratic model tried in front of it ([`Attempt`], `quadratic_share`), TPE breeding a share
//! of the children ([`Portfolio`], `tpe_share`), and CMA-ES taking the island over once it holds a
//! count of evaluations ([`Conditional`], `cmaes_after`; what `auto` asks for); all of it bred
//! from the island's own evaluations alone where those imported by a warm start disagree with them
//! (`WhileEarlierAgrees`, bayesian/gp/earlier.rs). The checkpoint
//! records the configuration, so a resume builds the same composition.

use crate::error::{Error, Result};
use crate::propagator::bayesian::gp::WhileEarlierAgrees;
use crate::propagator::cmaes::QuadraticModel;
use crate::propagator::{
    Attempt, Cmaes, CmaesConfig, Conditional, Gp, GpConfig, Portfolio, Propagator, Tpe, TpeConfig, check_probability,
};
use crate::space::SearchSpace;

/// The GP configured by `config` for `space`: the process, and around it what the configuration
/// composes. Refuses what [`Gp::new`] refuses, shares outside [0, 1], a hand-over before the
/// process starts, and one to CMA-ES in a space it cannot search (a categorical parameter).
pub(crate) fn gp(space: &SearchSpace, config: &GpConfig) -> Result<Box<dyn Propagator>> {
    let process = Gp::new(space, config.clone())?;
    let judge = process.clone();
    if !(0.0..=1.0).contains(&config.tpe_share) {
        return Err(Error::InvalidPropagator(format!(
            "the GP propagator's share of children bred by TPE must be in [0, 1], got {}",
            config.tpe_share
        )));
    }
    check_probability("the GP propagator's quadratic share", config.quadratic_share)?;
    let mut composed: Box<dyn Propagator> = Box::new(process);
    // The quadratic model needs int and float parameters only: without it, the process alone.
    if let Some(model) = QuadraticModel::new(space).filter(|_| config.quadratic_share > 0.0) {
        composed = Box::new(Attempt::new(Box::new(model), composed, config.quadratic_share)?);
    }
    if config.tpe_share > 0.0 {
        let tpe = Tpe::new(space, TpeConfig::default())?;
        composed = Box::new(Portfolio::new(composed, Box::new(tpe), config.tpe_share)?);
    }
    match config.cmaes_after {
        0 => {}
        after if after < config.startup.max(2) => {
            return Err(Error::InvalidPropagator(format!(
                "the GP propagator hands over to CMA-ES after {after} evaluations, fewer than its start ({})",
                config.startup
            )));
        }
        after => {
            if let Some(p) = space.params().iter().find(|p| !p.when.is_empty()) {
                return Err(Error::InvalidPropagator(format!(
                    "the GP hands over to CMA-ES after {after} evaluations (cmaes-after), and CMA-ES cannot search a \
                     conditional space (parameter '{}' is active only under a condition): leave the hand-over out",
                    p.name
                )));
            }
            let cmaes =
                Cmaes::new(space, CmaesConfig { model_share: config.cmaes_model_share, ..CmaesConfig::default() })
                    .map_err(|e| {
                        // Its own message, without a second "invalid propagator:".
                        let why = match e {
                            Error::InvalidPropagator(m) => m,
                            other => other.to_string(),
                        };
                        Error::InvalidPropagator(format!(
                            "the GP's hand-over to CMA-ES ({after} evaluations, cmaes-after): {why}; leave the \
                             hand-over out"
                        ))
                    })?
                    .taking_over_after(after);
            composed = Box::new(Conditional::new(after, Box::new(cmaes), composed)?);
        }
    }
    Ok(Box::new(WhileEarlierAgrees::new(judge, composed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagator::InitUniform;

    /// Every composition tells the driver that it models the running evaluations (the process
    /// does, whatever surrounds it), so that the island's workers hear of each other's children.
    #[test]
    fn each_composition_models_the_running_evaluations_as_the_process_does() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).int("n", 1, 8).build().unwrap();
        let shares = [(0.0, 0, 0.0), (0.5, 0, 0.0), (0.0, 20, 0.0), (0.0, 0, 0.5), (0.3, 20, 0.5)];
        for (tpe_share, cmaes_after, quadratic_share) in shares {
            let config = GpConfig { tpe_share, cmaes_after, quadratic_share, ..GpConfig::default() };
            assert!(gp(&space, &config).unwrap().models_running(), "{config:?}");
        }
        // A combinator of stages that model nothing models nothing.
        let plain = Portfolio::new(Box::new(InitUniform::fresh()), Box::new(InitUniform::fresh()), 0.5).unwrap();
        assert!(!plain.models_running());
    }

    #[test]
    fn a_hand_over_to_cmaes_in_a_conditional_space_is_refused_once_with_what_to_do() {
        let space = crate::propagator::test_pools::two_branches();
        let e = gp(&space, &GpConfig { cmaes_after: 20, ..GpConfig::default() }).err().unwrap().to_string();
        assert!(e.contains("CMA-ES cannot search a conditional space (parameter 'xa'"), "{e}");
        assert!(e.contains("leave the hand-over out") && e.matches("invalid propagator").count() == 1, "{e}");
        let categorical = SearchSpace::builder().float("x", 0.0, 1.0).categorical("c", &["a", "b"]).build().unwrap();
        let e = gp(&categorical, &GpConfig { cmaes_after: 20, ..GpConfig::default() }).err().unwrap().to_string();
        assert!(e.contains("hand-over to CMA-ES") && e.matches("invalid propagator").count() == 1, "{e}");
    }
}
