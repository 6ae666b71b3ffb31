//! The stoppers on hand-made islands: each stops what it must and lets through what it must.

use super::*;
use crate::individual::IndividualId;

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", 0.0, 1.0).categorical("act", &["relu", "tanh"]).build().unwrap()
}

/// A completed (or pruned) evaluation at `x` whose curve is `values` at steps 0, 1, 2, ...; its
/// loss is the curve's best value.
fn evaluated(generation: u64, x: f64, values: &[f64], pruned: bool) -> Individual {
    let mut ind = Individual::new(vec![Value::Float(x), Value::Cat(0)]);
    ind.id = IndividualId { island: 0, worker: 0, generation };
    ind.loss = values.iter().copied().fold(f64::INFINITY, f64::min);
    ind.curve = Some(Curve { points: values.iter().enumerate().map(|(s, v)| (s as u64, *v)).collect(), pruned });
    ind
}

fn points(values: &[f64]) -> Vec<(u64, f64)> {
    values.iter().enumerate().map(|(s, v)| (s as u64, *v)).collect()
}

/// Feed `values` report by report; the step after which the rule said stop, if it did.
fn stopped_at(rule: &mut dyn StopRule, values: &[f64]) -> Option<u64> {
    let all = points(values);
    (1..=all.len()).find(|&n| rule.should_stop(&all[..n])).map(|n| n as u64 - 1)
}

/// Five completed learning curves, falling from 2.3 to 0.5 .. 0.9.
fn island() -> Vec<Individual> {
    (0..5)
        .map(|g| {
            let end = 0.5 + 0.1 * g as f64;
            let curve: Vec<f64> = (0..10).map(|s| end + (2.3 - end) * (-(s as f64)).exp()).collect();
            evaluated(g, 0.1 * g as f64, &curve, false)
        })
        .collect()
}

const CRAWLING: [f64; 10] = [2.30, 2.29, 2.29, 2.28, 2.28, 2.27, 2.27, 2.27, 2.26, 2.26];
const GOOD: [f64; 10] = [2.0, 1.0, 0.6, 0.45, 0.4, 0.38, 0.37, 0.36, 0.36, 0.35];

