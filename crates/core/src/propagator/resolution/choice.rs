//! A propagator as a run asks for it on the command line (`--propagator`, some of its settings,
//! `--reference-genetic`) and its resolution against the run it continues. The run's engine
//! resolves it where it reads the checkpoint's manifest (one rank, once), so that the same command
//! line resumes a run as it was bred, and a program that starts the engine with a choice gets the
//! same rules as the command line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auto::{AUTO, Problem};
use crate::error::{Error, Result};
use crate::propagator::{DefaultPropagatorConfig, PropagatorSpec, TpeConfig};

/// One setting given for the run (a flag such as `--tpe-gamma 0.4`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GivenSetting {
    /// How it was given, for messages (`--tpe-gamma`).
    pub label: String,
    /// The propagators it sets (all PSO variants for `--pso-inertia`); the first names the family.
    pub owners: Vec<String>,
    /// The field of their configuration it sets (`gamma`).
    pub field: String,
    /// Its value, as the field's JSON.
    pub value: Value,
}

/// The propagator a run asks for, before the run it continues is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PropagatorChoice {
    /// The propagator named (`--propagator`); `None`: the continued run's, else [`Self::default`].
    pub name: Option<String>,
    /// The propagator of a new run that names none (the task's default).
    pub default: String,
    /// The Python reference's genetic settings instead of the defaults (`--reference-genetic`).
    pub reference_genetic: bool,
    /// The settings given, in the order they apply.
    pub settings: Vec<GivenSetting>,
    /// The parameters population-based training keeps when it explores, for a new run that sets
    /// none (a task's parameters its saved states depend on: the CNN's shape).
    #[serde(default)]
    pub pbt_fixed_default: Vec<String>,
}

/// The run a choice continues, with the propagator it recorded.
#[derive(Debug, Clone, Copy)]
pub enum Continued<'a> {
    /// A new run.
    Nothing,
    /// A resume of a checkpoint.
    Resumed {
        /// The checkpoint's directory, for messages.
        checkpoint: &'a str,
        /// The propagator it recorded.
        spec: &'a PropagatorSpec,
    },
    /// A new run seeded from another run's individuals (`--reshape-from`).
    Reshaped(&'a PropagatorSpec),
}

impl Continued<'_> {
    fn spec(&self) -> Option<&PropagatorSpec> {
        match self {
            Continued::Nothing => None,
            Continued::Resumed { spec, .. } | Continued::Reshaped(spec) => Some(spec),
        }
    }
}

impl PropagatorChoice {
    /// The propagator in effect, every setting resolved: the one named, else the continued run's
    /// (so that the same command line resumes a run as it was, even one started when the task's
    /// default was another), else [`Self::default`]; [`AUTO`] is picked by
    /// [`Self::resolve_for`]'s problem, except on resume, which keeps the checkpoint's. Each setting
    /// is the given one, else the continued run's (same propagator), else the default for `workers`; then
    /// [`PropagatorSpec::raise_starts`]. Refused: a resume naming another propagator than its
    /// checkpoint's, and a setting of another propagator than the one in effect (it would change
    /// nothing).
    pub fn resolve(&self, continued: Continued<'_>, workers: usize) -> Result<PropagatorSpec> {
        self.resolve_for(continued, workers, None).map(|(spec, _)| spec)
    }

