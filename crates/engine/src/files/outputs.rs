//! The result files a run or `propulate-rs report` writes into a directory (`--out`, by default
//! the checkpoint itself). The writer, the checkpoint's list of files it tolerates beside its
//! journals, the help and the line that tells the user where the results went all read it, so
//! that a file added here can never again make a checkpoint refuse its own results (`front.csv`
//! once did).

use super::TEMPORARY_SUFFIX;

/// One result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFile {
    /// The best individuals, the run's settings and counts (JSON).
    Best,
    /// One row per evaluation (CSV).
    TrialsCsv,
    /// One JSON object per evaluation, with timings.
    TrialsJsonl,
    /// The Pareto front of a run with several objectives (CSV); written only for such runs.
    Front,
    /// The page to look at: progress, best, parameters, settings.
    Report,
    /// What versions before `report.html` drew; still tolerated in old checkpoints, never written.
    LegacyProgressPlot,
}

impl OutputFile {
    /// Every result file, in the order the end line names them.
    pub const ALL: [OutputFile; 6] = [
        OutputFile::Best,
        OutputFile::TrialsCsv,
        OutputFile::TrialsJsonl,
        OutputFile::Front,
        OutputFile::Report,
        OutputFile::LegacyProgressPlot,
    ];

    /// The file's name inside the output directory.
    pub const fn name(self) -> &'static str {
        match self {
            OutputFile::Best => "best.json",
            OutputFile::TrialsCsv => "trials.csv",
            OutputFile::TrialsJsonl => "trials.jsonl",
            OutputFile::Front => "front.csv",
            OutputFile::Report => "report.html",
            OutputFile::LegacyProgressPlot => "progress.svg",
        }
    }

    /// What the file holds, for the docs' table of files.
    pub const fn meaning(self) -> &'static str {
        match self {
            OutputFile::Best => "the best individuals per island, the run's settings and counts (JSON)",
            OutputFile::TrialsCsv => "one row per evaluation: parameters, loss, state, timings",
            OutputFile::TrialsJsonl => "one JSON object per evaluation, with its timings and intermediate values",
            OutputFile::Front => "the Pareto front (several objectives only)",
            OutputFile::Report => "the page to look at: progress, best, parameters, settings",
            OutputFile::LegacyProgressPlot => "written by versions before `report.html`; tolerated, never written",
        }
    }

    /// The files a run writes, named for a help text: "best.json, trials.csv, ... and report.html
    /// (front.csv with several objectives)".
    pub fn help_list() -> String {
        let always: Vec<&str> = Self::written(1).map(OutputFile::name).collect();
        let several: Vec<&str> = Self::written(2).filter(|f| !f.written_for(1)).map(OutputFile::name).collect();
        let (last, first) = always.split_last().expect("a run writes files");
        format!("{} and {last} ({} with several objectives)", first.join(", "), several.join(", "))
    }

    /// Whether a run with `objectives` objectives writes this file.
    pub fn written_for(self, objectives: usize) -> bool {
        match self {
            OutputFile::Front => objectives >= 2,
            OutputFile::LegacyProgressPlot => false,
            _ => true,
        }
    }

    /// The files a run with `objectives` objectives writes.
    pub fn written(objectives: usize) -> impl Iterator<Item = OutputFile> {
        Self::ALL.into_iter().filter(move |f| f.written_for(objectives))
    }
}

/// Whether `name` is a result file or the temporary file of one: what a checkpoint directory
/// tolerates besides its own files.
pub fn is_output_file_name(name: &str) -> bool {
    let base = name.strip_suffix(TEMPORARY_SUFFIX).unwrap_or(name);
    OutputFile::ALL.iter().any(|f| f.name() == base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_and_its_temporary_is_tolerated_and_nothing_else() {
        for f in OutputFile::ALL {
            assert!(is_output_file_name(f.name()), "{}", f.name());
            assert!(is_output_file_name(&format!("{}{TEMPORARY_SUFFIX}", f.name())), "{}", f.name());
        }
        for other in ["data.csv", "notes.txt", "best.json.tmp.tmp", "tmp", ".tmp", "front.csv.bak"] {
            assert!(!is_output_file_name(other), "{other}");
        }
    }

    #[test]
    fn the_help_names_every_written_file() {
        assert_eq!(
            OutputFile::help_list(),
            "best.json, trials.csv, trials.jsonl and report.html (front.csv with several objectives)"
        );
    }

    #[test]
    fn the_front_is_written_only_with_several_objectives() {
        let one: Vec<_> = OutputFile::written(1).map(OutputFile::name).collect();
        assert_eq!(one, ["best.json", "trials.csv", "trials.jsonl", "report.html"]);
        let two: Vec<_> = OutputFile::written(2).map(OutputFile::name).collect();
        assert_eq!(two, ["best.json", "trials.csv", "trials.jsonl", "front.csv", "report.html"]);
    }
}
