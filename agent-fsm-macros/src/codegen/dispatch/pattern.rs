//! Patterns and constructors the arms are built from: a state's pattern,
//! an action's or target's constructor, and the machine's `new`.

use super::bind::Bind;
use crate::model::Model;
use crate::parse::{Ctor, Init};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::{FieldPat, Ident, Member, Pat, Token};

/// `Enum::Variant`, with the payload written in the row plus shorthand
/// fields in `fill` (carried data moved along).
pub(crate) fn ctor(enum_ident: &Ident, c: &Ctor, fill: &[(&Ident, Ident)]) -> TokenStream {
    let v = &c.ident;
    let span = v.span();
    // The enum's name takes the variant's span, so rustc's errors about the
    // payload point at the row, not at the enum's declaration.
    let enum_ident = &respanned(enum_ident, span);
    let fill = fill.iter().map(|(member, value)| quote!(#member: #value)).collect::<Vec<_>>();
    match &c.init {
        Init::Unit if fill.is_empty() => quote_spanned!(span=> #enum_ident::#v),
        Init::Unit => quote_spanned!(span=> #enum_ident::#v { #(#fill),* }),
        Init::Named(brace, fields) => {
            let mut inner = quote!(#fields);
            if !fields.empty_or_trailing() && !fill.is_empty() {
                inner.extend(quote!(,));
            }
            inner.extend(quote!(#(#fill),*));
            let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, inner);
            group.set_span(brace.span.join());
            quote_spanned!(span=> #enum_ident::#v #group)
        }
        Init::Unnamed(paren, exprs) => {
            let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#exprs));
            group.set_span(paren.span.join());
            quote_spanned!(span=> #enum_ident::#v #group)
        }
    }
}

/// The state pattern of an arm: the user's destructuring (if any) with the
/// enum prefix, `..` for fields it leaves out, and the carried fields the
/// row needs (`mut` when moved out).
pub(super) fn state_pattern(
    state: &Ident,
    variant: &Ident,
    user: Option<&Pat>,
    carried: &[(&Ident, Ident)],
    mode: Bind,
) -> TokenStream {
    match user {
        Some(Pat::Struct(p)) => {
            let mut p = p.clone();
            p.path = enum_path(state, variant, &p.path);
            for (c, binding) in carried {
                if !p.fields.iter().any(|f| matches!(&f.member, Member::Named(m) if m == *c)) {
                    p.fields.push(field_pat(c, binding, mode));
                }
            }
            if p.rest.is_none() {
                p.rest = Some(syn::PatRest { attrs: Vec::new(), dot2_token: Token![..](Span::call_site()) });
                if !p.fields.empty_or_trailing() {
                    p.fields.push_punct(Token![,](Span::call_site()));
                }
            }
            quote!(#p)
        }
        Some(Pat::TupleStruct(p)) => {
            let mut p = p.clone();
            p.path = enum_path(state, variant, &p.path);
            quote!(#p)
        }
        _ => {
            let fields: Punctuated<FieldPat, Token![,]> =
                carried.iter().map(|(c, binding)| field_pat(c, binding, mode)).collect();
            if fields.is_empty() { quote!(#state::#variant { .. }) } else { quote!(#state::#variant { #fields, .. }) }
        }
    }
}

/// `State::Variant` in place of the user's `path`, with the `::` spanned
/// at the path's first token. Built directly rather than parsed from
/// tokens: this runs for many rows, in code debug builds do not optimize.
fn enum_path(state: &Ident, variant: &Ident, path: &syn::Path) -> syn::Path {
    let span = first_span(path);
    let mut segments = Punctuated::new();
    segments.push_value(syn::PathSegment::from(state.clone()));
    segments.push_punct(Token![::](span));
    segments.push_value(syn::PathSegment::from(variant.clone()));
    syn::Path { leading_colon: None, segments }
}

/// The span of a path's first token: what `Spanned::span` gives on stable,
/// without printing the path to find it.
fn first_span(path: &syn::Path) -> Span {
    match (&path.leading_colon, path.segments.first()) {
        (Some(colon), _) => colon.spans[0],
        (None, Some(first)) => first.ident.span(),
        (None, None) => Span::call_site(),
    }
}

/// `member: binding`, the binding spelled with the row's span.
fn field_pat(member: &Ident, binding: &Ident, mode: Bind) -> FieldPat {
    let pat = Pat::Ident(syn::PatIdent {
        attrs: Vec::new(),
        by_ref: matches!(mode, Bind::Ref | Bind::RefMut).then(|| Token![ref](Span::call_site())),
        mutability: matches!(mode, Bind::Move | Bind::RefMut).then(|| Token![mut](Span::call_site())),
        ident: binding.clone(),
        subpat: None,
    });
    FieldPat {
        attrs: Vec::new(),
        member: Member::Named(member.clone()),
        colon_token: Some(Token![:](binding.span())),
        pat: Box::new(pat),
    }
}

/// The user's event pattern with the event enum's name in front, as
/// tokens: `E2 { text }` becomes `Event::E2 { text }`. The name and `::`
/// take the span of the pattern's first token (what `Spanned::span` gives
/// on stable), and the user's tokens follow unchanged. Written without
/// rebuilding a `syn::Pat`: this runs once per row, in proc-macro code that
/// debug builds do not optimize.
pub(super) fn prefix_pat(pat: &Pat, enum_ident: &Ident) -> TokenStream {
    let path = match pat {
        // A unit variant's name: only the name is kept.
        Pat::Ident(p) => {
            let (span, ident) = (p.ident.span(), &p.ident);
            let e = respanned(enum_ident, span);
            return quote_spanned!(span=> #e::#ident);
        }
        Pat::Path(p) => &p.path,
        Pat::Struct(p) => &p.path,
        Pat::TupleStruct(p) => &p.path,
        // Anything else is written as it is (validation rejects it).
        other => return quote::ToTokens::to_token_stream(other),
    };
    let span = first_span(path);
    let e = respanned(enum_ident, span);
    let mut tokens = quote_spanned!(span=> #e::);
    quote::ToTokens::to_tokens(pat, &mut tokens);
    tokens
}

/// `ident` at `span`: a copy, never rebuilt from its text, which for a
/// raw identifier (`r#State`) is not an identifier `Ident::new` takes.
fn respanned(ident: &Ident, span: Span) -> Ident {
    let mut ident = ident.clone();
    ident.set_span(span);
    ident
}

/// The lint allowance and the `where` clause of a constructor that starts
/// the carried fields of `def` from `Default` (both empty when it carries
/// none), each carried type spelled by `spell`. Behind a bound, a carried
/// type without `Default` leaves the machine without `new` (an error where
/// `new` is called, traced to the `#[carry]` field) rather than failing
/// the whole expansion; the binder, unused, keeps rustc from rejecting a
/// bound on a concrete type outright.
pub(crate) fn default_where(
    model: &Model,
    def: &crate::model::StateDef,
    spell: impl Fn(&syn::Type) -> syn::Type,
) -> (TokenStream, TokenStream) {
    if !def.carries || model.carried.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let bounds = model.carried.iter().map(|f| {
        let ty = spell(&f.ty);
        let span = syn::spanned::Spanned::span(&f.ty);
        quote_spanned!(span=> for<'__carried> #ty: ::core::default::Default)
    });
    (quote!(#[allow(unused_lifetimes)]), quote!(where #(#bounds),*))
}

/// A field's type as written outside its enum: `Self` (the enum, in a
/// field) is spelled `state`, as it must be in `impl Machine`.
fn self_as(ty: &syn::Type, state: &Ident) -> syn::Type {
    use syn::visit_mut::VisitMut;
    struct Rename<'a>(&'a Ident);
    impl VisitMut for Rename<'_> {
        fn visit_path_mut(&mut self, path: &mut syn::Path) {
            if path.leading_colon.is_none()
                && let Some(first) = path.segments.first_mut()
                && first.ident == "Self"
            {
                let span = first.ident.span();
                first.ident = self.0.clone();
                first.ident.set_span(span);
            }
            syn::visit_mut::visit_path_mut(self, path);
        }
    }
    let mut ty = ty.clone();
    Rename(state).visit_type_mut(&mut ty);
    ty
}

/// The name of `new`'s context argument: `context`, unless the initial
/// state has a field of that name, which takes it (then `context_`, and so
/// on).
pub(crate) fn context_param(def: &crate::model::StateDef) -> Ident {
    let mut name = String::from("context");
    while def.fields.iter().any(|(field, _)| field == name.as_str()) {
        name.push('_');
    }
    Ident::new(&name, Span::call_site())
}

/// `new`: the initial state's own fields as arguments, carried fields from
/// `Default`.
pub(crate) fn constructor(model: &Model, context_ty: &TokenStream, has_context: bool) -> TokenStream {
    let Some(init) = model.initial() else {
        return TokenStream::new();
    };
    let def = &model.states[init];
    let state = &model.state_enum.ident;
    let v = &def.ident;
    let params: Vec<_> = def
        .fields
        .iter()
        .map(|(name, ty)| {
            let ty = self_as(ty, state);
            quote!(#name: #ty)
        })
        .collect();
    let names: Vec<_> = def.fields.iter().map(|(name, _)| name).collect();
    let carried: Vec<_> = if def.carries { model.carried_names().collect() } else { Vec::new() };
    let carried_init = carried.iter().map(|c| quote!(#c: ::core::default::Default::default()));
    let value = match def.shape {
        crate::model::Shape::Unnamed => quote!(#state::#v(#(#names),*)),
        _ if names.is_empty() && carried.is_empty() => quote!(#state::#v),
        _ => quote!(#state::#v { #(#names,)* #(#carried_init),* }),
    };
    let ctx = context_param(def);
    let ctx_param = has_context.then(|| quote!(#ctx: #context_ty,));
    let ctx_value = match has_context {
        true if ctx == "context" => quote!(context),
        true => quote!(context: #ctx),
        false => quote!(context: ()),
    };
    let doc = format!("A machine in its initial state `{v}`.");
    let carried_doc = (!carried.is_empty()).then(|| {
        let list = carried.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
        let text = format!(
            "Carried data ({list}) starts from `Default`: this constructor exists when the carried types implement it; otherwise start from [`with_state`](Self::with_state)."
        );
        quote!(#[doc = ""] #[doc = #text])
    });
    let (allow, where_default) = default_where(model, def, |ty| self_as(ty, state));
    quote! {
        #[doc = #doc]
        #carried_doc
        #[must_use]
        #allow
        // One parameter per field of the initial state: the user chose them.
        #[allow(clippy::too_many_arguments)]
        pub fn new(#ctx_param #(#params),*) -> Self #where_default {
            Self { state: ::core::option::Option::Some(#value), #ctx_value }
        }
    }
}
