//! Reading a checkpoint back: the manifest, then every journal segment in order. A torn last line
//! (a kill in the middle of a write) is ignored with a warning; anything else that does not parse,
//! or breaks a worker's generation sequence, is an error naming the file and the byte offset.
//! Reading never modifies the directory.

use std::collections::BTreeMap;
use std::fs;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::validate::RecordRules;
use super::{Bred, Deact, Eval, Event, Manifest, Migrants, snapshot};
use crate::error::{Error, Result};
use crate::files::checkpoint::{MANIFEST, parse_segment_name, segment_name, snapshot_name};
use crate::files::{self, Kind};
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::population::Population;

/// What one worker's journals say.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkerJournal {
    /// Its evaluations, in generation order (generation k at index k).
    pub evaluated: Vec<Individual>,
    /// Bred but not evaluated when the journal ends (bred again on resume).
    pub in_flight: Vec<IndividualId>,
    /// Migrants it sent: (target island, migrants as received).
    pub emigrations: Vec<(u32, Vec<Individual>)>,
    /// Individuals carried over from another checkpoint: (island, individuals).
    pub seeds: Vec<(u32, Vec<Individual>)>,
    /// Deactivations it initiated on its island.
    pub deactivations: Vec<(IndividualId, u32)>,
    /// True if its last run ended cleanly.
    pub done: bool,
}

impl WorkerJournal {
    /// Take one record in, as the journal says it (an evaluation after those already in).
    pub(super) fn apply(&mut self, event: Event) {
        match event {
            Event::Bred(Bred { id, .. }) => self.in_flight.push(id),
            Event::Eval(Eval { ind }) => {
                self.evaluated.push(ind);
                self.done = false;
            }
            Event::Emig(Migrants { to, inds }) => self.emigrations.push((to, inds)),
            Event::Seed(Migrants { to, inds }) => self.seeds.push((to, inds)),
            Event::Deact(Deact { ids }) => self.deactivations.extend(ids),
            Event::Immig(_) => {}
            Event::Done(_) => self.done = true,
        }
    }

    /// Keep only the `bred` records whose evaluation is not in the journal.
    fn drop_finished_in_flight(&mut self, generation_offset: u64) {
        let next = generation_offset + self.evaluated.len() as u64;
        self.in_flight.retain(|id| id.generation >= next);
    }
}

/// A whole checkpoint, read.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The manifest.
    pub manifest: Manifest,
    /// The layout recorded in the manifest.
    pub layout: Layout,
    /// One entry per worker of the recorded layout.
    pub workers: Vec<WorkerJournal>,
    /// Torn tails that were ignored.
    pub warnings: Vec<String>,
}

/// Whether `name`, in the checkpoint directory `dir`, is something a run writes there besides the
/// manifest and the journals (the registry in `crate::files`): their temporary files, snapshots,
/// locks, results, the trials' and the training states' directories, or a directory of rank logs.
fn is_tolerated(dir: &Path, name: &str, is_dir: bool) -> bool {
    match files::classify(Path::new(name), is_dir) {
        Some(Kind::LogDir) => is_rank_log_dir(dir, name),
        Some(_) => true,
        None => false,
    }
}

/// Whether `name`, a directory of another name than a checkpoint's own inside the checkpoint `dir`,
/// holds per-rank logs (`--log-dir` inside the checkpoint) and nothing else.
fn is_rank_log_dir(dir: &Path, name: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir.join(name)) else { return false };
    entries.into_iter().all(|e| {
        e.ok().is_some_and(|e| {
            let file = Path::new(name).join(e.file_name());
            e.file_type().is_ok_and(|t| !t.is_dir()) && files::classify(&file, false) == Some(Kind::RankLog)
        })
    })
}

