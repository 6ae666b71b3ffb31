//! The reference's 14 benchmark functions with their search spaces. `quartic`'s noise comes from a
//! ChaCha stream seeded per evaluation, so a run is reproducible (the reference uses global numpy).

use std::f64::consts::PI;

use rand::SeedableRng;

use crate::error::{Error, Result};
use crate::space::{SearchSpace, standard_normal};

/// A benchmark function: values in parameter order and a per-evaluation seed (used by `quartic`).
pub type BenchFn = fn(&[f64], u64) -> f64;

/// A named benchmark function with its search space.
#[derive(Debug, Clone)]
pub struct Benchmark {
    /// The function's name.
    pub name: &'static str,
    /// The function.
    pub f: BenchFn,
    /// Its search space (named x0, x1, ...).
    pub space: SearchSpace,
    /// Its known global minimum.
    pub minimum: f64,
}

/// Every benchmark name, in the reference's order.
pub const NAMES: [&str; 14] = [
    "sphere",
    "rosenbrock",
    "step",
    "quartic",
    "rastrigin",
    "griewank",
    "schwefel",
    "bisphere",
    "birastrigin",
    "bukin",
    "eggcrate",
    "himmelblau",
    "keane",
    "leon",
];

/// The 9 functions of the paper's benchmark.
pub const PAPER_NAMES: [&str; 9] =
    ["sphere", "rosenbrock", "step", "quartic", "rastrigin", "griewank", "schwefel", "bisphere", "birastrigin"];

fn cube(dims: usize, lo: f64, hi: f64) -> SearchSpace {
    let mut b = SearchSpace::builder();
    for i in 0..dims {
        b = b.float(&format!("x{i}"), lo, hi);
    }
    b.build().expect("benchmark spaces are valid")
}

fn boxed(bounds: &[(f64, f64)]) -> SearchSpace {
    let mut b = SearchSpace::builder();
    for (i, (lo, hi)) in bounds.iter().enumerate() {
        b = b.float(&format!("x{i}"), *lo, *hi);
    }
    b.build().expect("benchmark spaces are valid")
}

/// The benchmark called `name`; an unknown name is an error listing the valid ones.
pub fn benchmark(name: &str) -> Result<Benchmark> {
    let (f, space, minimum): (BenchFn, SearchSpace, f64) = match name {
        "sphere" => (sphere, cube(2, -5.12, 5.12), 0.0),
        "rosenbrock" => (rosenbrock, cube(2, -2.048, 2.048), 0.0),
        "step" => (step, cube(5, -5.12, 5.12), -25.0),
        "quartic" => (quartic, cube(30, -1.28, 1.28), 0.0),
        "rastrigin" => (rastrigin, cube(20, -5.12, 5.12), 0.0),
        "griewank" => (griewank, cube(10, -600.0, 600.0), 0.0),
        "schwefel" => (schwefel, cube(10, -500.0, 500.0), 0.0),
        "bisphere" => (bisphere, cube(30, -5.12, 5.12), 0.0),
        "birastrigin" => (birastrigin, cube(30, -5.12, 5.12), 0.0),
        "bukin" => (bukin, boxed(&[(-15.0, -5.0), (-3.0, 3.0)]), 0.0),
        "eggcrate" => (eggcrate, cube(2, -5.0, 5.0), 0.0),
        "himmelblau" => (himmelblau, cube(2, -6.0, 6.0), 0.0),
        "keane" => (keane, cube(2, 0.0, 10.0), -0.673_667_5),
        "leon" => (leon, cube(2, 0.0, 10.0), 0.0),
        _ => {
            return Err(Error::UnknownName { kind: "function", name: name.into(), valid: NAMES.join(", ") });
        }
    };
    let name = NAMES.iter().find(|n| **n == name).expect("matched above");
    Ok(Benchmark { name, f, space, minimum })
}

fn sphere(x: &[f64], _: u64) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn rosenbrock(x: &[f64], _: u64) -> f64 {
    100.0 * (x[0] * x[0] - x[1]).powi(2) + (1.0 - x[0]).powi(2)
}

fn step(x: &[f64], _: u64) -> f64 {
    x.iter().map(|v| v.trunc()).sum()
}

fn quartic(x: &[f64], seed: u64) -> f64 {
    let mut rng = crate::rng::PropRng::seed_from_u64(seed);
    let s: f64 = x.iter().enumerate().map(|(i, v)| (i + 1) as f64 * v.powi(4) + standard_normal(&mut rng)).sum();
    s.abs()
}

fn rastrigin(x: &[f64], _: u64) -> f64 {
    10.0 * x.len() as f64 + x.iter().map(|v| v * v - 10.0 * (2.0 * PI * v).cos()).sum::<f64>()
}

