//! A conditional space modelled by a process per group: the evaluations whose parameters were
//! active together (for `optimizer`, its SGD runs and its Adam runs) each have their own, as TPE
//! models each group (Optuna's `group` decomposition). One process of all of them has one signal
//! scale, one noise level and one length scale per coordinate: a rugged branch makes a smooth one
//! look noisy, and the smooth one's slope is lost (docs/benchmarks/spaces.md).
//!
//! A child is bred in two steps. First its group: each group's process of its losses' normal
//! scores among the whole island's (their ranks, so that a group of huge losses and a group of
//! tiny ones are compared by their order, not dwarfed by each other's magnitudes), centred and
//! scaled within the group, gives each of the group's candidates its expected improvement over
//! the island's best score, in the common units; the group with the highest wins. A group with
//! fewer evaluations than the start competes with a uniform draw in it, scored by what is known
//! before any evaluation (the scores' mean and spread), and is that draw if it wins. Then the
//! child within the group, as in a space without conditions (`Gp::matern_child`: the group's
//! losses warped among themselves, its trust region, its running evaluations as fantasies), its
//! switches (the categoricals conditions read) and dormant parameters held.

use rand::RngExt;

use super::{Gp, LOCAL_CENTRES, Scope};
use crate::bayes::acquisition::{Acquisition, CoordinateKind, LogEi};
use crate::bayes::log_ei::log_expected_improvement;
use crate::bayes::matern::MaternGp;
use crate::bayes::ranks::normal_scores;
use crate::bayes::stats::{mean_and_variance, standardized};
use crate::bayes::warp::warped;
use crate::propagator::Pool;
use crate::rng::PropRng;
use crate::space::Value;

/// The evaluations of one group: which parameters they have active, and their places in the
/// training set (best first).
struct Group {
    active: Vec<bool>,
    members: Vec<usize>,
}

/// The group a child goes to, with its candidates (uniform and local) and what it promises:
/// log expected improvement in the common units.
struct Choice<'a> {
    promise: f64,
    group: &'a Group,
    uniform: Vec<Vec<Value>>,
    local: Vec<Vec<Value>>,
}

impl Gp {
    /// The child of a conditional space (the module's two steps). `told` is sorted best first.
    /// `None` where the space has no conditions or no group's process could be fitted.
    pub(super) fn grouped_child(
        &self,
        told: &[(Vec<Value>, f64)],
        pool: &dyn Pool,
        rng: &mut PropRng,
    ) -> Option<Vec<Value>> {
        let activity = self.model.activity()?;
        let mut groups: Vec<Group> = Vec::new();
        for (k, (values, _)) in told.iter().enumerate() {
            let active = activity.active(values);
            match groups.iter_mut().find(|g| g.active == active) {
                Some(group) => group.members.push(k),
                None => groups.push(Group { active, members: vec![k] }),
            }
        }
        let scores = normal_scores(&told.iter().map(|(_, loss)| *loss).collect::<Vec<f64>>());
        let best = scores.iter().copied().fold(f64::INFINITY, f64::min) - self.config.xi;
        let enough = self.config.startup.max(2);
        let uniform: Vec<Vec<Value>> = (0..self.config.candidates / 2).map(|_| self.space.sample(rng)).collect();

        let mut chosen: Option<Choice> = None;
        for group in groups.iter().filter(|g| g.members.len() >= enough) {
            let mine = |v: &[Value]| activity.active(v) == group.active;
            let ys: Vec<f64> = group.members.iter().map(|&k| scores[k]).collect();
            let (mean, variance) = mean_and_variance(ys.iter().copied());
            let scale = if variance > 0.0 { variance.sqrt() } else { 1.0 };
            let xs: Vec<Vec<f64>> = group.members.iter().map(|&k| self.model.encode(&told[k].0)).collect();
            let zs: Vec<f64> = ys.iter().map(|y| (y - mean) / scale).collect();
            let Some(gp) = MaternGp::fit(self.model.coordinates(), xs, zs) else {
                continue;
            };
            let centres = &group.members[..group.members.len().min(LOCAL_CENTRES)];
            let local: Vec<Vec<Value>> = (0..self.config.candidates / 2)
                .map(|_| self.near(&told[centres[rng.random_range(0..centres.len())]].0, rng))
                .filter(|v| mine(v))
                .collect();
            let own: Vec<Vec<Value>> = uniform.iter().filter(|v| mine(v)).cloned().collect();
            let coded: Vec<Vec<f64>> = own.iter().chain(&local).map(|v| self.model.encode(v)).collect();
            let acquisition = LogEi { gp: &gp, best: (best - mean) / scale };
            let promise = acquisition.values(&coded).into_iter().fold(f64::NEG_INFINITY, f64::max) + scale.ln();
            if chosen.as_ref().is_none_or(|c| promise > c.promise) {
                chosen = Some(Choice { promise, group, uniform: own, local });
            }
        }
        let sparse = uniform.iter().find(|v| {
            let active = activity.active(v);
            groups.iter().find(|g| g.active == active).is_none_or(|g| g.members.len() < enough)
        });
        if let Some(values) = sparse
            && chosen.as_ref().is_none_or(|c| log_expected_improvement(0.0, 1.0, best).0 > c.promise)
        {
            return Some(values.clone());
        }
        let choice = chosen?;
        self.child_in(choice.group, told, &choice.uniform, &choice.local, pool, rng)
    }

