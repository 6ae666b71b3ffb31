//! What the launcher tells us: which launcher started this rank (OpenMPI's mpirun, MPICH/Hydra,
//! Slurm's srun, torchrun), the rank's index on its node, the GPUs it may use, and from those the
//! device it should use.

mod cuda_driver;

use std::{env, fmt};

/// The launcher that started this process, as far as its environment variables say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// OpenMPI's mpirun/mpiexec (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// MPICH's Hydra or another PMI launcher (`PMI_RANK`, `MPI_LOCALRANKID`).
    Pmi,
    /// Slurm's srun (`SLURM_PROCID`).
    Slurm,
    /// torchrun / torch.distributed (`LOCAL_RANK`, `RANK`).
    Torchrun,
    /// Started directly (a single process).
    Direct,
}

/// A compute device for a worker's training.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The CPU.
    Cpu,
    /// GPU with this index among the visible ones.
    Gpu(usize),
}

/// What the environment says about this rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchInfo {
    /// Which launcher started us.
    pub launcher: Launcher,
    /// This rank's index among the ranks on its node.
    pub local_rank: usize,
    /// Number of ranks on this node, when the launcher says.
    pub local_size: Option<usize>,
    /// Number of GPUs this rank may use: `CUDA_VISIBLE_DEVICES`'s when set, else the driver's count.
    pub visible_gpus: usize,
    /// Where `visible_gpus` came from.
    pub gpus_from: GpuSource,
}

/// Where the number of visible GPUs came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSource {
    /// `CUDA_VISIBLE_DEVICES`, with its value.
    CudaVisibleDevices(String),
    /// The CUDA driver (`cuDeviceGetCount`), `CUDA_VISIBLE_DEVICES` being unset.
    Driver,
    /// `CUDA_VISIBLE_DEVICES` is unset and the driver could not be asked, for this reason: no GPUs.
    NoDriver(String),
}

impl fmt::Display for GpuSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuSource::CudaVisibleDevices(v) => write!(f, "CUDA_VISIBLE_DEVICES={v}"),
            GpuSource::Driver => write!(f, "the CUDA driver"),
            GpuSource::NoDriver(why) => write!(f, "no CUDA driver: {why}"),
        }
    }
}

/// How many GPUs a `CUDA_VISIBLE_DEVICES` value makes visible. CUDA reads the list up to its first
/// invalid entry, so "-1", "" and Slurm's "NoDevFiles" hide every GPU, and "0,-1,1" shows one. A
/// valid entry is an index or a UUID (`GPU-...`, `MIG-...`); whether an index exists on this
/// machine only the driver knows.
fn count_visible(value: &str) -> usize {
    let valid = |e: &str| {
        let e = e.trim();
        (!e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())) || e.starts_with("GPU-") || e.starts_with("MIG-")
    };
    value.split(',').take_while(|e| valid(e)).count()
}

/// This machine's name as other machines reach it ("localhost" when the system does not say).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// This process's rank in its MPI job, as its launcher's variables say, before MPI is started
/// (`None`: started directly). Lets a message that every rank would print, such as a bad flag,
/// be printed by rank 0 alone. A trial's process (`PROPULATE_TRIAL_DIR` set) inherits its rank's
/// variables without being one: `None` there.
pub fn job_rank(get: impl Fn(&str) -> Option<String>) -> Option<usize> {
    if get("PROPULATE_TRIAL_DIR").is_some() {
        return None;
    }
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"].iter().find_map(|k| get(k)).and_then(|v| v.trim().parse().ok())
}

/// Why this process, alone in its MPI world, is one of several copies its launcher started: the
/// launcher numbered it above 0 (srun without an MPI plugin wiring the job, torchrun, the mpirun
/// of another MPI than the one linked), so every copy would run a search of its own on the same
/// checkpoint. Only copies above 0 can tell: the first looks like a run started directly (a
/// Slurm batch script's one process has `SLURM_PROCID=0` and its allocation's `SLURM_NTASKS`).
pub fn copy_outside_the_mpi_world(get: impl Fn(&str) -> Option<String>, world_size: usize) -> Option<String> {
    if world_size != 1 || get("PROPULATE_TRIAL_DIR").is_some() {
        return None;
    }
    // torchrun's RANK counts only beside its LOCAL_RANK: RANK alone is too common a name. Any
    // launcher's rank above 0 tells: torchrun in a Slurm batch script has SLURM_PROCID=0 too.
    let torchrun = get("LOCAL_RANK").is_some().then_some("RANK");
    let (key, rank) = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"]
        .into_iter()
        .chain(torchrun)
        .filter_map(|k| Some((k, get(k)?.trim().parse::<usize>().ok()?)))
        .find(|(_, rank)| *rank > 0)?;
    Some(format!(
        "this process is rank {rank} of the job its launcher started ({key}={rank}), but MPI sees a world of 1 \
         process: each process would run a search of its own on the same checkpoint. Start the job through MPI: \
         mpirun, or srun with the plugin of the MPI this binary uses (srun --mpi=pmix; srun --mpi=list shows \
         them); torchrun starts no MPI job"
    ))
}

