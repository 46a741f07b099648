//! Shared by the dispatch benchmark: the hand-written baseline, the traces
//! and the feeding loops.

pub(crate) mod coverage;
pub(crate) mod feed;
pub(crate) mod hand;
pub(crate) mod traces;
