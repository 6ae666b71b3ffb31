//! Which propagator a run breeds with, and every setting of it, as data: what a program (the CLI's
//! `--propagator`) chooses at run time and what a checkpoint's manifest records, so that a resume
//! with another propagator or another setting is refused whoever started the run.
//!
//! As JSON, a spec is an object named by `"name"` holding its propagator's configuration, e.g.
//! `{"name": "gp", "startup": 6, "candidates": 1000, "xi": 0.01, ...}`. A setting missing from such
//! an object takes its serde default: the value runs had before the setting existed (the GP's
//! shared kernel), so that specs written by older versions mean what they meant then.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::propagator::{
    Cmaes, CmaesConfig, CovarianceUpdate, DefaultPropagatorConfig, GpConfig, InitUniform, NelderMead, NelderMeadConfig,
    Pbt, PbtConfig, Propagator, Pso, PsoConfig, PsoVariant, Tpe, TpeConfig, default_propagator,
};
use crate::space::SearchSpace;

/// A built-in propagator with its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum PropagatorSpec {
    /// The default genetic propagator ([`default_propagator`]).
    Ga(DefaultPropagatorConfig),
    /// Particle swarm, inertia weight ([`PsoVariant::Basic`]).
    Pso(PsoConfig),
    /// Particle swarm with velocity clamping.
    PsoClamping(PsoConfig),
    /// Particle swarm with Clerc's constriction factor.
    PsoConstriction(PsoConfig),
    /// Canonical particle swarm (constriction, velocities clipped to the range).
    PsoCanonical(PsoConfig),
    /// CMA-ES with the active covariance update.
    Cmaes(CmaesConfig),
    /// CMA-ES with the basic covariance update.
    CmaesBasic(CmaesConfig),
    /// Nelder-Mead.
    Nm(NelderMeadConfig),
    /// Tree-structured Parzen estimator.
    Tpe(TpeConfig),
    /// Gaussian-process Bayesian optimization (expected improvement).
    Gp(GpConfig),
    /// Random search: every individual drawn uniformly from the space.
    Random {},
    /// Population-based training: members trained an interval per evaluation, the worst taking
    /// over the best's state and hyperparameters.
    Pbt(PbtConfig),
}

impl PropagatorSpec {
    /// Every name, as `"name"` in JSON and as the CLI's `--propagator` takes it.
    pub const NAMES: [&'static str; 12] = [
        "ga",
        "pso",
        "pso-clamping",
        "pso-constriction",
        "pso-canonical",
        "cmaes",
        "cmaes-basic",
        "nm",
        "tpe",
        "gp",
        "random",
        "pbt",
    ];

    /// The names of the propagators that breed on several objectives (by Pareto rank and
    /// crowding): the genetic one and random search. The others model one loss.
    pub const MULTI_OBJECTIVE: [&'static str; 2] = ["ga", "random"];

    /// The propagator named `name` with its default settings for a run of `workers` workers (the
    /// genetic propagator's pool grows with them; the others do not depend on it). An unknown
    /// name is an error that lists the valid ones.
    pub fn with_defaults(name: &str, workers: usize) -> Result<PropagatorSpec> {
        let cmaes = |update| CmaesConfig { update, ..CmaesConfig::default() };
        Ok(match name {
            "ga" => PropagatorSpec::Ga(DefaultPropagatorConfig::for_workers(workers)),
            "pso" => PropagatorSpec::Pso(PsoConfig::basic()),
            "pso-clamping" => PropagatorSpec::PsoClamping(PsoConfig::basic()),
            // Clerc's constriction needs c1 + c2 > 4: its variants start from 2.05 each.
            "pso-constriction" => PropagatorSpec::PsoConstriction(PsoConfig::constriction()),
            "pso-canonical" => PropagatorSpec::PsoCanonical(PsoConfig::constriction()),
            "cmaes" => PropagatorSpec::Cmaes(cmaes(CovarianceUpdate::Active)),
            "cmaes-basic" => PropagatorSpec::CmaesBasic(cmaes(CovarianceUpdate::Basic)),
            "nm" => PropagatorSpec::Nm(NelderMeadConfig::default()),
            "tpe" => PropagatorSpec::Tpe(TpeConfig::default()),
            "gp" => PropagatorSpec::Gp(GpConfig::default()),
            "random" => PropagatorSpec::Random {},
            "pbt" => PropagatorSpec::Pbt(PbtConfig::default()),
            other => {
                return Err(Error::InvalidConfig(format!(
                    "unknown propagator '{other}'; valid: {}, or auto (picked by the space and the budget)",
                    PropagatorSpec::NAMES.join(", ")
                )));
            }
        })
    }

    /// The name (`"name"` in JSON).
    pub fn name(&self) -> &'static str {
        match self {
            PropagatorSpec::Ga(_) => "ga",
            PropagatorSpec::Pso(_) => "pso",
            PropagatorSpec::PsoClamping(_) => "pso-clamping",
            PropagatorSpec::PsoConstriction(_) => "pso-constriction",
            PropagatorSpec::PsoCanonical(_) => "pso-canonical",
            PropagatorSpec::Cmaes(_) => "cmaes",
            PropagatorSpec::CmaesBasic(_) => "cmaes-basic",
            PropagatorSpec::Nm(_) => "nm",
            PropagatorSpec::Tpe(_) => "tpe",
            PropagatorSpec::Gp(_) => "gp",
            PropagatorSpec::Random {} => "random",
            PropagatorSpec::Pbt(_) => "pbt",
        }
    }