impl LaunchInfo {
    /// Read the environment of this process; without `CUDA_VISIBLE_DEVICES`, ask the CUDA driver
    /// (opened at run time, once per process) how many GPUs there are.
    pub fn detect() -> Self {
        Self::from_lookup(|k| env::var(k).ok(), cuda_driver::device_count)
    }

    /// Read from any key-value source; `driver_gpus` is asked only when `CUDA_VISIBLE_DEVICES` is
    /// unset (tests pass a map and a fixed count).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        driver_gpus: impl FnOnce() -> Result<usize, String>,
    ) -> Self {
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
        let (launcher, local_rank, local_size) = if get("OMPI_COMM_WORLD_RANK").is_some() {
            (Launcher::OpenMpi, num("OMPI_COMM_WORLD_LOCAL_RANK"), num("OMPI_COMM_WORLD_LOCAL_SIZE"))
        } else if get("PMI_RANK").is_some() || get("MPI_LOCALRANKID").is_some() {
            // Slurm's pmi2 plugin (srun --mpi=pmi2) sets PMI_RANK but no MPI_LOCALRANKID: its
            // SLURM_LOCALID places the rank on its node, else every rank took the first GPU.
            let local = num("MPI_LOCALRANKID").or_else(|| num("SLURM_LOCALID"));
            (Launcher::Pmi, local, num("MPI_LOCALNRANKS").or_else(|| num("SLURM_NTASKS_PER_NODE")))
        } else if get("SLURM_PROCID").is_some() {
            (Launcher::Slurm, num("SLURM_LOCALID"), num("SLURM_NTASKS_PER_NODE"))
        } else if get("LOCAL_RANK").is_some() {
            (Launcher::Torchrun, num("LOCAL_RANK"), num("LOCAL_WORLD_SIZE"))
        } else {
            (Launcher::Direct, Some(0), Some(1))
        };
        let (visible_gpus, gpus_from) = match get("CUDA_VISIBLE_DEVICES") {
            Some(v) => (count_visible(&v), GpuSource::CudaVisibleDevices(v)),
            None => match driver_gpus() {
                Ok(n) => (n, GpuSource::Driver),
                Err(why) => (0, GpuSource::NoDriver(why)),
            },
        };
        LaunchInfo { launcher, local_rank: local_rank.unwrap_or(0), local_size, visible_gpus, gpus_from }
    }

    /// The device for this rank: GPU `local_rank mod visible GPUs` when there are GPUs, else CPU.
    /// Ranks on one node thus spread over its GPUs, and share them round-robin when they outnumber
    /// them.
    pub fn device(&self) -> Device {
        if self.visible_gpus == 0 { Device::Cpu } else { Device::Gpu(self.local_rank % self.visible_gpus) }
    }

    /// The `CUDA_VISIBLE_DEVICES` value for a process of this rank that uses `per_rank` GPUs
    /// ([`rank_gpus`]'s slot, written as this rank's own list names them, so that a list set by
    /// the batch system is respected); `None` on a node without GPUs when one per rank is asked
    /// for (the process runs on CPUs).
    pub fn cuda_visible_devices(&self, per_rank: usize) -> Result<Option<String>, String> {
        if self.visible_gpus == 0 && per_rank == 1 {
            return Ok(None);
        }
        let slot = rank_gpus(self.local_rank, per_rank, self.visible_gpus)?;
        let names: Vec<String> = match &self.gpus_from {
            GpuSource::CudaVisibleDevices(list) => list.split(',').map(|e| e.trim().to_string()).collect(),
            _ => (0..self.visible_gpus).map(|i| i.to_string()).collect(),
        };
        Ok(Some(names[slot].join(",")))
    }
}

