//! The Sketch machine under the executor: effects that run tools, git and rustfmt for real.
