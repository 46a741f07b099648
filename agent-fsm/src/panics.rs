//! The text of a caught panic, for the errors that report one (a machine's
//! step or its effects in the worker, a tool in a tool set, a logged event
//! replayed from a store).

/// The message a panic carried, or a stand-in when its payload is not a
/// string (`std::panic::panic_any` with another type).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