    /// The settings as a JSON object without the name (what `best.json` shows as
    /// `propagator_settings`).
    pub fn settings(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut value = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => unreachable!("a propagator spec serializes to an object"),
        };
        value.remove("name");
        value
    }

    /// The spec named `name` with `settings` (a JSON object of its configuration's fields; missing
    /// ones take their serde defaults). A wrong type or an unknown name is an error naming it.
    pub fn from_settings(name: &str, settings: serde_json::Map<String, serde_json::Value>) -> Result<PropagatorSpec> {
        if !PropagatorSpec::NAMES.contains(&name) {
            return PropagatorSpec::with_defaults(name, 1);
        }
        let mut object = settings;
        object.insert("name".into(), name.into());
        serde_json::from_value(serde_json::Value::Object(object))
            .map_err(|e| Error::InvalidConfig(format!("propagator {name}: {e}")))
    }

    /// The propagator for `space`. The CMA-ES variants take their covariance update from their
    /// name, whatever their configuration says.
    pub fn build(&self, space: &SearchSpace) -> Result<Box<dyn Propagator>> {
        let cmaes = |config: &CmaesConfig, update| -> Result<Box<dyn Propagator>> {
            Ok(Box::new(Cmaes::new(space, CmaesConfig { update, ..config.clone() })?))
        };
        Ok(match self {
            PropagatorSpec::Ga(config) => default_propagator(space, config)?,
            PropagatorSpec::Pso(config) => Box::new(Pso::new(space, PsoVariant::Basic, config)?),
            PropagatorSpec::PsoClamping(config) => Box::new(Pso::new(space, PsoVariant::VelocityClamping, config)?),
            PropagatorSpec::PsoConstriction(config) => Box::new(Pso::new(space, PsoVariant::Constriction, config)?),
            PropagatorSpec::PsoCanonical(config) => Box::new(Pso::new(space, PsoVariant::Canonical, config)?),
            PropagatorSpec::Cmaes(config) => cmaes(config, CovarianceUpdate::Active)?,
            PropagatorSpec::CmaesBasic(config) => cmaes(config, CovarianceUpdate::Basic)?,
            PropagatorSpec::Nm(config) => Box::new(NelderMead::new(space, config.clone())?),
            PropagatorSpec::Tpe(config) => Box::new(Tpe::new(space, config.clone())?),
            PropagatorSpec::Gp(config) => super::composed::gp(space, config)?,
            PropagatorSpec::Random {} => Box::new(InitUniform::fresh()),
            PropagatorSpec::Pbt(config) => Box::new(Pbt::new(space, config.clone())?),
        })
    }

    /// How `self` differs from `other`: per setting, its name (`propagator gp xi`) and both values
    /// (`0.01`, `0.1`); for different propagators one entry, `propagator`, with both names. Empty
    /// when they are equal.
    pub fn differences(&self, other: &PropagatorSpec) -> Vec<(String, String, String)> {
        if self.name() != other.name() {
            return vec![("propagator".into(), self.name().into(), other.name().into())];
        }
        let (mine, theirs) = (self.settings(), other.settings());
        let null = serde_json::Value::Null;
        let mut seen = std::collections::BTreeSet::new();
        mine.keys()
            .chain(theirs.keys())
            .filter(|k| seen.insert(k.as_str()))
            .filter_map(|k| {
                let (a, b) = (mine.get(k).unwrap_or(&null), theirs.get(k).unwrap_or(&null));
                (a != b).then(|| (format!("propagator {} {k}", self.name()), a.to_string(), b.to_string()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn space() -> SearchSpace {
        SearchSpace::builder().float("x", -1.0, 1.0).int("n", 1, 4).build().unwrap()
    }

    #[test]
    fn every_name_builds_and_round_trips_with_every_setting() {
        for name in PropagatorSpec::NAMES {
            let spec = PropagatorSpec::with_defaults(name, 8).unwrap();
            assert_eq!(spec.name(), name);
            spec.build(&space()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let text = serde_json::to_string(&spec).unwrap();
            assert!(text.starts_with(&format!("{{\"name\":\"{name}\"")), "{text}");
            let back: PropagatorSpec = serde_json::from_str(&text).unwrap();
            assert_eq!(back, spec);
            assert_eq!(PropagatorSpec::from_settings(name, spec.settings()).unwrap(), spec);
        }
        let e = PropagatorSpec::with_defaults("sa", 1).unwrap_err().to_string();
        assert!(e.contains("unknown propagator 'sa'") && e.contains("gp"), "{e}");
    }

    /// A conditional space is searched by the propagators that handle it and refused, with the
    /// parameter and the alternatives named, by the others; `auto` picks one that handles it.
    #[test]
    fn a_conditional_space_is_refused_by_the_propagators_that_cannot_search_it() {
        let space = SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam"])
            .float("lr", 1e-4, 1.0)
            .float("momentum", 0.0, 1.0)
            .when("optimizer", &["sgd"])
            .build()
            .unwrap();
        for name in PropagatorSpec::NAMES {
            let built = PropagatorSpec::with_defaults(name, 4).unwrap().build(&space);
            if crate::propagator::CONDITIONAL.contains(&name) {
                built.unwrap_or_else(|e| panic!("{name}: {e}"));
            } else {
                let e = built.err().unwrap_or_else(|| panic!("{name} accepted a conditional space")).to_string();
                assert!(
                    e.contains("cannot search a conditional space (parameter 'momentum'")
                        && e.contains("ga, random, tpe, gp, auto"),
                    "{name}: {e}"
                );
            }
        }
        for evaluations in [50, 5000] {
            let (spec, _) = super::super::auto::Problem::new(&space, evaluations, 1, 0).spec(4).unwrap();
            assert!(crate::propagator::CONDITIONAL.contains(&spec.name()), "{spec:?}");
        }
    }

    /// A setting a spec was written without takes the value runs had before it existed: a GP
    /// spec without `matern` is the squared-exponential model, the only one until 2026-11-26.
    #[test]
    fn settings_missing_from_an_old_spec_take_their_serde_defaults() {
        let old = json!({"name": "gp", "startup": 6, "candidates": 1000, "xi": 0.01, "max_points": 200});
        let PropagatorSpec::Gp(config) = serde_json::from_value(old).unwrap() else { panic!("not gp") };
        assert!(!config.matern && config.at_bounds == 0.0);
        assert!(GpConfig::default().matern, "new runs use the Matérn model");
        let e = PropagatorSpec::from_settings("tpe", json!({"gamma": "high"}).as_object().unwrap().clone());
        assert!(e.unwrap_err().to_string().contains("propagator tpe"));
    }

    #[test]
    fn differences_name_each_setting_or_both_propagators() {
        let gp = PropagatorSpec::with_defaults("gp", 4).unwrap();
        assert!(gp.differences(&gp.clone()).is_empty());
        let PropagatorSpec::Gp(mut config) = gp.clone() else { unreachable!() };
        config.xi = 0.1;
        let d = gp.differences(&PropagatorSpec::Gp(config));
        assert_eq!(d, vec![("propagator gp xi".to_string(), "0.0".to_string(), "0.1".to_string())]);
        let d = gp.differences(&PropagatorSpec::with_defaults("tpe", 4).unwrap());
        assert_eq!(d, vec![("propagator".to_string(), "gp".to_string(), "tpe".to_string())]);
    }
}