/// Read the whole checkpoint in `dir`. `Ok(None)` if there is none yet (no directory, or an empty
/// one). A directory with other files and no manifest is refused, so that a typo cannot make a run
/// write its journals among someone's data.
pub fn read_checkpoint(dir: &Path) -> Result<Option<Replay>> {
    let Some((manifest, segments)) = classify(dir)? else { return Ok(None) };
    let layout = manifest_layout(dir, &manifest)?;
    if let Some(((worker, _), path)) = segments.range((layout.workers(), 0)..).next() {
        return Err(missing_worker(path, *worker, &layout));
    }
    let mut workers = Vec::with_capacity(layout.workers());
    let mut warnings = Vec::new();
    for w in 0..layout.workers() {
        let read = read_worker(dir, w, &segments, &manifest, &layout)?;
        warnings.extend(read.warnings().cloned());
        workers.push(read.journal);
    }
    Ok(Some(Replay { manifest, layout, workers, warnings }))
}

/// The layout of a manifest that [`Manifest::read`] has checked (so this fails only for a manifest
/// built in memory).
fn manifest_layout(dir: &Path, manifest: &Manifest) -> Result<Layout> {
    manifest.layout().map_err(|e| Error::Checkpoint(format!("{}: invalid layout: {e}", dir.join(MANIFEST).display())))
}

fn missing_worker(path: &Path, worker: usize, layout: &Layout) -> Error {
    Error::Checkpoint(format!(
        "{}: worker {worker} does not exist in the manifest's layout of {} workers",
        path.display(),
        layout.workers()
    ))
}

/// The manifest of the checkpoint in `dir` after checking the directory's contents, without reading
/// the journals; `Ok(None)` if there is no checkpoint yet.
pub fn inspect_checkpoint(dir: &Path) -> Result<Option<Manifest>> {
    Ok(classify(dir)?.map(|(m, _)| m))
}

type Segments = BTreeMap<(usize, u32), PathBuf>;

fn classify(dir: &Path) -> Result<Option<(Manifest, Segments)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut segments: BTreeMap<(usize, u32), PathBuf> = BTreeMap::new();
    let mut has_manifest = false;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name == MANIFEST {
            has_manifest = true;
        } else if let Some(key) = parse_segment_name(&name) {
            segments.insert(key, entry.path());
        } else if !is_tolerated(dir, &name, entry.path().is_dir()) {
            return Err(Error::Checkpoint(format!(
                "{} is not part of a propulate-rs checkpoint, which holds only what propulate-rs writes: move it out \
                 (a new run takes an empty or new directory for --checkpoint)",
                entry.path().display()
            )));
        }
    }
    if !has_manifest {
        if let Some(path) = segments.values().next() {
            return Err(Error::Checkpoint(format!(
                "{} holds journals (e.g. {}) but no {MANIFEST}; the checkpoint is incomplete and cannot be resumed",
                dir.display(),
                path.display()
            )));
        }
        return Ok(None);
    }
    Ok(Some((Manifest::read(dir)?, segments)))
}

/// One worker's journal as read, with what a snapshot of it would cover.
#[derive(Debug)]
pub struct WorkerRead {
    /// What the journal says.
    pub journal: WorkerJournal,
    /// Why the worker's snapshot was ignored, if it was.
    pub ignored_snapshot: Option<String>,
    /// Torn tails that were ignored: what a snapshot of this read repeats when it is taken.
    pub tail_warnings: Vec<String>,
    /// Every segment read (from the snapshot or parsed), by number, with its size.
    pub segments: Vec<(u32, u64)>,
    /// Bytes parsed as JSON: those a snapshot did not cover.
    pub parsed_bytes: u64,
}

impl WorkerRead {
    /// Everything the read warns of: an ignored snapshot, then the torn tails.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.ignored_snapshot.iter().chain(&self.tail_warnings)
    }

    /// Whether a snapshot of this read would save the next one parsing enough to be worth writing.
    pub fn worth_a_snapshot(&self) -> bool {
        self.parsed_bytes >= super::snapshot::worth_writing()
    }
}

/// Read one worker's journal under `manifest` (its owner does this on resume, in parallel with the
/// other workers, and shares the result in binary form; rank 0 has read and checked the manifest
/// and the directory's contents): its snapshot where one covers the first segments, the rest
/// parsed.
pub fn read_worker_journal(dir: &Path, worker: usize, manifest: &Manifest) -> Result<WorkerRead> {
    let segments = list_segments(dir)?;
    let layout = manifest_layout(dir, manifest)?;
    if worker >= layout.workers() {
        return Err(missing_worker(&dir.join(segment_name(worker, 0)), worker, &layout));
    }
    read_worker(dir, worker, &segments, manifest, &layout)
}