    /// [`Self::resolve`], with `problem` for [`AUTO`] to pick by; also returns what `auto` picked
    /// and why, when it picked. Without a problem, `auto` is an error.
    pub fn resolve_for(
        &self,
        continued: Continued<'_>,
        workers: usize,
        problem: Option<&Problem>,
    ) -> Result<(PropagatorSpec, Option<String>)> {
        let name = match (&self.name, continued) {
            // What auto picked when the run began stays picked: the budget may have grown since.
            (Some(given), Continued::Resumed { spec, .. }) if given == AUTO => spec.name().to_string(),
            (Some(given), Continued::Resumed { checkpoint, spec }) if given != spec.name() => {
                return Err(Error::InvalidConfig(format!(
                    "--propagator {given}: the checkpoint in {checkpoint} was bred with {recorded}; resume with \
                     --propagator {recorded} (or without --propagator), or start a new run with another --checkpoint",
                    recorded = spec.name()
                )));
            }
            (Some(given), _) => given.clone(),
            (None, _) => continued.spec().map_or(self.default.clone(), |s| s.name().to_string()),
        };
        let (name, picked) = match (name.as_str(), problem) {
            (AUTO, Some(problem)) => {
                let (spec, why) = problem.spec(workers)?;
                (spec.name().to_string(), Some((spec, why)))
            }
            (AUTO, None) => {
                return Err(Error::InvalidConfig(
                    "propagator auto picks by the search space and the budget, which this resolution was not given"
                        .into(),
                ));
            }
            _ => (name, None),
        };
        let resumed = matches!(continued, Continued::Resumed { .. });
        self.check_settings_belong_to(&name, resumed)?;
        let (picked_spec, picked) = picked.unzip();
        let fresh = match (name.as_str(), self.reference_genetic) {
            ("ga", true) => PropagatorSpec::Ga(DefaultPropagatorConfig::reference(workers)),
            // The old TPE model asked for by name gets its own defaults, not today's model's.
            ("tpe", _) if self.sets("model", "independent") => PropagatorSpec::Tpe(TpeConfig::independent()),
            _ => match picked_spec {
                Some(spec) => spec,
                None => PropagatorSpec::with_defaults(&name, workers)?,
            },
        };
        // --reference-genetic asks for the reference's settings, not the recorded ones.
        let continued = continued.spec().filter(|s| s.name() == name && !self.reference_genetic);
        let mut spec = continued.unwrap_or(&fresh).clone();
        if !self.settings.is_empty() {
            let mut settings = spec.settings();
            for given in &self.settings {
                settings.insert(given.field.clone(), given.value.clone());
            }
            spec = PropagatorSpec::from_settings(&name, settings)?;
        }
        // A new PBT run keeps the task's fixed parameters unless told otherwise; a resume keeps
        // what its checkpoint recorded.
        if let (PropagatorSpec::Pbt(pbt), None) = (&mut spec, continued)
            && !self.settings.iter().any(|s| s.owners.iter().any(|o| o == "pbt") && s.field == "fixed")
        {
            pbt.fixed = self.pbt_fixed_default.clone();
        }
        spec.raise_starts();
        Ok((spec, picked))
    }

    /// The choice with population-based training keeping `fixed` when it explores, in a new run
    /// that sets no fixed parameters itself (`--pbt-fixed`): a task's parameters that its saved
    /// training states depend on (the CNN's shape). A resume keeps what its checkpoint recorded.
    pub fn keeping_fixed(mut self, fixed: &[&str]) -> Self {
        self.pbt_fixed_default = fixed.iter().map(|f| f.to_string()).collect();
        self
    }

    /// Whether the choice gives `field` the text `value`.
    fn sets(&self, field: &str, value: &str) -> bool {
        self.settings.iter().any(|s| s.field == field && s.value.as_str() == Some(value))
    }

    /// Settings of another propagator than `name` are an error naming them and the fix (a
    /// `resumed` run keeps its checkpoint's propagator: only leaving them out fixes it).
    fn check_settings_belong_to(&self, name: &str, resumed: bool) -> Result<()> {
        let owns = |s: &GivenSetting| s.owners.iter().any(|o| o == name);
        let mut misplaced: Vec<(&str, &[String])> =
            self.settings.iter().filter(|s| !owns(s)).map(|s| (s.label.as_str(), s.owners.as_slice())).collect();
        let genetic = ["ga".to_string()];
        if self.reference_genetic && name != "ga" {
            misplaced.insert(0, ("--reference-genetic", &genetic));
        }
        let Some((_, owners)) = misplaced.first().copied() else { return Ok(()) };
        let labels: Vec<&str> = misplaced.iter().filter(|(_, o)| *o == owners).map(|(label, _)| *label).collect();
        let first = owners.first().map_or("?", String::as_str);
        let family = if first == "ga" { "genetic" } else { first };
        let (verb, pronoun) = if labels.len() == 1 { ("sets", "it") } else { ("set", "them") };
        let fix = if resumed {
            format!("the checkpoint's, which a resume keeps: leave {pronoun} out (another propagator is a new run)")
        } else {
            format!("add --propagator {first}, or leave {pronoun} out")
        };
        Err(Error::InvalidConfig(format!(
            "{} {verb} the {family} propagator, but the propagator is {name}: {fix}",
            labels.join(", ")
        )))
    }
}

