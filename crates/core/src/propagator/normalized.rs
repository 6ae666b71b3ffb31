//! Normalized coordinates for the propagators that search numbers only (CMA-ES, Nelder-Mead,
//! PSO), the order in which an island bred its individuals, and the small linear algebra they need.
//!
//! These propagators work in the unit box: each float parameter is mapped linearly onto `[0, 1]`
//! (log-scale floats linearly in `ln` space), each int parameter onto `[0, 1]` split into
//! `hi - lo + 1` equal bins, one per integer, so that every integer is equally likely under a
//! uniform draw and the model sees the centre of the bin. A point of the model goes back to the
//! space by *reflection* at the box faces (a coordinate `1 + e` becomes `1 - e`, `-e` becomes `e`,
//! repeated as often as needed), then clipping to `[0, 1]` (which only catches rounding), then the
//! inverse map; ints take the bin the coordinate falls in, i.e. the nearest integer. Reflection
//! keeps the sampling density smooth near a face instead of piling mass onto it, as clipping does.
//! The maps stay finite and inside the bounds for any space: float bounds out to `±f64::MAX / 2`
//! (a space refuses a wider range, which could not be drawn from; the maps take even those in
//! halves), int ranges up to the whole of `i64` in `i128`.
//! Categorical parameters have no order or distance a Gaussian, a simplex or a velocity could use,
//! so the constructors refuse them with an error naming the propagator and the parameter.

use crate::error::{Error, Result};
use crate::space::{Domain, SearchSpace, Value};

/// How one parameter maps onto `[0, 1]`.
#[derive(Debug, Clone, PartialEq)]
enum Axis {
    Linear { lo: f64, hi: f64 },
    Log { lo: f64, hi: f64 },
    Int { lo: i64, hi: i64 },
}

impl Axis {
    /// The axis of a numeric domain; `None` for a categorical.
    fn of(domain: &Domain) -> Option<Axis> {
        match *domain {
            Domain::Float { lo, hi, log: false } => Some(Axis::Linear { lo, hi }),
            Domain::Float { lo, hi, log: true } => Some(Axis::Log { lo, hi }),
            Domain::Int { lo, hi } => Some(Axis::Int { lo, hi }),
            Domain::Categorical { .. } => None,
        }
    }

    /// The coordinate of `v` on this axis, in `[0, 1]`: an int at the centre of its bin.
    fn unit(&self, v: &Value) -> f64 {
        let u = match (self, v) {
            // Counted exactly even near the ends of i64.
            (&Axis::Int { lo, hi }, &Value::Int(x)) => {
                ((i128::from(x) - i128::from(lo)) as f64 + 0.5) / (int_span(lo, hi) as f64 + 1.0)
            }
            (&Axis::Int { lo, hi }, v) => (v.as_f64() - lo as f64 + 0.5) / (int_span(lo, hi) as f64 + 1.0),
            (&Axis::Linear { lo, hi }, v) => fraction(v.as_f64(), lo, hi),
            (&Axis::Log { lo, hi }, v) => fraction(v.as_f64().max(lo).ln(), lo.ln(), hi.ln()),
        };
        u.clamp(0.0, 1.0)
    }
}

/// The coordinate of `v` of a numeric `domain` on its unit interval, by the rule every model of
/// the crate uses (floats linearly, log floats in `ln`, an int at the centre of its bin); `None`
/// for a categorical. What the dynamic early stopper's prior encodes a configuration with.
pub(crate) fn unit_coordinate(domain: &Domain, v: &Value) -> Option<f64> {
    Axis::of(domain).map(|axis| axis.unit(v))
}

/// The map between a search space without categoricals and the unit box.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnitBox {
    axes: Vec<Axis>,
}

impl UnitBox {
    /// The map for `space`, or an error naming `propagator` and the first categorical parameter.
    pub(crate) fn new(space: &SearchSpace, propagator: &str) -> Result<Self> {
        super::refuse_conditional(space, propagator)?;
        let mut axes = Vec::with_capacity(space.len());
        for p in space.params() {
            axes.push(match Axis::of(&p.domain) {
                Some(axis) => axis,
                None => {
                    return Err(Error::InvalidPropagator(format!(
                        "{propagator} cannot search categorical parameter '{}'; it works on ordered \
                         numbers only: make '{}' an int or float parameter, or use the default \
                         propagator for spaces with categoricals",
                        p.name, p.name
                    )));
                }
            });
        }
        Ok(UnitBox { axes })
    }

    /// Number of coordinates.
    pub(crate) fn dims(&self) -> usize {
        self.axes.len()
    }

