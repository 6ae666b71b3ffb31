//! In-process transport: each rank is a thread, messages travel through channels. It behaves like
//! MPI for what the driver uses (tags, per-pair ordering, collectives, split), and an abort on one
//! rank makes every blocking call on the others fail instead of hanging.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::rendezvous::{Parts, Rendezvous};
use super::{Collectives, Communicator, PointToPoint, Tag, check_one_per_rank};
use crate::error::{Error, Result};

struct Envelope {
    source: usize,
    tag: Tag,
    bytes: Vec<u8>,
}

/// Sub-communicators of one split, keyed by (parent communicator id, split number, color).
type PendingSplits = HashMap<(u64, u64, u32), Vec<Option<LocalComm>>>;

#[derive(Default)]
struct Shared {
    aborted: AtomicBool,
    abort_message: Mutex<String>,
    next_comm_id: AtomicU64,
    /// Sub-communicators made by a split, waiting to be picked up by their members.
    splits: Mutex<PendingSplits>,
}

/// One rank's end of an in-process group.
pub struct LocalComm {
    rank: usize,
    senders: Arc<Vec<Mutex<Sender<Envelope>>>>,
    inbox: Receiver<Envelope>,
    unmatched: VecDeque<Envelope>,
    shared: Arc<Shared>,
    comm_id: u64,
    splits_done: u64,
    /// Where the group's collectives meet, and how many of them this rank has joined.
    rendezvous: Arc<Rendezvous>,
    collectives_done: u64,
}

/// Make a group of `size` in-process ranks; hand one to each thread.
pub fn local_world(size: usize) -> Vec<LocalComm> {
    let shared = Arc::new(Shared::default());
    let id = shared.next_comm_id.fetch_add(1, Ordering::SeqCst);
    make_group(size, shared, id)
}

fn make_group(size: usize, shared: Arc<Shared>, comm_id: u64) -> Vec<LocalComm> {
    let (senders, inboxes): (Vec<_>, Vec<_>) = (0..size).map(|_| channel()).unzip();
    let senders = Arc::new(senders.into_iter().map(Mutex::new).collect::<Vec<_>>());
    let rendezvous = Arc::new(Rendezvous::new(size));
    inboxes
        .into_iter()
        .enumerate()
        .map(|(rank, inbox)| LocalComm {
            rank,
            senders: senders.clone(),
            inbox,
            unmatched: VecDeque::new(),
            shared: shared.clone(),
            comm_id,
            splits_done: 0,
            rendezvous: rendezvous.clone(),
            collectives_done: 0,
        })
        .collect()
}

/// Run `f` on `size` in-process ranks, one thread each, and collect their results in rank order.
/// A panicking rank aborts the group so that the others fail instead of waiting forever.
pub fn run_local<T: Send + 'static>(
    size: usize,
    f: impl Fn(LocalComm) -> T + Send + Sync + 'static,
) -> Vec<std::thread::Result<T>> {
    let f = Arc::new(f);
    let handles: Vec<_> = local_world(size)
        .into_iter()
        .map(|comm| {
            let f = f.clone();
            let shared = comm.shared.clone();
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(comm)));
                if r.is_err() {
                    shared.aborted.store(true, Ordering::SeqCst);
                }
                r
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap_or_else(Err)).collect()
}

impl LocalComm {
    fn check_abort(&self) -> Result<()> {
        if self.shared.aborted.load(Ordering::SeqCst) {
            let msg = self.shared.abort_message.lock().map(|m| m.clone()).unwrap_or_default();
            return Err(Error::Transport(format!("the job was aborted by another rank: {msg}")));
        }
        Ok(())
    }

    /// Join the group's next collective with `part`; every rank's part comes back, in rank order.
    fn exchange(&mut self, part: Vec<u8>) -> Result<Parts> {
        let round = self.collectives_done;
        self.collectives_done += 1;
        let rendezvous = self.rendezvous.clone();
        rendezvous.exchange(round, self.rank, part, || self.check_abort())
    }

    fn take_unmatched(&mut self, source: Option<usize>, tag: Tag) -> Option<Envelope> {
        let pos = self.unmatched.iter().position(|e| e.tag == tag && source.is_none_or(|s| s == e.source))?;
        self.unmatched.remove(pos)
    }
}

