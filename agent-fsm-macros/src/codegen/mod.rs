//! Model -> tokens: the module with the user's items, the enums, the machine
//! type and its trait impl. One file per generated item.

mod carrier;
pub(crate) mod describe;
pub(crate) mod diagram;
pub(crate) mod dispatch;
pub(crate) mod enums;
pub(crate) mod kinds;
pub(crate) mod typestate;

use crate::model::Model;
use dispatch::Names;
use proc_macro2::TokenStream;
use quote::quote;

/// `#[allow(lint)]` where the expansion needs it, else nothing: an
/// `allow` the user's crate forbids is an error (see
/// `Model::allow_deprecated`).
pub(crate) fn allow_if(needed: bool, lint: &str) -> TokenStream {
    let lint = syn::Ident::new(lint, proc_macro2::Span::call_site());
    if needed { quote!(#[allow(#lint)]) } else { TokenStream::new() }
}

/// `#[allow(non_snake_case)]` on a method whose name joins the user's
/// name to one of the macro's at a `_` the user's name already has
/// (`type_` gives `type__mut`, a state `_Idle` gives `is__idle`): rustc
/// calls the doubled `_` not snake case, at the user's name, which is.
pub(crate) fn allow_joined_snake(method: &syn::Ident) -> TokenStream {
    let text = method.to_string();
    allow_if(text.trim_start_matches("r#").trim_matches('_').contains("__"), "non_snake_case")
}

/// The whole expansion of a valid table.
pub(crate) fn generate(model: &Model) -> TokenStream {
    let layout = describe::Layout::new(model);
    let mut state_enum = enums::state_enum(model);
    let mut event_enum = enums::event_enum(model);
    let mut action_enum = enums::plain_enum(&model.action_enum, model);
    if model.serde {
        enums::derive_serde(&mut state_enum, "state");
        enums::derive_serde(&mut event_enum, "event");
        enums::derive_serde(&mut action_enum, "action");
    }
    let (state, event, action) = (&state_enum.ident, &event_enum.ident, &action_enum.ident);
    let allow_deprecated = allow_if(model.allow_deprecated, "deprecated");
    let state_names = enums::names(&state_enum, "state", &allow_deprecated);
    let event_names = enums::names(&event_enum, "event", &allow_deprecated);
    let action_names = enums::names(&action_enum, "action", &allow_deprecated);
    let state_methods = enums::state_methods(model);
    let [state_kind, event_kind, action_kind] = crate::shared::names::KIND_NAMES;
    let kind_enums = [
        kinds::kind_enum(&state_enum, state_kind, "state", model),
        kinds::kind_enum(&event_enum, event_kind, "event", model),
        kinds::kind_enum(&action_enum, action_kind, "action", model),
    ];
    let (context_item, context_ty, has_context) = match &model.context {
        Some((item, ident)) => (quote!(#item), quote!(#ident), true),
        None => (TokenStream::new(), quote!(()), false),
    };
    let names = Names { model, state, event, action, layout: &layout };
    let step = dispatch::step_fns(&names, &context_ty);
    let new = dispatch::constructor(model, &context_ty, has_context);
    // Built once: the constant and the rustdoc both show it.
    let mermaid = diagram::mermaid(model, &layout);
    let description = describe::description(model, &layout, &mermaid);
    let docs = diagram::machine_docs(model, &layout, &mermaid);
    let typed = model.typestate.then(|| typestate::generate(model, &context_ty, has_context));
    let machine = &model.machine;
    let vis = &model.state_enum.vis;
    let fallback = model
        .fallback
        .as_ref()
        .map(|(_, c)| dispatch::ctor(action, c, &[]))
        .unwrap_or_else(|| quote!(::core::unreachable!()));
    let with_state_ctx = has_context.then(|| quote!(, context: #context_ty));
    let with_state_value = if has_context { quote!(context) } else { quote!(context: ()) };
    let from_parts = if has_context {
        quote!(#machine::with_state(state, context))
    } else {
        quote!({ let () = context; #machine::with_state(state) })
    };
    let invariants = model.invariants.as_ref().map(|path| {
        // The call is located at the path, so that a check of the wrong
        // type is rustc's error at `invariants = check`, not at the
        // attribute as a whole.
        let at = quote::ToTokens::to_token_stream(path).into_iter().next().map(|t| t.span());
        let at = proc_macro2::Span::call_site().located_at(at.unwrap_or_else(proc_macro2::Span::call_site));
        let call = quote::quote_spanned!(at=> #path(state, context));
        quote! {
            fn check_invariants(
                state: &#state,
                context: &#context_ty,
            ) -> ::core::result::Result<(), ::std::string::String> {
                #call
            }
        }
    });
    let carrier = model.export.as_ref().map(|(name, args, item)| carrier::carrier(name, args, item));
    // One error saying to enable agent-fsm's `serde` feature when it is
    // off (the derives' paths then resolve to stand-ins that add none).
    let serde_check =
        model.serde_arg.map(|span| quote::quote_spanned!(span=> ::agent_fsm::__private::serde_feature_required! {}));
    // Only when the table marks some: the trait's default is empty.
    let marked: Vec<_> = model.events.iter().filter(|e| e.during_work.is_some()).map(|e| &e.ident).collect();
    let during_work = (!marked.is_empty()).then(|| {
        let kind = quote::format_ident!("{event_kind}");
        quote! {
            const DURING_WORK: &'static [#kind] = &[#( #kind::#marked ),*];
        }
    });
    let deadlines: Vec<_> = model.events.iter().filter(|e| e.deadline.is_some()).map(|e| &e.ident).collect();
    let deadlines = (!deadlines.is_empty()).then(|| {
        let kind = quote::format_ident!("{event_kind}");
        quote! {
            const DEADLINES: &'static [#kind] = &[#( #kind::#deadlines ),*];
        }
    });
    let passthrough = &model.passthrough;
    let module = &model.module;
    let (mod_vis, mod_ident) = (&module.vis, &module.ident);
    // `//!` docs and `#![..]` written inside the module stay inside it.
    let (inner_attrs, outer_attrs): (Vec<_>, Vec<_>) =
        module.attrs.iter().partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));

    quote! {
        #(#outer_attrs)*
        #mod_vis mod #mod_ident {
            #(#inner_attrs)*
            #(#passthrough)*
            #carrier

            #serde_check
            #state_enum
            #event_enum
            #action_enum
            #context_item

            #state_names
            #event_names
            #action_names
            #state_methods
            #(#kind_enums)*

            #docs
            #vis struct #machine {
                // `None` only while a moving row runs, or after a panic inside
                // one (poisoned): the state is moved out, not cloned.
                state: ::core::option::Option<#state>,
                context: #context_ty,
            }

            #[automatically_derived]
            impl ::core::fmt::Debug for #machine {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(::core::stringify!(#machine)).field("state", &self.state).finish_non_exhaustive()
                }
            }

            // The rows use variants the user may have deprecated; the
            // table is their definition, not a use.
            #allow_deprecated
            impl #machine {
                #new

                /// A machine resumed in any state (tests, snapshots, replays).
                ///
                /// A transient state is resolved at once through its eventless
                /// rows, as if just entered (the action of the row that
                /// resolves it is dropped), so the machine never rests in one.
                #[must_use]
                pub fn with_state(state: #state #with_state_ctx) -> Self {
                    let mut machine = Self { state: ::core::option::Option::Some(state), #with_state_value };
                    if machine.state.as_ref().is_some_and(#state::is_transient) {
                        let _ = Self::__settle(&mut machine.state, &mut machine.context, &mut (), ::core::option::Option::None);
                    }
                    machine
                }

                /// The current state.
                ///
                /// # Panics
                /// Only if the machine is poisoned: an earlier step did not
                /// finish (code inside a row panicked and the panic was
                /// caught, or left the row early).
                #[must_use]
                #[inline]
                pub fn state(&self) -> &#state {
                    match &self.state {
                        ::core::option::Option::Some(state) => state,
                        ::core::option::Option::None => ::core::panic!("state machine poisoned: an earlier transition did not finish (its row's code panicked or left it early)"),
                    }
                }

                /// The current state, or `None` if the machine is poisoned.
                #[must_use]
                #[inline]
                pub fn try_state(&self) -> ::core::option::Option<&#state> {
                    self.state.as_ref()
                }

                /// The context.
                #[must_use]
                #[inline]
                pub fn context(&self) -> &#context_ty {
                    &self.context
                }

                /// The context, mutably.
                #[inline]
                pub fn context_mut(&mut self) -> &mut #context_ty {
                    &mut self.context
                }

                /// The state (`None` if poisoned) and the context.
                #[must_use]
                pub fn into_parts(self) -> (::core::option::Option<#state>, #context_ty) {
                    (self.state, self.context)
                }

                /// Feeds one event and returns the action to perform.
                ///
                /// Synchronous and deterministic. An event no row accepts
                /// leaves the state unchanged, logs a `tracing` warning and
                /// returns the fallback action.
                #[inline]
                pub fn handle_event(&mut self, event: #event) -> #action {
                    self.handle_event_with(event, &mut ())
                }

                #step

                #[inline]
                fn __fallback() -> #action {
                    #fallback
                }

                #description
            }

            #typed

            #[automatically_derived]
            impl ::agent_fsm::StateMachine for #machine {
                type State = #state;
                type Event = #event;
                type Action = #action;
                type Context = #context_ty;

                const DESCRIPTION: &'static ::agent_fsm::Description = &#machine::DESCRIPTION;
                #during_work
                #deadlines

                #[inline]
                fn handle_event(&mut self, event: #event) -> #action {
                    #machine::handle_event(self, event)
                }

                #[inline]
                fn handle_event_with<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
                    &mut self,
                    event: #event,
                    observer: &mut __O,
                ) -> #action {
                    #machine::handle_event_with(self, event, observer)
                }

                fn state(&self) -> &#state {
                    #machine::state(self)
                }

                fn from_parts(state: #state, context: #context_ty) -> Self {
                    #from_parts
                }

                #invariants

                fn is_poisoned(&self) -> bool {
                    self.state.is_none()
                }

                #[inline]
                fn status(&self) -> ::agent_fsm::Status<StateKind> {
                    match &self.state {
                        ::core::option::Option::Some(state) => ::agent_fsm::Status::In(#state::kind(state)),
                        ::core::option::Option::None => ::agent_fsm::Status::Poisoned,
                    }
                }

                fn context(&self) -> &#context_ty {
                    &self.context
                }

                fn context_mut(&mut self) -> &mut #context_ty {
                    &mut self.context
                }
            }
        }
    }
}
