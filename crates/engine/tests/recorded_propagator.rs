//! A library run's checkpoint records the propagator it breeds with, every setting included, and a
//! resume with another propagator, another setting or another program-made propagator is refused,
//! as the CLI's are; the same one resumes.

use propulate_core::SearchSpace;
use propulate_core::propagator::{
    GivenSetting, InitUniform, Problem, Propagator, PropagatorChoice, PropagatorSpec, Tpe, TpeConfig,
};
use propulate_engine::Optimizer;
use propulate_engine::config::RunConfig;
use propulate_engine::journal::Manifest;

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -1.0, 1.0).build().unwrap()
}

/// A run of `generations` on 2 in-process ranks breeding as `breed` says, into `dir`.
fn run(
    dir: &std::path::Path,
    generations: u64,
    breed: impl FnOnce(Optimizer) -> Optimizer,
) -> propulate_engine::Result<propulate_engine::RunResult> {
    breed(Optimizer::new(space()).generations(generations).seed(1).checkpoint(dir))
        .run_local(2, |p, _| Ok(p.float("x").powi(2)))
}

#[test]
fn a_resume_with_another_propagator_or_setting_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gp = PropagatorSpec::with_defaults("gp", 2).unwrap();
    run(dir.path(), 4, |o| o.propagator_spec(gp.clone())).unwrap();
    let manifest = Manifest::read(dir.path()).unwrap();
    assert_eq!(manifest.config.propagator.as_ref(), Some(&gp), "recorded with every setting");

    let PropagatorSpec::Gp(mut other) = gp.clone() else { unreachable!() };
    other.xi = 0.5;
    let e = run(dir.path(), 6, |o| o.propagator_spec(PropagatorSpec::Gp(other))).unwrap_err().to_string();
    assert!(e.contains("propagator gp xi: checkpoint has 0.0, this run has 0.5"), "{e}");
    let tpe = Tpe::new(&space(), TpeConfig::default()).unwrap();
    let e = run(dir.path(), 6, |o| o.propagator(tpe)).unwrap_err().to_string();
    assert!(e.contains("propagator: checkpoint has gp, this run has the program's own propagator 'TPE'"), "{e}");

    let resumed = run(dir.path(), 6, |o| o.propagator_spec(gp.clone())).unwrap();
    assert_eq!(resumed.evaluations, 12);
    assert_eq!(resumed.propagator.as_ref(), Some(&gp), "the result names the propagator in effect");
}

/// A resume that names no propagator breeds with the one its checkpoint recorded (not the genetic
/// default, which a new run gets); a choice as the command line makes it is resolved against the
/// checkpoint where the run reads it: its settings merge into the recorded spec, another name is
/// refused.
#[test]
fn a_resume_without_a_propagator_keeps_the_recorded_one_and_a_choice_merges_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let PropagatorSpec::Gp(mut config) = PropagatorSpec::with_defaults("gp", 2).unwrap() else { unreachable!() };
    config.candidates = 300;
    let gp = PropagatorSpec::Gp(config);
    run(dir.path(), 4, |o| o.propagator_spec(gp.clone())).unwrap();
    let resumed = run(dir.path(), 6, |o| o).unwrap();
    assert_eq!((resumed.evaluations, resumed.propagator.as_ref()), (12, Some(&gp)));

    let choose = |name: Option<&str>, settings: Vec<GivenSetting>| {
        let choice = PropagatorChoice {
            name: name.map(Into::into),
            default: "ga".into(),
            settings,
            ..PropagatorChoice::default()
        };
        move |o: Optimizer| {
            let config = RunConfig { propagator_choice: Some(choice), ..o.run_config().clone() };
            o.config(config)
        }
    };
    let e = run(dir.path(), 8, choose(Some("tpe"), vec![])).unwrap_err().to_string();
    assert!(e.contains("--propagator tpe: the checkpoint in") && e.contains("was bred with gp"), "{e}");
    let startup = GivenSetting {
        label: "--gp-startup".into(),
        owners: vec!["gp".into()],
        field: "startup".into(),
        value: 3.into(),
    };
    let e = run(dir.path(), 8, choose(None, vec![startup])).unwrap_err().to_string();
    assert!(e.contains("propagator gp startup: checkpoint has 6, this run has 3"), "{e}");
    let resumed = run(dir.path(), 8, choose(None, vec![])).unwrap();
    assert_eq!((resumed.evaluations, resumed.propagator.as_ref()), (16, Some(&gp)), "recorded settings kept");
    let fresh = tempfile::tempdir().unwrap();
    let PropagatorSpec::Gp(mut nan) = gp.clone() else { unreachable!() };
    nan.xi = f64::NAN;
    let e = run(fresh.path(), 2, |o| o.propagator_spec(PropagatorSpec::Gp(nan))).unwrap_err().to_string();
    assert!(e.contains("propagator gp: every setting must be a finite number"), "{e}");
    let new = run(fresh.path(), 2, choose(None, vec![])).unwrap();
    assert_eq!(new.propagator, Some(PropagatorSpec::with_defaults("ga", 2).unwrap()), "a new run: the default");
}