impl PointToPoint for LocalComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.senders.len()
    }
    fn send(&mut self, dest: usize, tag: Tag, bytes: Vec<u8>) -> Result<()> {
        self.check_abort()?;
        let tx = self
            .senders
            .get(dest)
            .ok_or_else(|| Error::Transport(format!("send to rank {dest} of a group of {}", self.senders.len())))?;
        let env = Envelope { source: self.rank, tag, bytes };
        // A receiver that already returned (its thread ended) simply never reads the message,
        // like an MPI rank that finalised; this only happens after a clean shutdown.
        let _ = tx.lock().expect("sender lock").send(env);
        Ok(())
    }
    fn try_recv(&mut self, tag: Tag) -> Result<Option<(usize, Vec<u8>)>> {
        if let Some(e) = self.take_unmatched(None, tag) {
            return Ok(Some((e.source, e.bytes)));
        }
        while let Ok(e) = self.inbox.try_recv() {
            if e.tag == tag {
                return Ok(Some((e.source, e.bytes)));
            }
            self.unmatched.push_back(e);
        }
        self.check_abort()?;
        Ok(None)
    }
    fn recv(&mut self, source: usize, tag: Tag) -> Result<Vec<u8>> {
        if let Some(e) = self.take_unmatched(Some(source), tag) {
            return Ok(e.bytes);
        }
        loop {
            match self.inbox.recv_timeout(Duration::from_millis(20)) {
                Ok(e) if e.tag == tag && e.source == source => return Ok(e.bytes),
                Ok(e) => self.unmatched.push_back(e),
                Err(RecvTimeoutError::Timeout) => self.check_abort()?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::Transport("all peers are gone".into()));
                }
            }
        }
    }
    fn recv_any(&mut self, tag: Tag) -> Result<(usize, Vec<u8>)> {
        if let Some(e) = self.take_unmatched(None, tag) {
            return Ok((e.source, e.bytes));
        }
        loop {
            match self.inbox.recv_timeout(Duration::from_millis(20)) {
                Ok(e) if e.tag == tag => return Ok((e.source, e.bytes)),
                Ok(e) => self.unmatched.push_back(e),
                Err(RecvTimeoutError::Timeout) => self.check_abort()?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::Transport("all peers are gone".into()));
                }
            }
        }
    }
    fn test_sends(&mut self) -> usize {
        0 // channel sends complete immediately
    }
    fn wait_sends(&mut self) -> Result<()> {
        Ok(())
    }
    fn abort(&mut self, code: i32, message: &str) -> ! {
        *self.shared.abort_message.lock().expect("abort lock") = format!("rank {}: {message}", self.rank);
        self.shared.aborted.store(true, Ordering::SeqCst);
        panic!("aborted with code {code}: {message}");
    }
}

