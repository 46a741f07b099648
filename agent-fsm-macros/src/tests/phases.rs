//! Parser and model units: each production and rule on a small input.

use crate::ctxt::Ctxt;
use crate::model::Model;
use crate::parse::{Args, Outcome, Row, Source, Table};
use quote::quote;

pub(super) fn model(
    args: proc_macro2::TokenStream,
    module: proc_macro2::TokenStream,
) -> (Option<Model>, Result<(), String>) {
    let cx = Ctxt::new();
    let args: Args = syn::parse2(args).expect("args parse");
    let module: syn::ItemMod = syn::parse2(module).expect("module parses");
    let model = Model::from_syntax(&cx, args, module);
    if let Some(m) = &model {
        crate::validate::check(&cx, m);
    }
    (model, cx.check().map_err(|e| e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")))
}

#[test]
fn row_parses_every_part() {
    let row: Row = syn::parse2(
        quote!(CallingLlm { retries } + Failed(e) [*retries < 3] => { log(e); } Error { retries: 1 } / Retry(1)),
    )
    .expect("row parses");
    assert!(matches!(row.source, Source::One(_)));
    assert!(row.event.is_some());
    assert_eq!(row.guard_text.as_deref(), Some("*retries < 3"));
    let Outcome::To { effects, target, action } = row.outcome else { panic!("expected a target") };
    assert!(effects.is_some());
    assert_eq!(target.ident, "Error");
    assert_eq!(action.map(|(_, a)| a.ident.to_string()).as_deref(), Some("Retry"));
}

#[test]
fn any_state_with_except_parses() {
    let row: Row = syn::parse2(quote!(* except (A | B) + Stop => Done / Halt)).expect("row parses");
    let Source::Any { except, .. } = row.source else { panic!("expected `*`") };
    assert_eq!(except.iter().map(ToString::to_string).collect::<Vec<_>>(), ["A", "B"]);
}

#[test]
fn eventless_and_ignore_rows_parse() {
    let table: Table = syn::parse2(quote!(Check [ok] => Done / Go, Check => Idle / Wait, Idle + Noise => ignore,))
        .expect("table parses");
    assert_eq!(table.rows.len(), 3);
    assert!(table.rows[0].event.is_none());
    assert!(matches!(table.rows[2].outcome, Outcome::Ignore(_)));
}

#[test]
fn rows_with_syntax_errors_are_skipped_and_the_rest_read() {
    let mut table: Table = syn::parse2(quote!(
        A + Go -> B / X,
        B + Back => A / Y;
        B + Stop => [oops] C / Z,
        C + Go => A / X,
        A + Back => B / Y junk, B + Go => C / X,
        A + Stop [x y] => B / Y,
        C + Back => B -> Y,
        B + Go => A / X;;
        C + Stop => C / Z
    ))
    .expect("a table with broken rows still parses");
    // Kept: `B + Back` (ended by `;`), `C + Go`, `B + Go` (after the junk
    // that took `A + Back` with it, up to the next `,`), `B + Go` again
    // (ended by `;;`), `C + Stop`.
    let kept: Vec<String> = table.rows.iter().map(Row::key_text).collect();
    assert_eq!(kept, ["B + Back", "C + Go", "B + Go", "B + Go", "C + Stop"]);
    let errors: Vec<String> = table.take_errors().expect("errors").into_iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 8, "{errors:?}");
    assert!(errors[1].contains("rows are separated by commas"), "{errors:?}");
    assert!(errors[4].contains("unexpected token in the guard"), "{errors:?}");
    assert!(errors[7].contains("expected a row"), "{errors:?}");
    assert!(table.partial);
    assert!(table.take_errors().is_none(), "errors are taken once");
}

#[test]
fn a_missing_comma_keeps_both_rows_whatever_the_next_row_starts_with() {
    // Before: an eventless row, with and without a guard or a pattern; a
    // row with a source pattern; a `*` row; a row for several states.
    let mut table: Table = syn::parse2(quote!(
        A + Go => Checking / X
        Checking [ok] => B / Y
        Checking => C / Z
        Counting { n } [*n > 1] => B
        Busy { n } + Go => A / X
        * + Stop => C / Z
        A | B + Back => A / X
    ))
    .expect("a table with missing commas still parses");
    let kept: Vec<String> = table.rows.iter().map(Row::key_text).collect();
    assert_eq!(kept.len(), 7, "every row is kept: {kept:?}");
    let errors: Vec<String> = table.take_errors().expect("errors").into_iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 6, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("rows are separated by commas")), "{errors:?}");
}

