//! Pools for the propagators' tests.

/// A conditional space: the categorical `branch` picks which of the floats `xa` (branch a) and
/// `xb` (branch b) is active.
pub(crate) fn two_branches() -> crate::space::SearchSpace {
    crate::space::SearchSpace::builder()
        .categorical("branch", &["a", "b"])
        .float("xa", 0.0, 1.0)
        .when("branch", &["a"])
        .float("xb", 0.0, 1.0)
        .when("branch", &["b"])
        .build()
        .unwrap()
}
