//! Where the in-process ranks of one group meet for a collective: each puts in its part, the last
//! to arrive hands every rank all the parts at once. Through channels, an all-gather of N ranks is
//! N x (N - 1) messages, each a futex wake-up: at 1,024 threads that took 10 s of a 1-s run
//! (benches/utilization.py, docs/benchmarks/scale.md); here it is N deposits and one broadcast wake-up.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::error::Result;

/// The meeting point of one group's ranks. Collectives run in the same order on every rank (as
/// MPI requires), so a rank's count of the collectives it has joined names the round.
pub(super) struct Rendezvous {
    size: usize,
    state: Mutex<Rounds>,
    arrived: Condvar,
}

/// Every rank's part of one collective, in rank order.
pub(super) type Parts = Arc<Vec<Vec<u8>>>;

struct Rounds {
    /// The round being filled and the parts put in so far.
    filling: u64,
    parts: Vec<Option<Vec<u8>>>,
    count: usize,
    /// Completed rounds whose parts not every rank has taken yet: the parts, and how many ranks
    /// have still to take them.
    done: HashMap<u64, (Parts, usize)>,
}

impl Rendezvous {
    pub(super) fn new(size: usize) -> Self {
        Rendezvous {
            size,
            state: Mutex::new(Rounds { filling: 0, parts: vec![None; size], count: 0, done: HashMap::new() }),
            arrived: Condvar::new(),
        }
    }

    /// Put in `rank`'s part of `round` and wait for everyone's, in rank order. `check_abort` runs
    /// while waiting, so that a rank that died ends the wait with its error.
    pub(super) fn exchange(
        &self,
        round: u64,
        rank: usize,
        part: Vec<u8>,
        check_abort: impl Fn() -> Result<()>,
    ) -> Result<Parts> {
        let mut state = self.state.lock().expect("rendezvous lock");
        debug_assert_eq!(state.filling, round, "ranks of a group run their collectives in one order");
        state.parts[rank] = Some(part);
        state.count += 1;
        if state.count == self.size {
            let parts: Vec<Vec<u8>> = state.parts.iter_mut().map(|p| p.take().expect("every part is in")).collect();
            state.done.insert(round, (Arc::new(parts), self.size));
            state.filling += 1;
            state.count = 0;
            self.arrived.notify_all();
        }
        loop {
            if let Some((parts, left)) = state.done.get_mut(&round) {
                let parts = parts.clone();
                *left -= 1;
                if *left == 0 {
                    state.done.remove(&round);
                }
                return Ok(parts);
            }
            let (next, _) = self.arrived.wait_timeout(state, Duration::from_millis(20)).expect("rendezvous lock");
            state = next;
            check_abort()?;
        }
    }
}
