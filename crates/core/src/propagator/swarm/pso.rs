//! Particle swarm optimisation: each worker is one particle, moved towards its own best point and
//! the island's best point.
//!
//! The propagator keeps no state, so one instance serves every worker and a resumed run needs
//! nothing but its population. On every call it rebuilds the breeding worker's particle from a few
//! look-ups instead of a pass over the pool (so a run of N evaluations does not cost O(N²)): the
//! particle's position is the individual the worker bred in the generation before the one it
//! breeds now (found by its identity, [`Pool::stored`], active or not: a particle is where it last
//! evaluated, even if that individual has since emigrated), its velocity the step from the
//! individual of the generation before that to the position (zero if that one is not stored), its
//! personal best the worker's lowest-loss active individual ([`Pool::best_of_worker`]: a scan of
//! the loss index that stops at the worker's first individual; ties: the lowest identity) or its
//! position when that is better or none is active, and the global best the pool's lowest-loss individual. Failed
//! evaluations count with their loss of `+inf`. A worker whose previous generation is not stored
//! (its first, or the first after a reshape whose generation offset skipped some) starts anywhere:
//! a uniformly random point, so no `Conditional` with an initialiser is needed.
//!
//! The update works in normalized coordinates, the unit box CMA-ES and Nelder-Mead use too: every
//! float parameter is mapped linearly to `[0, 1]` (in `ln` space for log-scale floats), every int
//! parameter to `[0, 1]` split into `hi - lo + 1` equal bins, an integer sitting at its bin's centre.
//! With random factors `r1`, `r2` drawn uniformly from `[0, 1)` for every dimension (in that
//! order, dimension by dimension):
//!
//! - [`PsoVariant::Basic`]: `v' = w v + c1 r1 (p - x) + c2 r2 (g - x)`;
//! - [`PsoVariant::VelocityClamping`]: the same, then each component of `v'` clipped to
//!   `±v_limit` (a fraction of the parameter's range);
//! - [`PsoVariant::Constriction`]: `v' = chi (v + c1 r1 (p - x) + c2 r2 (g - x))` with Clerc's
//!   `chi = 2 / (phi - 2 + sqrt(phi² - 4 phi))`, `phi = c1 + c2 > 4` (the inertia is unused);
//! - [`PsoVariant::Canonical`]: constriction, then `v'` clipped to `±1` (the whole range).
//!
//! The new position `x + v'` is reflected at the box edges as often as needed (`-u` below 0,
//! `2 - u` above 1, again for a step longer than the box). Mapping back, floats are clipped to their
//! bounds (rounding) and an int takes the integer whose bin the coordinate falls in. Categorical
//! parameters have no order for a velocity to follow: a space with one is refused with an error that
//! names the parameter.
//!
//! Differences from the reference (`propulate/propagators/pso.py`): the particle is found by the
//! worker's global index, so it works with several islands (the reference compares the island rank
//! with the world rank, issue #82); the random factors are drawn per dimension (the reference draws
//! one per term); the child always lies in the space (the reference neither reflects nor clips);
//! the velocity is derived from the last two positions instead of being stored in the individual;
//! the personal best is the best of the worker's individuals still on the island and its position;
//! a worker without a particle yet gets a random point (the reference's `max` of an empty list
//! raises without its `InitUniformPSO`).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId};
use crate::propagator::normalized::{UnitBox, check_same_space, reflect_into_unit};
use crate::propagator::{Arity, Breeder, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// Which velocity update a [`Pso`] applies (see the module documentation for the formulas).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PsoVariant {
    /// Inertia, cognitive and social terms.
    Basic,
    /// Basic, with each velocity component clipped to `±v_limit` of its parameter's range.
    VelocityClamping,
    /// Clerc and Kennedy's constriction factor instead of an inertia weight.
    Constriction,
    /// Constriction with velocities clipped to the whole range.
    Canonical,
}

/// The coefficients of a [`Pso`]. Which ones a variant reads is said on each field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PsoConfig {
    /// Inertia weight `w` on the previous velocity (basic and velocity clamping).
    pub inertia: f64,
    /// Cognitive coefficient `c1`: pull towards the particle's own best.
    pub c_cognitive: f64,
    /// Social coefficient `c2`: pull towards the island's best.
    pub c_social: f64,
    /// Largest velocity component as a fraction of the parameter's range (velocity clamping only;
    /// the canonical variant always uses 1).
    pub v_limit: f64,
}