fn griewank(x: &[f64], _: u64) -> f64 {
    let s: f64 = x.iter().map(|v| v * v / 4000.0).sum();
    let p: f64 = x.iter().enumerate().map(|(i, v)| (v / ((i + 1) as f64).sqrt()).cos()).product();
    1.0 + s - p
}

fn schwefel(x: &[f64], _: u64) -> f64 {
    // The reference's constant (418.982887), so that values compare with Propulate's.
    418.982_887 * x.len() as f64 - x.iter().map(|v| v * v.abs().sqrt().sin()).sum::<f64>()
}

/// Lunacek's double-sphere constants for dimension `n`: (mu1, mu2, s, d). `s` is computed as the
/// reference does, `1 - sqrt(1 / (2 sqrt(n + 20) - 8.2))` (the literature has no outer square root),
/// so that results compare with Propulate's and the paper's.
fn lunacek(n: usize) -> (f64, f64, f64, f64) {
    let (mu1, d) = (2.5, 1.0);
    let s = 1.0 - (1.0 / (2.0 * (n as f64 + 20.0).sqrt() - 8.2)).sqrt();
    let mu2 = -((mu1 * mu1 - d) / s).sqrt();
    (mu1, mu2, s, d)
}

fn bisphere(x: &[f64], _: u64) -> f64 {
    let (mu1, mu2, s, d) = lunacek(x.len());
    let a: f64 = x.iter().map(|v| (v - mu1).powi(2)).sum();
    let b: f64 = x.iter().map(|v| (v - mu2).powi(2)).sum();
    a.min(d * x.len() as f64 + s * b)
}

fn birastrigin(x: &[f64], seed: u64) -> f64 {
    let (mu1, ..) = lunacek(x.len());
    bisphere(x, seed) + 10.0 * x.iter().map(|v| 1.0 - (2.0 * PI * (v - mu1)).cos()).sum::<f64>()
}

fn bukin(x: &[f64], _: u64) -> f64 {
    100.0 * (x[1] - 0.01 * x[0] * x[0]).abs().sqrt() + 0.01 * (x[0] + 10.0).abs()
}

fn eggcrate(x: &[f64], _: u64) -> f64 {
    x[0] * x[0] + x[1] * x[1] + 25.0 * (x[0].sin().powi(2) + x[1].sin().powi(2))
}

fn himmelblau(x: &[f64], _: u64) -> f64 {
    (x[0] * x[0] + x[1] - 11.0).powi(2) + (x[0] + x[1] * x[1] - 7.0).powi(2)
}

fn keane(x: &[f64], _: u64) -> f64 {
    let r = (x[0] * x[0] + x[1] * x[1]).sqrt();
    if r == 0.0 {
        return 0.0;
    }
    -((x[0] - x[1]).sin().powi(2) * (x[0] + x[1]).sin().powi(2)) / r
}

fn leon(x: &[f64], _: u64) -> f64 {
    100.0 * (x[1] - x[0].powi(3)).powi(2) + (1.0 - x[0]).powi(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_minima() {
        let at = |name: &str, x: &[f64]| (benchmark(name).unwrap().f)(x, 0);
        assert_eq!(at("sphere", &[0.0, 0.0]), 0.0);
        assert_eq!(at("rosenbrock", &[1.0, 1.0]), 0.0);
        assert_eq!(at("step", &[-5.0; 5]), -25.0);
        assert!(at("rastrigin", &[0.0; 20]).abs() < 1e-12);
        assert!(at("griewank", &[0.0; 10]).abs() < 1e-12);
        assert!(at("schwefel", &[420.968_746; 10]).abs() < 1e-2);
        assert!(at("bisphere", &[2.5; 30]).abs() < 1e-12);
        assert!(at("birastrigin", &[2.5; 30]).abs() < 1e-9);
        assert!(at("bukin", &[-10.0, 1.0]).abs() < 1e-12);
        assert_eq!(at("eggcrate", &[0.0, 0.0]), 0.0);
        assert_eq!(at("himmelblau", &[3.0, 2.0]), 0.0);
        assert_eq!(at("leon", &[1.0, 1.0]), 0.0);
        assert!((at("keane", &[1.393_249, 0.0]) + 0.673_667_5).abs() < 1e-4);
    }

    #[test]
    fn quartic_noise_is_seeded() {
        let b = benchmark("quartic").unwrap();
        let x = [0.5; 30];
        assert_eq!((b.f)(&x, 7), (b.f)(&x, 7));
        assert_ne!((b.f)(&x, 7), (b.f)(&x, 8));
    }

    #[test]
    fn every_name_resolves_and_unknown_names_list_the_valid_ones() {
        for n in NAMES {
            let b = benchmark(n).unwrap();
            assert_eq!(b.name, n);
        }
        let e = benchmark("spehre").unwrap_err().to_string();
        assert!(e.contains("spehre") && e.contains("rastrigin") && e.contains("leon"), "{e}");
    }
}