/// A run breeding with the program's own propagator records its name; a resume with another
/// one is refused, with the same one it goes on. A run with no propagator chosen records what
/// `auto` picks (the GP for a small numeric search; several objectives: the genetic one), with the
/// defaults for its workers, and a resume of it without a choice keeps it whatever the budget.
#[test]
fn a_programs_own_propagator_is_recorded_by_name_and_the_default_with_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, |o| o.propagator(InitUniform::fresh())).unwrap();
    let manifest = Manifest::read(dir.path()).unwrap();
    assert_eq!(manifest.config.custom_propagator.as_deref(), Some(InitUniform::fresh().name()));
    assert_eq!(manifest.config.propagator, None);
    let tpe = Tpe::new(&space(), TpeConfig::default()).unwrap();
    let e = run(dir.path(), 5, |o| o.propagator(tpe)).unwrap_err().to_string();
    assert!(e.contains("this run has the program's own propagator 'TPE'"), "{e}");
    run(dir.path(), 5, |o| o.propagator(InitUniform::fresh())).unwrap();

    let fresh = tempfile::tempdir().unwrap();
    run(fresh.path(), 2, |o| o).unwrap();
    let manifest = Manifest::read(fresh.path()).unwrap();
    let (gp, _) = Problem::new(&space(), 4, 1, 0).spec(2).unwrap();
    assert_eq!(manifest.config.propagator.as_ref(), Some(&gp));
    let resumed = run(fresh.path(), 3, |o| o).unwrap();
    assert_eq!(resumed.propagator.as_ref(), Some(&gp));

    let objectives = tempfile::tempdir().unwrap();
    let two = vec![propulate_core::Objective::min("a"), propulate_core::Objective::min("b")];
    let result = Optimizer::new(space())
        .generations(2)
        .objectives(two)
        .checkpoint(objectives.path())
        .run_local(2, |p, _| Ok(vec![p.float("x").powi(2), (p.float("x") - 1.0).powi(2)]))
        .unwrap();
    assert_eq!(result.propagator, Some(PropagatorSpec::with_defaults("ga", 2).unwrap()));
}

/// `auto` picks by the space and the budget where the run reads its checkpoint, says what it
/// picked and why, and records the pick: a resume with a budget that would pick otherwise keeps it.
#[test]
fn auto_is_picked_said_and_recorded_and_a_resume_keeps_the_pick() {
    use propulate_engine::ObserverMode;
    use propulate_engine::observe::{Event, RankInfo};
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let notices = Arc::new(Mutex::new(Vec::<String>::new()));
    let heard = Arc::clone(&notices);
    let auto = PropagatorChoice { default: propulate_core::propagator::AUTO.into(), ..PropagatorChoice::default() };
    let with_auto = |o: Optimizer| {
        let config = RunConfig { propagator_choice: Some(auto.clone()), ..o.run_config().clone() };
        o.config(config)
    };
    let first = run(dir.path(), 5, |o| {
        with_auto(o).observer(ObserverMode::Never, move |_: &RankInfo, e: &Event<'_>| {
            if let Event::Notice(text) = e {
                heard.lock().unwrap().push(text.to_string());
            }
        })
    })
    .unwrap();
    let (gp, _) = Problem { numeric: 1, categorical: 0, evaluations: 10, islands: 1, objectives: 0 }.spec(2).unwrap();
    assert!(matches!(&gp, PropagatorSpec::Gp(c) if c.cmaes_after == 250), "{gp:?}");
    assert_eq!(first.propagator.as_ref(), Some(&gp));
    assert_eq!(Manifest::read(dir.path()).unwrap().config.propagator.as_ref(), Some(&gp));
    let said = notices.lock().unwrap().clone();
    assert!(
        said.iter().any(|n| n
            == "auto picked gp: 1 numeric and 0 categorical parameter, 10 evaluations: under 1000 per island, all numeric, \
                cmaes taking over after 250 evaluations of an island"),
        "{said:?}"
    );
    // 2 workers x 600 generations plan 1,200 evaluations: CMA-ES. Resumed with 5 generations
    // (10 evaluations, for which auto picks the GP), the run keeps breeding with its CMA-ES.
    let long = tempfile::tempdir().unwrap();
    let first = run(long.path(), 600, with_auto).unwrap();
    assert_eq!(first.propagator.as_ref().map(PropagatorSpec::name), Some("cmaes"), "a new run of 1,200 evaluations");
    let resumed = run(long.path(), 5, with_auto).unwrap();
    assert_eq!(resumed.propagator, first.propagator);
    assert_eq!(resumed.evaluations, 1200);
}
