//! The per-rank logs (`--log-dir`, observe/rank_log.rs).

use super::digits_at_least;

/// The log file of `rank`.
pub fn rank_log_name(rank: usize) -> String {
    format!("rank-{rank:05}.log")
}

/// The rank whose log `name` is.
pub fn parse_rank_log_name(name: &str) -> Option<usize> {
    let r = name.strip_prefix("rank-")?.strip_suffix(".log")?;
    digits_at_least(r, 5).then(|| r.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        assert_eq!(parse_rank_log_name(&rank_log_name(3)), Some(3));
        assert_eq!(parse_rank_log_name(&rank_log_name(123_456)), Some(123_456));
        for other in ["rank-1.log", "rank-00001.txt", "rank-0000x.log", "rank0.stdout"] {
            assert_eq!(parse_rank_log_name(other), None, "{other}");
        }
    }
}
