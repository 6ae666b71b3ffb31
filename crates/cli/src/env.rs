//! `propulate-rs env`: every rank of a job says what it sees (launcher, local rank, host, GPUs,
//! the device it would train on) and where the layout flags put it, one line per rank in rank
//! order, printed by rank 0. A check of a job script's placement before a long run; nothing is
//! trained or journaled.

use std::process::ExitCode;

use propulate::Error;
use propulate::launcher::{Device, LaunchInfo, hostname};
use propulate::layout::Layout;
use propulate::optimizer::MAX_LOCAL_RANKS;
use propulate::transport::Communicator;
use propulate::transport::local::run_local;

use super::args::EnvArgs;
use super::say;

pub(crate) fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.layout.local_ranks {
        if !(1..=MAX_LOCAL_RANKS).contains(&n) {
            anyhow::bail!(
                "--local-ranks {n}: run 1 to {MAX_LOCAL_RANKS} ranks as threads; start more with mpirun or srun"
            );
        }
        // Checked before the threads start, so that a bad layout is one error, not n.
        let layout = layout(args, n)?;
        let mut ranks = run_local(n, move |mut comm| gather_lines(&mut comm, &layout));
        let lines = match ranks.swap_remove(0) {
            Ok(lines) => lines?,
            Err(_) => anyhow::bail!("in-process rank 0 panicked (see its message above)"),
        };
        say(&lines);
        return Ok(ExitCode::SUCCESS);
    }
    super::on_mpi_world(|world| env_on(args, world))
}

/// One MPI rank's share. The layout depends only on the flags and the world size, so every rank
/// finds the same error and they exit together.
fn env_on(args: &EnvArgs, world: &mut dyn Communicator) -> anyhow::Result<ExitCode> {
    let layout = match layout(args, world.size()) {
        Ok(layout) => layout,
        Err(e) => return super::run::fail_together(world, &e.to_string()),
    };
    let lines = gather_lines(world, &layout)?;
    say(&lines);
    if let Some(why) = propulate::launcher::copy_outside_the_mpi_world(|k| std::env::var(k).ok(), world.size()) {
        crate::tell(&format!("warning: {why}"));
    }
    Ok(ExitCode::SUCCESS)
}

/// The layout the same flags give a run on `world_size` ranks.
fn layout(args: &EnvArgs, world_size: usize) -> propulate::Result<Layout> {
    let flags = &args.layout;
    Layout::new(world_size, flags.ranks_per_worker.unwrap_or(1), &flags.island_spec()).map_err(Error::from)
}

/// Every rank's line in rank order, one text on rank 0, empty on the others.
fn gather_lines(world: &mut dyn Communicator, layout: &Layout) -> propulate::Result<String> {
    let line = rank_line(world.rank(), layout, &LaunchInfo::detect(), &hostname());
    let all = world.all_gather(line.into_bytes())?;
    if world.rank() != 0 {
        return Ok(String::new());
    }
    Ok(all.iter().map(|l| format!("{}\n", String::from_utf8_lossy(l))).collect())
}

/// What `rank` sees, in the words of the per-rank logs' start line, e.g. `rank 1 of 4 (worker 0
/// rank 1 of 2, island 0 of 2): host vm, launcher OpenMpi, local rank 1 of 4, 2 GPUs
/// (CUDA_VISIBLE_DEVICES=0,1), device gpu 1`.
fn rank_line(rank: usize, layout: &Layout, launch: &LaunchInfo, host: &str) -> String {
    let worker = layout.worker_of_rank(rank);
    let local_size = launch.local_size.map(|n| format!(" of {n}")).unwrap_or_default();
    let device = match launch.device() {
        Device::Cpu => "cpu".to_string(),
        Device::Gpu(i) => format!("gpu {i}"),
    };
    format!(
        "rank {rank} of {} (worker {worker} rank {} of {}, island {} of {}): host {host}, launcher {:?}, \
         local rank {}{local_size}, {} GPUs ({}), device {device}",
        layout.world_size(),
        layout.rank_in_worker(rank),
        layout.ranks_per_worker(),
        layout.island_of_worker(worker),
        layout.islands(),
        launch.launcher,
        launch.local_rank,
        launch.visible_gpus,
        launch.gpus_from,
    )
}
