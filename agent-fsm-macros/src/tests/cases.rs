//! Whole expansions of inputs that once broke the macro itself (a panic,
//! a stack overflow, an edge that can never fire), each checked on the
//! expansion's tokens.

use quote::quote;

/// The expansion of `#[state_machine(args)] module`, as text.
fn expand(args: proc_macro2::TokenStream, module: proc_macro2::TokenStream) -> String {
    crate::expand::state_machine(args, module).to_string()
}

/// A machine using every kind of generated code (carried fields, a
/// transient state, a context, the typed view, serde, `*` rows), written
/// with `r#` before the role enums' names and before some variants'.
fn raw_named() -> proc_macro2::TokenStream {
    quote! {
        mod agent {
            #[context]
            pub struct r#Config { pub max: u32 }

            #[states]
            #[carry(log: Vec<String>)]
            pub enum r#State {
                #[initial]
                r#Idle,
                Calling { retries: u32 },
                #[transient]
                Checking { reply: String },
                #[terminal]
                #[no_carry]
                Stopped,
            }

            #[events]
            pub enum r#Event { r#Input(String), Reply(String), Failed, Stop }

            #[actions]
            pub enum r#Action { r#Wait, Call(usize), Retry(u32), Halt }

            transitions! {
                r#Idle + r#Input(text) => { log.push(text); } Calling { retries: 0 } / Call(log.len()),
                Calling + Reply(reply) => Checking { reply },
                Calling { retries } + Failed [*retries < ctx.max] => Calling { retries: retries + 1 } / Retry(*retries),
                Calling + Failed => Idle / Wait,
                Checking => Idle / r#Wait,
                * + Stop => Stopped / Halt,
            }
        }
    }
}

#[test]
fn raw_enum_names_expand_without_a_panic() {
    let out = expand(quote!(fallback = r#Wait, typestate, serde), raw_named());
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains("r#State"), "{out}");
    let out = expand(quote!(fallback = r#Wait, strict, name = r#Agent), raw_named());
    assert!(out.contains("compile_error"), "strict: the table leaves pairs out");
}

#[test]
fn any_row_stays_out_of_a_state_whose_earlier_row_takes_the_same_pattern() {
    let cx = crate::ctxt::Ctxt::new();
    let args = syn::parse2(quote!(fallback = Wait)).expect("args parse");
    let module = syn::parse2(quote! {
        mod m {
            #[states] pub enum State { #[initial] Idle, Busy, Held { n: u32 }, Done }
            #[events] pub enum Event { Go(u32), Stop }
            #[actions] pub enum Action { Wait, Start, Finish }
            transitions! {
                Idle + Go(0) => Busy / Start,
                Busy + Go(1) => Idle / Start,
                Busy + Go(0) [true] => Idle / Start,
                Busy + Stop => Held { n: 0 } / Finish,
                Held { n: 0 } + Go(0) => Idle / Start,
                Held + Stop => Done / Finish,
                Done + Stop => Idle / Wait,
                * + Go(0) => Done / Finish,
                Done + Go(0) => Idle / Wait,
            }
        }
    })
    .expect("module parses");
    let model = crate::model::Model::from_syntax(&cx, args, module).expect("model builds");
    cx.check().expect("no errors");
    let star = model.rows.iter().find(|r| r.any).expect("the `*` row");
    let names: Vec<String> = star.sources.iter().map(|&s| model.states[s].ident.to_string()).collect();
    // `Idle` decides `Go(0)` above it; another pattern or a guarded row
    // (`Busy`), a source pattern that takes some data (`Held`), or a row
    // below (`Done`) does not.
    assert_eq!(names, ["Busy", "Held", "Done"]);
}

/// The messages of an expansion's `compile_error!`s.
fn errors(out: &str) -> Vec<String> {
    out.split("compile_error ! {")
        .skip(1)
        .map(|e| e.split("\" }").next().unwrap_or_default().trim().to_owned())
        .collect()
}

#[test]
fn every_unknown_name_of_a_row_is_reported_in_one_expansion() {
    let module = |row: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #[states] pub enum State { #[initial] Idle, Calling }
                #[events] pub enum Event { Go, Failed }
                #[actions] pub enum Action { Wait, GiveUp }
                transitions! { Idle + Go => Calling / Wait, #row, }
            }
        }
    };
    for (row, expected) in [
        (quote!(Calling + Faild => Idle / GivUp), ["unknown event `Faild`", "unknown action `GivUp`"].as_slice()),
        (quote!(Calling + Faild => Idel / Wait), &["unknown event `Faild`", "unknown state `Idel`"]),
        (
            quote!(Caling + Faild => Idle / GivUp),
            &["unknown state `Caling`", "unknown event `Faild`", "unknown action `GivUp`"],
        ),
        (quote!(Calling | Idel + Failed => Idle / GivUp), &["unknown state `Idel`", "unknown action `GivUp`"]),
    ] {
        let errors = errors(&expand(quote!(fallback = Wait), module(row.clone())));
        assert_eq!(errors.len(), expected.len(), "{row}: {errors:?}");
        for (e, want) in errors.iter().zip(expected) {
            assert!(e.contains(want), "{row}: {errors:?}");
        }
    }
}

/// A table whose guard nests `depth` parentheses.
fn deep_guard(depth: usize) -> proc_macro2::TokenStream {
    let guard: proc_macro2::TokenStream =
        format!("{}true{}", "(".repeat(depth), ")".repeat(depth)).parse().expect("balanced");
    quote! {
        mod m {
            #[states] pub enum State { #[initial] Idle, Busy }
            #[events] pub enum Event { Go, Stop }
            #[actions] pub enum Action { Wait, Start }
            transitions! {
                Idle + Go [#guard] => Busy / Start,
                Busy + Stop => Idle / Wait,
            }
        }
    }
}

#[test]
fn deeply_nested_guard_expands_on_a_small_stack() {
    // The default stack of a test thread; rustc gives a macro more, but
    // the macro must not be what runs out first.
    let run = |depth: usize| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || expand(quote!(fallback = Wait), deep_guard(depth)))
            .expect("thread starts")
            .join()
            .expect("no panic")
    };
    let out = run(1_000);
    assert!(out.contains("more than 64 deep"), "too deep for the macro: an error, not a crash");
    // The guard's brackets are a group too: 63 parentheses inside them are
    // as deep as the macro reads, on the same stack.
    let out = run(crate::parse::depth::MAX_NESTING - 1);
    assert!(!out.contains("compile_error"), "{out}");
    let out = run(crate::parse::depth::MAX_NESTING);
    assert!(out.contains("more than 64 deep"), "{out}");
}

