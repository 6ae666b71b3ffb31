//! `propulate-rs-cnn`: the command line with the CNN task, the one executable that links Burn
//! (and libtorch, with the `tch` feature). `propulate-rs` hands a CNN run over to it before MPI
//! starts, so that the command stays `mpirun -np 8 propulate-rs --islands 2` while `--version`,
//! `report`, `env`, functions and command trials start without loading libtorch. Started
//! directly it is the same command line.

mod cnn_task;

mod allocator;

fn main() -> std::process::ExitCode {
    allocator::set_options();
    propulate_cli::main(Some(cnn_task::make))
}
