//! Manifests written before propagator specs (until 2026-11-25): the CLI recorded the propagator's
//! name as the fact `propagator` and only the settings given as flags (`gp_xi`, `pso_inertia`,
//! ...), while `config.propagator` held the genetic propagator's settings whatever bred. Reading
//! such a manifest turns those facts into the spec the run bred with, so that it resumes as it was
//! and is compared as any other.

use propulate_core::propagator::{PropagatorSpec, TpeConfig};
use serde_json::{Map, Value};

use super::Manifest;

/// Each old fact, the setting it became in its propagator's spec, and how its value maps.
const SETTINGS: [(&str, &str); 9] = [
    ("pso_inertia", "inertia"),
    ("pso_cognitive", "c_cognitive"),
    ("pso_social", "c_social"),
    ("cmaes_lambda", "population_size"),
    ("tpe_gamma", "gamma"),
    ("tpe_startup", "startup"),
    ("gp_startup", "startup"),
    ("gp_xi", "xi"),
    // The retired squared-exponential model's kernel: read, and left aside with that model.
    ("gp_kernel", "per_axis"),
];

/// Moves the old facts of `manifest` into `config.propagator`; a manifest without them is left
/// as it is. The spec is the one the CLI built then: its defaults with the recorded settings
/// (the GP's cap on points raised to its start, its squared-exponential model, which a resume
/// then refuses: that model was retired on 2026-11-28). An unknown name or a setting of the wrong
/// type is an error naming it.
pub(super) fn adopt(manifest: &mut Manifest) -> Result<(), String> {
    let Some(name) = manifest.extra.remove("propagator") else { return Ok(()) };
    let recorded: Map<String, Value> =
        SETTINGS.iter().filter_map(|(old, _)| manifest.extra.remove(*old).map(|v| (old.to_string(), v))).collect();
    let name = name.as_str().ok_or_else(|| format!("extra.propagator is {name}, not a propagator's name"))?.to_string();
    if name == "ga" {
        // The genetic propagator's settings are already where specs keep them.
        return Ok(());
    }
    let workers = manifest.layout.world_size / manifest.layout.ranks_per_worker.max(1);
    let spec = PropagatorSpec::with_defaults(&name, workers).map_err(|e| format!("extra.propagator: {e}"))?;
    let mut settings = spec.settings();
    if name == "gp" {
        // Those runs bred with the squared-exponential model and its defaults (the Matérn model,
        // with its own, became the default on 2026-11-26).
        settings.extend(legacy_gp_model());
    }
    if name == "tpe" {
        // Those runs bred with the independent model and its defaults (Optuna's univariate
        // model became the default on 2026-11-26).
        settings.extend(PropagatorSpec::Tpe(TpeConfig::independent()).settings());
    }
    for (old, new) in SETTINGS {
        let Some(value) = recorded.get(old) else { continue };
        if old.split('_').next() == name.split('-').next() {
            settings.insert(new.into(), value.clone());
        }
    }
    if name == "gp" {
        let startup = settings.get("startup").and_then(Value::as_u64).unwrap_or(0);
        let cap = settings.get("max_points").and_then(Value::as_u64).unwrap_or(0);
        settings.insert("max_points".into(), cap.max(startup).into());
    }
    let spec = PropagatorSpec::from_settings(&name, settings).map_err(|e| format!("extra: {e}"))?;
    manifest.config.propagator = Some(spec);
    Ok(())
}

/// The GP settings that differ between the model of runs before 2026-11-26 and today's default.
fn legacy_gp_model() -> Map<String, Value> {
    [("matern", Value::Bool(false)), ("xi", 0.01.into()), ("candidates", 1000.into())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use propulate_core::layout::Layout;
    use propulate_core::propagator::DefaultPropagatorConfig;
    use propulate_core::{IslandSpec, SearchSpace};
    use serde_json::json;

    /// A manifest as the CLI wrote it before specs: `config.propagator` the genetic settings,
    /// the propagator and the flags given as facts.
    fn old_manifest(facts: Value) -> Manifest {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let layout = Layout::new(2, 1, &IslandSpec::Count(1)).unwrap();
        let config = RunConfig { propagator: None, ..RunConfig::default() };
        let mut m = Manifest::new(&config, &space, &layout, facts.as_object().unwrap().clone());
        let mut json = serde_json::to_value(&m).unwrap();
        let genetic = serde_json::to_value(DefaultPropagatorConfig::for_workers(2)).unwrap();
        json["config"]["propagator"] = genetic;
        m = serde_json::from_value(json).expect("the old shape reads");
        m
    }

    #[test]
    fn an_old_gp_run_reads_as_the_model_it_bred_with() {
        let mut m = old_manifest(json!({"function": "sphere", "propagator": "gp", "gp_xi": 0.1}));
        adopt(&mut m).unwrap();
        let Some(PropagatorSpec::Gp(gp)) = &m.config.propagator else { panic!("{:?}", m.config.propagator) };
        assert_eq!(gp.xi, 0.1);
        assert_eq!(m.extra, *json!({"function": "sphere"}).as_object().unwrap(), "the old facts are gone");
        let mut m = old_manifest(json!({"propagator": "gp", "gp_kernel": "per-axis", "gp_startup": 300}));
        adopt(&mut m).unwrap();
        let Some(PropagatorSpec::Gp(gp)) = &m.config.propagator else { panic!() };
        assert_eq!((gp.startup, gp.max_points), (300, 300));
        assert!(m.extra.is_empty(), "the kernel's fact is read too: {:?}", m.extra);
        // The model those runs bred with, whatever today's default (retired: a resume refuses it).
        assert!(!gp.matern);
        assert_eq!((gp.xi, gp.candidates), (0.01, 1000));
    }

    #[test]
    fn old_genetic_runs_keep_their_settings_and_other_propagators_take_theirs() {
        for facts in [json!({"propagator": "ga"}), json!({})] {
            let mut m = old_manifest(facts);
            adopt(&mut m).unwrap();
            assert_eq!(m.config.propagator, Some(PropagatorSpec::Ga(DefaultPropagatorConfig::for_workers(2))));
        }
        let mut m = old_manifest(json!({"propagator": "pso-constriction", "pso_social": 2.5}));
        adopt(&mut m).unwrap();
        let Some(PropagatorSpec::PsoConstriction(pso)) = &m.config.propagator else { panic!() };
        assert_eq!((pso.c_cognitive, pso.c_social), (2.05, 2.5));
        let mut m = old_manifest(json!({"propagator": "sa"}));
        assert!(adopt(&mut m).unwrap_err().contains("unknown propagator 'sa'"));
        let mut m = old_manifest(json!({"propagator": "tpe", "tpe_gamma": "high"}));
        assert!(adopt(&mut m).unwrap_err().contains("propagator tpe"));
        // An old TPE run bred with the independent model and its defaults, its flags on top.
        let mut m = old_manifest(json!({"propagator": "tpe", "tpe_startup": 9}));
        adopt(&mut m).unwrap();
        let Some(PropagatorSpec::Tpe(tpe)) = &m.config.propagator else { panic!() };
        assert_eq!(*tpe, TpeConfig { startup: 9, ..TpeConfig::independent() });
    }
}