#[test]
fn deeply_nested_code_beside_the_table_is_an_error_not_a_crash() {
    let module = || {
        let deep: proc_macro2::TokenStream =
            format!("fn f() -> bool {{ {}true{} }}", "(".repeat(1_000), ")".repeat(1_000)).parse().expect("balanced");
        quote! {
        mod m {
            #deep
            #[states] pub enum State { #[initial] Idle, Busy }
            #[events] pub enum Event { Go, Stop }
            #[actions] pub enum Action { Wait, Start }
            transitions! { Idle + Go => Busy / Start, Busy + Stop => Idle / Wait }
        }
        }
    };
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || expand(quote!(fallback = Wait), module()))
        .expect("thread starts")
        .join()
        .expect("no panic");
    assert!(out.contains("more than 64 deep"), "{out}");
}

#[test]
fn bare_event_name_matches_an_empty_payload_list() {
    let out = expand(
        quote!(fallback = Wait),
        quote! {
            mod m {
                #[states] pub enum State { #[initial] Idle, Busy }
                #[events] pub enum Event { Ping(), Pong {} }
                #[actions] pub enum Action { Wait, Start }
                transitions! { Idle + Ping => Busy / Start, Busy + Pong => Idle / Wait }
            }
        },
    );
    assert!(!out.contains("compile_error"), "{out}");
    // Not the unit patterns `Event::Ping` and `Event::Pong`, which match
    // neither variant.
    assert!(!out.contains("Event :: Ping =>") && !out.contains("Event :: Pong =>"), "{out}");
}

/// A small machine around `rows`, with `states` as its states.
fn machine(states: proc_macro2::TokenStream, rows: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[states] pub enum State { #states }
            #[events] pub enum Event { Go, Stop }
            #[actions] pub enum Action { Wait, Start }
            transitions! { #rows }
        }
    }
}

#[test]
fn row_cut_short_is_reported_at_its_last_token() {
    let source = "mod m { #[states] pub enum State { #[initial] Idle, Busy } \
                  #[events] pub enum Event { Go, Stop } #[actions] pub enum Action { Wait, Start } \
                  transitions! { Idle + Go => Busy / Start, Busy + Stop => } }";
    let module: proc_macro2::TokenStream = source.parse().expect("lexes");
    let out = crate::expand::state_machine(quote!(fallback = Wait), module);
    let at = out.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => Some(p.span()),
        _ => None,
    });
    let at = at.expect("an error").byte_range();
    // The spans carry places here (`span-locations`): the error's is the
    // `>` of the row's `=>`, the input's last token but its braces.
    assert_eq!(at.start, source.rfind("=>").expect("the row's arrow") + 1);
    let errors =
        errors(&crate::expand::state_machine(quote!(fallback = Wait), source.parse().expect("lexes")).to_string());
    assert!(errors.iter().any(|e| e.contains("this row is cut short")), "{errors:?}");
}