#[test]
fn missing_arrow_says_what_a_row_looks_like() {
    let err = syn::parse2::<Row>(quote!(Idle + Go Busy / Work)).err().expect("a row needs `=>`");
    assert!(err.to_string().contains("rows read `State + Event [guard] => Target / Action`"), "{err}");
}

#[test]
fn unknown_argument_lists_the_accepted_ones() {
    let err = syn::parse2::<Args>(quote!(fallback = X, verbose)).err().expect("unknown argument");
    assert!(
        err.to_string()
            .contains("expected `fallback = Action`, `strict`, `name = Machine`, `serde`, `invariants = path`, `export = name`, `extends = path`, `typestate`, `no_diagram` or `crate = path`"),
        "{err}"
    );
}

fn machine(table: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[states] pub enum S { #[initial] A, B, #[terminal] C }
            #[events] pub enum E { Go, Back, Stop }
            #[actions] pub enum X { Nop, Run }
            transitions! { #table }
        }
    }
}

#[test]
fn valid_table_builds_a_model_with_rows_in_order() {
    let (model, result) =
        model(quote!(fallback = Nop), machine(quote!(A + Go => B / Run, B + Back => A / Nop, * + Stop => C / Nop)));
    assert_eq!(result, Ok(()));
    let model = model.expect("model");
    assert_eq!(model.rows.len(), 3);
    // `*` expands to the states that take events; terminal `C` is kept only
    // because the row keeps it where it is.
    assert_eq!(model.rows[2].sources, vec![0, 1, 2]);
    assert_eq!(model.initial(), Some(0));
}

#[test]
fn every_rule_reports_in_one_pass() {
    // Unknown event, unknown action and an unreachable state at once: the
    // row with the unknown event leads back to `A`, so `B` is unreachable
    // whatever the event was meant to be.
    let (_, result) =
        model(quote!(fallback = Nop), machine(quote!(A + Og => A / Run, A + Back => A / Jump, * + Stop => C / Nop)));
    let errors = result.expect_err("three problems");
    assert!(errors.contains("unknown event `Og`"), "{errors}");
    assert!(errors.contains("unknown action `Jump`"), "{errors}");
    assert!(errors.contains("state `B` cannot be reached"), "{errors}");
}

#[test]
fn a_misspelt_target_is_the_only_error() {
    // `Nowhere` was probably meant to be `B`: saying `B` is unreachable
    // too would be a cascade.
    let (_, result) = model(
        quote!(fallback = Nop),
        machine(quote!(A + Go => Nowhere / Run, B + Back => A / Nop, * + Stop => C / Nop)),
    );
    let errors = result.expect_err("one problem");
    assert_eq!(errors, "unknown state `Nowhere`; states are: `A`, `B`, `C`");
}

#[test]
fn shadowed_row_is_rejected() {
    let (_, result) = model(
        quote!(fallback = Nop),
        machine(quote!(A + Go => B / Run, A + Go [true] => A / Nop, B + Back => A / Nop, * + Stop => C / Nop)),
    );
    assert!(result.expect_err("shadowed").contains("this row can never fire"));
}

#[test]
fn snake_case_names() {
    use crate::shared::names::snake;
    assert_eq!(snake("CallingLlm"), "calling_llm");
    assert_eq!(snake("WaitingForUserInput"), "waiting_for_user_input");
    assert_eq!(snake("HTTPError"), "http_error");
    assert_eq!(snake("Step2Done"), "step2_done");
}

