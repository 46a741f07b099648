//! The tokio runtime that drives any [`StateMachine`](crate::StateMachine).