fn read_worker(
    dir: &Path,
    worker: usize,
    segments: &Segments,
    manifest: &Manifest,
    layout: &Layout,
) -> Result<WorkerRead> {
    let rules = RecordRules::new(&manifest.space, layout, manifest.generation_offset, worker)
        .with_objectives(manifest.config.objectives.len());
    let own: Vec<(u32, &PathBuf)> = segments.range((worker, 0)..=(worker, u32::MAX)).map(|(k, p)| (k.1, p)).collect();
    let mut ignored_snapshot = None;
    let (mut journal, mut tail_warnings, mut read) = match snapshot::load(dir, worker, &own, &rules) {
        snapshot::Loaded::Taken(t) => (t.journal, t.warnings, t.covers),
        snapshot::Loaded::Absent => Default::default(),
        snapshot::Loaded::Ignored(reason) => {
            ignored_snapshot = Some(format!(
                "{}: ignored, {reason}; the journal's segments are read instead",
                dir.join(snapshot_name(worker)).display()
            ));
            Default::default()
        }
    };
    let rest = &own[read.len()..];
    if read.is_empty() {
        reserve_evaluations(&mut journal, rest);
    }
    let mut parsed_bytes = 0;
    for &(number, path) in rest {
        let size = read_segment(path, &rules, &mut journal, &mut tail_warnings)?;
        read.push((number, size));
        parsed_bytes += size;
    }
    journal.drop_finished_in_flight(manifest.generation_offset);
    Ok(WorkerRead { journal, ignored_snapshot, tail_warnings, segments: read, parsed_bytes })
}

/// The journal segments in `dir`, by worker and number.
fn list_segments(dir: &Path) -> Result<Segments> {
    let mut segments = Segments::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Some(key) = parse_segment_name(&entry.file_name().to_string_lossy()) {
            segments.insert(key, entry.path());
        }
    }
    Ok(segments)
}

/// Room in `j` for every evaluation its segments can hold (an evaluation's records take well over
/// 200 bytes), so that reading does not grow the vector by copying it into fresh pages, segment
/// after segment; room never written costs no memory. A size that cannot be read, or room that
/// cannot be had (a sparse file's huge apparent size), reserves nothing: reading then grows the
/// vector as it goes, and says what is wrong with the segment.
fn reserve_evaluations(j: &mut WorkerJournal, segments: &[(u32, &PathBuf)]) {
    let bytes: u64 = segments.iter().filter_map(|(_, p)| fs::metadata(p).ok()).map(|m| m.len()).sum();
    let _ = j.evaluated.try_reserve(usize::try_from(bytes / 200).unwrap_or(0));
}

/// Read one segment into `j`: every record parsed, checked against `rules` and, for evaluations,
/// against the worker's generation sequence. Returns the segment's size in bytes (a torn tail
/// included).
fn read_segment(
    path: &Path,
    rules: &RecordRules<'_>,
    j: &mut WorkerJournal,
    warnings: &mut Vec<String>,
) -> Result<u64> {
    // Read through one buffer, each line parsed where it lies in it (copied out only when it
    // straddles the buffer's end): the whole segment in one fresh allocation cost every rank of a
    // large resume a page fault per 4 KiB of journal, more than parsing some of it.
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut straddling = Vec::new();
    let mut offset = 0usize;
    loop {
        let available = reader.fill_buf().map_err(|e| Error::io(path, e))?;
        if available.is_empty() {
            return Ok(offset as u64);
        }
        if let Some(end) = memchr::memchr(b'\n', available) {
            read_record(&available[..end], offset, path, rules, j)?;
            reader.consume(end + 1);
            offset += end + 1;
            continue;
        }
        straddling.clear();
        let read = reader.read_until(b'\n', &mut straddling).map_err(|e| Error::io(path, e))?;
        let Some((b'\n', line)) = straddling.split_last() else {
            warnings.push(format!(
                "{}: ignoring a torn last record at byte offset {offset} ({read} bytes; the run was killed while writing it)",
                path.display(),
            ));
            return Ok((offset + read) as u64);
        };
        read_record(line, offset, path, rules, j)?;
        offset += read;
    }
}

