//! Where each process of a trial sits in the trial's distributed job, told as torchrun tells it:
//! the worker's ranks are the job's ranks, the ranks of the worker on one host are that host's
//! local ranks, and rank 0's host serves the job's rendezvous on a port that was free there.

use std::net::{Ipv4Addr, TcpListener};

/// One process's place in its trial's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `RANK`: the rank in the worker.
    pub rank: usize,
    /// `WORLD_SIZE`: the worker's ranks.
    pub world_size: usize,
    /// `LOCAL_RANK`: the index among the worker's ranks on this host.
    pub local_rank: usize,
    /// `LOCAL_WORLD_SIZE`: the worker's ranks on this host.
    pub local_world_size: usize,
    /// `GROUP_RANK`: this host's index among the worker's hosts, in order of their first rank.
    pub group_rank: usize,
    /// `MASTER_ADDR`: loopback when the whole worker runs on one host, else rank 0's host name.
    pub master_addr: String,
    /// `MASTER_PORT`: free on rank 0's host when it was chosen.
    pub master_port: u16,
}

impl Placement {
    /// The place of worker rank `rank` when the worker's ranks run on `hosts` (one name per rank,
    /// in rank order) and rank 0 chose `master_port`.
    pub fn new(hosts: &[String], rank: usize, master_port: u16) -> Self {
        let here = &hosts[rank];
        let mut distinct: Vec<&String> = Vec::new();
        for h in hosts {
            if !distinct.contains(&h) {
                distinct.push(h);
            }
        }
        Placement {
            rank,
            world_size: hosts.len(),
            local_rank: hosts[..rank].iter().filter(|h| *h == here).count(),
            local_world_size: hosts.iter().filter(|h| *h == here).count(),
            group_rank: distinct.iter().position(|h| *h == here).unwrap_or(0),
            master_addr: if distinct.len() == 1 { Ipv4Addr::LOCALHOST.to_string() } else { hosts[0].clone() },
            master_port,
        }
    }

    /// The variables torchrun sets for a process of its job.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RANK", self.rank.to_string()),
            ("WORLD_SIZE", self.world_size.to_string()),
            ("LOCAL_RANK", self.local_rank.to_string()),
            ("LOCAL_WORLD_SIZE", self.local_world_size.to_string()),
            ("GROUP_RANK", self.group_rank.to_string()),
            ("ROLE_RANK", self.rank.to_string()),
            ("MASTER_ADDR", self.master_addr.clone()),
            ("MASTER_PORT", self.master_port.to_string()),
        ]
    }
}

/// A port that is free on this host now, on every interface (`loopback_only`: on loopback), for
/// the trial's rank 0 to serve its rendezvous on. Like torchrun's, it is chosen by binding port 0
/// and closing again: another program may take it before the trial does, which then fails and is
/// recorded as failed, never hangs.
pub fn free_port(loopback_only: bool) -> std::io::Result<u16> {
    let ip = if loopback_only { Ipv4Addr::LOCALHOST } else { Ipv4Addr::UNSPECIFIED };
    Ok(TcpListener::bind((ip, 0))?.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_host_meets_on_loopback() {
        let p = Placement::new(&hosts(&["a", "a"]), 1, 4242);
        assert_eq!((p.rank, p.world_size, p.local_rank, p.local_world_size, p.group_rank), (1, 2, 1, 2, 0));
        assert_eq!((p.master_addr.as_str(), p.master_port), ("127.0.0.1", 4242));
        let env: std::collections::HashMap<_, _> = p.environment().into_iter().collect();
        for (k, v) in [("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1"), ("MASTER_PORT", "4242")] {
            assert_eq!(env[k], v, "{k}");
        }
    }

    #[test]
    fn ranks_on_several_hosts_count_locally_and_meet_at_rank_0s_host() {
        let h = hosts(&["n1", "n2", "n1", "n2", "n3"]);
        let places: Vec<Placement> = (0..5).map(|r| Placement::new(&h, r, 1)).collect();
        let local: Vec<(usize, usize, usize)> =
            places.iter().map(|p| (p.local_rank, p.local_world_size, p.group_rank)).collect();
        assert_eq!(local, [(0, 2, 0), (0, 2, 1), (1, 2, 0), (1, 2, 1), (0, 1, 2)]);
        assert!(places.iter().all(|p| p.master_addr == "n1" && p.world_size == 5));
    }

    #[test]
    fn a_free_port_can_be_served_on() {
        let port = free_port(true).unwrap();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
    }
}
