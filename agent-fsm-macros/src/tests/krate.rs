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

#[test]
fn the_path_is_read_where_the_argument_stands_and_ends_at_its_comma() {
    use crate::shared::krate::crate_path;
    let path = |args: proc_macro2::TokenStream| crate_path(&args).map(|p| p.to_string());
    assert_eq!(path(quote!(crate = ::fsm)), Some(":: fsm".to_owned()));
    assert_eq!(path(quote!(fallback = Nothing, crate = ::a::b, serde)), Some(":: a :: b".to_owned()));
    // `crate::check` in another argument's value is no `crate =` argument.
    assert_eq!(path(quote!(invariants = crate::check, fallback = Nothing)), None);
    assert_eq!(path(quote!(fallback = crate)), None);
    assert_eq!(path(quote!(crate =)), None);
    assert_eq!(path(quote!(fallback = Nothing)), None);
}

#[test]
fn only_paths_that_start_at_the_crate_are_rewritten() {
    use crate::shared::krate::rewrite;
    let path = quote!(::fsm);
    let out = |tokens: proc_macro2::TokenStream| rewrite(tokens, Some(&path)).to_string();
    assert_eq!(out(quote!(::agent_fsm::Kind)), ":: fsm :: Kind");
    assert_eq!(out(quote!(impl ::agent_fsm::Kind for X {})), "impl :: fsm :: Kind for X { }");
    assert_eq!(out(quote!(f(::agent_fsm::a, ::agent_fsm::b))), "f (:: fsm :: a , :: fsm :: b)");
    // Another item's path that ends in `agent_fsm` is left alone.
    assert_eq!(out(quote!(my::agent_fsm::Kind)), "my :: agent_fsm :: Kind");
    assert_eq!(out(quote!(::agent_fsm_macros::x)), ":: agent_fsm_macros :: x");
    assert_eq!(
        out(quote!(#[serde(crate = "::agent_fsm::__private::serde")])),
        "# [serde (crate = \"::fsm::__private::serde\")]"
    );
    assert_eq!(out(quote!(#[doc = "see ::agent_fsm"])), "# [doc = \"see ::agent_fsm\"]");
    assert_eq!(rewrite(quote!(::agent_fsm::Kind), None).to_string(), ":: agent_fsm :: Kind");
}
