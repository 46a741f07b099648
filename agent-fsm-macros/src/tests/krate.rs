//! `crate = path`: no path to `::agent_fsm` is left in the expansion.

use quote::quote;

fn door(args: proc_macro2::TokenStream) -> String {
    let item = quote! {
        mod door {
            #[states] pub enum State { #[initial] Closed, Open }
            #[events] pub enum Event { Push, Pull }
            #[actions] pub enum Action { Creak, Nothing }
            transitions! {
                Closed + Push => Open / Creak,
                Open + Pull => Closed / Nothing,
            }
        }
    };
    crate::expand::attribute(args, item).to_string()
}

#[test]
fn every_path_goes_through_the_given_crate() {
    let out = door(quote!(fallback = Nothing, serde, typestate, export = door_table, crate = ::fsm));
    assert!(!out.contains("agent_fsm ::"), "{out}");
    assert!(!out.contains("\"::agent_fsm"), "{out}");
    assert!(out.contains(":: fsm :: StateMachine"), "{out}");
    assert!(out.contains("\"::fsm::__private::serde\""), "{out}");
}

#[test]
fn without_the_argument_the_paths_are_the_default_ones() {
    let out = door(quote!(fallback = Nothing, serde));
    assert!(out.contains(":: agent_fsm :: StateMachine"), "{out}");
    assert!(out.contains("\"::agent_fsm::__private::serde\""), "{out}");
}

#[test]
fn a_crate_argument_without_a_path_or_twice_is_an_error() {
    let message = |args: proc_macro2::TokenStream| match syn::parse2::<crate::parse::Args>(args) {
        Ok(_) => String::from("accepted"),
        Err(e) => e.to_string(),
    };
    assert_eq!(message(quote!(crate)), "`crate` takes a value: `crate = ::path::to::agent_fsm`");
    assert_eq!(message(quote!(crate =)), "`crate` takes a value after `=`: `crate = ::path::to::agent_fsm`");
    assert_eq!(message(quote!(crate = ::a, crate = ::b)), "duplicate `crate` argument");
    assert_eq!(message(quote!(crate = ::fsm, fallback = Nothing)), "accepted");
}
