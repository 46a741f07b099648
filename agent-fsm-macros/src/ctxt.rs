//! Collects every semantic error of one table so a build reports them all
//! at once, each at its own span (the serde_derive `Ctxt` pattern).

use core::cell::RefCell;
use core::fmt::Display;
use quote::ToTokens;

/// The error accumulator threaded through model building and validation.
#[derive(Default)]
pub(crate) struct Ctxt {
    // `None` once `check` has run, so dropping an unchecked context is caught.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records an error spanned on the tokens of `obj`.
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, msg: M) {
        self.push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error at `span`.
    pub(crate) fn error_at<M: Display>(&self, span: proc_macro2::Span, msg: M) {
        self.push(syn::Error::new(span, msg));
    }

    /// Records an error underlining everything from `start` to `end` (a
    /// row's head, say: the compiler joins the two spans), when both are
    /// on one line of one file, start first; at `fallback` otherwise (in a
    /// table a `macro_rules!` writes, the two may come from the call and
    /// from the macro).
    pub(crate) fn error_between<M: Display>(
        &self,
        start: proc_macro2::Span,
        end: proc_macro2::Span,
        fallback: proc_macro2::Span,
        msg: M,
    ) {
        if !on_one_line(start, end) {
            self.error_at(fallback, msg);
            return;
        }
        let first = proc_macro2::Punct::new('#', proc_macro2::Spacing::Alone);
        let last = proc_macro2::Punct::new('#', proc_macro2::Spacing::Alone);
        let tokens: proc_macro2::TokenStream = [(first, start), (last, end)]
            .into_iter()
            .map(|(mut p, span)| {
                p.set_span(span);
                proc_macro2::TokenTree::Punct(p)
            })
            .collect();
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records an error syn produced.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.push(err);
    }

    fn push(&self, err: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(err);
        }
    }

    /// Consumes the context: all recorded errors combined into one, if any.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut iter = errors.into_iter();
        let Some(mut combined) = iter.next() else {
            return Ok(());
        };
        for rest in iter {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // A context dropped with errors still inside would lose them silently.
        if !std::thread::panicking() && self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty()) {
            panic!("Ctxt dropped without check()");
        }
    }
}

/// Whether `start` comes before `end` on one line of one file, asked of
/// the compiler (outside a macro, in unit tests, there is none to ask).
fn on_one_line(start: proc_macro2::Span, end: proc_macro2::Span) -> bool {
    if !proc_macro::is_available() {
        return false;
    }
    let (start, end) = (start.unwrap(), end.unwrap());
    start.file() == end.file() && start.line() == end.line() && start.column() <= end.column()
}
