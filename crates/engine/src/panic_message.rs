//! The text of a caught panic, for the messages of the driver (a panicking loss or propagator) and
//! of a worker's context (a panicking early-stopping rule).

/// The message of a caught panic (panics carry a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}
