//! How the GP's Matérn model sees a configuration: one coordinate per parameter, a float or int
//! on its unit interval (ints at their bins' centres, normalized.rs), a categorical as the index
//! of its choice; and how each coordinate may move when the acquisition is climbed.

use std::sync::Arc;

use crate::bayes::acquisition::CoordinateKind;
use crate::bayes::matern::Coordinates;
use crate::condition::Activity;
use crate::propagator::normalized::ParamAxis;
use crate::space::{Domain, SearchSpace, Value};

/// An int parameter with more values than this is searched as a continuous coordinate (and
/// rounded to its bin); with fewer, value by value.
const GRID_LIMIT: i128 = 4096;

/// The map between configurations and model coordinates.
#[derive(Debug, Clone)]
pub(crate) struct ModelCoordinates {
    axes: Vec<ParamAxis>,
    kinds: Vec<CoordinateKind>,
    /// The space's conditions, for the kernel ([`Coordinates::activity`]).
    activity: Option<Arc<Activity>>,
}

impl ModelCoordinates {
    pub(crate) fn new(space: &SearchSpace, axes: &[ParamAxis]) -> Self {
        let kinds = space
            .params()
            .iter()
            .map(|p| match &p.domain {
                Domain::Categorical { choices } => CoordinateKind::Choices(choices.len()),
                Domain::Int { lo, hi } if i128::from(*hi) - i128::from(*lo) < GRID_LIMIT => {
                    CoordinateKind::Grid((hi - lo + 1) as usize)
                }
                _ => CoordinateKind::Continuous,
            })
            .collect();
        ModelCoordinates { axes: axes.to_vec(), kinds, activity: space.activity().map(Arc::new) }
    }

    pub(crate) fn kinds(&self) -> &[CoordinateKind] {
        &self.kinds
    }

    /// The space's conditions; `None` where it has none.
    pub(crate) fn activity(&self) -> Option<&Activity> {
        self.activity.as_deref()
    }

    pub(crate) fn coordinates(&self) -> Coordinates {
        Coordinates {
            categorical: self.kinds.iter().map(|k| matches!(k, CoordinateKind::Choices(_))).collect(),
            activity: self.activity.clone(),
        }
    }

    pub(crate) fn encode(&self, values: &[Value]) -> Vec<f64> {
        self.axes
            .iter()
            .zip(values)
            .map(|(axis, v)| match (axis, v) {
                (ParamAxis::Unit(unit), v) => unit.to_unit(&[*v])[0],
                (ParamAxis::Choices(_), Value::Cat(c)) => f64::from(*c),
                // Refused where values enter; a neutral coordinate keeps the point's length.
                (ParamAxis::Choices(_), _) => 0.0,
            })
            .collect()
    }

    pub(crate) fn decode(&self, x: &[f64]) -> Vec<Value> {
        self.axes
            .iter()
            .zip(x)
            .map(|(axis, &u)| match axis {
                ParamAxis::Unit(unit) => unit.point_at(&[u])[0],
                ParamAxis::Choices(n) => Value::Cat((u.round().max(0.0) as u32).min(*n as u32 - 1)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bayes::acquisition::grid_point;
    use crate::propagator::normalized::param_axes;

    #[test]
    fn every_value_round_trips_and_ints_sit_at_their_bins_centres() {
        let space = SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-1)
            .int("layers", 2, 6)
            .int("wide", 0, 1 << 40)
            .categorical("act", &["relu", "tanh", "gelu"])
            .build()
            .unwrap();
        let model = ModelCoordinates::new(&space, &param_axes(&space, "GP").unwrap());
        assert_eq!(
            model.kinds(),
            [
                CoordinateKind::Continuous,
                CoordinateKind::Grid(5),
                CoordinateKind::Continuous,
                CoordinateKind::Choices(3)
            ]
        );
        assert_eq!(model.coordinates().categorical, [false, false, false, true]);
        let values = vec![Value::Float(1e-2), Value::Int(4), Value::Int(12345), Value::Cat(2)];
        let x = model.encode(&values);
        assert!((x[1] - grid_point(2, 5)).abs() < 1e-12 && x[3] == 2.0, "{x:?}");
        let back = model.decode(&x);
        assert!((back[0].as_f64() - 1e-2).abs() < 1e-12);
        assert_eq!(back[1..], values[1..]);
    }
}
