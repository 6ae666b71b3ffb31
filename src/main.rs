//! `propulate-rs`: tune a task's parameters with the asynchronous island model, under MPI;
//! `propulate-rs report DIR` summarizes a checkpoint; `propulate-rs env` shows where each rank of a
//! job runs and which GPU it would use. The command line (`propulate-cli`) uses the library only
//! through its public front door, as any user program. This executable does not link libtorch
//! (nor Burn): a CNN run is handed over to the CNN executable beside it (`src/cnn_main.rs`).

mod allocator;

fn main() -> std::process::ExitCode {
    allocator::set_options();
    propulate_cli::main(None)
}
