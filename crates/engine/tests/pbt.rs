//! Population-based training through the library: the loss reads and writes its training state
//! through its context (`restore_from`, `save_to`, `step`), every evaluation continues exactly its
//! parent's state, and a run without a checkpoint, where the states would live, is refused.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};

use propulate_core::SearchSpace;
use propulate_core::individual::IndividualId;
use propulate_core::propagator::{PbtConfig, PropagatorSpec};
use propulate_engine::Optimizer;

fn space() -> SearchSpace {
    SearchSpace::builder().log_float("lr", 0.01, 0.5).build().unwrap()
}

/// Steps per member: ten intervals of 3. With five, a member's worst moment could pass before the
/// others had reported or after they had finished, and nobody exploited (1 run in 30 on 2 cores).
const STEPS: u64 = 30;

fn pbt() -> PropagatorSpec {
    // States stay 10 s after their member moved on (the default): the run is over before any goes,
    // so no worker can lose a state it bred from (tests/pbt.rs checks the deleting, under mpirun).
    PropagatorSpec::Pbt(PbtConfig { interval: 3, steps: Some(STEPS), ..PbtConfig::default() })
}

/// A toy training: the weight `w` (1 when fresh) shrinks by `1 - lr` per step; the state is `w`
/// and the identities of every evaluation that trained it, oldest first.
#[test]
fn the_loss_continues_its_parents_state_through_its_context() {
    let dir = tempfile::tempdir().unwrap();
    let in_step = Arc::new(Phaser::new(4));
    let result = Optimizer::new(space())
        .propagator_spec(pbt())
        .generations(100)
        .seed(2)
        .checkpoint(dir.path())
        .run_local(4, move |p, ctx| {
            let training = ctx.training().expect("population-based training gives a training state").clone();
            let (mut w, mut line) = (1.0f64, String::new());
            if let Some(from) = ctx.restore_from() {
                let state = std::fs::read_to_string(from.join("state"))?;
                let (first, rest) = state.split_once('\n').unwrap_or((&state, ""));
                w = first.parse()?;
                line = rest.to_string();
            }
            assert_eq!(ctx.step(), training.step);
            w *= (1.0 - p.float("lr")).powi(training.steps as i32);
            line.push_str(&format!("{} ", ctx.trial));
            std::fs::write(ctx.save_to().expect("a directory to save into").join("state"), format!("{w}\n{line}"))?;
            // The members train in step, so that they hear of each other before they finish (free
            // running, one thread could run all its member's intervals before another started,
            // and nobody exploited: 1 run in 12 on 2 cores).
            in_step.arrive(training.step + training.steps >= STEPS);
            Ok(w)
        })
        .unwrap();
    // Rank 0 has every trial: each continued its parent at the parent's steps, and the lines of
    // the states grew one trial at a time.
    let trials: BTreeMap<IndividualId, _> = result.trials.iter().map(|t| (t.id, t)).collect();
    let mut exploits = 0;
    for t in result.trials.iter() {
        assert!(t.failure.is_none(), "{} {:?} {:?}", t.id, t.lineage, t.failure);
        let lineage = *t.lineage.as_deref().expect("every evaluation has a lineage");
        assert_eq!(lineage.steps, 3);
        match lineage.parent {
            None => assert_eq!(lineage.step, 0),
            Some(parent) => {
                let p = *trials[&parent].lineage.as_deref().unwrap();
                assert_eq!(lineage.step, p.step_after(), "{}", t.id);
                exploits += usize::from(lineage.exploited);
            }
        }
    }
    assert!(exploits >= 1, "the worst members exploit the best");
    // Every worker stopped once its member reached its steps.
    for worker in 0..4 {
        let last = result.trials.iter().filter(|t| t.id.worker == worker).max_by_key(|t| t.id.generation).unwrap();
        assert!(last.lineage.as_deref().unwrap().step_after() >= STEPS, "worker {worker}");
    }
    let states = result.training_states.expect("the disk use is reported");
    assert_eq!(states.count, result.trials.len() as u64, "every state is kept for 10 s: {states:?}");
}

/// A barrier whose parties may leave: each evaluation waits until every member still training has
/// finished its own evaluation of the same round; a member's last evaluation leaves instead (its
/// worker stops, and the others must not wait for it).
struct Phaser {
    state: Mutex<(usize, usize, u64)>, // parties, arrived, round
    turned: Condvar,
}

impl Phaser {
    fn new(parties: usize) -> Self {
        Phaser { state: Mutex::new((parties, 0, 0)), turned: Condvar::new() }
    }

    fn arrive(&self, last: bool) {
        let mut state = self.state.lock().unwrap();
        let round = state.2;
        if last {
            state.0 -= 1;
        } else {
            state.1 += 1;
        }
        if state.1 >= state.0 {
            *state = (state.0, 0, round + 1);
            self.turned.notify_all();
            return;
        }
        if !last {
            let _unused = self.turned.wait_while(state, |s| s.2 == round).unwrap();
        }
    }
}

#[test]
fn a_run_without_a_checkpoint_is_refused_with_the_reason() {
    let e = Optimizer::new(space()).propagator_spec(pbt()).generations(2).run_local(1, |_, _| Ok(1.0)).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("population-based training keeps its members' training states under the checkpoint"), "{e}");
}
