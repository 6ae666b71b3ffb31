//! `propulate-rs`: tune a task's parameters with the asynchronous island model, under MPI;
//! `propulate-rs report DIR` summarizes a checkpoint; `propulate-rs env` shows where each rank of a
//! job runs and which GPU it would use. The binary uses the library only through its
//! public front door, as any user program.

mod cli;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
