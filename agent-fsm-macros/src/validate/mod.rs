//! Rules over the whole table, one function per rule, each saying why it
//! exists. Every rule records its errors in the [`Ctxt`](crate::ctxt::Ctxt) and returns, so one
//! build reports every broken rule.
//!
//! The rules by what they look at: `states` (markers), `rows` (patterns,
//! repeats, shadowing), `graph` (exits, reachability, strict mode), `code`,
//! `guards` and `values` (the code in rows), `carried` (the `#[carry]` fields),
//! `names` (what the generated code is called) and `items` (the enums as
//! Rust sees them).

mod carried;
mod code;
mod graph;
mod guards;
mod items;
mod names;
mod rows;
mod states;
mod values;

use crate::ctxt::Ctxt;
use crate::model::Model;

/// Runs every rule.
pub(crate) fn check(cx: &Ctxt, model: &Model) {
    states::check_single_initial_state(cx, model);
    states::check_state_markers(cx, model);
    states::check_terminal_exits(cx, model);
    states::check_transient_rows(cx, model);
    states::check_transient_cycles(cx, model);
    rows::check_missing_action(cx, model);
    rows::check_struct_payloads(cx, model);
    code::check_effects_run_to_their_end(cx, model);
    values::check_effects_end_in_no_value(cx, model);
    code::check_rows_leave_self_alone(cx, model);
    carried::check_effects_keep_carried_fields(cx, model);
    code::check_row_bindings(cx, model);
    guards::check_guard_bindings(cx, model);
    code::check_shared_rows_read_no_fields(cx, model);
    rows::check_source_patterns(cx, model);
    let repeats = rows::check_duplicate_rows(cx, model);
    rows::check_shadowed_rows(cx, model, repeats);
    rows::check_ignored_pairs(cx, model);
    graph::check_states_have_exits(cx, model);
    graph::check_unreachable_states(cx, model);
    graph::check_strict(cx, model);
    names::check_generated_names(cx, model);
    names::check_step_locals_free(cx, model);
    items::check_serde_form(cx, model);
    carried::check_carried_fields_set(cx, model);
    items::check_discriminants_with_carry(cx, model);
    carried::check_carried_fields_read(cx, model);
    items::check_default_state(cx, model);
    items::check_visibility(cx, model);
    items::check_conditional_derives(cx, model);
}
