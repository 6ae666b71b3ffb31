//! The events a worker's ranks share while their processes of one trial run. Every rank, the
//! publisher included, hears every event in one order, so every rank takes the same decisions
//! from them (early stopping, failure, the end) without a collective that would hold a rank
//! busy-waiting while its process trains. A multi-rank worker passes them through the worker's
//! TCP store (a counter hands out the places in the sequence); a single rank keeps them in-process.

use std::sync::mpsc::Sender;
use std::time::Duration;

use crate::heard::{Event, Heard};
use propulate_ddp::{TcpStore, WorkerStore};

/// Where this rank publishes events.
pub(crate) enum Bus {
    /// A single-rank worker: straight to its own loop.
    Alone(Sender<Heard>),
    /// A multi-rank worker: through its store (served by the worker root while this value lives).
    Store { client: Box<TcpStore>, _store: Box<WorkerStore> },
}

const COUNTER: &str = "trial/events";

fn key(i: i64) -> String {
    format!("trial/event/{i}")
}

impl Bus {
    /// The bus of a multi-rank worker over `store`; a thread of this rank hears its events (until
    /// all `ranks` processes have ended) and passes them to `heard`.
    pub fn over_store(store: WorkerStore, ranks: usize, heard: Sender<Heard>) -> propulate_ddp::Result<Bus> {
        let listener = store.connect_again(Duration::from_secs(3600))?;
        std::thread::spawn(move || listen(listener, ranks, heard));
        let client = store.connect_again(Duration::from_secs(120))?;
        Ok(Bus::Store { client: Box::new(client), _store: Box::new(store) })
    }

    /// Tell every rank of the worker, this one included.
    pub fn publish(&mut self, event: &Event) -> Result<(), String> {
        match self {
            Bus::Alone(heard) => {
                let _ = heard.send(Heard::Bus(event.clone()));
                Ok(())
            }
            Bus::Store { client, .. } => {
                let bytes = serde_json::to_vec(event).map_err(|e| e.to_string())?;
                let place = client.add(COUNTER, 1).map_err(|e| e.to_string())? - 1;
                client.set(&key(place), &bytes).map_err(|e| e.to_string())
            }
        }
    }
}

/// Pass the store's events on in order until every process has ended or the store is lost.
fn listen(mut store: TcpStore, ranks: usize, heard: Sender<Heard>) {
    let mut ended = 0;
    for i in 0.. {
        let k = key(i);
        // A wait ends at the client's timeout: a long training is quiet for hours, so wait again
        // as long as the store still answers.
        let bytes = loop {
            match store.wait(&[&k]).and_then(|()| store.get(&k)) {
                Ok(bytes) => break bytes,
                Err(e) => {
                    if store.check(&[&k]).is_err() {
                        let _ = heard.send(Heard::BusLost(e.to_string()));
                        return;
                    }
                }
            }
        };
        let event = match serde_json::from_slice::<Event>(&bytes) {
            Ok(event) => event,
            Err(e) => {
                let _ = heard.send(Heard::BusLost(format!("a malformed trial event: {e}")));
                return;
            }
        };
        ended += usize::from(matches!(event, Event::Exited { .. }));
        if heard.send(Heard::Bus(event)).is_err() || ended == ranks {
            return;
        }
    }
}