/// The GPUs of a rank that uses `per_rank` consecutive ones (`--gpus-per-rank`): the `visible`
/// GPUs form `visible / per_rank` slots of `per_rank`, and local rank `r` takes slot `r mod slots`
/// (so `r * per_rank ..` while there are enough, and a task that sees only its own GPUs, as with
/// Slurm's `--gpus-per-task`, takes them all); more ranks than slots share them round-robin, as
/// one-GPU ranks do. An error names what is missing and the fix.
pub fn rank_gpus(local_rank: usize, per_rank: usize, visible: usize) -> Result<std::ops::Range<usize>, String> {
    if per_rank == 0 {
        return Err("--gpus-per-rank must be at least 1".into());
    }
    if visible == 0 {
        return Err(format!(
            "--gpus-per-rank {per_rank} needs CUDA GPUs, but this rank sees none on this node (a CPU-only \
             libtorch, no driver, or CUDA_VISIBLE_DEVICES empty); leave it at 1 on CPUs"
        ));
    }
    if visible < per_rank {
        return Err(format!(
            "--gpus-per-rank {per_rank}: this rank sees only {visible} GPU(s) (CUDA_VISIBLE_DEVICES or the \
             node's GPUs); give each rank {per_rank} (e.g. Slurm --gpus-per-task={per_rank}) or lower --gpus-per-rank"
        ));
    }
    let first = (local_rank % (visible / per_rank)) * per_rank;
    Ok(first..first + per_rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The launch facts of an environment made of `pairs`, the driver reporting `driver`.
    fn info_with(pairs: &[(&str, &str)], driver: Result<usize, String>) -> LaunchInfo {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        LaunchInfo::from_lookup(|k| m.get(k).cloned(), || driver)
    }

    /// An environment on a machine without a CUDA driver.
    fn info(pairs: &[(&str, &str)]) -> LaunchInfo {
        info_with(pairs, Err("libcuda.so.1 not loaded".into()))
    }

    fn rank_facts(i: &LaunchInfo) -> (Launcher, usize, Option<usize>) {
        (i.launcher, i.local_rank, i.local_size)
    }

    #[test]
    fn the_job_rank_comes_from_the_first_launcher_that_sets_one() {
        let from = |pairs: &'static [(&'static str, &'static str)]| {
            job_rank(move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
        };
        assert_eq!(from(&[("OMPI_COMM_WORLD_RANK", "3"), ("SLURM_PROCID", "0")]), Some(3));
        assert_eq!(from(&[("PMI_RANK", " 1 ")]), Some(1));
        assert_eq!(from(&[("RANK", "2")]), None, "torchrun's RANK is no MPI job's");
        assert_eq!(from(&[("OMPI_COMM_WORLD_RANK", "1"), ("PROPULATE_TRIAL_DIR", "t")]), None, "a trial's process");
        assert_eq!(from(&[]), None);
        assert_eq!(from(&[("SLURM_PROCID", "x")]), None);
    }

    #[test]
    fn a_copy_above_rank_0_alone_in_its_mpi_world_is_told_apart() {
        let check = |pairs: &[(&str, &str)], world| {
            let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            copy_outside_the_mpi_world(|k| map.get(k).cloned(), world)
        };
        let e = check(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "4")], 1).unwrap();
        assert!(
            e.contains("rank 3 of the job its launcher started (SLURM_PROCID=3)") && e.contains("--mpi=pmix"),
            "{e}"
        );
        let e = check(&[("RANK", "2"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "4")], 1).unwrap();
        assert!(e.contains("(RANK=2)") && e.contains("torchrun starts no MPI job"), "{e}");
        assert!(check(&[("OMPI_COMM_WORLD_RANK", "1")], 1).is_some(), "another MPI's mpirun");
        let e = check(&[("SLURM_PROCID", "0"), ("RANK", "2"), ("LOCAL_RANK", "2")], 1).unwrap();
        assert!(e.contains("(RANK=2)"), "torchrun in a batch script: {e}");
        // A batch script's one process, the first copy, a real MPI job, a trial, a lone RANK.
        assert_eq!(check(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "64")], 1), None);
        assert_eq!(check(&[("SLURM_PROCID", "3")], 4), None);
        assert_eq!(check(&[("SLURM_PROCID", "3"), ("PROPULATE_TRIAL_DIR", "/t")], 1), None);
        assert_eq!(check(&[("RANK", "5")], 1), None);
        assert_eq!(check(&[], 1), None);
    }

    #[test]
    fn each_launcher_gives_its_local_rank_and_size() {
        let ompi =
            [("OMPI_COMM_WORLD_RANK", "5"), ("OMPI_COMM_WORLD_LOCAL_RANK", "3"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "4")];
        assert_eq!(rank_facts(&info(&ompi)), (Launcher::OpenMpi, 3, Some(4)));
        let hydra = [("PMI_RANK", "1"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")];
        assert_eq!(rank_facts(&info(&hydra)), (Launcher::Pmi, 1, Some(2)));
        // Some PMI launchers give only the local rank.
        assert_eq!(rank_facts(&info(&[("MPI_LOCALRANKID", "2")])), (Launcher::Pmi, 2, None));
        // srun --mpi=pmi2: PMI_RANK without MPI_LOCALRANKID; Slurm's local id places the rank.
        let pmi2 = [("PMI_RANK", "3"), ("PMI_SIZE", "4"), ("SLURM_PROCID", "3"), ("SLURM_LOCALID", "3")];
        assert_eq!(rank_facts(&info(&pmi2)), (Launcher::Pmi, 3, None));
        let slurm = [("SLURM_PROCID", "9"), ("SLURM_LOCALID", "5"), ("SLURM_NTASKS_PER_NODE", "8")];
        assert_eq!(rank_facts(&info(&slurm)), (Launcher::Slurm, 5, Some(8)));
        let torchrun = [("LOCAL_RANK", "2"), ("RANK", "6"), ("LOCAL_WORLD_SIZE", "4")];
        assert_eq!(rank_facts(&info(&torchrun)), (Launcher::Torchrun, 2, Some(4)));
        assert_eq!(rank_facts(&info(&[])), (Launcher::Direct, 0, Some(1)));
    }

    /// mpirun inside a Slurm allocation: the ranks inherit the batch step's SLURM_PROCID, but
    /// mpirun placed them, so its numbering counts.
    #[test]
    fn mpirun_inside_slurm_is_openmpi() {
        let i = info(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_LOCALID", "0"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ]);
        assert_eq!(rank_facts(&i), (Launcher::OpenMpi, 1, None));
    }

    #[test]
    fn an_unreadable_local_rank_counts_as_zero() {
        let i = info(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_LOCAL_RANK", "one")]);
        assert_eq!(i.local_rank, 0);
    }

    #[test]
    fn cuda_visible_devices_counts_up_to_its_first_invalid_entry() {
        for (value, gpus) in [
            ("0,1", 2),
            (" 2 , 3 ", 2),
            ("3", 1),
            ("", 0),
            ("-1", 0),
            ("0,-1,1", 1),
            ("NoDevFiles", 0),
            ("GPU-8e3f1a2b-0000-1111-2222-333344445555,MIG-1f2e3d4c", 2),
            ("0,,1", 1),
        ] {
            let i = info(&[("CUDA_VISIBLE_DEVICES", value)]);
            assert_eq!(i.visible_gpus, gpus, "CUDA_VISIBLE_DEVICES={value:?}");
            assert_eq!(i.gpus_from, GpuSource::CudaVisibleDevices(value.into()));
        }
    }

    /// The variable, even when it hides every GPU, is the answer: the driver is not asked.
    #[test]
    fn a_set_variable_wins_over_the_driver() {
        for value in ["0,1", "-1", ""] {
            let m: HashMap<&str, &str> = [("CUDA_VISIBLE_DEVICES", value)].into();
            let i = LaunchInfo::from_lookup(|k| m.get(k).map(|v| v.to_string()), || panic!("driver asked"));
            assert_eq!(i.gpus_from, GpuSource::CudaVisibleDevices(value.into()));
        }
    }

    #[test]
    fn without_the_variable_the_driver_counts() {
        let i = info_with(&[("SLURM_PROCID", "6"), ("SLURM_LOCALID", "6")], Ok(4));
        assert_eq!((i.visible_gpus, &i.gpus_from, i.device()), (4, &GpuSource::Driver, Device::Gpu(2)));
        let i = info_with(&[("OMPI_COMM_WORLD_RANK", "0")], Ok(0));
        assert_eq!((i.visible_gpus, i.device()), (0, Device::Cpu));
        let i = info_with(&[("OMPI_COMM_WORLD_RANK", "0")], Err("libcuda.so.1 not loaded (no such file)".into()));
        assert_eq!((i.visible_gpus, i.device()), (0, Device::Cpu));
        assert_eq!(i.gpus_from.to_string(), "no CUDA driver: libcuda.so.1 not loaded (no such file)");
    }

    /// Ranks of a node spread over its GPUs by local rank, round-robin when they outnumber them.
    #[test]
    fn a_rank_uses_gpu_local_rank_mod_visible() {
        let devices: Vec<Device> = (0..6)
            .map(|r| {
                let r = r.to_string();
                info(&[
                    ("OMPI_COMM_WORLD_RANK", "7"),
                    ("OMPI_COMM_WORLD_LOCAL_RANK", &r),
                    ("CUDA_VISIBLE_DEVICES", "4,5,6,7"),
                ])
                .device()
            })
            .collect();
        let expected = [0, 1, 2, 3, 0, 1].map(Device::Gpu);
        assert_eq!(devices, expected);
        let i = info(&[("LOCAL_RANK", "2"), ("RANK", "6"), ("CUDA_VISIBLE_DEVICES", "")]);
        assert_eq!((i.launcher, i.device()), (Launcher::Torchrun, Device::Cpu));
    }
}