    /// The coordinates of `values` in the unit box.
    pub(crate) fn to_unit(&self, values: &[Value]) -> Vec<f64> {
        self.axes.iter().zip(values).map(|(axis, v)| axis.unit(v)).collect()
    }

    /// The point of the space at unit coordinates `u`, reflected and clipped into the box first.
    pub(crate) fn point_at(&self, u: &[f64]) -> Vec<Value> {
        self.axes
            .iter()
            .zip(u)
            .map(|(axis, &x)| {
                let u = reflect_into_unit(x);
                match *axis {
                    Axis::Linear { lo, hi } => Value::Float(lerp(lo, hi, u).clamp(lo, hi)),
                    Axis::Log { lo, hi } => Value::Float(lerp(lo.ln(), hi.ln(), u).exp().clamp(lo, hi)),
                    Axis::Int { lo, hi } => {
                        let span = int_span(lo, hi);
                        // `u = 1` would fall in the bin past `hi`; the clamp keeps it in the last one.
                        // In i128, `lo + k` cannot overflow even for the whole range of i64.
                        let k = ((u * (span as f64 + 1.0)).floor() as i128).clamp(0, span);
                        Value::Int(i64::try_from(i128::from(lo) + k).expect("lo + k lies in [lo, hi]"))
                    }
                }
            })
            .collect()
    }
}

/// How a model that takes parameters one at a time (TPE, GP) sees one parameter: a number on its
/// unit interval, or a categorical's number of choices.
#[derive(Debug, Clone)]
pub(crate) enum ParamAxis {
    Unit(UnitBox),
    Choices(usize),
}

/// The axes of every parameter of `space`, in order (`propagator` names the caller in errors).
pub(crate) fn param_axes(space: &SearchSpace, propagator: &str) -> Result<Vec<ParamAxis>> {
    space
        .params()
        .iter()
        .map(|p| match &p.domain {
            Domain::Categorical { choices } => Ok(ParamAxis::Choices(choices.len())),
            // The parameter alone, its conditions left out: the axis is its range.
            _ => {
                let alone = crate::space::Param::new(p.name.clone(), p.domain.clone());
                Ok(ParamAxis::Unit(UnitBox::new(&SearchSpace::new(vec![alone])?, propagator)?))
            }
        })
        .collect()
}

/// `hi - lo` without overflow, for int ranges as wide as the whole of `i64`.
fn int_span(lo: i64, hi: i64) -> i128 {
    i128::from(hi) - i128::from(lo)
}

/// Where `x` lies between `lo` and `hi` (0 at `lo`, 1 at `hi`). Where `hi - lo` overflows (bounds
/// near `±f64::MAX`) the halves are used, which gives the same quotient without the infinity.
fn fraction(x: f64, lo: f64, hi: f64) -> f64 {
    if (hi - lo).is_finite() { (x - lo) / (hi - lo) } else { (x / 2.0 - lo / 2.0) / (hi / 2.0 - lo / 2.0) }
}

/// The point a fraction `u` of the way from `lo` to `hi`; finite for bounds near `±f64::MAX` too,
/// by working in halves where `hi - lo` overflows.
fn lerp(lo: f64, hi: f64, u: f64) -> f64 {
    if (hi - lo).is_finite() { lo + u * (hi - lo) } else { (lo / 2.0 + u * (hi / 2.0 - lo / 2.0)) * 2.0 }
}

/// `x` folded into `[0, 1]` by mirroring at the faces as often as needed; a non-finite coordinate
/// (which a broken model could produce) goes to the centre rather than poisoning the child.
pub(crate) fn reflect_into_unit(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.5;
    }
    let y = x.rem_euclid(2.0);
    let u = if y > 1.0 { 2.0 - y } else { y };
    u.clamp(0.0, 1.0)
}

