//! The launcher's variables a trial's process must not inherit. A rank started by mpirun or srun
//! holds its place in that job (`OMPI_COMM_WORLD_RANK`, PMIx's server address, `SLURM_PROCID`,
//! ...), and a trial's process inherits the rank's environment: a training that starts MPI
//! (mpi4py, Horovod) then joined the propulate-rs job as a rank it is not, failed in its
//! `MPI_Init`, and left mpirun's daemon waiting, so the job hung to its wall time; a library that
//! reads Slurm's (Lightning) took the job's world for the training's. The trial's world is its
//! worker's ranks, in torchrun's variables (`RANK`, `WORLD_SIZE`, ...); these go. What configures
//! MPI rather than placing a process in a job stays (`OMPI_MCA_btl...`, `OMPI_ALLOW_RUN_AS_ROOT`).

/// Every variable whose name starts with one of these places a process in its launcher's job.
const PREFIXES: [&str; 8] =
    ["PMIX_", "PMI_", "HYDRA_", "OMPI_COMM_WORLD_", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "SLURM_STEP_"];

/// And these.
const NAMES: [&str; 17] = [
    "OMPI_UNIVERSE_SIZE",
    "OMPI_FIRST_RANKS",
    "OMPI_APP_CTX_NUM_PROCS",
    "OMPI_NUM_APP_CTX",
    "OMPI_FILE_LOCATION",
    "OMPI_COMMAND",
    "OMPI_ARGV",
    "OMPI_MCA_initial_wdir",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_GTIDS",
    "SLURM_TASK_PID",
    "SLURM_STEPID",
];

/// Whether `name` places a process in its launcher's job.
pub(crate) fn places_in_the_job(name: &str) -> bool {
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// The variables of this process's environment that a trial's process must not inherit: read once
/// per process (the launcher set them before it started; nothing here changes them).
pub(crate) fn job_variables() -> &'static [std::ffi::OsString] {
    static NAMES_HERE: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();
    NAMES_HERE.get_or_init(|| {
        std::env::vars_os().map(|(k, _)| k).filter(|k| k.to_str().is_some_and(places_in_the_job)).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_of_mpirun_or_srun_is_not_passed_on_and_mpis_settings_are() {
        for name in ["OMPI_COMM_WORLD_RANK", "PMIX_SERVER_URI4", "PMI_RANK", "OMPI_MCA_orte_hnp_uri", "SLURM_PROCID"] {
            assert!(places_in_the_job(name), "{name}");
        }
        for name in ["OMPI_MCA_btl_tcp_if_include", "OMPI_ALLOW_RUN_AS_ROOT", "SLURM_JOB_ID", "RANK", "PATH"] {
            assert!(!places_in_the_job(name), "{name}");
        }
    }
}
