//! A `break`, `continue`, `return` or `?` in a row's code that leaves the
//! code itself is refused, wherever it sits: in a `for`'s iterator or a
//! `while`'s condition (which run outside that loop's body), or in the
//! arguments of a std macro such as `println!`.

use super::phases::model;
use quote::quote;

/// A machine with a transient state, whose rows run inside the loop that
/// resolves it: an escaping `break` there would leave that loop, and a
/// `continue` would spin it forever.
fn transient_machine(check_row: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[states] pub enum S { #[initial] Idle, #[transient] Check { n: u32 }, Big }
            #[events] pub enum E { Go(u32), Back }
            #[actions] pub enum X { Wait, Start(u32) }
            transitions! {
                Idle + Go(n) => Check { n },
                #check_row
                Check { n } => Idle / Start(n),
                Big + Back => Idle / Wait,
            }
        }
    }
}

#[test]
fn break_in_a_for_loops_iterator_leaves_the_row() {
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(Check { n } [*n > 3] => { for _ in { break; 0..1 } {} } Big / Start(n),)),
    );
    let errors = result.expect_err("the break leaves the effects");
    assert!(errors.contains("`break` out of a row's effects"), "{errors}");
}

#[test]
fn continue_in_a_while_condition_leaves_the_guard() {
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(Check { n } [{ while { continue; } {} *n > 3 }] => Big / Start(n),)),
    );
    let errors = result.expect_err("the continue leaves the guard");
    assert!(errors.contains("`continue` out of a row's guard"), "{errors}");
}

#[test]
fn loops_inside_the_iterator_or_condition_are_the_codes_own() {
    // A loop written inside the iterator or the condition, and the body's
    // own `break`, stay inside the row's code.
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(
            Check { n } [*n > 3] => {
                for i in { let mut k = 0; loop { k += 1; if k > 2 { break; } } 0..k } { if i == 1 { break; } }
                'w: while { loop { break; } false } { continue 'w; }
            } Big / Start(n),
        )),
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn continue_in_the_arguments_of_a_std_macro_leaves_the_row() {
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(
            Check { n } [*n > 3] => { println!("{}", if n > 100 { continue } else { n }); } Big / Start(n),
        )),
    );
    let errors = result.expect_err("the continue leaves the effects");
    assert!(errors.contains("`continue` out of a row's effects"), "{errors}");
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(Check { n } [*n > 3] => { std::assert!(n.checked_add(1)? > 0); } Big / Start(n),)),
    );
    let errors = result.expect_err("the ? leaves the effects");
    assert!(errors.contains("`?` in a row's effects"), "{errors}");
}

#[test]
fn other_macros_and_closures_in_std_macro_arguments_are_left_alone() {
    // A macro of the user's own may wrap its arguments in a loop; a closure
    // in a std macro's arguments has a `return` of its own.
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(quote!(
            Check { n } [*n > 3] => {
                retry!({ break });
                let _ = format!("{}", (|| { return 1; })());
                let _ = vec![0; 3];
            } Big / Start(n),
        )),
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn a_raw_label_is_the_label_without_r_hash() {
    // `'r#a` and `'a` name one label to rustc: the break stays in the loop.
    let (_, result) = model(
        quote!(fallback = Wait),
        transient_machine(
            quote!(Check { n } [*n > 3] => { 'r#a: loop { break 'a; } 'b: loop { break 'r#b; } } Big / Start(n),),
        ),
    );
    assert_eq!(result, Ok(()));
}