/// The eigendecomposition of a symmetric `n x n` matrix (row-major) by cyclic Jacobi rotations:
/// eigenvalues, and eigenvectors as the columns of a row-major matrix. Accurate to rounding for
/// the sizes a hyperparameter search has (up to about 50), with no dependency.
pub(crate) fn symmetric_eigen(matrix: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = matrix.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let scale: f64 = a.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    for _sweep in 0..64 {
        let off: f64 = (0..n).flat_map(|p| (p + 1..n).map(move |q| (p, q))).map(|(p, q)| a[p * n + q].powi(2)).sum();
        if off <= 1e-30 * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                // The smaller root of t^2 + 2 theta t - 1 = 0: the rotation by at most 45 degrees.
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

/// The error of a propagator built for one search space and asked to breed in another.
pub(crate) fn check_same_space(built_for: &SearchSpace, asked: &SearchSpace, propagator: &str) -> Result<()> {
    if asked == built_for {
        return Ok(());
    }
    Err(Error::InvalidPropagator(format!(
        "{propagator} was built for a different search space than the one it is asked to breed in"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflection_folds_any_coordinate_into_the_box() {
        for (x, want) in [(0.3, 0.3), (1.2, 0.8), (-0.1, 0.1), (2.5, 0.5), (-1.75, 0.25), (f64::NAN, 0.5)] {
            assert!((reflect_into_unit(x) - want).abs() < 1e-12, "{x} -> {}", reflect_into_unit(x));
        }
    }

    #[test]
    fn ints_get_equal_bins_and_round_trip() {
        let s = SearchSpace::builder().int("n", -2, 2).log_float("lr", 1e-4, 1.0).build().unwrap();
        let b = UnitBox::new(&s, "test").unwrap();
        for n in -2..=2 {
            let v = [Value::Int(n), Value::Float(1e-2)];
            let u = b.to_unit(&v);
            assert!((u[1] - 0.5).abs() < 1e-12);
            let back = b.point_at(&u);
            assert_eq!(back[0], v[0]);
            assert!((back[1].as_f64() - 1e-2).abs() < 1e-15, "{back:?}");
        }
        // Five bins of width 0.2: 0.39 is in the second, 1.0 in the last.
        assert_eq!(b.point_at(&[0.39, 1.0])[0], Value::Int(-1));
        assert_eq!(b.point_at(&[1.0, 1.0]), vec![Value::Int(2), Value::Float(1.0)]);
    }

    #[test]
    fn bounds_near_the_ends_of_f64_and_i64_stay_finite_and_inside() {
        // The widest float range a space takes: its width must be a float.
        const HALF: f64 = f64::MAX / 2.0;
        let params = |domains: Vec<Domain>| {
            let params =
                domains.into_iter().enumerate().map(|(i, domain)| crate::space::Param::new(format!("p{i}"), domain));
            SearchSpace::new(params.collect()).unwrap()
        };
        let s = params(vec![
            Domain::Float { lo: -HALF, hi: HALF, log: false },
            Domain::Int { lo: i64::MIN, hi: i64::MAX },
            Domain::Int { lo: i64::MAX - 10, hi: i64::MAX },
        ]);
        let b = UnitBox::new(&s, "test").unwrap();
        assert_eq!(b.to_unit(&[Value::Float(0.0), Value::Int(0), Value::Int(i64::MAX - 10)]), [0.5, 0.5, 0.5 / 11.0]);
        assert_eq!(
            b.to_unit(&[Value::Float(HALF), Value::Int(i64::MAX), Value::Int(i64::MAX)]),
            [1.0, 1.0, 10.5 / 11.0]
        );
        assert_eq!(b.point_at(&[1.0, 1.0, 1.0]), [Value::Float(HALF), Value::Int(i64::MAX), Value::Int(i64::MAX)]);
        assert_eq!(
            b.point_at(&[0.0, 0.0, 0.0]),
            [Value::Float(-HALF), Value::Int(i64::MIN), Value::Int(i64::MAX - 10)]
        );
        assert_eq!(b.point_at(&[0.5, 0.5, 0.5])[..2], [Value::Float(0.0), Value::Int(0)]);
        // Every integer of a narrow range at the top of i64 comes back from the centre of its bin.
        for n in i64::MAX - 10..=i64::MAX {
            let v = [Value::Float(1.0), Value::Int(-1), Value::Int(n)];
            assert_eq!(b.point_at(&b.to_unit(&v))[2], v[2], "{n}");
        }
    }

    #[test]
    fn jacobi_decomposes_a_known_matrix() {
        // Eigenvalues 1, 2 and 4 (the [[3,1],[1,3]] block has 2 and 4).
        let a = [3.0, 1.0, 0.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0];
        let (vals, vecs) = symmetric_eigen(&a, 3);
        let mut sorted = vals.clone();
        sorted.sort_by(f64::total_cmp);
        for (got, want) in sorted.iter().zip([1.0, 2.0, 4.0]) {
            assert!((got - want).abs() < 1e-12, "{vals:?}");
        }
        // V diag(vals) V^T == A and V^T V == I.
        for i in 0..3 {
            for j in 0..3 {
                let rebuilt: f64 = (0..3).map(|k| vecs[i * 3 + k] * vals[k] * vecs[j * 3 + k]).sum();
                assert!((rebuilt - a[i * 3 + j]).abs() < 1e-12);
                let gram: f64 = (0..3).map(|k| vecs[k * 3 + i] * vecs[k * 3 + j]).sum();
                assert!((gram - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }
}
