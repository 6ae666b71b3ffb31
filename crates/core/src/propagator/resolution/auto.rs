//! `auto`: a propagator picked by the search space, the budget and the objectives, as OptunaHub's
//! AutoSampler picks a sampler: a model of every evaluation (the GP) while evaluations are few and
//! the space mostly numeric, the Parzen estimators (TPE) for spaces of mostly categorical
//! parameters, CMA-ES (with its quadratic model) for searches of numeric spaces from 1,000
//! evaluations on, the genetic propagator for several objectives. The run resolves it once, where
//! it reads its checkpoint, and records the propagator it picked with every setting: a resume
//! breeds with that one, whatever its budget.

use crate::error::Result;
use crate::propagator::PropagatorSpec;
use crate::space::{Domain, SearchSpace};

/// The name that asks for the pick (`--propagator auto`, a task's default).
pub const AUTO: &str = "auto";

/// Evaluations up to which the GP is picked for a mostly numeric space. Its model holds at most
/// `GpConfig::max_points` (200) of the island's evaluations, the best half and the latest half:
/// past a thousand it sees a fifth of the search or less, and Optuna's AutoSampler leaves its GP
/// earlier still.
pub const GP_EVALUATIONS: u64 = 1000;

/// Evaluations per island from which an all-numeric space gets CMA-ES (with its quadratic model,
/// [`CmaesConfig::model_share`](crate::propagator::CmaesConfig::model_share)) from the start instead of the
/// GP handing over to it: on BBOB in 10-D at 1,000 evaluations, CMA-ES with its model was at most
/// the hand-over on 18 of 24 functions and at most Optuna's CmaEsSampler on 21 of 24
/// (docs/benchmarks/bbob.md); at 200 evaluations in 5-D, and with 32 workers on 4 islands of
/// about 250 evaluations each, the GP was ahead.
pub const CMAES_FROM: u64 = 1000;

/// Island evaluations after which the GP that `auto` picks for an all-numeric space hands the
/// island over to CMA-ES ([`GpConfig::cmaes_after`](crate::propagator::GpConfig::cmaes_after)), as Optuna's
/// AutoSampler hands its GPSampler's trials over to CmaEsSampler: on BBOB in 10-D at 1,000
/// evaluations the hand-over beat the GP alone (docs/benchmarks/bbob.md).
pub const CMAES_AFTER: usize = 250;

/// What the pick depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    /// Float and int parameters.
    pub numeric: usize,
    /// Categorical parameters.
    pub categorical: usize,
    /// Evaluations the run plans: generations times workers.
    pub evaluations: u64,
    /// Islands the workers form: each island's propagator models the island's own evaluations, a
    /// share of the run's.
    pub islands: usize,
    /// Objectives declared (0 or 1: one loss).
    pub objectives: usize,
}

impl Problem {
    /// The problem of a run over `space` planning `evaluations` on `islands` islands with
    /// `objectives` objectives.
    pub fn new(space: &SearchSpace, evaluations: u64, islands: usize, objectives: usize) -> Self {
        let categorical = space.params().iter().filter(|p| matches!(p.domain, Domain::Categorical { .. })).count();
        Problem { numeric: space.params().len() - categorical, categorical, evaluations, islands, objectives }
    }

    /// The propagator `auto` picks, and why (for the run's notice).
    pub fn pick(&self) -> (&'static str, String) {
        let Problem { numeric, categorical, evaluations, islands, objectives } = *self;
        let per_island = evaluations / islands.max(1) as u64;
        let params = format!(
            "{numeric} numeric and {categorical} categorical parameter{}, {evaluations} evaluations",
            if numeric + categorical == 1 { "" } else { "s" }
        );
        let (name, rule) = if objectives >= 2 {
            (
                "ga",
                format!(
                    "{objectives} objectives (only the genetic propagator and random search rank by Pareto dominance)"
                ),
            )
        } else if categorical > numeric {
            ("tpe", format!("{params}: mostly categorical"))
        } else if categorical == 0 && per_island >= CMAES_FROM {
            ("cmaes", format!("{params}: at least {CMAES_FROM} per island, all numeric"))
        } else if categorical == 0 {
            ("gp", format!("{params}: under {CMAES_FROM} per island, all numeric"))
        } else if evaluations <= GP_EVALUATIONS {
            ("gp", format!("{params}: at most {GP_EVALUATIONS}, mostly numeric"))
        } else {
            ("tpe", format!("{params}: over {GP_EVALUATIONS}, some categorical"))
        };
        (name, format!("auto picked {name}: {rule}"))
    }

