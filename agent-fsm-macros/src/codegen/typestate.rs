//! The typestate view: one type per resting state in a `typed` submodule,
//! with one consuming method per event the table accepts there, so a step
//! the table does not allow does not compile.
//!
//! Each method feeds the event to the dynamic machine inside and wraps the
//! state it lands in, so the typed and dynamic forms cannot disagree. The
//! possible landing states are computed from the table: the targets of the
//! rows for (state, event), transient targets followed through their
//! eventless rows, and the state itself when every row may refuse.
//!
//! Every method is `#[inline]`: a crate that defines a machine and never
//! uses the view does not compile one function per (state, event) pair.

use crate::model::{Model, landing};
use crate::shared::names::{BUILT_IN, landing_enum, snake_method};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeSet;
use syn::visit_mut::VisitMut;
use syn::{Fields, Ident};

/// `pub mod typed { ... }` and the conversions on the machine.
pub(crate) fn generate(model: &Model, context_ty: &TokenStream, has_context: bool) -> TokenStream {
    let machine = &model.machine;
    let state_ty = &model.state_enum.ident;
    let resting: Vec<usize> = (0..model.states.len()).filter(|&s| model.states[s].transient.is_none()).collect();
    // The context lives in the machine's module, where a typed state may
    // not take its name.
    let context_ty = &if has_context { quote!(super::#context_ty) } else { context_ty.clone() };
    let aliases = outer_aliases(model);
    let allow_non_camel = super::allow_if(model.allow_non_camel, "non_camel_case_types");
    let allow_deprecated = super::allow_if(model.allow_deprecated, "deprecated");
    let structs = resting.iter().map(|&s| state_struct(model, s, context_ty, has_context));
    let any_variants = resting.iter().map(|&s| {
        let v = &model.states[s].ident;
        let doc = format!("The machine in `{v}`.");
        quote!(#[doc = #doc] #v(#v))
    });
    let any_from = resting.iter().map(|&s| {
        let v = &model.states[s].ident;
        quote!(super::#state_ty::#v { .. } => ::core::result::Result::Ok(Any::#v(#v { machine })))
    });
    let any_into = resting.iter().map(|&s| {
        let v = &model.states[s].ident;
        quote!(Any::#v(typed) => typed.machine)
    });
    let any_name = resting.iter().map(|&s| {
        let v = &model.states[s].ident;
        quote!(Any::#v(typed) => typed.machine.state().name())
    });
    quote! {
        #aliases

        /// The typestate view of the machine: one type per state that waits
        /// for events, with a method for each event the table accepts there.
        /// A step the table does not allow is a compile error.
        // Types and variants take the states' names, however the user
        // spelled those (`r#type` with the lint allowed on the enum).
        #allow_non_camel
        #allow_deprecated
        pub mod typed {
            #[allow(unused_imports)]
            use super::*;

            /// The typed view disagrees with the machine inside it: a bug
            /// in the generated code, never a user error. One cold function
            /// rather than a panic in every method keeps builds quick.
            #[cold]
            #[inline(never)]
            fn out_of_step() -> ! {
                ::core::panic!("agent-fsm: the typestate view is out of step with its machine")
            }

            #(#structs)*

            /// The machine in any state, typed.
            // A private machine's user may match some states and ignore
            // the others' typed values.
            #[allow(dead_code)]
            #[derive(Debug)]
            pub enum Any {
                #(#any_variants,)*
            }

            impl Any {
                /// The dynamic machine back.
                #[must_use]
                pub fn into_machine(self) -> super::#machine {
                    match self { #(#any_into,)* }
                }

                /// The current state's name.
                #[must_use]
                pub fn name(&self) -> &'static ::core::primitive::str {
                    match self { #(#any_name,)* }
                }
            }

            impl ::core::convert::TryFrom<super::#machine> for Any {
                type Error = super::#machine;

                /// Fails only for a poisoned machine, which it gives back.
                fn try_from(machine: super::#machine) -> ::core::result::Result<Self, super::#machine> {
                    match machine.try_state() {
                        ::core::option::Option::Some(state) => match state {
                            #(#any_from,)*
                            #[allow(unreachable_patterns)]
                            _ => ::core::result::Result::Err(machine),
                        },
                        ::core::option::Option::None => ::core::result::Result::Err(machine),
                    }
                }
            }
        }

        impl #machine {
            /// The typestate view of this machine, in whatever state it is.
            ///
            /// # Errors
            /// Gives the machine back if it is poisoned.
            pub fn into_typed(self) -> ::core::result::Result<typed::Any, Self> {
                ::core::convert::TryFrom::try_from(self)
            }
        }
    }
}

fn state_struct(model: &Model, s: usize, context_ty: &TokenStream, has_context: bool) -> TokenStream {
    let machine = &model.machine;
    let state_ty = &model.state_enum.ident;
    let event_ty = &model.event_enum.ident;
    let action_ty = &model.action_enum.ident;
    let def = &model.states[s];
    let v = &def.ident;
    let doc = format!("The machine, known to be in `{v}`.");
    // Field accessors: own fields, then carried ones.
    let mut fields: Vec<(Ident, syn::Type)> =
        if def.shape == crate::model::Shape::Unnamed { Vec::new() } else { def.fields.clone() };
    if def.carries {
        fields.extend(model.carried.iter().filter_map(|f| Some((f.ident.clone()?, f.ty.clone()))));
    }
    // A field named like an event method or a method every typed state
    // has gets no accessor of its own: `state()` still reads it.
    let taken: Vec<String> = BUILT_IN
        .into_iter()
        .chain(def.initial.map(|_| "new"))
        .map(str::to_owned)
        .chain(
            model
                .events
                .iter()
                .enumerate()
                .filter(|(e, _)| !model.index().pair(s, *e).is_empty())
                .map(|(_, ev)| snake_method(&ev.ident).to_string()),
        )
        .collect();
    fields.retain(|(name, _)| !taken.contains(&name.to_string()));
    let accessors = fields.iter().map(|(name, ty)| {
        let ty = &outside(ty, model, state_ty);
        let doc = format!("The state's `{name}`.");
        quote! {
            #[doc = #doc]
            #[must_use]
            #[inline]
            pub fn #name(&self) -> &#ty {
                match self.machine.state() {
                    super::#state_ty::#v { #name, .. } => #name,
                    // The type guarantees the variant.
                    _ => out_of_step(),
                }
            }
        }
    });
    let mut next_enums = Vec::new();
    let methods: Vec<TokenStream> = if def.terminal.is_some() {
        Vec::new()
    } else {
        model
            .events
            .iter()
            .enumerate()
            .filter(|(e, _)| !model.index().pair(s, *e).is_empty())
            .map(|(e, ev)| {
                let landing = landing(model, s, e);
                let method = snake_method(&ev.ident);
                let variant = &model.event_enum.variants[e];
                let (params, build) = event_params(event_ty, variant, model);
                let step = quote! {
                    let __action = self.machine.handle_event(#build);
                };
                // One parameter per field of the event: the user chose them.
                let many = (params.len() >= 3).then(|| quote!(#[allow(clippy::too_many_arguments)]));
                if landing.len() == 1 {
                    let t = &model.states[*landing.iter().next().unwrap_or(&s)].ident;
                    let doc = format!("`{v}` + `{}` -> `{t}`, with the row's action.", ev.ident);
                    quote! {
                        #[doc = #doc]
                        #[inline]
                        #many
                        pub fn #method(mut self #(, #params)*) -> (#t, super::#action_ty) {
                            #step
                            (#t { machine: self.machine }, __action)
                        }
                    }
                } else {
                    let next = landing_enum(v, &ev.ident);
                    let names: Vec<&Ident> = landing.iter().map(|&t| &model.states[t].ident).collect();
                    let enum_doc = format!("Where `{v}` + `{}` can land, with the row's action.", ev.ident);
                    let var_docs = names.iter().map(|n| format!("Landed in `{n}`."));
                    // Nothing in the view reads the variants' fields, and a
                    // private machine whose user ignores one would warn.
                    next_enums.push(quote! {
                        #[doc = #enum_doc]
                        #[derive(Debug)]
                        #[allow(dead_code)]
                        pub enum #next {
                            #( #[doc = #var_docs] #names(#names, super::#action_ty), )*
                        }
                    });
                    let doc = format!(
                        "`{v}` + `{}`: lands in {}.",
                        ev.ident,
                        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
                    );
                    quote! {
                        #[doc = #doc]
                        #[inline]
                        #many
                        pub fn #method(mut self #(, #params)*) -> #next {
                            #step
                            match self.machine.state() {
                                #( super::#state_ty::#names { .. } => #next::#names(#names { machine: self.machine }, __action), )*
                                // The table admits no other landing state.
                                _ => out_of_step(),
                            }
                        }
                    }
                }
            })
            .collect()
    };
    let ctor = (def.initial.is_some()).then(|| {
        let params: Vec<_> = def
            .fields
            .iter()
            .map(|(n, t)| {
                let t = outside(t, model, state_ty);
                quote!(#n: #t)
            })
            .collect();
        let names: Vec<_> = def.fields.iter().map(|(n, _)| n).collect();
        let ctx = crate::codegen::dispatch::context_param(def);
        let ctx_param = has_context.then(|| quote!(#ctx: #context_ty,));
        let ctx_arg = has_context.then(|| quote!(#ctx,));
        // The machine's `new` is there only when the carried types have a
        // `Default`, and so is this one.
        let (allow, where_default) =
            crate::codegen::dispatch::default_where(model, def, |ty| outside(ty, model, state_ty));
        quote! {
            /// A machine in its initial state, typed.
            #[must_use]
            #allow
            #[allow(clippy::too_many_arguments)]
            pub fn new(#ctx_param #(#params),*) -> Self #where_default {
                Self { machine: super::#machine::new(#ctx_arg #(#names),*) }
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Debug)]
        pub struct #v {
            machine: super::#machine,
        }

        impl #v {
            #ctor

            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::#state_ty {
                self.machine.state()
            }

            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &#context_ty {
                self.machine.context()
            }

            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::#machine {
                self.machine
            }

            #(#accessors)*
            #(#methods)*
        }

        impl ::core::convert::TryFrom<super::#machine> for #v {
            type Error = super::#machine;

            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(machine: super::#machine) -> ::core::result::Result<Self, super::#machine> {
                if ::core::matches!(machine.try_state(), ::core::option::Option::Some(super::#state_ty::#v { .. })) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }

        #(#next_enums)*
    }
}

/// A typed method's parameters for an event variant, and the event built
/// from them.
fn event_params(event_ty: &Ident, variant: &syn::Variant, model: &Model) -> (Vec<TokenStream>, TokenStream) {
    let v = &variant.ident;
    match &variant.fields {
        Fields::Unit => (Vec::new(), quote!(super::#event_ty::#v)),
        Fields::Named(named) => {
            let names: Vec<_> = named.named.iter().filter_map(|f| f.ident.clone()).collect();
            let params = named.named.iter().map(|f| {
                let (n, t) = (&f.ident, outside(&f.ty, model, event_ty));
                quote!(#n: #t)
            });
            (params.collect(), quote!(super::#event_ty::#v { #(#names),* }))
        }
        Fields::Unnamed(unnamed) => {
            let names: Vec<Ident> = if unnamed.unnamed.len() == 1 {
                vec![format_ident!("payload")]
            } else {
                (0..unnamed.unnamed.len()).map(|i| format_ident!("payload{}", i)).collect()
            };
            let params = names.iter().zip(&unnamed.unnamed).map(|(n, f)| {
                let t = outside(&f.ty, model, event_ty);
                quote!(#n: #t)
            });
            (params.collect(), quote!(super::#event_ty::#v(#(#names),*)))
        }
    }
}

/// Whether a name, inside `typed`, means one of the view's own items (a
/// typed state or `Any`) rather than what it means in the machine's module.
fn shadowed(model: &Model, name: &str) -> bool {
    name == "Any" || model.resting_names().contains(name)
}

/// Primitive types: not items, so not reachable through a `use` alias.
const PRIMITIVES: [&str; 17] = [
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    "f32", "f64",
];

/// The name under which the machine's module re-imports a type that the
/// view shadows (`use Option as ..;` reaches the prelude as well as the
/// module's own items, which `super::Option` would not).
fn outer_alias(name: &Ident) -> Ident {
    use syn::ext::IdentExt;
    format_ident!("__agent_fsm_outer_{}", name.unraw())
}

/// How a path of a field's type is spelled inside `typed`.
enum Respell {
    /// `Self`: the enum that declares the field.
    SelfType,
    /// A name the view shadows: through its alias in the machine's module.
    Alias,
    /// A primitive the view shadows: `::core::primitive::..`.
    Primitive,
    /// `self::..`, the machine's module: `super::..` from the view.
    SelfModule,
    /// `super::..`, one module further out from the view: `super::super::..`.
    Super,
}

fn respell(model: &Model, path: &syn::Path) -> Option<Respell> {
    if path.leading_colon.is_some() {
        return None;
    }
    let name = path.segments.first()?.ident.to_string();
    if name == "Self" {
        Some(Respell::SelfType)
    } else if name == "self" {
        Some(Respell::SelfModule)
    } else if name == "super" {
        Some(Respell::Super)
    } else if !shadowed(model, &name) {
        None
    } else if PRIMITIVES.contains(&name.as_str()) {
        Some(Respell::Primitive)
    } else {
        Some(Respell::Alias)
    }
}

/// The `use` aliases `outside` relies on, one per shadowed name that a
/// state's, a carried or an event's field type starts with.
fn outer_aliases(model: &Model) -> TokenStream {
    use syn::visit::Visit;
    struct Collect<'a>(&'a Model, BTreeSet<Ident>);
    impl Collect<'_> {
        fn path(&mut self, path: &syn::Path) {
            if let Some(Respell::Alias) = respell(self.0, path)
                && let Some(first) = path.segments.first()
            {
                self.1.insert(first.ident.clone());
            }
        }
    }
    impl<'ast> Visit<'ast> for Collect<'_> {
        fn visit_type_path(&mut self, tp: &'ast syn::TypePath) {
            if tp.qself.is_none() {
                self.path(&tp.path);
            }
            syn::visit::visit_type_path(self, tp);
        }
        fn visit_trait_bound(&mut self, b: &'ast syn::TraitBound) {
            self.path(&b.path);
            syn::visit::visit_trait_bound(self, b);
        }
    }
    let mut collect = Collect(model, BTreeSet::new());
    for def in &model.states {
        def.fields.iter().for_each(|(_, ty)| collect.visit_type(ty));
    }
    model.carried.iter().for_each(|f| collect.visit_type(&f.ty));
    for variant in &model.event_enum.variants {
        variant.fields.iter().for_each(|f| collect.visit_type(&f.ty));
    }
    let uses = collect.1.iter().map(|name| {
        let alias = outer_alias(name);
        quote!(#[allow(unused_imports)] use #name as #alias;)
    });
    quote!(#(#uses)*)
}

/// A type as written in the machine's module, for use inside `typed`: a
/// path that starts with a name the view shadows (`Error` for a state
/// `Error` whose field has the user's type `Error`, `Option` for a state
/// `Option`, `Any` in `Box<dyn Any>`) is reached through its alias in the
/// machine's module, and `Self` becomes `self_ty`, the enum the field
/// belongs to.
fn outside(ty: &syn::Type, model: &Model, self_ty: &Ident) -> syn::Type {
    struct Rewrite<'a>(&'a Model, &'a Ident);
    impl Rewrite<'_> {
        fn fix(&self, path: &mut syn::Path) {
            let Some(how) = respell(self.0, path) else {
                return;
            };
            let Some(first) = path.segments.first_mut() else {
                return;
            };
            let span = first.ident.span();
            let segment = |name: &str| syn::PathSegment::from(Ident::new(name, span));
            match how {
                Respell::SelfType => first.ident = self.1.clone(),
                Respell::Alias => first.ident = outer_alias(&first.ident),
                Respell::Super => {}
                Respell::SelfModule => {
                    first.ident = Ident::new("super", span);
                    return;
                }
                Respell::Primitive => {
                    path.leading_colon = Some(Default::default());
                    path.segments.insert(0, segment("primitive"));
                    path.segments.insert(0, segment("core"));
                    return;
                }
            }
            path.segments.insert(0, segment("super"));
        }
    }
    impl VisitMut for Rewrite<'_> {
        fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
            match &mut tp.qself {
                None => self.fix(&mut tp.path),
                // `<X as Trait>::Y`: the path starts with the trait's, and
                // the `as` position moves with what is put in front of it.
                Some(qself) if qself.position > 0 => {
                    let before = tp.path.segments.len();
                    self.fix(&mut tp.path);
                    qself.position += tp.path.segments.len() - before;
                }
                Some(_) => {}
            }
            syn::visit_mut::visit_type_path_mut(self, tp);
        }
        /// Paths in expressions inside types: array lengths, const
        /// generic arguments (`[u8; super::N]`).
        fn visit_expr_path_mut(&mut self, ep: &mut syn::ExprPath) {
            // Only the module-relative forms: aliases exist for types only.
            let relative =
                matches!(respell(self.0, &ep.path), Some(Respell::SelfType | Respell::SelfModule | Respell::Super));
            if ep.qself.is_none() && relative {
                self.fix(&mut ep.path);
            }
            syn::visit_mut::visit_expr_path_mut(self, ep);
        }
        fn visit_trait_bound_mut(&mut self, b: &mut syn::TraitBound) {
            self.fix(&mut b.path);
            syn::visit_mut::visit_trait_bound_mut(self, b);
        }
    }
    let mut ty = ty.clone();
    Rewrite(model, self_ty).visit_type_mut(&mut ty);
    ty
}
