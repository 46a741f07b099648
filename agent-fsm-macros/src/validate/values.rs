//! The rule that an effects block ends in no value: its statements are
//! spliced before the target is built, so a value left last is dropped
//! without a word.

use crate::ctxt::Ctxt;
use crate::model::Model;
use syn::{BinOp, Expr, Stmt};

/// `=> { 42usize } Busy`: the value goes nowhere (the block is not the
/// target's payload), which is surely not what was meant. An expression
/// whose form makes it a value (a literal, a name, arithmetic, a struct or
/// a tuple, ...) is reported here, at the value; one that may well be `()`
/// (a call, an `if`, a macro) is left to the type check the generated
/// code adds (`let () = ..`).
pub(super) fn check_effects_end_in_no_value(cx: &Ctxt, model: &Model) {
    for row in model.rows.iter().filter(|r| !r.from_base) {
        let Some(block) = &row.effects else {
            continue;
        };
        if let Some(Stmt::Expr(tail, None)) = block.stmts.last()
            && is_value(tail)
        {
            cx.error_spanned_by(
                tail,
                "this `{ .. }` block ends in a value, which the row would drop: end it with `;`, \
                 or pass the value on in the target's or the action's payload",
            );
        }
    }
}

/// Whether `e` is a value other than `()` by its form alone.
pub(crate) fn is_value(e: &Expr) -> bool {
    match e {
        Expr::Tuple(t) => !t.elems.is_empty(),
        Expr::Paren(p) => is_value(&p.expr),
        Expr::Binary(b) => !matches!(
            b.op,
            BinOp::AddAssign(_)
                | BinOp::SubAssign(_)
                | BinOp::MulAssign(_)
                | BinOp::DivAssign(_)
                | BinOp::RemAssign(_)
                | BinOp::BitXorAssign(_)
                | BinOp::BitAndAssign(_)
                | BinOp::BitOrAssign(_)
                | BinOp::ShlAssign(_)
                | BinOp::ShrAssign(_)
        ),
        Expr::Lit(_)
        | Expr::Path(_)
        | Expr::Unary(_)
        | Expr::Reference(_)
        | Expr::RawAddr(_)
        | Expr::Array(_)
        | Expr::Repeat(_)
        | Expr::Struct(_)
        | Expr::Range(_)
        | Expr::Cast(_)
        | Expr::Closure(_)
        | Expr::Field(_)
        | Expr::Index(_) => true,
        _ => false,
    }
}
