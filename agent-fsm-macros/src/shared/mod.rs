//! Names and helpers every phase uses, below all of them: the pipeline
//! (`parse` -> `model` -> `validate` -> `codegen`) imports from here and
//! from earlier phases only.

pub(crate) mod attrs;
pub(crate) mod krate;
pub(crate) mod names;