#[test]
fn a_variant_keeps_or_adds_its_base_flags() {
    let parse = |t: proc_macro2::TokenStream| syn::parse2::<Args>(t).expect("valid arguments");
    let merged = parse(quote!(fallback = X, typestate, strict)).overridden_by(parse(quote!(name = V)));
    assert!(merged.typestate.is_some() && merged.strict.is_some(), "inherited from the base");
    let merged = parse(quote!(fallback = X)).overridden_by(parse(quote!(typestate)));
    assert!(merged.typestate.is_some(), "added by the variant");
    let merged = parse(quote!(fallback = X)).overridden_by(parse(quote!(name = V)));
    assert!(merged.typestate.is_none() && merged.strict.is_none(), "neither asks");
}

#[test]
fn typestate_is_a_flag_given_once() {
    assert!(syn::parse2::<Args>(quote!(fallback = X)).expect("valid arguments").typestate.is_none(), "off by default");
    assert!(syn::parse2::<Args>(quote!(fallback = X, typestate)).expect("valid arguments").typestate.is_some());
    let err = syn::parse2::<Args>(quote!(fallback = X, typestate, typestate)).err().expect("twice");
    assert!(err.to_string().contains("duplicate `typestate` argument"), "{err}");
    let err = syn::parse2::<Args>(quote!(fallback = X, typestate = false)).err().expect("a flag takes no value");
    assert!(err.to_string().contains("`typestate` takes no value"), "{err}");
}

