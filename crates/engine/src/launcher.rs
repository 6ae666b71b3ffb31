//! What the launcher tells us: which launcher started this rank (OpenMPI's mpirun, MPICH/Hydra,
//! Slurm's srun, torchrun), the rank's index on its node, and from that the device it should use.

use std::env;

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
    /// Number of GPUs visible (from `CUDA_VISIBLE_DEVICES`), 0 if none are declared.
    pub visible_gpus: usize,
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

impl LaunchInfo {
    /// Read the environment of this process.
    pub fn detect() -> Self {
        Self::from_lookup(|k| env::var(k).ok())
    }

    /// Read from any key-value source (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
        let (launcher, local_rank, local_size) = if get("OMPI_COMM_WORLD_RANK").is_some() {
            (Launcher::OpenMpi, num("OMPI_COMM_WORLD_LOCAL_RANK"), num("OMPI_COMM_WORLD_LOCAL_SIZE"))
        } else if get("PMI_RANK").is_some() || get("MPI_LOCALRANKID").is_some() {
            (Launcher::Pmi, num("MPI_LOCALRANKID"), num("MPI_LOCALNRANKS"))
        } else if get("SLURM_PROCID").is_some() {
            (Launcher::Slurm, num("SLURM_LOCALID"), num("SLURM_NTASKS_PER_NODE"))
        } else if get("LOCAL_RANK").is_some() {
            (Launcher::Torchrun, num("LOCAL_RANK"), num("LOCAL_WORLD_SIZE"))
        } else {
            (Launcher::Direct, Some(0), Some(1))
        };
        let visible_gpus = get("CUDA_VISIBLE_DEVICES")
            .map(|v| v.split(',').filter(|s| !s.trim().is_empty() && s.trim() != "-1").count())
            .unwrap_or(0);
        LaunchInfo { launcher, local_rank: local_rank.unwrap_or(0), local_size, visible_gpus }
    }

    /// The device for this rank: GPU `local_rank mod visible GPUs` when GPUs are declared, else CPU.
    pub fn device(&self) -> Device {
        if self.visible_gpus == 0 { Device::Cpu } else { Device::Gpu(self.local_rank % self.visible_gpus) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn info(pairs: &[(&str, &str)]) -> LaunchInfo {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        LaunchInfo::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn detects_launchers_and_picks_devices() {
        let i = info(&[("OMPI_COMM_WORLD_RANK", "5"), ("OMPI_COMM_WORLD_LOCAL_RANK", "3")]);
        assert_eq!((i.launcher, i.local_rank, i.device()), (Launcher::OpenMpi, 3, Device::Cpu));
        let i = info(&[("SLURM_PROCID", "9"), ("SLURM_LOCALID", "5"), ("CUDA_VISIBLE_DEVICES", "0,1,2,3")]);
        assert_eq!((i.launcher, i.device()), (Launcher::Slurm, Device::Gpu(1)));
        let i = info(&[("PMI_RANK", "1"), ("MPI_LOCALRANKID", "1")]);
        assert_eq!(i.launcher, Launcher::Pmi);
        let i = info(&[("LOCAL_RANK", "2"), ("RANK", "6"), ("CUDA_VISIBLE_DEVICES", "")]);
        assert_eq!((i.launcher, i.device()), (Launcher::Torchrun, Device::Cpu));
        assert_eq!(info(&[]).launcher, Launcher::Direct);
    }
}