    /// The child of `group` by its own process: `Gp::matern_child` on its evaluations, with its
    /// candidates (uniform and local, interleaved as that expects), its switches and dormant
    /// parameters held, and its running evaluations as fantasies.
    fn child_in(
        &self,
        group: &Group,
        told: &[(Vec<Value>, f64)],
        uniform: &[Vec<Value>],
        local: &[Vec<Value>],
        pool: &dyn Pool,
        rng: &mut PropRng,
    ) -> Option<Vec<Value>> {
        let activity = self.model.activity()?;
        let mut kinds = self.model.kinds().to_vec();
        for at in activity.switches() {
            kinds[at] = CoordinateKind::Held;
        }
        for (kind, active) in kinds.iter_mut().zip(&group.active) {
            if !active {
                *kind = CoordinateKind::Held;
            }
        }
        let running = pool
            .iter_running()
            .filter(|i| self.space.contains(&i.values) && activity.active(&i.values) == group.active)
            .map(|i| self.model.encode(&i.values))
            .collect();
        let own: Vec<(Vec<Value>, f64)> = group.members.iter().map(|&k| told[k].clone()).collect();
        let losses: Vec<f64> = own.iter().map(|(_, loss)| *loss).collect();
        let outputs = if self.config.warp { warped(&losses) } else { standardized(&losses) };
        // Even places uniform, odd places local (`in_region` spreads or stops them by that).
        let mut candidates: Vec<Vec<Value>> =
            uniform.iter().zip(local).flat_map(|(u, l)| [u.clone(), l.clone()]).collect();
        if candidates.is_empty() {
            candidates = vec![own[0].0.clone(), own[0].0.clone()];
        }
        let unconstrained = vec![Vec::new(); own.len()];
        self.matern_child(&Scope { kinds: &kinds, running }, &own, &unconstrained, outputs, pool, &candidates, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::super::GpConfig;
    use super::*;
    use crate::individual::Individual;
    use crate::propagator::Propagator;
    use crate::rng::worker_rng;
    use crate::space::SearchSpace;

    /// `branch` picks one of three 2-D problems, each with parameters of its own: a bowl around
    /// (0.3, 0.3) with losses below 1 (a), a bowl of losses a million times larger (b), a rugged
    /// one (c).
    fn three_branches() -> SearchSpace {
        let mut b = SearchSpace::builder().categorical("branch", &["a", "b", "c"]);
        for name in ["a", "b", "c"] {
            for i in 0..2 {
                b = b.float(&format!("{name}{i}"), 0.0, 1.0).when("branch", &[name]);
            }
        }
        b.build().unwrap()
    }

    fn loss(v: &[Value]) -> f64 {
        let x = |i: usize| v[i].as_f64();
        match v[0] {
            Value::Cat(0) => (x(1) - 0.3).powi(2) + (x(2) - 0.3).powi(2),
            Value::Cat(1) => 1e6 * (1.0 + (x(3) - 0.7).powi(2) + (x(4) - 0.7).powi(2)),
            _ => 2.0 + (20.0 * x(5)).sin() + (20.0 * x(6)).sin(),
        }
    }

    fn grouped() -> GpConfig {
        GpConfig { groups: true, ..GpConfig::default() }
    }

    fn evaluated(values: Vec<Value>, generation: u64) -> Individual {
        let mut i = Individual::new(values);
        i.loss = loss(&i.values);
        i.id.generation = generation;
        i
    }

    /// The groups are compared by the order of their losses, not their size: the search settles
    /// in the branch of tiny losses, beside one of huge ones, and refines its optimum.
    #[test]
    fn a_sequential_search_settles_in_the_best_branch_and_refines_it() {
        let s = three_branches();
        let gp = Gp::new(&s, grouped()).unwrap();
        let mut rng = worker_rng(21, 0);
        let mut pool: Vec<Individual> = Vec::new();
        for g in 0..60 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0);
            assert!(s.contains(&child.values));
            pool.push(evaluated(child.values, g));
        }
        let late_in_a = pool[30..].iter().filter(|i| i.values[0] == Value::Cat(0)).count();
        assert!(late_in_a >= 25, "{late_in_a} of the last 30 children in the best branch");
        let best = pool.iter().map(|i| i.loss).fold(f64::INFINITY, f64::min);
        assert!(best < 1e-4, "best {best:e}");
    }

    /// A branch the island has not evaluated is drawn while the others show no structure to
    /// refine; the categoricals conditions read stay what the group's evaluations hold.
    #[test]
    fn a_branch_without_evaluations_is_tried() {
        let s = three_branches();
        let gp = Gp::new(&s, grouped()).unwrap();
        for seed in 0..5 {
            let mut rng = worker_rng(seed, 0);
            // Sixty evaluations in branches a and b with losses that are noise.
            let pool: Vec<Individual> = (0..60)
                .map(|g| {
                    let mut v = s.sample(&mut rng);
                    v[0] = Value::Cat(g as u32 % 2);
                    let mut i = Individual::new(v);
                    i.loss = rng.random::<f64>();
                    i.id.generation = g;
                    i
                })
                .collect();
            let children: Vec<Value> =
                (0..6).map(|_| gp.propagate(&pool, &s, &mut rng).unwrap().remove(0).values[0]).collect();
            assert!(children.contains(&Value::Cat(2)), "seed {seed}: {children:?}");
        }
    }
}
