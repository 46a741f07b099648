//! `#[state_machine(fallback = Action, strict, name = Machine, ...)]`.

use crate::kw;
use crate::parse::Ctor;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Token};

/// The attribute's arguments, each optional at the syntax level; the model
/// says which are required.
#[derive(Default)]
pub(crate) struct Args {
    /// `fallback = Action`: returned for events no row accepts.
    pub(crate) fallback: Option<Ctor>,
    /// `strict`: every unlisted (state, event) pair is a compile error.
    pub(crate) strict: Option<kw::strict>,
    /// `name = Machine`: the generated machine type (default `Machine`).
    pub(crate) name: Option<Ident>,
    /// `serde`: derive serde on the enums, in the stable snake_case form.
    pub(crate) serde: Option<kw::serde>,
    /// `invariants = path`: `fn(&State, &Context) -> Result<(), String>`
    /// checked on every resumed snapshot.
    pub(crate) invariants: Option<syn::Path>,
    /// `export = name`: publish the table so variants can extend it.
    pub(crate) export: Option<Ident>,
    /// `extends = path::to::name`: this machine is a variant of that one.
    pub(crate) extends: Option<syn::Path>,
    /// `typestate`: generate the typestate view, `mod typed` (off by
    /// default: it is most of a big table's build time).
    pub(crate) typestate: Option<kw::typestate>,
    /// `no_diagram`: the machine's rustdoc without the diagram and the
    /// script that draws it; the transitions table stays.
    pub(crate) no_diagram: Option<kw::no_diagram>,
    /// `crate = path`: how the generated code names agent-fsm, for a crate
    /// that renamed the dependency (the rewrite is `shared::krate`'s).
    pub(crate) krate: Option<syn::Path>,
}

impl Args {
    /// `self` with every argument `over` sets replaced by `over`'s: a
    /// variant's arguments over its base's. `export` is not inherited.
    pub(crate) fn overridden_by(self, over: Args) -> Args {
        Args {
            fallback: over.fallback.or(self.fallback),
            strict: over.strict.or(self.strict),
            name: over.name.or(self.name),
            serde: over.serde.or(self.serde),
            // The base's check takes the base's types: a variant names its own.
            invariants: over.invariants,
            export: over.export,
            extends: None,
            typestate: over.typestate.or(self.typestate),
            no_diagram: over.no_diagram.or(self.no_diagram),
            // The base's path names agent-fsm in the base's crate.
            krate: over.krate,
        }
    }
}

/// The `=` after an argument's name; its absence is reported at the name,
/// and a value missing after it at the `=` (at the end of the arguments,
/// syn would point at the whole attribute).
fn equals(input: ParseStream<'_>, key: proc_macro2::Span, form: &str) -> syn::Result<()> {
    let name = form.split(' ').next().unwrap_or(form);
    if input.peek(Token![=]) {
        let eq = input.parse::<Token![=]>()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Err(syn::Error::new(eq.span, format!("`{name}` takes a value after `=`: `{form}`")));
        }
        Ok(())
    } else {
        Err(syn::Error::new(key, format!("`{name}` takes a value: `{form}`")))
    }
}

/// A flag argument is its name alone: `strict = true` says so at the `=`.
fn flag(input: ParseStream<'_>, name: &str) -> syn::Result<()> {
    if input.peek(Token![=]) || input.peek(syn::token::Paren) {
        return Err(input.error(format!(
            "`{name}` takes no value: write `{name}` alone to turn it on, and leave it out to keep it off"
        )));
    }
    Ok(())
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Args::default();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::fallback) {
                let key: kw::fallback = input.parse()?;
                equals(input, key.span, "fallback = Wait")?;
                let value: Ctor = input.parse()?;
                if input.peek(Token![::]) {
                    return Err(syn::Error::new(
                        value.ident.span(),
                        "`fallback` names a variant of the action enum alone, as rows do: `fallback = Wait`, not `Action::Wait`",
                    ));
                }
                if args.fallback.replace(value).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `fallback` argument"));
                }
            } else if lookahead.peek(kw::strict) {
                let key: kw::strict = input.parse()?;
                flag(input, "strict")?;
                if args.strict.replace(key).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `strict` argument"));
                }
            } else if lookahead.peek(kw::name) {
                let key: kw::name = input.parse()?;
                equals(input, key.span, "name = Agent")?;
                let value: Ident = input.parse()?;
                if args.name.replace(value).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `name` argument"));
                }
            } else if lookahead.peek(kw::serde) {
                let key: kw::serde = input.parse()?;
                flag(input, "serde")?;
                if args.serde.replace(key).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `serde` argument"));
                }
            } else if lookahead.peek(kw::invariants) {
                let key: kw::invariants = input.parse()?;
                equals(input, key.span, "invariants = path::to::check")?;
                if args.invariants.replace(input.parse()?).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `invariants` argument"));
                }
            } else if lookahead.peek(kw::export) {
                let key: kw::export = input.parse()?;
                equals(input, key.span, "export = name")?;
                if args.export.replace(input.parse()?).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `export` argument"));
                }
            } else if lookahead.peek(kw::extends) {
                let key: kw::extends = input.parse()?;
                equals(input, key.span, "extends = path::to::base")?;
                if args.extends.replace(input.parse()?).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `extends` argument"));
                }
            } else if lookahead.peek(kw::typestate) {
                let key: kw::typestate = input.parse()?;
                flag(input, "typestate")?;
                if args.typestate.replace(key).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `typestate` argument"));
                }
            } else if lookahead.peek(kw::no_diagram) {
                let key: kw::no_diagram = input.parse()?;
                flag(input, "no_diagram")?;
                if args.no_diagram.replace(key).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `no_diagram` argument"));
                }
            } else if lookahead.peek(Token![crate]) {
                let key: Token![crate] = input.parse()?;
                equals(input, key.span, "crate = ::path::to::agent_fsm")?;
                if args.krate.replace(input.parse()?).is_some() {
                    return Err(syn::Error::new(key.span, "duplicate `crate` argument"));
                }
            } else {
                return Err(syn::Error::new(
                    input.span(),
                    "unknown `state_machine` argument; expected `fallback = Action`, `strict`, `name = Machine`, `serde`, `invariants = path`, `export = name`, `extends = path`, `typestate`, `no_diagram` or `crate = path`",
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}