#[test]
fn format_strings_capture_names_and_dollar_arguments() {
    use crate::model::captured;
    let names = |s: &str| captured(s);
    assert_eq!(names(r#""done {job}""#), ["job"]);
    assert_eq!(names(r#""{n:>w$.p$} {:1$}""#), ["n", "w", "p"]);
    assert_eq!(names(r###"r#"{n:?} {{literal}} {{{m}}}"#"###), ["n", "m"]);
    assert_eq!(names(r#""{{ctx}}""#), Vec::<String>::new());
    assert_eq!(names(r#""{0} {} {:width$}""#), ["width"]);
}

#[test]
fn range_patterns_label_with_their_bounds() {
    use crate::codegen::describe::pattern_label;
    let label = |p: proc_macro2::TokenStream| {
        pattern_label(&syn::parse::Parser::parse2(syn::Pat::parse_single, p).expect("a pattern"))
    };
    assert_eq!(label(quote!(Code(0..=99))).as_deref(), Some("Code(0..=99)"));
    assert_eq!(label(quote!(Num(i64::MIN..=-1))).as_deref(), Some("Num(i64::MIN..=-1)"));
    assert_eq!(label(quote!(Num(10..))).as_deref(), Some("Num(10..)"));
    assert_eq!(label(quote!(Code(_))).as_deref(), Some("Code"));
}

#[test]
fn a_guard_over_several_lines_reads_as_one_without_comments() {
    use crate::parse::one_line;
    assert_eq!(one_line("*n > 3 // big enough\n            && ctx.ok"), "*n > 3 && ctx.ok");
    assert_eq!(one_line("a /* why */ &&\n\tb"), "a && b");
    assert_eq!(one_line("a /* x /* y */ z */ && b"), "a && b");
    // Literals are kept as written: no comment inside a string.
    assert_eq!(one_line("url.starts_with(\"http://x  y\") // scheme"), "url.starts_with(\"http://x  y\")");
    assert_eq!(one_line("s == \"a\\\" // b\""), "s == \"a\\\" // b\"");
    assert_eq!(one_line("s == r#\"a\" // b\"# && t"), "s == r#\"a\" // b\"# && t");
    assert_eq!(one_line("x > 1"), "x > 1");
    // A quote in a character literal opens no string.
    assert_eq!(one_line("c == '\"' &&  s == \"a  b\""), "c == '\"' && s == \"a  b\"");
    assert_eq!(one_line("c == '\\''  // q"), "c == '\\''");
    assert_eq!(one_line("f::<'a>(x)  // l"), "f::<'a>(x)");
}

#[test]
fn states_mermaid_reads_as_keywords_get_ids_of_their_own() {
    let (model, result) = model(
        quote!(fallback = Nop),
        quote! {
            mod m {
                #[states] pub enum S { #[initial] Draft, Note, Note_, #[transient] Style, #[terminal] Default, DefaultMode, StateDiagram }
                #[events] pub enum E { Go, Back, Stop }
                #[actions] pub enum X { Nop, Run }
                transitions! {
                    Draft + Go => Note / Run,
                    Note + Go => Note_ / Run,
                    Note_ + Go => Style,
                    Style => Draft / Nop,
                    Note + Back => Default / Nop,
                    Draft + Stop => Default / Nop,
                    Draft + Back => DefaultMode / Run,
                    DefaultMode + Go => StateDiagram / Run,
                    StateDiagram + Go => Draft / Nop,
                }
            }
        },
    );
    assert_eq!(result, Ok(()));
    let model = model.expect("model");
    let layout = crate::codegen::describe::Layout::new(&model);
    let text = crate::codegen::diagram::mermaid(&model, &layout);
    let expected = "stateDiagram-v2
    state \"Note\" as Note__
    state \"Style\" as Style_
    state \"Default\" as s_Default
    state \"DefaultMode\" as s_DefaultMode
    state \"StateDiagram\" as StateDiagram_
    [*] --> Draft
    Style_ : Style (transient)
    Draft --> Note__ : Go / Run
    Note__ --> Note_ : Go / Run
    Note_ --> Style_ : Go
    Style_ --> Draft : / Nop
    Note__ --> s_Default : Back / Nop
    Draft --> s_Default : Stop / Nop
    Draft --> s_DefaultMode : Back / Run
    s_DefaultMode --> StateDiagram_ : Go / Run
    StateDiagram_ --> Draft : Go / Nop
    s_Default --> [*]
";
    assert_eq!(text, expected);
}

/// Guard text from tokens (a table a `macro_rules!` writes has no source
/// text of its own) keeps prefix operators against their operands, and
/// binary ones apart.
#[test]
fn guard_text_from_tokens_reads_like_source() {
    let text = |guard: proc_macro2::TokenStream| {
        let row: Row = syn::parse2(quote!(A + Go [#guard] => B / X)).expect("row parses");
        row.guard_text.unwrap_or_default()
    };
    assert_eq!(text(quote!(*sum + *x <= LIMIT)), "*sum + *x <= LIMIT");
    assert_eq!(text(quote!(-*n < 0 && !done(&m))), "-*n < 0 && !done(&m)");
    assert_eq!(text(quote!(a - b * c > f(*x, -1))), "a - b * c > f(*x, -1)");
}

/// A row for several states cannot read one state's field, but a name it
/// calls, or one the module declares or imports by name, is not a field.
#[test]
fn a_shared_row_reading_a_field_is_refused_unless_the_name_is_an_item() {
    let shared = |items: proc_macro2::TokenStream, guard: proc_macro2::TokenStream| {
        model(
            quote!(fallback = Nop),
            quote! {
                mod m {
                    #items
                    #[states] pub enum S { #[initial] A, B { n: u32 }, #[terminal] C }
                    #[events] pub enum E { Go, Stop }
                    #[actions] pub enum X { Nop }
                    transitions! { A + Go => B { n: 1 } / Nop, B + Go => A / Nop, * + Stop [#guard] => C / Nop }
                }
            },
        )
        .1
    };
    let refused = shared(quote!(), quote!(*n > 0)).expect_err("`n` is `B`'s field");
    assert!(refused.contains("`n` is a field of `B` only"), "{refused}");
    // Called: a function, maybe from a glob import.
    assert_eq!(shared(quote! { use super::*; }, quote!(n() > 0)), Ok(()));
    // Declared or imported by name in the module.
    let (constant, import) = (quote! { const n: u32 = 0; }, quote! { use std::u32::MAX as n; });
    assert_eq!(shared(constant, quote!(n > 0)), Ok(()));
    assert_eq!(shared(import, quote!(n > 0)), Ok(()));
}

#[test]
fn a_context_dropped_with_errors_unchecked_panics() {
    let dropped = |record: fn(&Ctxt)| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let result = std::panic::catch_unwind(|| {
            let cx = Ctxt::new();
            record(&cx);
        });
        std::panic::set_hook(hook);
        result.is_err()
    };
    assert!(dropped(|cx| cx.error_at(proc_macro2::Span::call_site(), "lost")));
    assert!(dropped(|cx| cx.error_beside_output(proc_macro2::Span::call_site(), "lost")));
    assert!(!dropped(|_| {}));
    // Checked, the errors are handed over: both kinds, apart.
    let cx = Ctxt::new();
    cx.error_at(proc_macro2::Span::call_site(), "stops");
    cx.error_beside_output(proc_macro2::Span::call_site(), "beside");
    let (hard, beside) = cx.check_apart();
    assert_eq!(hard.map_err(|e| e.to_string()), Err("stops".to_owned()));
    assert_eq!(beside.map(|e| e.to_string()).as_deref(), Some("beside"));
    let cx = Ctxt::new();
    cx.error_beside_output(proc_macro2::Span::call_site(), "beside");
    assert_eq!(cx.check().map_err(|e| e.to_string()), Err("beside".to_owned()));
}

/// What a guard's `let`s bind is the row's: each name that would hide a
/// state or event binding, a carried field or `ctx`, or that the guard
/// binds twice, is one error; names of their own pass, and so does a `let`
/// that binds nothing.
#[test]
fn guard_bindings_may_not_hide_the_rows_names() {
    let table = |rows: proc_macro2::TokenStream| {
        model(
            quote!(fallback = Nothing),
            quote! {
                mod m {
                    #[context] pub struct Ctx { pub n: usize }
                    #[states] #[carry(log: Vec<u32>)] pub enum State { #[initial] Idle { jobs: Vec<u32> } }
                    #[events] pub enum Event { Finish(u32), Check }
                    #[actions] pub enum Action { Nothing, At(usize) }
                    transitions! { #rows }
                }
            },
        )
        .1
    };
    let errors = table(quote! {
        Idle { jobs } + Finish(id) [let Some(jobs) = f(id)] => Idle / At(jobs),
        Idle { jobs } + Finish(id) [let Some(id) = f(jobs)] => Idle / At(id),
        Idle { jobs } + Check [let Some(log) = f(jobs)] => Idle / At(log),
        Idle { jobs } + Check [let Some(ctx) = f(jobs)] => Idle / At(ctx),
        Idle { jobs } + Check [let Some(a) = f(jobs) && let Some(a) = g(jobs)] => Idle / At(a),
    })
    .expect_err("five clashes");
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(lines.len(), 5, "{errors}");
    for (line, (name, what)) in lines.iter().zip([
        ("jobs", "the state pattern"),
        ("id", "the event pattern"),
        ("log", "carried field"),
        ("ctx", "the context"),
        ("a", "bound twice"),
    ]) {
        assert!(line.starts_with(&format!("`{name}`")) && line.contains(what), "{line}");
    }
    table(quote! {
        Idle { jobs } + Finish(id) [let Some(at) = f(jobs, id) && at > 0 && let None = g(at)] => Idle / At(at),
        Idle + Finish(_) => Idle / Nothing,
    })
    .expect("names of the guard's own");
}

/// The names a guard hands its row are those of the `let`s at the top of
/// its `&&` chain, found through every kind of pattern, `mut` noted; a
/// `let` under `||` hands nothing.
#[test]
fn guard_lets_bind_through_every_pattern_at_the_top_of_the_chain() {
    let names = |guard: proc_macro2::TokenStream| {
        let guard: syn::Expr = syn::parse2(guard).expect("guard parses");
        let lets = crate::model::guard_lets(&guard).len();
        let names: Vec<String> = crate::model::guard_bindings(&guard)
            .into_iter()
            .map(|(n, m)| if m { format!("mut {n}") } else { n.to_string() })
            .collect();
        (lets, names)
    };
    assert_eq!(
        names(quote!(let S { a, b: (c, [d, ..]), .. } = x && ok && let &(e | e) = y && let (Some(mut f)) = z)),
        (3, ["a", "c", "d", "e", "mut f"].map(String::from).to_vec())
    );
    assert_eq!(names(quote!(ready || let Some(w) = v)), (0, Vec::new()));
    assert_eq!(names(quote!(!done)), (0, Vec::new()));
}
