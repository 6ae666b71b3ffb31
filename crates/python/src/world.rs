//! The world communicator of a run, from the one mpi4py holds: a duplicate of it, so that the
//! run's messages never meet the program's own, with MPI's errors fatal on it (mpi4py sets
//! `MPI_ERRORS_RETURN`, which duplicates inherit, and the engine checks no return code).

use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;
use propulate::transport::mpi::MpiComm;

/// A duplicate of the communicator stored at `address`, owned by the returned [`MpiComm`] (freed
/// when it is dropped, before mpi4py finalizes). Collective over that communicator.
///
/// # Safety
/// `address` is `MPI._addressof(comm)` of a live intra-communicator, read while it lives.
pub unsafe fn duplicate(address: usize) -> MpiComm {
    unsafe {
        let original = *(address as *const ffi::MPI_Comm);
        let mut dup = std::mem::zeroed::<ffi::MPI_Comm>();
        ffi::MPI_Comm_dup(original, &mut dup);
        ffi::MPI_Comm_set_errhandler(dup, ffi::RSMPI_ERRORS_ARE_FATAL);
        MpiComm::from_communicator(SimpleCommunicator::from_raw(dup))
    }
}
