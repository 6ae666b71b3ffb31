//! `--propagator` and the flags of each propagator's settings, each declared once in [`FLAGS`]: the
//! flag, the propagators it belongs to, the field of their spec (`propulate::propagator::
//! PropagatorSpec`) it sets, and its help. Parsing, the check that a flag belongs to the chosen
//! propagator, and the resolution into the spec in effect all read that table; adding a setting
//! is one entry there (and a field in core's configuration). The help's default is read from that
//! configuration's default, where it does not depend on the run, so the value is declared once.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use serde_json::Value;

use propulate::propagator::{DefaultPropagatorConfig, GivenSetting, PropagatorChoice, PropagatorSpec, TpeConfig};

const HEADING: &str = "Propagator";
const GA: &[&str] = &["ga"];
const PSO: &[&str] = &["pso", "pso-clamping", "pso-constriction", "pso-canonical"];
/// The PSO variants with an inertia weight (constriction and canonical scale the velocity by
/// Clerc and Kennedy's factor instead, so an inertia given to them would change nothing).
const PSO_INERTIA: &[&str] = &["pso", "pso-clamping"];
const CMAES: &[&str] = &["cmaes", "cmaes-basic"];
const TPE: &[&str] = &["tpe"];
const GP: &[&str] = &["gp"];
const PBT: &[&str] = &["pbt"];

/// How a flag's text becomes its setting's JSON value.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A number (f64).
    Float,
    /// A count (usize).
    Count,
    /// One of the words, each the boolean it stands for.
    Words(&'static [(&'static str, bool)]),
    /// One of the names, the setting's value as it is.
    Names(&'static [&'static str]),
    /// Comma-separated words, the setting's value a list of them.
    List,
}

/// One setting of one family of propagators, as a flag.
#[derive(Debug)]
pub(crate) struct SettingFlag {
    /// The long flag without its dashes.
    long: &'static str,
    /// The propagators it sets; the first names the family in messages.
    owners: &'static [&'static str],
    /// The field of their configuration it sets.
    field: &'static str,
    kind: Kind,
    /// The value's name in the help (`--gp-xi X`); unused where the kind names the values.
    value: &'static str,
    /// What it does, without its default: markdown, whose links the terminal's help shows as
    /// their text (`args::with_generated_help`).
    help: &'static str,
    /// Its default, as the help shows it.
    default: Shown,
}