/// Read one record (a line without its newline, at byte `offset` of the segment at `path`) into `j`.
fn read_record(line: &[u8], offset: usize, path: &Path, rules: &RecordRules<'_>, j: &mut WorkerJournal) -> Result<()> {
    let (worker, generation_offset) = (rules.worker, rules.generation_offset);
    let corrupt = |what: String| {
        Error::Checkpoint(format!("{}: corrupted record at byte offset {offset}: {what}", path.display()))
    };
    // UTF-8 checked once per line: parsing from bytes checked every key of every record again.
    let line = std::str::from_utf8(line).map_err(|e| corrupt(format!("not UTF-8 text: {e}")))?;
    // Records that resume does not read back are not built: a bred child's identity is checked
    // but not its values (it is bred again), a receipt of immigrants only for being valid JSON
    // (the sender's record is the one replayed). Over a third of a journal's lines are these.
    if has_tag(line, "bred") {
        let id = match bred_id_as_written(line) {
            Some(id) => id,
            None => serde_json::from_str::<BredId>(line).map_err(|e| corrupt(e.to_string()))?.id,
        };
        rules.bred_here(&id).map_err(corrupt)?;
        j.in_flight.push(id);
        return Ok(());
    }
    if has_tag(line, "immig") {
        serde_json::from_str::<serde::de::IgnoredAny>(line).map_err(|e| corrupt(e.to_string()))?;
        return Ok(());
    }
    let event = parse_event(line).map_err(|e| corrupt(e.to_string()))?;
    rules.check(&event).map_err(corrupt)?;
    if let Event::Eval(Eval { ind }) = &event {
        let expected = generation_offset + j.evaluated.len() as u64;
        if ind.id.worker as usize != worker || ind.id.generation != expected {
            return Err(corrupt(format!(
                "evaluation {} where worker {worker}'s generation {expected} was expected",
                ind.id
            )));
        }
    }
    j.apply(event);
    Ok(())
}

/// The identity of a `bred` record, its values skipped.
#[derive(serde::Deserialize)]
struct BredId {
    id: IndividualId,
}

