//! The simplex family: Nelder-Mead, its simplex rebuilt from the island's history at every call.

mod nelder_mead;

pub use nelder_mead::{NelderMead, NelderMeadConfig};