impl PsoConfig {
    /// The reference's defaults for the basic and velocity-clamping variants: `w = 0.729`,
    /// `c1 = c2 = 1.49445`, `v_limit = 0.6`.
    pub fn basic() -> Self {
        PsoConfig { inertia: 0.729, c_cognitive: 1.49445, c_social: 1.49445, v_limit: 0.6 }
    }

    /// The reference's defaults for the constriction and canonical variants: `c1 = c2 = 2.05`
    /// (`phi = 4.1`, `chi ≈ 0.7298`); `inertia` and `v_limit` are not read by these variants.
    pub fn constriction() -> Self {
        PsoConfig { c_cognitive: 2.05, c_social: 2.05, ..PsoConfig::basic() }
    }
}

impl Default for PsoConfig {
    /// [`PsoConfig::basic`].
    fn default() -> Self {
        PsoConfig::basic()
    }
}

/// A particle swarm propagator: one child per call, the next position of the breeding worker's
/// particle. It must be called through [`Propagator::propagate_as`], which says who breeds, with
/// the space it was built for.
#[derive(Debug, Clone, PartialEq)]
pub struct Pso {
    /// The space it was built for: it breeds in that one only.
    space: SearchSpace,
    /// The space's map onto the unit box, built once.
    unit: UnitBox,
    variant: PsoVariant,
    /// Factor on the previous velocity: `w` (basic, clamping) or 1 (constriction, canonical).
    inertia: f64,
    /// Factor on the whole new velocity: 1 (basic, clamping) or Clerc's `chi`.
    constriction: f64,
    c_cognitive: f64,
    c_social: f64,
    /// Largest velocity component in normalized coordinates; infinite where there is none.
    v_limit: f64,
}

impl Pso {
    /// A swarm of `variant` with coefficients `config` over `space`. Errors on a categorical
    /// parameter (named), on negative or non-finite coefficients, on `v_limit <= 0` for velocity
    /// clamping, and on `c1 + c2 <= 4` for the constriction variants.
    pub fn new(space: &SearchSpace, variant: PsoVariant, config: &PsoConfig) -> Result<Self> {
        let unit = UnitBox::new(space, "PSO")?;
        let bad = |msg: String| Error::InvalidPropagator(format!("PSO ({variant:?}): {msg}"));
        let PsoConfig { inertia, c_cognitive, c_social, v_limit } = *config;
        for (what, c) in [("inertia", inertia), ("c_cognitive", c_cognitive), ("c_social", c_social)] {
            if !(c.is_finite() && c >= 0.0) {
                return Err(bad(format!("{what} must be finite and >= 0, got {c}")));
            }
        }
        let constricted = |v_limit: f64| {
            let phi = c_cognitive + c_social;
            if phi <= 4.0 {
                return Err(bad(format!(
                    "constriction needs c_cognitive + c_social > 4, got {c_cognitive} + {c_social} = {phi}"
                )));
            }
            let chi = 2.0 / (phi - 2.0 + (phi * phi - 4.0 * phi).sqrt());
            Ok((1.0, chi, v_limit))
        };
        // (factor on the previous velocity, factor on the whole new velocity, velocity limit)
        let (inertia, constriction, v_limit) = match variant {
            PsoVariant::Basic => (inertia, 1.0, f64::INFINITY),
            PsoVariant::VelocityClamping => {
                if !(v_limit.is_finite() && v_limit > 0.0) {
                    return Err(bad(format!("v_limit must be a finite fraction of the range > 0, got {v_limit}")));
                }
                (inertia, 1.0, v_limit)
            }
            PsoVariant::Constriction => constricted(f64::INFINITY)?,
            PsoVariant::Canonical => constricted(1.0)?,
        };
        Ok(Pso { space: space.clone(), unit, variant, inertia, constriction, c_cognitive, c_social, v_limit })
    }

    /// Basic PSO with `config`'s inertia and coefficients ([`PsoConfig::basic`] for the reference's).
    pub fn basic(space: &SearchSpace, config: &PsoConfig) -> Result<Self> {
        Pso::new(space, PsoVariant::Basic, config)
    }

    /// Velocity-clamping PSO with `config`'s inertia, coefficients and `v_limit`.
    pub fn velocity_clamping(space: &SearchSpace, config: &PsoConfig) -> Result<Self> {
        Pso::new(space, PsoVariant::VelocityClamping, config)
    }