#[test]
fn other_syntax_errors_keep_their_place() {
    // In the middle of the table, and inside the last row's payload: not
    // where the table ends, so not "cut short".
    for (source, at) in [
        ("Idle + => Busy / Start, Busy + Stop => Idle / Wait", "="),
        ("Idle + Go => Busy / Start, Busy + Stop => Idle / Start(x y)", "y"),
    ] {
        let module = format!(
            "mod m {{ #[states] pub enum State {{ #[initial] Idle, Busy }} \
             #[events] pub enum Event {{ Go, Stop }} #[actions] pub enum Action {{ Wait, Start }} \
             transitions! {{ {source} }} }}"
        );
        let out = crate::expand::state_machine(quote!(fallback = Wait), module.parse().expect("lexes"));
        let text = out.to_string();
        assert!(!text.contains("cut short"), "{source}: {text}");
        let span = out.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => Some(p.span()),
            _ => None,
        });
        let range = span.expect("an error").byte_range();
        assert!(module[range].starts_with(at), "{source}: {text}");
    }
}

#[test]
fn effects_ending_in_a_value_are_reported() {
    for (block, reported) in [
        (quote!({ 42usize }), true),
        (
            quote!({
                let n = 1;
                n + 1
            }),
            true,
        ),
        (quote!({ (1, 2) }), true),
        (quote!({ (n) }), true),
        (quote!({ n += 1 }), false),
        (quote!({ () }), false),
        (quote!({ log(1) }), false),
        (
            quote!({
                log(1);
            }),
            false,
        ),
    ] {
        let rows = quote!(Idle + Go => #block Busy / Start, Busy + Stop => Idle / Wait);
        let errors = errors(&expand(
            quote!(fallback = Wait),
            machine(
                quote!(
                    #[initial]
                    Idle,
                    Busy
                ),
                rows,
            ),
        ));
        let found = errors.iter().any(|e| e.contains("ends in a value"));
        assert_eq!(found, reported, "{block}: {errors:?}");
    }
}

#[test]
fn tuple_target_without_its_payload_is_reported() {
    let rows = quote!(
        Idle + Go => Busy / Start,
        Idle + Stop => Busy / Wait,
        Busy + Go => Busy / Wait,
        Busy + Stop => Idle / Wait
    );
    let errors = errors(&expand(
        quote!(fallback = Wait),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy(u32)
            ),
            rows,
        ),
    ));
    // Twice: the row that stays in `Busy` keeps its data.
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("`Busy` holds data: write it in the row, `Busy(/* u32 */)`"), "{errors:?}");
    let rows = quote!(Idle + Go => Busy() / Start, Busy + Stop => Idle / Wait);
    let out = expand(
        quote!(fallback = Wait),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy()
            ),
            rows,
        ),
    );
    assert!(!out.contains("compile_error"), "{out}");
}

#[test]
fn empty_states_enum_says_a_machine_needs_a_state() {
    let empty = errors(&expand(quote!(fallback = Wait), machine(quote!(), quote!(Idle + Go => Idle / Wait))));
    assert!(empty.iter().any(|e| e.contains("the states enum declares no states")), "{empty:?}");
    assert!(empty.iter().any(|e| e.contains("states are: none")), "{empty:?}");
    assert!(!empty.iter().any(|e| e.contains("mark one of")), "{empty:?}");
    let without_initial =
        errors(&expand(quote!(fallback = Wait), machine(quote!(Idle), quote!(Idle + Go => Idle / Wait))));
    assert!(without_initial.iter().any(|e| e.contains("no initial state: mark one of `Idle`")), "{without_initial:?}");
}

#[test]
fn missing_fallback_and_repeated_variants_leave_the_machine_generated() {
    let rows = quote!(Idle + Go => Busy / Start, Busy + Stop => Idle / Wait);
    let out = expand(
        quote!(),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy
            ),
            rows.clone(),
        ),
    );
    assert_eq!(errors(&out).len(), 1, "{out}");
    assert!(errors(&out)[0].contains("missing `fallback`"), "{out}");
    assert!(out.contains("pub struct Machine"), "{out}");
    let out = expand(
        quote!(fallback = Wait),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy,
                Busy
            ),
            rows,
        ),
    );
    let errors = errors(&out);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("state `Busy` is declared twice"), "{errors:?}");
    assert!(out.contains("pub struct Machine"), "{out}");
    assert!(
        out.contains("pub enum State { # [doc = \"\\nThe initial state.\"] Idle , Busy }"),
        "the second `Busy` is left out: {out}"
    );
}

