//! Warnings and notices on stderr, so that a user of the CLI sees them without opening a log.

use std::io::Write;

use super::{Event, Observer, RankInfo};

/// Prints warnings (from any rank) and checkpoint notices as `propulate-rs: ...` lines on stderr.
#[derive(Debug, Default)]
pub struct StderrReporter;

impl Observer for StderrReporter {
    fn observe(&mut self, _rank: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        let line = match event {
            Event::Warning(text) => format!("propulate-rs: warning: {text}"),
            Event::Notice(text) => format!("propulate-rs: {text}"),
            _ => return Ok(()),
        };
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        Ok(())
    }
}