    /// Constriction PSO with `config`'s coefficients ([`PsoConfig::constriction`] for the reference's).
    pub fn constriction(space: &SearchSpace, config: &PsoConfig) -> Result<Self> {
        Pso::new(space, PsoVariant::Constriction, config)
    }

    /// Canonical PSO: constriction with `c1 = c2 = 2.05` and velocities clipped to the whole range.
    pub fn canonical(space: &SearchSpace) -> Result<Self> {
        Pso::new(space, PsoVariant::Canonical, &PsoConfig::constriction())
    }

    /// The variant this swarm applies.
    pub fn variant(&self) -> PsoVariant {
        self.variant
    }

    /// Clerc's constriction factor `chi`, or 1 for the variants without one.
    pub fn constriction_factor(&self) -> f64 {
        self.constriction
    }

    /// One particle update in normalized coordinates, with the random factors given: position `x`,
    /// velocity `v`, personal best `p`, global best `g`, and `r1`, `r2` per dimension. Returns the
    /// new position, reflected into `[0, 1]`.
    fn step(&self, x: &[f64], v: &[f64], p: &[f64], g: &[f64], r1: &[f64], r2: &[f64]) -> Vec<f64> {
        (0..x.len())
            .map(|d| {
                let pull = self.c_cognitive * r1[d] * (p[d] - x[d]) + self.c_social * r2[d] * (g[d] - x[d]);
                let v_new = (self.constriction * (self.inertia * v[d] + pull)).clamp(-self.v_limit, self.v_limit);
                reflect_into_unit(x[d] + v_new)
            })
            .collect()
    }
}

impl Propagator for Pso {
    fn name(&self) -> &'static str {
        "PSO"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }

    /// Refused: a particle is a worker, so PSO needs to know who breeds.
    fn propagate(&self, _: &dyn Pool, _: &SearchSpace, _: &mut PropRng) -> Result<Vec<Individual>> {
        Err(Error::InvalidPropagator(
            "PSO moves the breeding worker's particle and needs to know which worker breeds: call \
             propagate_as with the breeder (the driver does)"
                .into(),
        ))
    }

    fn propagate_as(
        &self,
        breeder: Breeder,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        if space != &self.space {
            // A space this swarm could not search at all says why (a categorical, by name).
            UnitBox::new(space, "PSO")?;
            check_same_space(&self.space, space, "PSO")?;
        }
        let own =
            |generation: u64| pool.stored(&IndividualId { island: breeder.island, worker: breeder.worker, generation });
        let Some(position) = breeder.generation.checked_sub(1).and_then(own) else {
            return Ok(vec![Individual::new(space.sample(rng))]);
        };
        let previous = breeder.generation.checked_sub(2).and_then(own);
        // The best place the particle has been: its best individual still on the island, or its
        // position when that is better (it may have emigrated since).
        let personal_best = pool.best_of_worker(breeder.worker).filter(|b| b.loss <= position.loss);
        let global_best = pool.best(1).pop();
        let personal_best = personal_best.as_ref().unwrap_or(&position);
        let global_best = global_best.as_ref().unwrap_or(personal_best);
        // Each individual used is checked and mapped once, whatever roles it plays.
        let mut mapped: Vec<(IndividualId, Vec<f64>)> = Vec::with_capacity(4);
        let mut unit = |ind: &Individual| -> Result<Vec<f64>> {
            if let Some((_, u)) = mapped.iter().find(|(id, _)| *id == ind.id) {
                return Ok(u.clone());
            }
            space.check_values(&ind.values)?;
            let u = self.unit.to_unit(&ind.values);
            mapped.push((ind.id, u.clone()));
            Ok(u)
        };
        let x = unit(&position)?;
        let v = match &previous {
            Some(previous) => x.iter().zip(unit(previous)?).map(|(a, b)| a - b).collect(),
            None => vec![0.0; x.len()],
        };
        let (p, g) = (unit(personal_best)?, unit(global_best)?);
        let (mut r1, mut r2) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
        for _ in 0..x.len() {
            r1.push(rng.random::<f64>());
            r2.push(rng.random::<f64>());
        }
        let next = self.step(&x, &v, &p, &g, &r1, &r2);
        Ok(vec![Individual::new(self.unit.point_at(&next))])
    }
}

#[cfg(test)]
mod tests;
