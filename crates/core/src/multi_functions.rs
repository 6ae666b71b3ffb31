//! Benchmark problems with several objectives (all minimized), for testing and measuring Pareto
//! search: ZDT1, ZDT2 and ZDT3 (Zitzler, Deb and Thiele, 2000; 30 parameters in [0, 1], two
//! objectives: a convex, a concave and a disconnected front) and DTLZ2 (Deb, Thiele, Laumanns and
//! Zitzler, 2002; here 12 parameters and three objectives, the front the positive octant of the
//! unit sphere). Each comes with the reference point its hypervolume is measured against.

use std::f64::consts::PI;

use crate::error::{Error, Result};
use crate::space::SearchSpace;

/// A problem: parameter values in order to one value per objective.
pub type MultiFn = fn(&[f64]) -> Vec<f64>;

/// A named problem with its search space.
#[derive(Debug, Clone)]
pub struct MultiBenchmark {
    /// The problem's name.
    pub name: &'static str,
    /// The objectives.
    pub f: MultiFn,
    /// Its search space (x0, x1, ..., each in [0, 1]).
    pub space: SearchSpace,
    /// Objectives per evaluation.
    pub objectives: usize,
    /// The point hypervolumes are measured against: just beyond the worst of the true front in
    /// every objective, as is usual for these problems (11/10 of the front's nadir, 1 for each).
    pub reference: &'static [f64],
}

/// Every problem's name.
pub const MULTI_NAMES: [&str; 4] = ["zdt1", "zdt2", "zdt3", "dtlz2"];

fn unit_cube(dims: usize) -> SearchSpace {
    let mut b = SearchSpace::builder();
    for i in 0..dims {
        b = b.float(&format!("x{i}"), 0.0, 1.0);
    }
    b.build().expect("benchmark spaces are valid")
}

/// The problem called `name`; an unknown name is an error listing the valid ones.
pub fn multi_benchmark(name: &str) -> Result<MultiBenchmark> {
    let (f, dims, objectives, reference): (MultiFn, usize, usize, &'static [f64]) = match name {
        "zdt1" => (zdt1, 30, 2, &[1.1, 1.1]),
        "zdt2" => (zdt2, 30, 2, &[1.1, 1.1]),
        // ZDT3's front reaches f2 = -0.7733 and f1 = 0.8518.
        "zdt3" => (zdt3, 30, 2, &[1.1, 1.1]),
        "dtlz2" => (dtlz2, 12, 3, &[1.1, 1.1, 1.1]),
        _ => {
            return Err(Error::UnknownName { kind: "function", name: name.into(), valid: MULTI_NAMES.join(", ") });
        }
    };
    let name = MULTI_NAMES.iter().find(|n| **n == name).expect("matched above");
    Ok(MultiBenchmark { name, f, space: unit_cube(dims), objectives, reference })
}

/// ZDT's distance function: 1 on the front (every parameter after the first at 0).
fn zdt_g(x: &[f64]) -> f64 {
    1.0 + 9.0 * x[1..].iter().sum::<f64>() / (x.len() - 1) as f64
}

fn zdt1(x: &[f64]) -> Vec<f64> {
    let g = zdt_g(x);
    vec![x[0], g * (1.0 - (x[0] / g).sqrt())]
}

fn zdt2(x: &[f64]) -> Vec<f64> {
    let g = zdt_g(x);
    vec![x[0], g * (1.0 - (x[0] / g).powi(2))]
}

fn zdt3(x: &[f64]) -> Vec<f64> {
    let g = zdt_g(x);
    let r = x[0] / g;
    vec![x[0], g * (1.0 - r.sqrt() - r * (10.0 * PI * x[0]).sin())]
}

