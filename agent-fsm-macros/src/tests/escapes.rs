//! A `break` or `continue` in a row's code that leaves the code itself is
//! refused, wherever in a loop expression it sits: a `for`'s iterator and a
//! `while`'s condition run outside that loop's body.

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
