//! A clean end without barriers on the hot path. Each worker root counts the data messages it sent
//! to and received from every other root. When a root has finished its generations it joins rounds
//! of: exchange the counts, receive until every message addressed to it has arrived, and stop once a
//! round produced no new message anywhere (replies such as pollination deactivations can). The
//! reference ends with a barrier and a single probe pass, which can leave messages unread.

use crate::error::Result;
use crate::transport::Communicator;

use super::message::TAG_DATA;

/// Per-peer message counters of one worker root.
#[derive(Debug, Clone)]
pub(crate) struct MessageCounts {
    pub sent_to: Vec<u64>,
    pub received_from: Vec<u64>,
}

impl MessageCounts {
    pub fn new(workers: usize) -> Self {
        MessageCounts { sent_to: vec![0; workers], received_from: vec![0; workers] }
    }
    pub fn total_sent(&self) -> u64 {
        self.sent_to.iter().sum()
    }
}

/// A worker root as the termination protocol sees it: counters and a message handler.
pub(crate) trait DataHandler {
    /// The root's message counters.
    fn counts(&mut self) -> &mut MessageCounts;
    /// Process one data message from `from`; may send more (counting them).
    fn handle(&mut self, roots: &mut dyn Communicator, from: usize, bytes: &[u8]) -> Result<()>;
}

/// Drain until no data message is in flight anywhere.
pub(crate) fn drain_to_quiescence(roots: &mut dyn Communicator, worker: &mut impl DataHandler) -> Result<()> {
    loop {
        let sent_before = worker.counts().total_sent();
        // How many messages every root has sent to this one, in all (gathering every root's row
        // of counts made each hold the square of the roots: 8.6 GB in all at 1,024 in-process
        // ranks). A message sent after its sender's count was taken is counted in the next
        // round, which the sender's change of its total forces.
        let addressed_to_me = roots.reduce_scatter_sum_u64(&worker.counts().sent_to)?;
        let mut received: u64 = worker.counts().received_from.iter().sum();
        while received < addressed_to_me {
            let (from, bytes) = roots.recv_any(TAG_DATA)?;
            worker.counts().received_from[from] += 1;
            received += 1;
            worker.handle(roots, from, &bytes)?;
        }
        if !roots.any(worker.counts().total_sent() != sent_before)? {
            break;
        }
    }
    roots.wait_sends()
}
