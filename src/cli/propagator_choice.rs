//! `--propagator`: which breeding operator the workers use. The default is the library's default
//! propagator (configured by `--pop-size`, `--crossover-prob` and the rest); the others come from
//! `propulate::propagator` with their reference defaults, and the flags below tune them.

use clap::{Args, ValueEnum};

use propulate::propagator::{
    Cmaes, CmaesConfig, CovarianceUpdate, Gp, GpConfig, NelderMead, NelderMeadConfig, Propagator, Pso, PsoConfig,
    PsoVariant, Tpe, TpeConfig,
};
use propulate::{Error, Result, SearchSpace};

/// The propagators by name, for the flag's help and errors.
pub(crate) const NAMES: [&str; 10] =
    ["ga", "pso", "pso-clamping", "pso-constriction", "pso-canonical", "cmaes", "cmaes-basic", "nm", "tpe", "gp"];

/// The propagator flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct PropagatorArgs {
    /// Breeding operator [default: gp for the CNN task, ga with --function]: ga (genetic and
    /// differential children; see --reference-genetic), pso (basic), pso-clamping,
    /// pso-constriction, pso-canonical, cmaes (active), cmaes-basic, nm (Nelder-Mead). pso, cmaes
    /// and nm search int and float parameters only; tpe (tree-structured Parzen estimator, Optuna's
    /// default sampler) models each parameter from the island's evaluations; gp (Bayesian
    /// optimization: a Gaussian process over all parameters, expected improvement) models them together.
    #[arg(long, help_heading = "Propagator")]
    pub propagator: Option<String>,
    /// PSO inertia weight w [default: 0.729].
    #[arg(long, help_heading = "Propagator")]
    pub pso_inertia: Option<f64>,
    /// PSO cognitive coefficient c1, the pull to the particle's own best [default: 1.49445; 2.05
    /// for pso-constriction and pso-canonical].
    #[arg(long, help_heading = "Propagator")]
    pub pso_cognitive: Option<f64>,
    /// PSO social coefficient c2, the pull to the island's best [default: 1.49445; 2.05 for
    /// pso-constriction and pso-canonical].
    #[arg(long, help_heading = "Propagator")]
    pub pso_social: Option<f64>,
    /// CMA-ES generation size lambda [default: 4 + floor(3 ln n) for n parameters].
    #[arg(long, help_heading = "Propagator")]
    pub cmaes_lambda: Option<usize>,
    /// TPE: share of the island's evaluations that make its good density [default: 0.25].
    #[arg(long, help_heading = "Propagator")]
    pub tpe_gamma: Option<f64>,
    /// TPE: random individuals until the island holds this many evaluated ones [default: 6].
    #[arg(long, help_heading = "Propagator")]
    pub tpe_startup: Option<usize>,
    /// GP: random individuals until the island holds this many evaluated ones (at least 2)
    /// [default: 6].
    #[arg(long, help_heading = "Propagator")]
    pub gp_startup: Option<usize>,
    /// GP: improvement over the best loss, in standard deviations of the losses, a candidate must
    /// promise; larger explores more [default: 0.01].
    #[arg(long, help_heading = "Propagator")]
    pub gp_xi: Option<f64>,
    /// GP: the kernel's length scales, one per parameter coordinate (fitted, so that parameters
    /// the loss barely depends on stop blurring the others) or one shared by all [default:
    /// per-axis].
    #[arg(long, value_enum, help_heading = "Propagator")]
    pub gp_kernel: Option<GpKernel>,
}

/// `--gp-kernel`: how many length scales the GP's kernel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GpKernel {
    /// One per coordinate (automatic relevance determination).
    PerAxis,
    /// One for all coordinates.
    Shared,
}

impl PropagatorArgs {
    /// The propagator settings given on the command line, by flag name (for the checkpoint, so that
    /// a resume with other settings is refused, naming them).
    pub fn settings_given(&self) -> serde_json::Map<String, serde_json::Value> {
        let given = [
            ("pso_inertia", self.pso_inertia.map(serde_json::Value::from)),
            ("pso_cognitive", self.pso_cognitive.map(serde_json::Value::from)),
            ("pso_social", self.pso_social.map(serde_json::Value::from)),
            ("cmaes_lambda", self.cmaes_lambda.map(serde_json::Value::from)),
            ("tpe_gamma", self.tpe_gamma.map(serde_json::Value::from)),
            ("tpe_startup", self.tpe_startup.map(serde_json::Value::from)),
            ("gp_startup", self.gp_startup.map(serde_json::Value::from)),
            ("gp_xi", self.gp_xi.map(serde_json::Value::from)),
            ("gp_kernel", self.gp_kernel.and_then(|k| k.to_possible_value()).map(|v| v.get_name().into())),
        ];
        given.into_iter().filter_map(|(name, v)| v.map(|v| (name.to_string(), v))).collect()
    }