#[test]
fn effects_ending_in_a_call_must_be_unit() {
    let rows = quote!(Idle + Go => { log(1) } Busy / Start, Busy + Stop => { log(2); } Idle / Wait);
    let out = expand(
        quote!(fallback = Wait),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy
            ),
            rows,
        ),
    );
    // rustc reports a value there at the call; the `;`-ended block stays.
    assert!(out.contains("let () = log (1) ;"), "{out}");
    assert!(out.contains("log (2) ;") && !out.contains("let () = log (2)"), "{out}");
}

/// `#[deadline]` and `#[during_work]` mark event variants once, without
/// arguments; anywhere else each is reported (the ui cases show where).
#[test]
fn event_marks_are_reported_where_they_mean_nothing() {
    let module = |on: &str, mark: proc_macro2::TokenStream| {
        let at = |here: &str| if on == here { mark.clone() } else { quote!() };
        let (state, event_enum, event, other) = (at("state"), at("event enum"), at("event"), at("other"));
        quote! {
            mod m {
                #[states] pub enum State { #[initial] Idle, #state Busy }
                #[events] #event_enum pub enum Event { Go, #event Timeout }
                #[actions] pub enum Action { Wait }
                pub enum Other { #other #[doc = "kept"] A }
                transitions! { Idle + Go => Busy / Wait, Busy + Timeout => Idle / Wait, }
            }
        }
    };
    let on_no_event = "marks an event whose timer lets input through: put it on a variant of the `#[events]` enum";
    for (on, mark, expected) in [
        ("event", quote!(#[deadline]), &[][..]),
        ("event", quote!(#[deadline] #[during_work]), &[][..]),
        ("state", quote!(#[deadline]), &[on_no_event][..]),
        ("other", quote!(#[deadline]), &[on_no_event][..]),
        ("event enum", quote!(#[deadline]), &["`#[deadline]` marks one event: put it on that variant of the enum"][..]),
        ("event", quote!(#[deadline(30)]), &["`#[deadline]` takes no arguments; write `#[deadline]`"][..]),
        ("event", quote!(#[deadline] #[deadline]), &["`#[deadline]` is written twice on this event; remove one"][..]),
        (
            "event",
            quote!(#[during_work] #[during_work]),
            &["`#[during_work]` is written twice on this event; remove one"][..],
        ),
    ] {
        let out = expand(quote!(fallback = Wait), module(on, mark.clone()));
        let errors = errors(&out);
        assert_eq!(errors.len(), expected.len(), "{mark} on {on}: {errors:?}");
        for (e, want) in errors.iter().zip(expected) {
            assert!(e.contains(want), "{mark} on {on}: {errors:?}");
        }
        if expected.is_empty() {
            assert!(out.contains("const DEADLINES : & 'static [EventKind] = & [EventKind :: Timeout]"), "{out}");
            assert!(!out.contains("# [deadline]"), "the mark is left in the output: {out}");
            assert!(out.contains("\"kept\""), "another enum's attributes are dropped: {out}");
        }
    }
}

#[test]
fn methods_of_the_enums_named_as_generated_ones_are_reported() {
    let module = quote! {
        mod m {
            #[states] pub enum State { #[initial] Idle, Busy }
            #[events] pub enum Event { Go, Stop }
            #[actions] pub enum Action { Wait, Start }
            impl Event { pub fn kind(&self) {} pub fn is_idle(&self) {} }
            impl State { pub fn is_idle(&self) {} pub fn helper(&self) {} }
            transitions! { Idle + Go => Busy / Start, Busy + Stop => Idle / Wait, }
        }
    };
    let errors = errors(&expand(quote!(fallback = Wait), module));
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("generates `Event::kind`"), "{errors:?}");
    assert!(errors[1].contains("generates `State::is_idle`"), "{errors:?}");
}

#[test]
fn a_step_local_nested_in_a_rows_code_is_reported() {
    let rows = quote! {
        Idle + Go => { if true { let __action = 1; } } Busy / Start,
        Busy + Stop => Idle / Wait,
    };
    let errors = errors(&expand(
        quote!(fallback = Wait),
        machine(
            quote!(
                #[initial]
                Idle,
                Busy
            ),
            rows,
        ),
    ));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("`__action` is a name the generated step function uses"), "{errors:?}");
}
