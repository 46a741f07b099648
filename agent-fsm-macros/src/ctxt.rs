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
    // Errors the generated code can stand beside (see `error_beside_output`).
    beside: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())), beside: RefCell::new(Vec::new()) }
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

    /// Records an error that leaves the model whole (a missing argument
    /// with a stand-in): the machine is still generated beside it, so code
    /// using the machine adds no follow-on errors of its own.
    pub(crate) fn error_beside_output<M: Display>(&self, span: proc_macro2::Span, msg: M) {
        self.beside.borrow_mut().push(syn::Error::new(span, msg));
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
        match self.check_apart() {
            (Ok(()), None) => Ok(()),
            (Ok(()), Some(e)) => Err(e),
            (Err(mut e), beside) => {
                e.extend(beside);
                Err(e)
            }
        }
    }

    /// Consumes the context: the errors that stop generation, combined,
    /// and apart from them those the output can stand beside.
    pub(crate) fn check_apart(self) -> (syn::Result<()>, Option<syn::Error>) {
        let beside = combine(self.beside.borrow_mut().drain(..));
        (combine(self.errors.borrow_mut().take().unwrap_or_default().into_iter()).map_or(Ok(()), Err), beside)
    }
}

/// The errors as one, if any.
fn combine(mut errors: impl Iterator<Item = syn::Error>) -> Option<syn::Error> {
    let mut combined = errors.next()?;
    for rest in errors {
        combined.combine(rest);
    }
    Some(combined)
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // A context dropped with errors still inside would lose them silently.
        let unchecked =
            self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty()) || !self.beside.borrow().is_empty();
        if !std::thread::panicking() && unchecked {
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
