//! Which Burn backend trains the network, and on what: `flex` (pure Rust, CPUs, always built) or
//! `tch` (libtorch through burn-tch, CPUs and CUDA GPUs, cargo feature `tch`). The choice stays
//! behind Burn's `Device`, so the training code does not change with it.

use burn::tensor::Device;

use crate::error::{Error, Result};

/// A Burn backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Burn's pure-Rust CPU backend.
    Flex,
    /// libtorch (PyTorch's C++ library) through burn-tch.
    Tch,
}

/// Where the backend computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// The CPU.
    Cpu,
    /// The CUDA GPU with this index among the visible ones.
    Cuda(usize),
}

impl Backend {
    /// The names `--backend` takes.
    pub const NAMES: [&'static str; 2] = ["tch", "flex"];

    /// The backend called `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "tch" => Ok(Backend::Tch),
            "flex" => Ok(Backend::Flex),
            _ => Err(Error::UnknownName { kind: "backend", name: name.into(), valid: Self::NAMES.join(", ") }),
        }
    }

    /// The name of the backend.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Tch => "tch",
            Backend::Flex => "flex",
        }
    }

    /// True if this build has the backend.
    pub fn is_built(self) -> bool {
        match self {
            Backend::Flex => true,
            Backend::Tch => cfg!(feature = "tch"),
        }
    }

    /// The fastest backend this build has: libtorch when built in (1.5 to 3 times flex's speed per
    /// step on CPUs, docs/benchmarks/cnn.md), flex otherwise.
    pub fn fastest_built() -> Self {
        if Backend::Tch.is_built() { Backend::Tch } else { Backend::Flex }
    }

    /// Check that this build has the backend and that it can compute on `compute`, without
    /// touching a device: the checks every rank can make before training starts.
    pub fn check(self, compute: Compute) -> Result<()> {
        if !self.is_built() {
            return Err(Error::InvalidConfig(format!(
                "this build has no {} backend; rebuild with the cargo feature `{}` (README: set-up), or use --backend flex",
                self.name(),
                self.name()
            )));
        }
        match (self, compute) {
            (_, Compute::Cpu) => Ok(()),
            (Backend::Flex, Compute::Cuda(_)) => Err(Error::InvalidConfig(
                "the flex backend computes on CPUs only; use --backend tch for GPUs, or --device cpu".into(),
            )),
            (Backend::Tch, Compute::Cuda(gpu)) => {
                let gpus = cuda_devices();
                if gpu < gpus {
                    Ok(())
                } else if gpus == 0 {
                    Err(Error::InvalidConfig(
                        "--device cuda: libtorch sees no CUDA GPU on this machine (a CPU-only libtorch, no driver, \
                         or CUDA_VISIBLE_DEVICES empty); use --device cpu"
                            .into(),
                    ))
                } else {
                    Err(Error::InvalidConfig(format!(
                        "GPU {gpu} was chosen but libtorch sees only {gpus} GPU(s); check CUDA_VISIBLE_DEVICES and \
                         the ranks per node"
                    )))
                }
            }
        }
    }

    /// The Burn device (without autodiff) of this backend on `compute`; `check` first. The first
    /// call sets the process's malloc thresholds for training (`allocator::keep_freed_memory`).
    pub fn device(self, compute: Compute) -> Result<Device> {
        self.check(compute)?;
        crate::allocator::keep_freed_memory();
        match (self, compute) {
            (Backend::Flex, _) => Ok(Device::flex()),
            (Backend::Tch, compute) => tch_device(compute),
        }
    }
}

/// The GPUs of a rank that trains on `per_rank` consecutive ones (`--gpus-per-rank`), among the
/// `visible` GPUs libtorch sees: [`propulate_engine::launcher::rank_gpus`].
pub fn rank_gpus(local_rank: usize, per_rank: usize, visible: usize) -> Result<std::ops::Range<usize>> {
    propulate_engine::launcher::rank_gpus(local_rank, per_rank, visible).map_err(Error::InvalidConfig)
}

/// CUDA GPUs libtorch can use (0 without the `tch` feature).
pub fn cuda_devices() -> usize {
    #[cfg(feature = "tch")]
    {
        tch::Cuda::device_count().max(0) as usize
    }
    #[cfg(not(feature = "tch"))]
    {
        0
    }
}

/// Threads each backend may use in this process (each rank of an oversubscribed job wants one):
/// libtorch's intra-op pool and flex's rayon pool. Call it before the first training; a rayon pool
/// that already exists keeps its size.
pub fn set_threads(threads: usize) {
    let threads = threads.max(1);
    #[cfg(feature = "tch")]
    tch::set_num_threads(threads as i32);
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
}

#[cfg(feature = "tch")]
#[allow(deprecated)] // burn-tch is deprecated in Burn 0.22 and still its only libtorch backend
fn tch_device(compute: Compute) -> Result<Device> {
    Ok(match compute {
        Compute::Cpu => Device::libtorch(),
        Compute::Cuda(gpu) => Device::libtorch_cuda(gpu),
    })
}

#[cfg(not(feature = "tch"))]
fn tch_device(_: Compute) -> Result<Device> {
    unreachable!("checked: this build has no tch backend")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_checks() {
        assert_eq!(Backend::from_name("flex").unwrap(), Backend::Flex);
        let e = Backend::from_name("cuda").unwrap_err().to_string();
        assert!(e.contains("unknown backend 'cuda'") && e.contains("tch, flex"), "{e}");
        assert!(Backend::Flex.check(Compute::Cpu).is_ok());
        assert!(Backend::Flex.check(Compute::Cuda(0)).unwrap_err().to_string().contains("CPUs only"));
        if !Backend::Tch.is_built() {
            assert!(Backend::Tch.check(Compute::Cpu).unwrap_err().to_string().contains("feature `tch`"));
        } else if cuda_devices() == 0 {
            assert!(Backend::Tch.check(Compute::Cuda(0)).unwrap_err().to_string().contains("no CUDA GPU"));
        }
    }

    #[test]
    fn each_rank_gets_its_own_consecutive_gpus() {
        assert_eq!(rank_gpus(0, 2, 4).unwrap(), 0..2);
        assert_eq!(rank_gpus(1, 2, 4).unwrap(), 2..4);
        assert_eq!(rank_gpus(3, 1, 4).unwrap(), 3..4);
        assert_eq!(rank_gpus(1, 3, 8).unwrap(), 3..6, "two slots of 3 on 8 GPUs");
        // Slurm's --gpus-per-task=2: every task sees its own 2 GPUs as 0 and 1.
        assert_eq!(rank_gpus(5, 2, 2).unwrap(), 0..2);
        // More ranks than slots share round-robin, as one-GPU ranks do.
        assert_eq!(rank_gpus(2, 2, 4).unwrap(), 0..2);
        let e = rank_gpus(0, 4, 2).unwrap_err().to_string();
        assert!(e.contains("this rank sees only 2 GPU(s)") && e.contains("--gpus-per-task=4"), "{e}");
        assert!(rank_gpus(0, 2, 0).unwrap_err().to_string().contains("sees none"));
        assert!(rank_gpus(0, 0, 4).unwrap_err().to_string().contains("at least 1"));
        assert_eq!(rank_gpus(usize::MAX, 2, 4).unwrap(), 2..4, "no overflow");
    }
}