/// DTLZ2 with three objectives: the first two parameters place the point on the sphere, the rest
/// set its radius 1 + g (g = 0 with all of them at 0.5).
fn dtlz2(x: &[f64]) -> Vec<f64> {
    let g: f64 = x[2..].iter().map(|v| (v - 0.5).powi(2)).sum();
    let (a, b) = (x[0] * PI / 2.0, x[1] * PI / 2.0);
    let r = 1.0 + g;
    vec![r * a.cos() * b.cos(), r * a.cos() * b.sin(), r * a.sin()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pareto::hypervolume;

    /// A point with first parameters `head` and the rest at `rest`.
    fn point(dims: usize, head: &[f64], rest: f64) -> Vec<f64> {
        let mut x = vec![rest; dims];
        x[..head.len()].copy_from_slice(head);
        x
    }

    #[test]
    fn points_on_the_true_fronts_satisfy_their_equations() {
        for f1 in [0.0, 0.25, 0.5, 1.0] {
            let x = point(30, &[f1], 0.0);
            assert_eq!(zdt1(&x), vec![f1, 1.0 - f1.sqrt()]);
            assert_eq!(zdt2(&x), vec![f1, 1.0 - f1 * f1]);
            assert_eq!(zdt3(&x)[1], 1.0 - f1.sqrt() - f1 * (10.0 * PI * f1).sin());
        }
        for (a, b) in [(0.0, 0.0), (0.3, 0.7), (1.0, 0.5)] {
            let f = dtlz2(&point(12, &[a, b], 0.5));
            let radius: f64 = f.iter().map(|v| v * v).sum();
            assert!((radius - 1.0).abs() < 1e-12, "{f:?}");
        }
        // Off the front: farther away.
        assert!(zdt1(&point(30, &[0.5], 0.2))[1] > 1.0 - 0.5f64.sqrt());
        let f = dtlz2(&point(12, &[0.3, 0.7], 0.9));
        assert!(f.iter().map(|v| v * v).sum::<f64>() > 1.0);
    }

    #[test]
    fn true_fronts_have_their_known_hypervolumes() {
        // Sampled fronts against (1.1, 1.1): ZDT1 1.21 - 1/3 = 0.8767, ZDT2 1.21 - 2/3 = 0.5433.
        let sample =
            |f: MultiFn| -> Vec<Vec<f64>> { (0..=1000).map(|k| f(&point(30, &[k as f64 / 1000.0], 0.0))).collect() };
        for (f, want) in [(zdt1 as MultiFn, 1.21 - 1.0 / 3.0), (zdt2, 1.21 - 2.0 / 3.0)] {
            let front = sample(f);
            let hv = hypervolume(&front.iter().map(Vec::as_slice).collect::<Vec<_>>(), &[1.1, 1.1]);
            assert!((hv - want).abs() < 2e-3, "{hv} vs {want}");
        }
        // DTLZ2 against (1.1, 1.1, 1.1): 1.331 - pi/6 = 0.8074.
        let front: Vec<Vec<f64>> = (0..=40)
            .flat_map(|i| (0..=40).map(move |j| (i as f64 / 40.0, j as f64 / 40.0)))
            .map(|(a, b)| dtlz2(&point(12, &[a, b], 0.5)))
            .collect();
        let hv = hypervolume(&front.iter().map(Vec::as_slice).collect::<Vec<_>>(), &[1.1, 1.1, 1.1]);
        assert!((hv - (1.331 - PI / 6.0)).abs() < 0.03, "{hv}");
    }

    #[test]
    fn names_and_shapes() {
        for name in MULTI_NAMES {
            let b = multi_benchmark(name).unwrap();
            let x = vec![0.5; b.space.len()];
            assert_eq!((b.f)(&x).len(), b.objectives);
            assert_eq!(b.reference.len(), b.objectives);
        }
        assert_eq!(multi_benchmark("zdt1").unwrap().space.len(), 30);
        assert_eq!(multi_benchmark("dtlz2").unwrap().space.len(), 12);
        let e = multi_benchmark("zdt9").unwrap_err().to_string();
        assert!(e.contains("zdt9") && e.contains("zdt1, zdt2, zdt3, dtlz2"), "{e}");
    }
}