/// Another configuration whose value a flag's help shows where it differs, with its label.
type AlsoShown = (fn() -> PropagatorSpec, &'static str);

/// Where a flag's help takes its default from.
#[derive(Debug, Clone, Copy)]
enum Shown {
    /// The field's value in the first owner's default configuration
    /// (`PropagatorSpec::with_defaults`), then in each other configuration given, with its label:
    /// the configuration declares the value, the help only shows it.
    Config(&'static [AlsoShown]),
    /// A rule in words, where the value depends on the run (its workers, its space, another flag).
    Rule(&'static str),
}

/// The configurations whose defaults some flags' help shows besides their owner's.
fn pso_constriction() -> PropagatorSpec {
    PropagatorSpec::with_defaults("pso-constriction", 1).expect("a built-in propagator")
}

fn tpe_independent() -> PropagatorSpec {
    PropagatorSpec::Tpe(TpeConfig::independent())
}

/// The reference's genetic settings (`--reference-genetic`) for 8 workers: the flags that show
/// them do not depend on the workers.
fn reference_genetic() -> PropagatorSpec {
    PropagatorSpec::Ga(DefaultPropagatorConfig::reference(8))
}

impl SettingFlag {
    /// The help: what it does and its default.
    fn help_with_default(&self) -> String {
        let default = match self.default {
            Shown::Rule(rule) => rule.to_string(),
            Shown::Config(others) => {
                let owner = PropagatorSpec::with_defaults(self.owners[0], 8).expect("a flag's owner is a propagator");
                let first = self.shown(&owner);
                let also = others.iter().map(|(spec, label)| (self.shown(&spec()), label)).filter(|(v, _)| *v != first);
                std::iter::once(first.clone())
                    .chain(also.map(|(v, label)| format!("{v} {label}")))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        };
        format!("{} [default: {default}]", self.help)
    }

    /// The value of this flag's field in `spec`, as the flag is written.
    fn shown(&self, spec: &PropagatorSpec) -> String {
        let value =
            spec.settings().remove(self.field).unwrap_or_else(|| panic!("{} has no field {}", spec.name(), self.field));
        match (self.kind, &value) {
            (Kind::Words(words), Value::Bool(b)) => {
                words.iter().find(|(_, w)| w == b).map(|(word, _)| word.to_string()).expect("a word for each value")
            }
            (Kind::List, Value::Array(items)) if items.is_empty() => "none".into(),
            (Kind::List, Value::Array(items)) => {
                items.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect::<Vec<_>>().join(",")
            }
            (_, Value::String(text)) => text.clone(),
            (_, Value::Number(n)) => n.as_f64().map_or_else(|| n.to_string(), |x| x.to_string()),
            _ => value.to_string(),
        }
    }
}

/// Every propagator setting a flag can give.
const FLAGS: &[SettingFlag] = &[
    SettingFlag {
        long: "pop-size",
        owners: GA,
        field: "pop_size",
        kind: Kind::Count,
        value: "N",
        help: "`ga`: the breeding pool: the best this many active individuals on the island",
        default: Shown::Rule("half the workers, at least 4; with `--reference-genetic`: 2 x workers"),
    },
    SettingFlag {
        long: "random-start",
        owners: GA,
        field: "random_start",
        kind: Kind::Count,
        value: "N",
        help: "`ga`: random individuals until the island holds this many, then breeding",
        default: Shown::Rule(
            "2 x workers, at least 4; with `--reference-genetic`: the pop size; never below `--pop-size`",
        ),
    },
    SettingFlag {
        long: "crossover-prob",
        owners: GA,
        field: "crossover_prob",
        kind: Kind::Float,
        value: "P",
        help: "`ga`: the probability that a child is a crossover of two parents",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "mutation-prob",
        owners: GA,
        field: "mutation_prob",
        kind: Kind::Float,
        value: "P",
        help: "`ga`: the probability that one parameter is re-sampled",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "random-init-prob",
        owners: GA,
        field: "random_init_prob",
        kind: Kind::Float,
        value: "P",
        help: "`ga`: the probability that the child is replaced by a random point",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "sigma-factor",
        owners: GA,
        field: "sigma_factor",
        kind: Kind::Float,
        value: "F",
        help: "`ga`: the largest width of the Gaussian mutation as a fraction of each parameter's \
               range",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "step-decades",
        owners: GA,
        field: "step_decades",
        kind: Kind::Float,
        value: "D",
        help: "`ga`: Gaussian steps drawn log-uniformly per child from `--sigma-factor` down this \
               many powers of ten (0: a fixed step)",
        default: Shown::Config(&[(reference_genetic, "with `--reference-genetic` (a fixed step)")]),
    },
    SettingFlag {
        long: "differential-prob",
        owners: GA,
        field: "differential_prob",
        kind: Kind::Float,
        value: "P",
        help: "`ga`: the probability that a child is a differential-evolution step from the pool \
               instead of a genetic one",
        default: Shown::Config(&[(reference_genetic, "with `--reference-genetic`")]),
    },
    SettingFlag {
        long: "pso-inertia",
        owners: PSO_INERTIA,
        field: "inertia",
        kind: Kind::Float,
        value: "W",
        help: "PSO's inertia weight w (`pso`, `pso-clamping`; the constriction variants have none)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pso-cognitive",
        owners: PSO,
        field: "c_cognitive",
        kind: Kind::Float,
        value: "C1",
        help: "PSO's cognitive coefficient c1, the pull to the particle's own best",
        default: Shown::Config(&[(pso_constriction, "for `pso-constriction` and `pso-canonical`")]),
    },
    SettingFlag {
        long: "pso-social",
        owners: PSO,
        field: "c_social",
        kind: Kind::Float,
        value: "C2",
        help: "PSO's social coefficient c2, the pull to the island's best",
        default: Shown::Config(&[(pso_constriction, "for `pso-constriction` and `pso-canonical`")]),
    },
    SettingFlag {
        long: "cmaes-lambda",
        owners: CMAES,
        field: "population_size",
        kind: Kind::Count,
        value: "N",
        help: "CMA-ES generation size lambda",
        default: Shown::Rule("4 + floor(3 ln n) for n parameters"),
    },
    SettingFlag {
        long: "cmaes-model-share",
        owners: CMAES,
        field: "model_share",
        kind: Kind::Float,
        value: "P",
        help: "CMA-ES: the probability that a child is the lowest point of a quadratic model of \
               the island's latest evaluations (as lq-CMA-ES), where that model has just ranked \
               the latest ones right (Kendall's tau at least 0.85); 0: CMA-ES alone",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "tpe-gamma",
        owners: TPE,
        field: "gamma",
        kind: Kind::Float,
        value: "G",
        help: "TPE: the share of the island's evaluations that make its good density (the \
               univariate and multivariate models take at most 25)",
        default: Shown::Config(&[(tpe_independent, "with `--tpe-model independent`")]),
    },
    SettingFlag {
        long: "tpe-startup",
        owners: TPE,
        field: "startup",
        kind: Kind::Count,
        value: "N",
        help: "TPE: random individuals until the island holds this many evaluated ones",
        default: Shown::Config(&[(tpe_independent, "with `--tpe-model independent`")]),
    },
    SettingFlag {
        long: "tpe-model",
        owners: TPE,
        field: "model",
        kind: Kind::Names(&propulate::propagator::TpeModel::NAMES),
        value: "MODEL",
        help: "TPE: the model: `multivariate`, Optuna 5's default TPESampler (with \
               `constant_liar`: the good and the bad densities from a kernel per evaluation over \
               all parameters and a prior; the island's running evaluations counted as bad ones); \
               `univariate`, its `multivariate=False` (each parameter on its own; our default from \
                2026-11-26 to 2026-11-27); or `independent`, the model before 2026-11-26 (see the \
               [changelog](../../CHANGELOG.md))",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-startup",
        owners: GP,
        field: "startup",
        kind: Kind::Count,
        value: "N",
        help: "GP: random individuals until the island holds this many evaluated ones (at least 2)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-xi",
        owners: GP,
        field: "xi",
        kind: Kind::Float,
        value: "X",
        help: "GP: the improvement over the best loss (in standard deviations of the losses) a \
               candidate must promise; larger explores more",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-tpe-share",
        owners: GP,
        field: "tpe_share",
        kind: Kind::Float,
        value: "S",
        help: "GP: the share of the children bred by TPE (Optuna's default model, with its default \
                settings) from the same island instead of the Gaussian process: a portfolio of \
               both models, both modelling the island's evaluations; each worker alternates out of \
                step with the others",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-model",
        owners: GP,
        field: "matern",
        kind: Kind::Words(&[("matern52", true), ("squared-exp", false)]),
        value: "MODEL",
        help: "GP: the model: `matern52`, Optuna's GPSampler's (a Matérn-5/2 kernel with a length \
               scale per parameter fitted with priors, log expected improvement climbed by local \
               searches, the island's running evaluations as fantasies). `squared-exp`, the model \
               before 2026-11-26, was retired on 2026-11-28 and is refused (see the \
               [changelog](../../CHANGELOG.md))",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-warp",
        owners: GP,
        field: "warp",
        kind: Kind::Words(&[("power", true), ("none", false)]),
        value: "WARP",
        help: "GP: the losses' transform before the model fits them: `power`, a \
               Yeo-Johnson transform of the standardized losses fitted by maximum likelihood, as \
               HEBO does (so that a few huge losses do not make the good ones look alike); `none`, \
                standardized only (Optuna's GPSampler; what a checkpoint from before 2026-11-27 \
               keeps)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-incumbent",
        owners: GP,
        field: "incumbent_mean",
        kind: Kind::Words(&[("mean", true), ("observed", false)]),
        value: "FROM",
        help: "GP: the loss expected improvement is measured from: `observed`, the \
                lowest loss evaluated, or `mean`, the lowest the fitted process predicts at an \
               evaluated point (plug-in EI); they differ where the fit calls part of the losses \
               noise, as for a rugged loss or a noisy training. On BBOB in 5-D a tie with \
               `observed` \
               ([benchmark](../benchmarks/bbob-history.md#two-changes-aimed-at-where-the-gp-lost-2026-11-27))",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-cmaes-after",
        owners: GP,
        field: "cmaes_after",
        kind: Kind::Count,
        value: "N",
        help: "GP: hand the island over to CMA-ES once it holds N evaluations, CMA-ES starting \
               from the mean, shape and spread of the best tenth of them (as Optuna's AutoSampler \
               hands over after 250); int and float parameters only; 0: never",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-cmaes-model-share",
        owners: GP,
        field: "cmaes_model_share",
        kind: Kind::Float,
        value: "P",
        help: "GP: the hand-over's `--cmaes-model-share`",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-quadratic-share",
        owners: GP,
        field: "quadratic_share",
        kind: Kind::Float,
        value: "P",
        help: "GP: the probability that a child is instead the lowest point of a quadratic model \
               of the island's latest evaluations, where that model has just ranked the latest \
               ones right (see `--cmaes-model-share`); int and float parameters only, ignored with \
                a categorical one",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-trust-region",
        owners: GP,
        field: "trust_region",
        kind: Kind::Float,
        value: "P",
        help: "GP: the probability that a child is looked for only inside a trust \
               region around the island's best point, under a process fitted to the evaluations \
               near it alone (TuRBO's box: it doubles after 3 batches in a row with an improvement \
                and halves after max(4, coordinates) evaluations without one, rounded up to whole \
               batches, a batch being as many evaluations as the island's workers run at once); 0: \
                the whole space, the default before 2026-11-27 and what an older checkpoint keeps \
               ([benchmark](../benchmarks/bbob-history.md#a-trust-region-2026-11-27))",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "gp-conditional",
        owners: GP,
        field: "groups",
        kind: Kind::Words(&[("groups", true), ("joint", false)]),
        value: "MODEL",
        help: "GP: how a conditional space is modelled: `groups`, a process per group of \
               evaluations whose parameters were active together, the child going to the group \
               whose process promises the most improvement on the island's best (the losses \
               compared by rank across groups; not with constraints); `joint`, one process of every evaluation whose \
               kernel compares a parameter only where it is active in both points (the default \
               before 2026-11-29 and what an older checkpoint keeps) \
               ([benchmark](../benchmarks/spaces.md#conditional-parameters))",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-interval",
        owners: PBT,
        field: "interval",
        kind: Kind::Count,
        value: "N",
        help: "PBT (`--propagator pbt`, see [population-based training](pbt.md)): training steps \
               per evaluation, between two decisions to exploit or continue (epochs for the CNN; \
               the program's own steps for command trials, given as `PROPULATE_STEPS`)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-quantile",
        owners: PBT,
        field: "quantile",
        kind: Kind::Float,
        value: "Q",
        help: "PBT: the share of the island's members that exploit (the worst) and are exploited \
               (the best), at most 0.5",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-resample-prob",
        owners: PBT,
        field: "resample_prob",
        kind: Kind::Float,
        value: "P",
        help: "PBT: the probability that exploring resamples a parameter from the space instead of \
                multiplying it by 0.8 or 1.2 (categoricals: resampled or kept)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-fixed",
        owners: PBT,
        field: "fixed",
        kind: Kind::List,
        value: "NAMES",
        help: "PBT: parameters exploring copies unchanged, comma separated (a network's shape, \
               which the state it continues was saved with)",
        default: Shown::Rule("none; the CNN task: `conv_layers,activation`"),
    },
    SettingFlag {
        long: "pbt-keep-seconds",
        owners: PBT,
        field: "keep_s",
        kind: Kind::Float,
        value: "S",
        help: "PBT: seconds a worker keeps a state of its own after its member moved on, before \
               deleting it (messages between workers lag; a worker that bred from it meanwhile \
               must find it); at most 1e10, which keeps every state",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-explore",
        owners: PBT,
        field: "explore",
        kind: Kind::Names(&propulate::propagator::PbtExplore::NAMES),
        value: "WAY",
        help: "PBT: how an exploiting member's floats and ints move from the donor's: `perturb` \
               (multiplied by 0.8 or 1.2, or resampled: the paper's and Ray Tune's PBT) or `pb2` \
               (picked by a Gaussian process of what the island's intervals gained, as Ray Tune's \
               PB2; for small populations), see [population-based \
               training](pbt.md#pb2-a-model-instead-of-perturbations)",
        default: Shown::Config(&[]),
    },
    SettingFlag {
        long: "pbt-steps",
        owners: PBT,
        field: "steps",
        kind: Kind::Count,
        value: "N",
        help: "PBT: training steps per member, after which its worker stops; given with \
               `--propagator pbt` and without `--generations`, the members end the run",
        default: Shown::Rule("none: members train until `--generations` end"),
    },
];

const PROPAGATOR_HELP: &str = "Breeding operator: `auto` (picked by the space and the budget: `cmaes` from 1,000 evaluations \
    per island on an all-numeric space (`gp` handing over to it after 250 below that), `gp` up to \
    1,000 on a mostly numeric one, `tpe` on a mostly categorical one, else `tpe`; `ga` for several \
     objectives; said at the start and recorded in the checkpoint, see \
    [propagators](propagators.md)), `ga` (genetic children, some of them differential-evolution \
    steps; see `--reference-genetic`), `pso`, `pso-clamping`, `pso-constriction`, `pso-canonical`, \
     `cmaes` (active), `cmaes-basic`, `nm` (Nelder-Mead), which search int and float parameters \
    only; `tpe` (tree-structured Parzen estimator, Optuna's default sampler; any space); `gp` \
    (Bayesian optimization: a Gaussian process over all parameters, expected improvement; any \
    space); `random` (random search); `pbt` (population-based training: each worker trains a \
    member `--pbt-interval` steps per evaluation, the island's worst members continuing the \
    training state of its best with perturbed hyperparameters; needs a checkpoint, where the \
    states live; see [population-based training](pbt.md)) [default: `auto` for the CNN task and \
    command trials, `ga` with `--function`; a resume: its checkpoint's]";

const REFERENCE_GENETIC_HELP: &str = "The Python reference's genetic propagator instead of the default's settings: a pool of 2 x \
    workers, no wider random start, Gaussian steps of one parameter and fixed width, no \
    differential children (`--pop-size`, `--random-start`, `--step-decades` and \
    `--differential-prob` take the reference's values); the default is at most its median on 12 of \
     its 14 functions (see [against the Python reference](../benchmarks/reference.md))";

/// The propagator flags as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct PropagatorArgs {
    /// `--propagator`.
    pub name: Option<String>,
    /// `--reference-genetic`.
    pub reference_genetic: bool,
    /// The settings given, each with its flag, in the table's order.
    given: Vec<(&'static SettingFlag, Value)>,
}

/// A setting's number: NaN and infinities are refused here, by the flag's name, since the
/// settings travel as JSON, where they would become `null` and fail far from the flag.
fn finite_number(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err("a finite number is needed".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl Args for PropagatorArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = cmd
            .arg(
                Arg::new("propagator")
                    .long("propagator")
                    .value_name("NAME")
                    .help(PROPAGATOR_HELP)
                    .help_heading(HEADING),
            )
            .arg(
                Arg::new("reference-genetic")
                    .long("reference-genetic")
                    .action(ArgAction::SetTrue)
                    .help(REFERENCE_GENETIC_HELP)
                    .help_heading(HEADING),
            );
        FLAGS.iter().fold(cmd, |cmd, flag| {
            let arg = Arg::new(flag.long)
                .long(flag.long)
                .help(flag.help_with_default())
                .help_heading(HEADING)
                .value_name(flag.value);
            cmd.arg(match flag.kind {
                Kind::Float => arg.value_parser(finite_number),
                Kind::Count => arg.value_parser(clap::value_parser!(usize)),
                Kind::Words(words) => {
                    arg.value_parser(clap::builder::PossibleValuesParser::new(words.iter().map(|(w, _)| *w)))
                }
                Kind::Names(names) => arg.value_parser(clap::builder::PossibleValuesParser::new(names.iter().copied())),
                Kind::List => arg,
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for PropagatorArgs {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let given = FLAGS
            .iter()
            .filter_map(|flag| {
                let value = match flag.kind {
                    Kind::Float => m.get_one::<f64>(flag.long).map(|x| Value::from(*x)),
                    Kind::Count => m.get_one::<usize>(flag.long).map(|n| Value::from(*n)),
                    Kind::Words(words) => m
                        .get_one::<String>(flag.long)
                        .map(|word| Value::Bool(words.iter().find(|(w, _)| w == word).is_some_and(|(_, b)| *b))),
                    Kind::Names(_) => m.get_one::<String>(flag.long).map(|name| Value::String(name.clone())),
                    Kind::List => m.get_one::<String>(flag.long).map(|list| {
                        list.split(',').map(str::trim).filter(|w| !w.is_empty()).map(Value::from).collect()
                    }),
                };
                value.map(|v| (flag, v))
            })
            .collect();
        Ok(PropagatorArgs {
            name: m.get_one::<String>("propagator").cloned(),
            reference_genetic: m.get_flag("reference-genetic"),
            given,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = PropagatorArgs::from_arg_matches(m)?;
        Ok(())
    }
}

impl PropagatorArgs {
    /// Whether the flag `--long` was given.
    pub fn gives(&self, long: &str) -> bool {
        self.given.iter().any(|(flag, _)| flag.long == long)
    }

    /// The propagator these flags ask for, `default` (the task's) when they name none and the run
    /// continues none; the engine resolves it against the checkpoint it resumes
    /// (`propulate::propagator::PropagatorChoice::resolve`).
    pub fn choice(&self, default: &str) -> PropagatorChoice {
        PropagatorChoice {
            name: self.name.clone(),
            default: default.to_string(),
            reference_genetic: self.reference_genetic,
            settings: self
                .given
                .iter()
                .map(|(flag, value)| GivenSetting {
                    label: format!("--{}", flag.long),
                    owners: flag.owners.iter().map(|o| o.to_string()).collect(),
                    field: flag.field.to_string(),
                    value: value.clone(),
                })
                .collect(),
            pbt_fixed_default: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use propulate::propagator::Continued;

    /// The help shows the defaults the configurations declare, each flag its field's.
    #[test]
    fn the_help_shows_each_configurations_default() {
        let help = |long: &str| FLAGS.iter().find(|f| f.long == long).unwrap().help_with_default();
        assert!(help("pso-inertia").ends_with("[default: 0.729]"));
        assert!(help("pso-cognitive").ends_with("[default: 1.49445; 2.05 for `pso-constriction` and `pso-canonical`]"));
        assert!(help("tpe-gamma").ends_with("[default: 0.1; 0.25 with `--tpe-model independent`]"));
        assert!(help("gp-model").ends_with("[default: matern52]"));
        assert!(help("pbt-explore").ends_with("[default: perturb]"));
        assert!(help("differential-prob").ends_with("[default: 0.3; 0 with `--reference-genetic`]"));
        for flag in FLAGS {
            assert!(!flag.help.contains("[default"), "--{}: the default is added from the table", flag.long);
            let _ = flag.help_with_default();
        }
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        propagator: PropagatorArgs,
    }

    fn parse(args: &[&str]) -> PropagatorArgs {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap().propagator
    }

    #[test]
    fn every_flag_names_a_setting_of_each_of_its_propagators() {
        for flag in FLAGS {
            for owner in flag.owners {
                let spec = PropagatorSpec::with_defaults(owner, 4).unwrap();
                assert!(spec.settings().contains_key(flag.field), "--{}: {owner} has no {}", flag.long, flag.field);
            }
        }
    }

    #[test]
    fn flags_become_the_choice_that_sets_their_fields() {
        let choice = parse(&["--propagator", "gp", "--gp-warp", "none", "--gp-startup", "300"]).choice("ga");
        assert_eq!((choice.name.as_deref(), choice.default.as_str()), (Some("gp"), "ga"));
        let labels: Vec<&str> = choice.settings.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["--gp-startup", "--gp-warp"], "in the table's order");
        let PropagatorSpec::Gp(gp) = choice.resolve(Continued::Nothing, 4).unwrap() else { panic!() };
        assert!(!gp.warp && gp.matern);
        assert_eq!((gp.startup, gp.max_points), (300, 300), "the cap rises with the start");
        let choice = parse(&["--gp-model", "squared-exp", "--pso-inertia", "0.5"]).choice("gp");
        assert_eq!(choice.settings[1].value, Value::Bool(false), "a word flag is its boolean");
        let e = choice.resolve(Continued::Nothing, 4).unwrap_err().to_string();
        assert!(e.contains("--pso-inertia sets the pso propagator, but the propagator is gp"), "{e}");
        assert!(parse(&["--reference-genetic"]).choice("ga").reference_genetic);
        // The constriction variants scale velocities by their factor, never by an inertia.
        for variant in ["pso-constriction", "pso-canonical"] {
            let e = parse(&["--propagator", variant, "--pso-inertia", "0.5"]).choice("ga");
            let e = e.resolve(Continued::Nothing, 4).unwrap_err().to_string();
            assert!(
                e.contains(&format!("--pso-inertia sets the pso propagator, but the propagator is {variant}")),
                "{e}"
            );
        }
        let clamping = parse(&["--propagator", "pso-clamping", "--pso-inertia", "0.5"]).choice("ga");
        assert!(clamping.resolve(Continued::Nothing, 4).is_ok());
    }

    #[test]
    fn a_setting_that_is_no_finite_number_is_refused_by_its_flag() {
        for value in ["nan", "inf", "-inf", "0.5x"] {
            let e = Cli::try_parse_from(["x", &format!("--crossover-prob={value}")]).err().expect(value).to_string();
            assert!(e.contains(&format!("invalid value '{value}' for '--crossover-prob")), "{e}");
        }
        assert!(parse(&["--crossover-prob", " 0.5"]).gives("crossover-prob"));
    }
}
