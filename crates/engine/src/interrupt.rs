//! A loss that must end the whole run, not just its evaluation: a front whose user pressed Ctrl-C
//! (Python's `KeyboardInterrupt`) unwinds with [`Interrupted`] from inside the loss. The evaluation
//! is not recorded (its `bred` record stays, so a resume evaluates it again under the same id), and
//! the run returns [`Error::Interrupted`](crate::Error::Interrupted) on a world of one rank; on a
//! larger world the job is aborted, since the other ranks would wait for this one for ever. Either
//! way the checkpoint is whole: every record it holds was written before anyone heard of it.

/// The payload a loss unwinds with (`std::panic::resume_unwind(Box::new(Interrupted(why)))`, which
/// skips the panic hook) to end the run; `why` is said in the error or the abort.
#[derive(Debug, Clone)]
pub struct Interrupted(pub String);

/// The interruption a panic payload carries, if it is one.
pub(crate) fn interruption(payload: &(dyn std::any::Any + Send)) -> Option<&Interrupted> {
    payload.downcast_ref::<Interrupted>()
}
