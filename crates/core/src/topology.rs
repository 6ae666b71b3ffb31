//! The migration topology: entry (i, j) is how many individuals island i sends to island j when
//! one of its workers emigrates.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the topology is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopologySpec {
    /// Every island sends one individual to every other island (the reference's default).
    FullyConnected,
    /// Island i sends one individual to island i + 1 (mod n).
    Ring,
    /// An explicit n x n matrix of counts.
    Matrix(Vec<Vec<usize>>),
}

/// A validated n x n matrix of migrant counts with a zero diagonal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    counts: Vec<Vec<usize>>,
}

impl Topology {
    /// Build the topology for `islands` islands.
    pub fn new(spec: &TopologySpec, islands: usize) -> Result<Self> {
        let counts = match spec {
            TopologySpec::FullyConnected => {
                (0..islands).map(|i| (0..islands).map(|j| usize::from(i != j)).collect()).collect()
            }
            TopologySpec::Ring => (0..islands)
                .map(|i| (0..islands).map(|j| usize::from(islands > 1 && j == (i + 1) % islands)).collect())
                .collect(),
            TopologySpec::Matrix(m) => {
                if m.len() != islands || m.iter().any(|row| row.len() != islands) {
                    return Err(Error::InvalidConfig(format!(
                        "the topology must be a {islands} x {islands} matrix (one row and column per island), \
                         got {} rows of lengths {:?}",
                        m.len(),
                        m.iter().map(Vec::len).collect::<Vec<_>>()
                    )));
                }
                if let Some(i) = (0..islands).find(|&i| m[i][i] != 0) {
                    return Err(Error::InvalidConfig(format!(
                        "topology entry ({i}, {i}) is {}: an island cannot migrate to itself; set the diagonal to 0",
                        m[i][i]
                    )));
                }
                m.clone()
            }
        };
        Ok(Topology { counts })
    }

    /// Parse a matrix file: one row per line, counts separated by spaces or commas; `#` comments.
    pub fn parse_matrix(text: &str) -> Result<Vec<Vec<usize>>> {
        text.lines()
            .enumerate()
            .map(|(n, l)| (n, l.split('#').next().unwrap_or("").trim()))
            .filter(|(_, l)| !l.is_empty())
            .map(|(n, l)| {
                l.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|t| !t.is_empty())
                    .map(|t| {
                        t.parse::<usize>().map_err(|_| {
                            Error::InvalidConfig(format!(
                                "topology line {}: '{t}' is not a non-negative integer count",
                                n + 1
                            ))
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// Migrants island `from` sends to each island.
    pub fn row(&self, from: usize) -> &[usize] {
        &self.counts[from]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_errors() {
        let t = Topology::new(&TopologySpec::Ring, 3).unwrap();
        assert_eq!(t.row(2), &[1, 0, 0]);
        let t = Topology::new(&TopologySpec::FullyConnected, 3).unwrap();
        assert_eq!(t.row(1), &[1, 0, 1]);
        let m = Topology::parse_matrix("# counts\n0 2\n1, 0\n").unwrap();
        assert_eq!(Topology::new(&TopologySpec::Matrix(m), 2).unwrap().row(0), &[0, 2]);
        let e = Topology::new(&TopologySpec::Matrix(vec![vec![0, 1]]), 2).unwrap_err().to_string();
        assert!(e.contains("2 x 2"), "{e}");
        let e = Topology::new(&TopologySpec::Matrix(vec![vec![1, 1], vec![1, 0]]), 2).unwrap_err().to_string();
        assert!(e.contains("(0, 0)"), "{e}");
        assert!(Topology::parse_matrix("0 x\n").unwrap_err().to_string().contains("line 1"));
    }
}