    /// The propagator `auto` picks with its settings for a run of `workers` workers, and why: the
    /// pick's defaults, the GP of an all-numeric space handing over to CMA-ES after
    /// [`CMAES_AFTER`] evaluations of an island.
    pub fn spec(&self, workers: usize) -> Result<(PropagatorSpec, String)> {
        let (name, mut why) = self.pick();
        let mut spec = PropagatorSpec::with_defaults(name, workers)?;
        if let PropagatorSpec::Gp(gp) = &mut spec
            && self.categorical == 0
        {
            gp.cmaes_after = CMAES_AFTER;
            why.push_str(&format!(", cmaes taking over after {CMAES_AFTER} evaluations of an island"));
        }
        Ok((spec, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(numeric: usize, categorical: usize, evaluations: u64, objectives: usize) -> &'static str {
        Problem { numeric, categorical, evaluations, islands: 1, objectives }.pick().0
    }

    #[test]
    fn the_rule_picks_by_objectives_space_and_budget() {
        assert_eq!(problem(5, 0, 200, 0), "gp");
        assert_eq!(problem(3, 1, 1000, 1), "gp", "the CNN's space at a thousand evaluations");
        assert_eq!(problem(3, 3, 16, 0), "gp", "as many categorical as numeric: still mostly numeric");
        assert_eq!(problem(1, 2, 16, 0), "tpe");
        assert_eq!(problem(10, 0, 1000, 0), "cmaes", "all numeric from a thousand evaluations");
        assert_eq!(problem(10, 0, 999, 0), "gp");
        let four_islands = Problem { numeric: 10, categorical: 0, evaluations: 3996, islands: 4, objectives: 0 };
        assert_eq!(four_islands.pick().0, "gp", "999 evaluations per island");
        let (name, why) = Problem { evaluations: 4000, ..four_islands }.pick();
        assert_eq!(name, "cmaes");
        assert!(why.ends_with("4000 evaluations: at least 1000 per island, all numeric"), "{why}");
        assert_eq!(problem(10, 1, 5000, 0), "tpe");
        assert_eq!(problem(5, 0, 200, 2), "ga");
        let (_, why) = Problem { numeric: 2, categorical: 0, evaluations: 48, islands: 1, objectives: 0 }.pick();
        assert_eq!(
            why,
            "auto picked gp: 2 numeric and 0 categorical parameters, 48 evaluations: under 1000 per island, all numeric"
        );
    }

    #[test]
    fn the_gp_of_an_all_numeric_space_hands_over_to_cmaes() {
        let numeric = Problem { numeric: 5, categorical: 0, evaluations: 200, islands: 1, objectives: 0 };
        let (spec, why) = numeric.spec(8).unwrap();
        let PropagatorSpec::Gp(gp) = spec else { panic!("{spec:?}") };
        assert_eq!(gp.cmaes_after, CMAES_AFTER);
        assert!(why.ends_with("all numeric, cmaes taking over after 250 evaluations of an island"), "{why}");
        // A categorical parameter keeps the GP to the end; the other picks are their defaults.
        let (spec, why) = Problem { categorical: 1, ..numeric }.spec(8).unwrap();
        assert_eq!(spec, PropagatorSpec::with_defaults("gp", 8).unwrap());
        assert!(why.ends_with("mostly numeric"), "{why}");
        let (spec, _) = Problem { evaluations: 5000, ..numeric }.spec(8).unwrap();
        assert_eq!(spec, PropagatorSpec::with_defaults("cmaes", 8).unwrap());
    }

    #[test]
    fn a_space_counts_its_categorical_parameters() {
        let space = SearchSpace::builder()
            .float("lr", 1e-4, 1.0)
            .int("layers", 1, 4)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap();
        assert_eq!(
            Problem::new(&space, 80, 2, 0),
            Problem { numeric: 2, categorical: 1, evaluations: 80, islands: 2, objectives: 0 }
        );
    }
}
