//! Shared by the dispatch benchmark: the hand-written baseline and the traces.

pub(crate) mod coverage;
pub(crate) mod hand;
pub(crate) mod traces;
