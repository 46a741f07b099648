//! The diagram and the machine's rustdoc: a `*` row drawn once, from a node
//! that names the states it leaves; the pinned, hashed script; and no
//! script at all under `no_diagram`.

use super::phases::model;
use crate::codegen::{describe::Layout, diagram};
use crate::model::Model;
use quote::quote;

fn machine(args: proc_macro2::TokenStream) -> Model {
    let (model, result) = model(
        args,
        quote! {
            mod m {
                #[states] pub enum S { #[initial] Idle, Busy, Paused, #[transient] Check, #[terminal] Done }
                #[events] pub enum E { Go, Stop, Reset, Hold }
                #[actions] pub enum X { Nop, Run }
                transitions! {
                    Idle + Go => Busy / Run,
                    /// Held twice: one edge, two lines.
                    Idle + Hold [urgent() || late()] => Busy / Nop,
                    Busy + Hold => Paused / Nop,
                    Busy + Go => Idle / Run,
                    Paused + Go => Check,
                    Check => Busy / Run,
                    * + Stop => Done / Nop,
                    * except (Idle) + Reset => Idle / Nop,
                    * except (Idle) + Hold => Paused / Nop,
                }
            }
        },
    );
    assert_eq!(result, Ok(()));
    model.expect("model")
}

#[test]
fn a_star_row_is_one_edge_from_a_node_naming_the_states_it_leaves() {
    let model = machine(quote!(fallback = Nop));
    let text = diagram::mermaid(&model, &Layout::new(&model));
    // `Busy + Hold` comes first, so the last `*` row leaves Paused and Done.
    let expected = "stateDiagram-v2
    state \"any state\" as any_state
    state \"any state except Idle\" as any_state_2
    state \"any state except Idle, Busy\" as any_state_3
    [*] --> Idle
    Check : Check (transient)
    Idle --> Busy : Go / Run<br/>Hold [urgent() || late()] / Nop
    Busy --> Paused : Hold / Nop
    Busy --> Idle : Go / Run
    Paused --> Check : Go
    Check --> Busy : / Run
    any_state --> Done : Stop / Nop
    any_state_2 --> Idle : Reset / Nop
    any_state_3 --> Paused : Hold / Nop
    Done --> [*]
    classDef anyState fill:none,stroke-dasharray:4 3
    class any_state,any_state_2,any_state_3 anyState
";
    assert_eq!(text, expected);
}

fn docs(model: &Model) -> String {
    let layout = Layout::new(model);
    let text = diagram::mermaid(model, &layout);
    diagram::machine_docs(model, &layout, &text).to_string()
}

#[test]
fn the_docs_load_one_pinned_script_with_its_hash_and_list_a_star_row_once() {
    let docs = docs(&machine(quote!(fallback = Nop)));
    assert_eq!(docs.matches("<script").count(), 2, "{docs}");
    assert_eq!(
        docs.matches(
            r#"<script src=\"https://cdn.jsdelivr.net/npm/mermaid@11.12.2/dist/mermaid.min.js\" integrity=\"sha384-"#
        )
        .count(),
        1,
        "{docs}"
    );
    assert!(docs.contains("crossorigin=\\\"anonymous\\\""), "{docs}");
    assert!(docs.contains(r#"<pre class=\"mermaid\" hidden>"#), "{docs}");
    assert!(docs.contains("if (window.mermaid)"), "{docs}");
    assert_eq!(docs.matches("| `*` | `Stop` | `Done` / `Nop` |").count(), 1, "{docs}");
    assert_eq!(docs.matches("| `*` except `Idle`, `Busy` | `Hold` | `Paused` / `Nop` |").count(), 1, "{docs}");
    assert!(docs.contains("9 rows"), "{docs}");
    // A `|` in a guard is escaped, so the row keeps its three cells.
    assert!(docs.contains(r"| `Idle` | `Hold` `[urgent() \\|\\| late()]` | `Busy` / `Nop` (1) |"), "{docs}");
    // The note is numbered below the table.
    assert!(docs.contains(r"|\n\n1. Held twice: one edge, two lines.\n"), "{docs}");
}

#[test]
fn no_diagram_leaves_no_script_and_keeps_the_table() {
    let docs = docs(&machine(quote!(fallback = Nop, no_diagram)));
    assert!(!docs.contains("<script") && !docs.contains("mermaid"), "{docs}");
    assert!(docs.contains("# Transitions") && docs.contains("| `Idle` | `Go` | `Busy` / `Run` |"), "{docs}");
}

#[test]
fn no_diagram_is_a_flag_given_once() {
    use crate::parse::Args;
    let error = |args: proc_macro2::TokenStream| syn::parse2::<Args>(args).err().map(|e| e.to_string());
    assert_eq!(
        error(quote!(fallback = Nop, no_diagram = true)).as_deref(),
        Some("`no_diagram` takes no value: write `no_diagram` alone to turn it on, and leave it out to keep it off")
    );
    assert_eq!(error(quote!(no_diagram, no_diagram)).as_deref(), Some("duplicate `no_diagram` argument"));
    assert_eq!(error(quote!(fallback = Nop, no_diagram)), None);
}