/// The collectives where every rank hears from every other meet at the group's rendezvous: one
/// deposit and one wake-up per rank instead of a message between every pair.
impl Collectives for LocalComm {
    fn barrier(&mut self) -> Result<()> {
        self.exchange(Vec::new()).map(drop)
    }

    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        Ok(self.exchange(bytes)?.as_ref().clone())
    }

    fn reduce_scatter_sum_u64(&mut self, values: &[u64]) -> Result<u64> {
        check_one_per_rank(values, self.size())?;
        let parts = self.exchange(values.iter().flat_map(|v| v.to_le_bytes()).collect())?;
        let at = 8 * self.rank;
        Ok(parts.iter().map(|p| u64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes per rank"))).sum())
    }

    fn split(&mut self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Communicator>>> {
        let mine = (color.map_or(-1i64, i64::from), key as u64);
        let mut payload = mine.0.to_le_bytes().to_vec();
        payload.extend_from_slice(&mine.1.to_le_bytes());
        let all = self.all_gather(payload)?;
        let entries: Vec<(i64, u64, usize)> = all
            .iter()
            .enumerate()
            .map(|(r, b)| {
                let c = i64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
                let k = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
                (c, k, r)
            })
            .collect();
        let epoch = self.splits_done;
        self.splits_done += 1;
        if let Some(color) = color {
            let mut members: Vec<(u64, usize)> =
                entries.iter().filter(|e| e.0 == color as i64).map(|e| (e.1, e.2)).collect();
            members.sort_unstable();
            if members[0].1 == self.rank {
                let id = self.shared.next_comm_id.fetch_add(1, Ordering::SeqCst);
                let group = make_group(members.len(), self.shared.clone(), id);
                let slot = group.into_iter().map(Some).collect();
                self.shared.splits.lock().expect("split lock").insert((self.comm_id, epoch, color), slot);
            }
            self.barrier()?;
            let my_index = members.iter().position(|m| m.1 == self.rank).expect("member");
            let comm = {
                let mut splits = self.shared.splits.lock().expect("split lock");
                let group = splits.get_mut(&(self.comm_id, epoch, color)).expect("leader made the group");
                let comm = group[my_index].take().expect("taken once");
                if group.iter().all(Option::is_none) {
                    splits.remove(&(self.comm_id, epoch, color));
                }
                comm
            };
            Ok(Some(Box::new(comm)))
        } else {
            self.barrier()?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_and_split_work_across_threads() {
        let results = run_local(6, |mut c| {
            let mut v = [c.rank() as f64, 1.0];
            c.all_reduce_sum(&mut v).unwrap();
            assert_eq!(v, [15.0, 6.0]);
            let color = if c.rank() % 3 == 0 { None } else { Some((c.rank() % 2) as u32) };
            let sub = c.split(color, 10 - c.rank()).unwrap();
            match sub {
                None => assert!(c.rank() % 3 == 0),
                Some(mut s) => {
                    assert_eq!(s.size(), 2);
                    let got = s.all_gather(vec![c.rank() as u8]).unwrap();
                    // ordered by key = 10 - rank: the higher world rank comes first
                    assert!(got[0][0] > got[1][0]);
                }
            }
            // Rank r gets the sum of every rank's entry r: sum over s of (10 s + r) = 150 + 6 r.
            let values: Vec<u64> = (0..6).map(|d| 10 * c.rank() as u64 + d).collect();
            assert_eq!(c.reduce_scatter_sum_u64(&values).unwrap(), 150 + 6 * c.rank() as u64);
            let e = c.reduce_scatter_sum_u64(&values[..5]).unwrap_err().to_string();
            assert!(e.contains("reduce-scatter of 5 values in a group of 6 ranks"), "{e}");
            c.barrier().unwrap();
            c.rank()
        });
        assert!(results.into_iter().all(|r| r.is_ok()));
    }

    #[test]
    fn collectives_in_a_row_keep_their_rounds_apart() {
        // Ranks race ahead into the next collective while others still take the last one's parts.
        let results = run_local(8, |mut c| {
            let rank = c.rank() as u64;
            for round in 0..200u64 {
                let got = c.all_gather(vec![rank as u8, round as u8]).unwrap();
                assert!(got.iter().enumerate().all(|(r, b)| *b == [r as u8, round as u8]), "round {round}: {got:?}");
                let values: Vec<u64> = (0..8).map(|d| round * 100 + d).collect();
                assert_eq!(c.reduce_scatter_sum_u64(&values).unwrap(), 8 * (round * 100 + rank));
                assert!(c.any(rank == round % 8).unwrap());
            }
        });
        assert!(results.into_iter().all(|r| r.is_ok()));
    }

    #[test]
    fn an_abort_wakes_the_ranks_waiting_in_a_collective() {
        let results = run_local(3, |mut c| {
            if c.rank() == 0 {
                c.abort(3, "loss exploded");
            }
            c.barrier().unwrap_err().to_string()
        });
        assert!(results[0].is_err());
        for r in &results[1..] {
            let msg = r.as_ref().unwrap();
            assert!(msg.contains("aborted") && msg.contains("loss exploded"), "{msg}");
        }
    }

    #[test]
    fn an_abort_wakes_the_other_ranks() {
        let results = run_local(3, |mut c| {
            if c.rank() == 0 {
                c.abort(3, "loss exploded");
            }
            c.recv(0, 7).map(|_| ()).unwrap_err().to_string()
        });
        assert!(results[0].is_err());
        for r in &results[1..] {
            let msg = r.as_ref().unwrap();
            assert!(msg.contains("aborted") && msg.contains("loss exploded"), "{msg}");
        }
    }
}