/// The identity of a `bred` record spelled exactly as the writer writes it,
/// `{"e":"bred","id":{"island":I,"worker":W,"generation":G},"values":[...]}`, read without a JSON
/// parser (a fifth of a journal's bytes are these records, and parsing them was a fifth of reading
/// it); `None` for any other spelling, which the parser then reads or refuses. The values are not
/// read: the child is bred again on resume.
fn bred_id_as_written(line: &str) -> Option<IndividualId> {
    let rest = line.strip_prefix(r#"{"e":"bred","id":{"island":"#)?;
    let (island, rest) = json_uint(rest)?;
    let (worker, rest) = json_uint(rest.strip_prefix(r#","worker":"#)?)?;
    let (generation, rest) = json_uint(rest.strip_prefix(r#","generation":"#)?)?;
    rest.strip_prefix(r#"},"values":["#)?.strip_suffix("]}")?;
    Some(IndividualId { island: island.try_into().ok()?, worker: worker.try_into().ok()?, generation })
}

/// The unsigned integer that `s` starts with, as JSON spells one (no sign, no leading zero), and
/// the rest of `s`.
fn json_uint(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits > 1 && s.starts_with('0')) {
        return None;
    }
    Some((s[..digits].parse().ok()?, &s[digits..]))
}

/// True if `line` is a record of kind `tag` as the writer writes it (`{"e":"<tag>",...`).
fn has_tag(line: &str, tag: &str) -> bool {
    line.strip_prefix(r#"{"e":""#).and_then(|rest| rest.strip_prefix(tag)).is_some_and(|rest| rest.starts_with(r#"","#))
}

/// Parse one journal line. A record is recognised by its leading tag and parsed straight into its
/// named record: serde's internally tagged enums buffer the whole record first, which made reading
/// a journal several times slower.
fn parse_event(line: &str) -> serde_json::Result<Event> {
    use serde_json::from_str;
    let tag = |t: &str| has_tag(line, t);
    if tag("eval") {
        from_str(line).map(Event::Eval)
    } else if tag("bred") {
        from_str(line).map(Event::Bred)
    } else if tag("immig") {
        from_str(line).map(Event::Immig)
    } else if tag("emig") {
        from_str(line).map(Event::Emig)
    } else if tag("seed") {
        from_str(line).map(Event::Seed)
    } else if tag("deact") {
        from_str(line).map(Event::Deact)
    } else if tag("done") {
        from_str(line).map(Event::Done)
    } else {
        from_str(line) // unknown or reordered: the general (slower) path, with its error message
    }
}

/// The active population of `island` as every worker of it would hold it once every message had
/// been delivered: its workers' evaluations, the migrants sent to it and the individuals seeded into
/// it, minus its deactivations.
pub fn island_population(replay: &Replay, island: usize) -> Population {
    let mut pop = Population::new().rank_by_objectives(replay.manifest.config.objective_signs());
    for w in replay.layout.island_workers(island) {
        for ind in &replay.workers[w].evaluated {
            pop.insert(ind.clone());
        }
    }
    for j in &replay.workers {
        for (to, inds) in j.emigrations.iter().chain(&j.seeds) {
            if *to as usize == island {
                for ind in inds {
                    pop.insert(ind.clone());
                }
            }
        }
    }
    for w in replay.layout.island_workers(island) {
        for (id, steps) in &replay.workers[w].deactivations {
            pop.deactivate(*id, *steps);
        }
    }
    pop
}

/// [`island_population`] of every island, in island order, from one pass over the journals: the
/// cost grows with the journals, not with islands times workers (a report of a run with many
/// islands would otherwise re-scan every worker's migrants once per island).
pub fn island_populations(replay: &Replay) -> Vec<Population> {
    let layout = &replay.layout;
    let mut pops =
        vec![Population::new().rank_by_objectives(replay.manifest.config.objective_signs()); layout.islands()];
    for (w, j) in replay.workers.iter().enumerate() {
        let pop = &mut pops[layout.island_of_worker(w)];
        for ind in &j.evaluated {
            pop.insert(ind.clone());
        }
    }
    for j in &replay.workers {
        for (to, inds) in j.emigrations.iter().chain(&j.seeds) {
            // Journals read from disk name existing islands only; a hand-built replay may not.
            if let Some(pop) = pops.get_mut(*to as usize) {
                for ind in inds {
                    pop.insert(ind.clone());
                }
            }
        }
    }
    for (w, j) in replay.workers.iter().enumerate() {
        let pop = &mut pops[layout.island_of_worker(w)];
        for (id, steps) in &j.deactivations {
            pop.deactivate(*id, *steps);
        }
    }
    pops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Done, Immig};
    use propulate_core::space::Value;

    #[test]
    fn the_fast_parser_agrees_with_serde_on_every_kind() {
        let mut ind = Individual::new(vec![Value::Float(0.1), Value::Int(3), Value::Cat(1)]);
        ind.loss = 2.5;
        let id = ind.id;
        let events = [
            Event::Bred(Bred { id, values: ind.values.clone() }),
            Event::Eval(Eval { ind: ind.clone() }),
            Event::Emig(Migrants { to: 2, inds: vec![ind.clone()] }),
            Event::Seed(Migrants { to: 1, inds: vec![ind.clone()] }),
            Event::Immig(Immig { from: 1, ids: vec![(id, 1)] }),
            Event::Deact(Deact { ids: vec![(id, 0)] }),
            Event::Done(Done { generations: 7 }),
        ];
        for e in events {
            let line = serde_json::to_string(&e).unwrap();
            assert_eq!(parse_event(&line).unwrap(), e);
        }
        assert!(parse_event(r#"{"e":"eval","ind":{"values":[]}}"#).is_err());
        assert!(parse_event(r#"{"e":"nonsense"}"#).is_err());
    }
}