#[test]
fn completed_keeps_finished_curves_best_first() {
    let mut inds = island();
    inds.push(evaluated(7, 0.5, &[0.1], true)); // pruned
    let mut failed = evaluated(8, 0.5, &[0.2], false);
    failed.failure = Some("boom".into());
    inds.push(failed);
    inds.push(Individual { loss: 0.3, ..Individual::new(vec![Value::Float(0.5), Value::Cat(0)]) }); // no curve
    let done = completed(inds.iter());
    assert_eq!(done.iter().map(|i| i.id.generation).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn every_stopper_stops_a_crawling_curve_and_lets_a_good_one_finish() {
    let inds = island();
    let done = completed(inds.iter());
    let stoppers: Vec<Box<dyn EarlyStopper>> = vec![
        Box::new(MedianStopper::default()),
        Box::new(StaticStopper::default()),
        Box::new(LogLinearStopper::default()),
        Box::new(DynamicStopper::default()),
        Box::new(HalvingStopper::default()),
    ];
    for s in &stoppers {
        let crawling = vec![Value::Float(0.95), Value::Cat(1)];
        let at = stopped_at(s.rule(&done, &space(), &crawling).as_mut(), &CRAWLING);
        // The dynamic stopper's prior (configurations that all did well) holds it back for a while.
        let latest = match s.name() {
            "log-linear" => 2,
            "dynamic" => 4,
            _ => 1,
        };
        assert!(
            at.is_some_and(|a| a <= latest),
            "{} stopped the crawling curve at {at:?}, not by step {latest}",
            s.name()
        );
        let good = vec![Value::Float(0.05), Value::Cat(0)];
        assert_eq!(stopped_at(s.rule(&done, &space(), &good).as_mut(), &GOOD), None, "{}", s.name());
    }
}

#[test]
fn no_stopper_decides_before_its_start_up() {
    let inds = island();
    let done = completed(inds.iter());
    let settings = StopSettings { startup: 6, ..StopSettings::default() };
    for name in STOPPER_NAMES {
        let s = by_name(name, settings).unwrap();
        let mut rule = s.rule(&done, &space(), &[Value::Float(0.9), Value::Cat(1)]);
        assert_eq!(stopped_at(rule.as_mut(), &CRAWLING), None, "{name} with 5 of 6 completed evaluations");
        let mut rule = s.rule(&[], &space(), &[Value::Float(0.9), Value::Cat(1)]);
        assert_eq!(stopped_at(rule.as_mut(), &CRAWLING), None, "{name} on an empty island");
    }
}

#[test]
fn the_median_is_taken_at_the_same_step() {
    let inds = island();
    let done = completed(inds.iter());
    let mut rule = MedianStopper::default().rule(&done, &space(), &[]);
    // Step 1: the others' best so far are 2.3 - 1.8(1 - 1/e) .. : about 1.16 to 1.41, median 1.29.
    assert!(!rule.should_stop(&[(0, 2.3), (1, 1.2)]));
    assert!(rule.should_stop(&[(0, 2.3), (1, 1.4)]));
    // A late step where the median is about 0.7: 0.69 goes on, 0.71 stops.
    assert!(!rule.should_stop(&[(0, 2.3), (9, 0.69)]));
    assert!(rule.should_stop(&[(0, 2.3), (9, 0.71)]));
}

#[test]
fn the_static_baseline_is_the_best_curve_matched_by_step_with_the_margin() {
    let best = evaluated(0, 0.0, &[1.0, 0.8, 0.6], false);
    let worse = evaluated(1, 0.0, &[1.0, 0.9, 0.7], false);
    let done = completed([&worse, &best].into_iter());
    let mut rule = StaticStopper::default().rule(&done, &space(), &[]);
    // At step 2 the baseline is 0.6: 25 % worse is 0.75.
    assert!(!rule.should_stop(&[(0, 2.0), (2, 0.74)]));
    assert!(rule.should_stop(&[(0, 2.0), (2, 0.76)]));
    // A candidate that reports only every other step is compared at its own steps.
    assert!(!rule.should_stop(&[(1, 0.9), (2, 0.7)]));
    // Negative losses: the baseline -1.0, 25 % worse is -0.75.
    let negative = evaluated(2, 0.0, &[-0.5, -1.0], false);
    let done = completed([&negative].into_iter());
    let mut rule = StaticStopper::default().rule(&done, &space(), &[]);
    assert!(!rule.should_stop(&[(0, -0.4), (1, -0.8)]));
    assert!(rule.should_stop(&[(0, -0.4), (1, -0.7)]));
}

#[test]
fn halving_keeps_the_best_third_at_each_rung_counting_pruned_evaluations() {
    // Six evaluations pruned at step 1: only `reported` hands them to a stopper.
    let inds: Vec<Individual> = [1.0, 1.5, 2.0, 2.1, 2.2, 2.25]
        .iter()
        .enumerate()
        .map(|(g, v)| evaluated(g as u64, 0.5, &[2.3, *v], true))
        .collect();
    assert!(completed(inds.iter()).is_empty());
    let island = reported(inds.iter());
    assert_eq!(island.len(), 6);
    let halving = HalvingStopper::default();
    assert!(halving.counts_pruned() && !MedianStopper::default().counts_pruned());
    // Rung 1: seven values with the candidate's, the best 7 / 3 = 2 go on.
    assert!(!halving.rule(&island, &space(), &[]).should_stop(&points(&[2.3, 1.2])));
    assert!(halving.rule(&island, &space(), &[]).should_stop(&points(&[2.3, 1.6])));
    // Rung 3 is reached by nobody else: too few to decide, so a candidate past rung 1 goes on.
    let mut rule = halving.rule(&island, &space(), &[]);
    assert_eq!(stopped_at(rule.as_mut(), &[2.3, 1.2, 1.9, 1.9, 1.9]), None);
    // A report that jumps past rungs is judged at each of them by its best value up to there.
    let mut rule = halving.rule(&island, &space(), &[]);
    assert!(rule.should_stop(&[(0, 2.3), (5, 0.1)]));
    // Fewer than three evaluations at a rung (the start-up) never stop anything there.
    let mut rule = halving.rule(&island[..2], &space(), &[]);
    assert_eq!(stopped_at(rule.as_mut(), &CRAWLING), None);
}

#[test]
fn halving_counts_running_evaluations_it_hears_of() {
    let halving = HalvingStopper::default();
    assert!(halving.hears_running() && !MedianStopper::default().hears_running());
    // Nothing finished yet: alone, a crawling candidate goes on (too few at rung 1).
    let mut rule = halving.rule(&[], &space(), &[]);
    assert!(!rule.should_stop(&points(&[2.3, 2.29])));
    // Three running evaluations report better values at rung 1: now it is not in the best third.
    let mut rule = halving.rule(&[], &space(), &[]);
    for (g, v) in [1.0, 1.2, 1.4].iter().enumerate() {
        let id = IndividualId { island: 0, worker: 1, generation: g as u64 };
        rule.observe(id, &points(&[2.3]));
        assert!(!rule.should_stop(&points(&[2.3])), "rung 0 is not a rung");
        rule.observe(id, &points(&[2.3, *v]));
    }
    assert!(rule.should_stop(&points(&[2.3, 2.29])));
    // A later report of the same evaluation replaces its curve instead of counting it twice: with
    // two evaluations only, rung 1 has too few to decide.
    let mut rule = halving.rule(&[], &space(), &[]);
    let id = IndividualId { island: 0, worker: 1, generation: 0 };
    rule.observe(id, &points(&[2.3, 1.0]));
    rule.observe(id, &points(&[2.3, 1.0, 0.9]));
    rule.observe(IndividualId { generation: 1, ..id }, &points(&[2.3, 1.1]));
    assert!(!rule.should_stop(&points(&[2.3, 2.29])));
}

#[test]
fn the_log_linear_forecast_follows_the_slope() {
    let inds = island(); // best loss about 0.5, horizon step 9
    let done = completed(inds.iter());
    let mut rule = LogLinearStopper::default().rule(&done, &space(), &[]);
    // Falling by 0.5 per unit of ln(1 + step): at step 9 (ln 10 = 2.3) it reaches about 0.55.
    let falling: Vec<(u64, f64)> = (0..3).map(|s| (s, 1.7 - 0.5 * (s as f64).ln_1p())).collect();
    assert!(!rule.should_stop(&falling));
    // The same start, falling a tenth as fast: about 1.47 at step 9.
    let slow: Vec<(u64, f64)> = (0..3).map(|s| (s, 1.7 - 0.1 * (s as f64).ln_1p())).collect();
    assert!(rule.should_stop(&slow));
}

#[test]
fn settings_and_names_are_checked() {
    for margin in [0.0, -0.5, 1.5, f64::NAN] {
        let e = by_name("median", StopSettings { margin, ..StopSettings::default() }).unwrap_err().to_string();
        assert!(e.contains("margin"), "{e}");
    }
    let e = by_name("median", StopSettings { min_reports: 0, ..StopSettings::default() }).unwrap_err().to_string();
    assert!(e.contains("at least 1 report"), "{e}");
    let e = by_name("hyperband", StopSettings::default()).unwrap_err().to_string();
    assert!(e.contains("hyperband") && e.contains("median, static, log-linear, dynamic, halving"), "{e}");
    for reduction in [0, 1] {
        let e = HalvingStopper { reduction, ..HalvingStopper::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("reduction of at least 2"), "{e}");
    }
    let e = HalvingStopper { first_rung: 0, ..HalvingStopper::default() }.validate().unwrap_err().to_string();
    assert!(e.contains("first rung of at least step 1"), "{e}");
    for name in STOPPER_NAMES {
        assert_eq!(by_name(name, StopSettings::default()).unwrap().name(), name);
    }
}

#[test]
fn the_dynamic_forecast_leans_on_similar_configurations() {
    // Configurations near x = 0 ended near 0.5, those near x = 1 near 2.0.
    let inds: Vec<Individual> = (0..6)
        .map(|g| {
            let x = if g % 2 == 0 { 0.02 * g as f64 } else { 1.0 - 0.02 * g as f64 };
            let end = if g % 2 == 0 { 0.5 + 0.01 * g as f64 } else { 2.0 + 0.01 * g as f64 };
            let curve: Vec<f64> = (0..10).map(|s| end + (2.3 - end) * (-(s as f64)).exp()).collect();
            evaluated(g, x, &curve, false)
        })
        .collect();
    let done = completed(inds.iter());
    let early = [(0, 2.3), (1, 1.4)];
    let near_good =
        DynamicStopper::default().rule(&done, &space(), &[Value::Float(0.0), Value::Cat(0)]).should_stop(&early);
    let near_bad =
        DynamicStopper::default().rule(&done, &space(), &[Value::Float(1.0), Value::Cat(0)]).should_stop(&early);
    assert!(!near_good && near_bad, "the same start goes on where similar configurations did well");
}

/// A rule that stops at every report.
struct Always;

impl StopRule for Always {
    fn should_stop(&mut self, _: &[(u64, f64)]) -> bool {
        true
    }
}

#[test]
fn training_end_is_the_longest_completed_curve() {
    let mut inds = island(); // steps 0..=9
    inds.push(evaluated(7, 0.5, &[0.1; 20], true)); // pruned: does not count, however long
    let mut failed = evaluated(8, 0.5, &[0.2; 30], false);
    failed.failure = Some("boom".into());
    inds.push(failed);
    assert_eq!(training_end(inds.iter()), Some(9));
    assert_eq!(training_end(inds[5..].iter()), None);
    assert_eq!(training_end(std::iter::empty()), None);
}

#[test]
fn no_rule_stops_a_training_at_its_end() {
    let values = [2.3; 12];
    let mut guarded = before_the_end(Box::new(Always), Some(9));
    assert_eq!(stopped_at(guarded.as_mut(), &values), Some(0));
    let all = points(&values);
    assert!(!guarded.should_stop(&all[..10]), "stopped at the last step 9");
    assert!(!guarded.should_stop(&all[..12]), "stopped past the last step");
    // Before any training ended, the end is unknown and the rule decides alone.
    let mut unguarded = before_the_end(Box::new(Always), None);
    assert!(unguarded.should_stop(&all[..10]));
}
