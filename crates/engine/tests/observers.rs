//! Observers through the front door: each hears what its mode selects, a failing start stops the
//! run on every rank before it begins, and a failing observer is switched off with a warning to
//! the others.

use std::sync::{Arc, Mutex};

use propulate_core::SearchSpace;
use propulate_engine::observe::{Event, Observer, RankInfo};
use propulate_engine::{Error, ObserverMode, Optimizer};

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -1.0, 1.0).build().unwrap()
}

/// Collects what an observer heard: (rank, kind, loss of an evaluation, new_best).
type Heard = Arc<Mutex<Vec<(usize, &'static str, f64, bool)>>>;

fn recorder(heard: &Heard) -> impl FnMut(&RankInfo, &Event<'_>) + Send + 'static {
    let heard = Arc::clone(heard);
    move |rank: &RankInfo, event: &Event<'_>| {
        let entry = match event {
            Event::Evaluated { individual, new_best, .. } => (rank.rank, "evaluated", individual.loss, *new_best),
            Event::Finished(_) => (rank.rank, "finished", 0.0, false),
            Event::Warning(_) => (rank.rank, "warning", 0.0, false),
            _ => (rank.rank, "other", 0.0, false),
        };
        heard.lock().unwrap().push(entry);
    }
}

fn count(heard: &Heard, kind: &str) -> usize {
    heard.lock().unwrap().iter().filter(|h| h.1 == kind).count()
}

#[test]
fn each_observer_hears_the_evaluations_its_mode_selects() {
    let [always, every, new_best, never]: [Heard; 4] = Default::default();
    let result = Optimizer::new(space())
        .generations(20)
        .seed(3)
        .observer(ObserverMode::Always, recorder(&always))
        .observer(ObserverMode::Every(5), recorder(&every))
        .observer(ObserverMode::NewBest, recorder(&new_best))
        .observer(ObserverMode::Never, recorder(&never))
        .run_local(4, |p, _| Ok(p.float("x").powi(2)))
        .unwrap();
    assert_eq!(result.evaluations, 80);
    assert_eq!(count(&always, "evaluated"), 80);
    assert_eq!(count(&every, "evaluated"), 4 * 4, "every 5th of 20 evaluations on each of 4 workers");
    assert_eq!(count(&never, "evaluated"), 0);
    for heard in [&always, &every, &new_best, &never] {
        assert_eq!(count(heard, "finished"), 4, "every worker root reports its end to every observer");
    }
    // NewBest hears only improvements: on one island (no emigrant can take the best away), each one
    // lower than every earlier one of its worker, and they agree with the flags Always saw.
    let improvements = new_best.lock().unwrap().clone();
    let evaluated: Vec<_> = improvements.iter().filter(|h| h.1 == "evaluated").collect();
    assert!(!evaluated.is_empty());
    assert!(evaluated.iter().all(|h| h.3));
    for rank in 0..4 {
        let losses: Vec<f64> = evaluated.iter().filter(|h| h.0 == rank).map(|h| h.2).collect();
        assert!(losses.windows(2).all(|w| w[1] < w[0]), "rank {rank}: {losses:?}");
    }
    let flagged = always.lock().unwrap().iter().filter(|h| h.1 == "evaluated" && h.3).count();
    assert_eq!(flagged, evaluated.len());
}

struct FailsToStart;

impl Observer for FailsToStart {
    fn start(&mut self, rank: &RankInfo) -> Result<(), String> {
        if rank.rank == 1 { Err("rank 1 cannot open its file".into()) } else { Ok(()) }
    }
    fn observe(&mut self, _: &RankInfo, _: &Event<'_>) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn an_observer_that_cannot_start_stops_the_run_on_every_rank_before_any_evaluation() {
    let evaluations = Arc::new(Mutex::new(0u64));
    let counter = Arc::clone(&evaluations);
    let outcome = Optimizer::new(space()).generations(5).observer(ObserverMode::Always, FailsToStart).run_local(
        3,
        move |_, _| {
            *counter.lock().unwrap() += 1;
            Ok(0.0)
        },
    );
    match outcome {
        Err(Error::Observer(text)) => assert_eq!(text, "rank 1 cannot open its file"),
        other => panic!("expected the observer's error on rank 0, got {other:?}"),
    }
    assert_eq!(*evaluations.lock().unwrap(), 0);
}

struct FailsOnFirstEvent;

impl Observer for FailsOnFirstEvent {
    fn observe(&mut self, _: &RankInfo, _: &Event<'_>) -> Result<(), String> {
        Err("disk full".into())
    }
}

#[test]
fn a_failing_observer_is_switched_off_and_the_others_hear_a_warning() {
    let heard: Heard = Default::default();
    let result = Optimizer::new(space())
        .generations(10)
        .observer(ObserverMode::Always, FailsOnFirstEvent)
        .observer(ObserverMode::Always, recorder(&heard))
        .run_local(1, |p, _| Ok(p.float("x").abs()))
        .unwrap();
    assert_eq!(result.evaluations, 10);
    assert_eq!(count(&heard, "warning"), 1, "one warning, then the failing observer is off");
    assert_eq!(count(&heard, "evaluated"), 10);
}