    /// Each setting not given on the command line taken from `recorded`, the facts a checkpoint
    /// recorded with [`PropagatorArgs::settings_given`] (values of the wrong type are skipped: the
    /// resume's comparison of the facts reports them).
    pub fn fill_from(&mut self, recorded: &serde_json::Map<String, serde_json::Value>) {
        let float = |key: &str| recorded.get(key).and_then(serde_json::Value::as_f64);
        let count = |key: &str| recorded.get(key).and_then(serde_json::Value::as_u64).map(|n| n as usize);
        self.pso_inertia = self.pso_inertia.or(float("pso_inertia"));
        self.pso_cognitive = self.pso_cognitive.or(float("pso_cognitive"));
        self.pso_social = self.pso_social.or(float("pso_social"));
        self.cmaes_lambda = self.cmaes_lambda.or(count("cmaes_lambda"));
        self.tpe_gamma = self.tpe_gamma.or(float("tpe_gamma"));
        self.tpe_startup = self.tpe_startup.or(count("tpe_startup"));
        self.gp_startup = self.gp_startup.or(count("gp_startup"));
        self.gp_xi = self.gp_xi.or(float("gp_xi"));
        let kernel = recorded.get("gp_kernel").and_then(serde_json::Value::as_str);
        self.gp_kernel = self.gp_kernel.or(kernel.and_then(|k| GpKernel::from_str(k, false).ok()));
    }

    /// Another propagator's flags are an error, not ignored (as the genetic ones are, in
    /// `RunArgs`): `--tpe-gamma` with `--propagator gp` would change nothing.
    fn check_flags_belong_to(&self, name: &str) -> Result<()> {
        // Each flag, whether it was given, and the names of the propagators it sets start with.
        let owned = [
            ("--pso-inertia", self.pso_inertia.is_some(), "pso"),
            ("--pso-cognitive", self.pso_cognitive.is_some(), "pso"),
            ("--pso-social", self.pso_social.is_some(), "pso"),
            ("--cmaes-lambda", self.cmaes_lambda.is_some(), "cmaes"),
            ("--tpe-gamma", self.tpe_gamma.is_some(), "tpe"),
            ("--tpe-startup", self.tpe_startup.is_some(), "tpe"),
            ("--gp-startup", self.gp_startup.is_some(), "gp"),
            ("--gp-xi", self.gp_xi.is_some(), "gp"),
            ("--gp-kernel", self.gp_kernel.is_some(), "gp"),
        ];
        match owned.iter().find(|(_, given, owner)| *given && !name.starts_with(owner)) {
            Some((flag, _, owner)) => Err(Error::InvalidConfig(format!(
                "{flag} sets the {owner} propagator, but the propagator is {name}: add --propagator {owner}, or leave it out"
            ))),
            None => Ok(()),
        }
    }

    /// The propagator named `name` (`RunArgs::propagator_name`: the flag, the checkpoint's or the
    /// task's default) for `space`, with the flags' settings; `None` for the genetic propagator.
    pub fn build(&self, name: &str, space: &SearchSpace) -> Result<Option<Box<dyn Propagator>>> {
        self.check_flags_belong_to(name)?;
        let pso = |variant: PsoVariant| -> Result<Box<dyn Propagator>> {
            // Clerc's constriction needs c1 + c2 > 4: its variants start from 2.05 each.
            let constricted = matches!(variant, PsoVariant::Constriction | PsoVariant::Canonical);
            let mut config = if constricted { PsoConfig::constriction() } else { PsoConfig::basic() };
            config.inertia = self.pso_inertia.unwrap_or(config.inertia);
            config.c_cognitive = self.pso_cognitive.unwrap_or(config.c_cognitive);
            config.c_social = self.pso_social.unwrap_or(config.c_social);
            Ok(Box::new(Pso::new(space, variant, &config)?))
        };
        let cmaes = |update: CovarianceUpdate| -> Result<Box<dyn Propagator>> {
            let config = CmaesConfig { update, population_size: self.cmaes_lambda, ..CmaesConfig::default() };
            Ok(Box::new(Cmaes::new(space, config)?))
        };
        let chosen = match name {
            "ga" => return Ok(None),
            "pso" => pso(PsoVariant::Basic)?,
            "pso-clamping" => pso(PsoVariant::VelocityClamping)?,
            "pso-constriction" => pso(PsoVariant::Constriction)?,
            "pso-canonical" => pso(PsoVariant::Canonical)?,
            "cmaes" => cmaes(CovarianceUpdate::Active)?,
            "cmaes-basic" => cmaes(CovarianceUpdate::Basic)?,
            "nm" => Box::new(NelderMead::new(space, NelderMeadConfig::default())?),
            "tpe" => {
                let defaults = TpeConfig::default();
                let config = TpeConfig {
                    gamma: self.tpe_gamma.unwrap_or(defaults.gamma),
                    startup: self.tpe_startup.unwrap_or(defaults.startup),
                    ..defaults
                };
                Box::new(Tpe::new(space, config)?)
            }
            "gp" => {
                let defaults = GpConfig::default();
                let startup = self.gp_startup.unwrap_or(defaults.startup);
                // A start larger than the default cap raises the cap with it.
                let config = GpConfig {
                    startup,
                    xi: self.gp_xi.unwrap_or(defaults.xi),
                    max_points: defaults.max_points.max(startup),
                    per_axis: self.gp_kernel.map_or(defaults.per_axis, |k| k == GpKernel::PerAxis),
                    ..defaults
                };
                Box::new(Gp::new(space, config)?)
            }
            other => {
                return Err(Error::InvalidConfig(format!("unknown propagator '{other}'; valid: {}", NAMES.join(", "))));
            }
        };
        Ok(Some(chosen))
    }
}
