//! Unit and snapshot tests of the macro internals.
