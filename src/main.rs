//! `propulate-rs`: optimise a benchmark function with the asynchronous island model, under MPI;
//! `propulate-rs report DIR` summarizes a checkpoint.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde_json::json;

use propulate::cli::{Cli, Command, ReportArgs, RunArgs};
use propulate::functions::benchmark;
use propulate::output::{summary_table, write_outputs};
use propulate::transport::Communicator;
use propulate::{Params, RunResult, WorkerContext, driver};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Some(Command::Report(args)) => report(args),
        None => run(&cli.run),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("propulate-rs: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Print to stdout; a closed pipe (`propulate-rs report DIR | head`) is not an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let replay = propulate::report::load(&args.dir)?;
    for w in &replay.warnings {
        eprintln!("propulate-rs: warning: {w}");
    }
    let result = propulate::report::result_of(&replay, args.top_n);
    let space = &replay.manifest.space;
    say(&propulate::report::progress_table(&replay));
    say(&summary_table(space, &result));
    let out = args.out.clone().unwrap_or_else(|| args.dir.clone());
    write_outputs(&out, space, &result, replay.manifest.extra.clone())?;
    say(&format!("wrote {}/best.json, trials.csv, trials.jsonl, progress.svg\n", out.display()));
    Ok(ExitCode::SUCCESS)
}

fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.local_ranks {
        let args = args.clone();
        let results = propulate::transport::local::run_local(n, move |mut comm| run_on(&args, &mut comm));
        let mut code = ExitCode::SUCCESS;
        for r in results {
            match r {
                Ok(Ok(c)) if c != ExitCode::SUCCESS => code = c,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => anyhow::bail!("an in-process rank aborted the run"),
            }
        }
        return Ok(code);
    }
    #[cfg(feature = "mpi")]
    {
        // The runtime is declared first so that it is dropped (MPI_Finalize) after the communicators.
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        let code = run_on(args, &mut world);
        drop(world);
        code
    }
    #[cfg(not(feature = "mpi"))]
    {
        anyhow::bail!("this build has no MPI support (cargo feature `mpi`); use --local-ranks N")
    }
}

/// An error every rank has: rank 0 reports it, and all exit together with status 2 (a rank leaving
/// early makes mpirun kill rank 0 before it has spoken).
fn fail_together(world: &mut dyn Communicator, message: &str) -> anyhow::Result<ExitCode> {
    if world.rank() == 0 {
        eprintln!("propulate-rs: error: {message}");
    }
    world.barrier()?;
    Ok(ExitCode::from(2))
}

/// One rank's share of the job.
fn run_on(args: &RunArgs, world: &mut dyn Communicator) -> anyhow::Result<ExitCode> {
    let rank = world.rank();
    // Validation is deterministic, so every rank fails the same way; only rank 0 reports it.
    let setup = benchmark(&args.function).map_err(anyhow::Error::from).and_then(|b| {
        let cfg = args.to_config(world.size())?;
        propulate::layout::Layout::new(world.size(), cfg.ranks_per_worker, &cfg.islands)?;
        Ok((b, cfg))
    });
    let (bench, cfg) = match setup {
        Ok(s) => s,
        Err(e) => return fail_together(world, &format!("{e:#}")),
    };
    let f = bench.f;
    let delay = Duration::from_secs_f64(args.eval_delay_ms.max(0.0) / 1000.0);
    let outcome = driver::run(world, &cfg, &bench.space, None, |p: Params<'_>, ctx: &mut WorkerContext<'_>| {
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let value = f(&p.to_vec(), ctx.seed);
        // Multi-rank workers: every rank computes the value and the worker agrees on the mean,
        // which exercises the worker communicator the way a data-parallel loss would.
        if ctx.worker_size > 1 {
            let mean = ctx.map_reduce_sum(|_, _| value)? / ctx.worker_size as f64;
            return Ok(mean);
        }
        Ok(value)
    });
    let result: RunResult = match outcome {
        Ok(r) => r,
        // Errors from the driver are agreed on by all ranks.
        Err(e) => return fail_together(world, &e.to_string()),
    };
    if rank == 0 {
        say(&summary_table(&bench.space, &result));
        if let Some(dir) = &args.out {
            let mut extra = serde_json::Map::new();
            extra.insert("function".into(), json!(bench.name));
            extra.insert("ranks".into(), json!(world.size()));
            extra.insert("seed".into(), json!(cfg.seed));
            extra.insert("generations".into(), json!(cfg.generations));
            write_outputs(dir, &bench.space, &result, extra).with_context(|| format!("writing {}", dir.display()))?;
            say(&format!("wrote {}/best.json, trials.csv, trials.jsonl, progress.svg\n", dir.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