impl PropagatorSpec {
    /// A start smaller than what it must cover is raised to it: the genetic propagator's random
    /// start to its pool (breeding from a pool larger than the island would wait for ever), the
    /// GP's cap on modelled points to its random start.
    pub fn raise_starts(&mut self) {
        match self {
            PropagatorSpec::Ga(ga) => {
                if let Some(start) = ga.random_start.as_mut() {
                    *start = (*start).max(ga.pop_size);
                }
            }
            PropagatorSpec::Gp(gp) => gp.max_points = gp.max_points.max(gp.startup),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn given(label: &str, owners: &[&str], field: &str, value: Value) -> GivenSetting {
        GivenSetting {
            label: label.into(),
            owners: owners.iter().map(|o| o.to_string()).collect(),
            field: field.into(),
            value,
        }
    }

    fn choice(name: Option<&str>, settings: Vec<GivenSetting>) -> PropagatorChoice {
        PropagatorChoice {
            name: name.map(Into::into),
            default: "ga".into(),
            reference_genetic: false,
            settings,
            pbt_fixed_default: Vec::new(),
        }
    }

    #[test]
    fn auto_picks_by_the_problem_and_a_resume_keeps_what_it_picked() {
        let small = Problem { numeric: 5, categorical: 0, evaluations: 200, islands: 1, objectives: 0 };
        let long = Problem { evaluations: 5000, ..small };
        let auto = PropagatorChoice { default: AUTO.into(), ..choice(None, vec![]) };
        let (spec, why) = auto.resolve_for(Continued::Nothing, 8, Some(&small)).unwrap();
        let (expected, expected_why) = small.spec(8).unwrap();
        assert_eq!((spec, why.as_deref()), (expected, Some(expected_why.as_str())));
        assert!(why.unwrap().starts_with("auto picked gp: 5 numeric"));
        let (spec, _) = auto.resolve_for(Continued::Nothing, 8, Some(&long)).unwrap();
        assert_eq!(spec.name(), "cmaes");
        // Named, as a task's default, or on a resume that now plans 5000 evaluations: the
        // checkpoint's GP stays, with its recorded settings.
        let PropagatorSpec::Gp(mut recorded) = PropagatorSpec::with_defaults("gp", 8).unwrap() else { panic!() };
        recorded.xi = 0.3;
        let recorded = PropagatorSpec::Gp(recorded);
        let resumed = Continued::Resumed { checkpoint: "ck", spec: &recorded };
        for asked in [auto.clone(), choice(Some(AUTO), vec![])] {
            assert_eq!(asked.resolve_for(resumed, 8, Some(&long)).unwrap(), (recorded.clone(), None));
        }
        // A setting of another propagator than the one picked is refused, naming the pick.
        let tpe_setting = choice(Some(AUTO), vec![given("--tpe-gamma", &["tpe"], "gamma", json!(0.3))]);
        let e = tpe_setting.resolve_for(Continued::Nothing, 8, Some(&small)).unwrap_err().to_string();
        assert!(e.contains("--tpe-gamma sets the tpe propagator, but the propagator is gp"), "{e}");
        // Without a problem to pick by, auto cannot resolve.
        assert!(auto.resolve(Continued::Nothing, 8).unwrap_err().to_string().contains("auto picks by"));
    }

    #[test]
    fn given_settings_apply_and_starts_rise_to_what_they_cover() {
        let gp = choice(Some("gp"), vec![given("--gp-startup", &["gp"], "startup", json!(300))]);
        let PropagatorSpec::Gp(g) = gp.resolve(Continued::Nothing, 4).unwrap() else { panic!() };
        assert_eq!((g.startup, g.max_points), (300, 300), "the cap rises with the start");
        let ga = choice(None, vec![given("--pop-size", &["ga"], "pop_size", json!(12))]);
        let PropagatorSpec::Ga(g) = ga.resolve(Continued::Nothing, 4).unwrap() else { panic!() };
        assert_eq!((g.pop_size, g.random_start), (12, Some(12)), "the start is at least the pool");
        let reference = PropagatorChoice { reference_genetic: true, ..choice(None, vec![]) };
        assert_eq!(
            reference.resolve(Continued::Nothing, 4).unwrap(),
            PropagatorSpec::Ga(DefaultPropagatorConfig::reference(4))
        );
        // The old TPE model by name: its own defaults, a given setting on top.
        let model = given("--tpe-model", &["tpe"], "model", json!("independent"));
        let startup = given("--tpe-startup", &["tpe"], "startup", json!(8));
        let old = choice(Some("tpe"), vec![model.clone()]).resolve(Continued::Nothing, 4).unwrap();
        assert_eq!(old, PropagatorSpec::Tpe(TpeConfig::independent()));
        let old = choice(Some("tpe"), vec![startup, model]).resolve(Continued::Nothing, 4).unwrap();
        assert_eq!(old, PropagatorSpec::Tpe(TpeConfig { startup: 8, ..TpeConfig::independent() }));
    }

    #[test]
    fn a_resume_keeps_the_recorded_propagator_unless_a_setting_says_otherwise() {
        let tpe = choice(Some("tpe"), vec![given("--tpe-gamma", &["tpe"], "gamma", json!(0.4))]);
        let recorded = tpe.resolve(Continued::Nothing, 4).unwrap();
        let resumed = Continued::Resumed { checkpoint: "ck", spec: &recorded };
        assert_eq!(choice(None, vec![]).resolve(resumed, 4).unwrap(), recorded);
        let more = choice(None, vec![given("--tpe-startup", &["tpe"], "startup", json!(9))]);
        let PropagatorSpec::Tpe(t) = more.resolve(resumed, 4).unwrap() else { panic!() };
        assert_eq!((t.gamma, t.startup), (0.4, 9));
        let e = choice(Some("gp"), vec![]).resolve(resumed, 4).unwrap_err().to_string();
        assert!(
            e.contains("--propagator gp: the checkpoint in ck was bred with tpe; resume with --propagator tpe"),
            "{e}"
        );
        assert_eq!(choice(None, vec![]).resolve(Continued::Reshaped(&recorded), 4).unwrap(), recorded);
        // A reshape may change the propagator: it starts a new run.
        assert_eq!(choice(Some("gp"), vec![]).resolve(Continued::Reshaped(&recorded), 4).unwrap().name(), "gp");
    }

    #[test]
    fn a_tasks_fixed_parameters_apply_to_pbt_unless_given() {
        let fixed = |c: PropagatorChoice| match c.keeping_fixed(&["conv_layers"]).resolve(Continued::Nothing, 4) {
            Ok(PropagatorSpec::Pbt(p)) => p.fixed,
            other => panic!("{other:?}"),
        };
        assert_eq!(fixed(choice(Some("pbt"), vec![])), ["conv_layers"]);
        let flag = given("--pbt-fixed", &["pbt"], "fixed", json!(["lr"]));
        assert_eq!(fixed(choice(Some("pbt"), vec![flag])), ["lr"], "the flag wins");
        let gp = choice(Some("gp"), vec![]).keeping_fixed(&["conv_layers"]);
        assert!(matches!(gp.resolve(Continued::Nothing, 4), Ok(PropagatorSpec::Gp(_))));
        // A resume keeps the recorded ones, even when it names pbt without --pbt-fixed.
        let recorded = choice(Some("pbt"), vec![given("--pbt-fixed", &["pbt"], "fixed", json!(["lr", "conv_layers"]))])
            .resolve(Continued::Nothing, 4)
            .unwrap();
        let resumed = Continued::Resumed { checkpoint: "ck", spec: &recorded };
        let again = choice(Some("pbt"), vec![]).keeping_fixed(&["conv_layers"]).resolve(resumed, 4).unwrap();
        assert_eq!(again, recorded);
    }

    #[test]
    fn another_propagators_settings_are_refused_with_the_fix() {
        let e = |c: PropagatorChoice| c.resolve(Continued::Nothing, 4).unwrap_err().to_string();
        let genetic = vec![
            given("--pop-size", &["ga"], "pop_size", json!(8)),
            given("--sigma-factor", &["ga"], "sigma_factor", json!(0.1)),
        ];
        assert!(e(choice(Some("gp"), genetic)).contains(
            "--pop-size, --sigma-factor set the genetic propagator, but the propagator is gp: add --propagator ga, \
             or leave them out"
        ));
        // tpe and gp both have a `startup`: the owner decides, not the field's name.
        let startup = vec![given("--tpe-startup", &["tpe"], "startup", json!(3))];
        assert!(
            e(choice(Some("gp"), startup)).contains("--tpe-startup sets the tpe propagator, but the propagator is gp")
        );
        let reference = PropagatorChoice { reference_genetic: true, ..choice(Some("gp"), vec![]) };
        assert!(e(reference).contains("--reference-genetic sets the genetic propagator"));
        assert!(e(choice(Some("sa"), vec![])).contains("unknown propagator 'sa'"));
        // A resume keeps its checkpoint's propagator: naming another is no fix there.
        let recorded = choice(Some("gp"), vec![]).resolve(Continued::Nothing, 4).unwrap();
        let resumed = Continued::Resumed { checkpoint: "ck", spec: &recorded };
        let pop = vec![given("--pop-size", &["ga"], "pop_size", json!(8))];
        let e = choice(None, pop).resolve(resumed, 4).unwrap_err().to_string();
        assert!(e.contains("but the propagator is gp: the checkpoint's, which a resume keeps: leave it out"), "{e}");
    }
}
