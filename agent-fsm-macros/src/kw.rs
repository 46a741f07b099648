//! Every word of the DSL that is not a Rust keyword.

syn::custom_keyword!(except);
syn::custom_keyword!(ignore);
syn::custom_keyword!(fallback);
syn::custom_keyword!(strict);
syn::custom_keyword!(name);
syn::custom_keyword!(transitions);
syn::custom_keyword!(serde);
syn::custom_keyword!(invariants);
syn::custom_keyword!(export);
syn::custom_keyword!(extends);
syn::custom_keyword!(replace);
syn::custom_keyword!(remove);
syn::custom_keyword!(state);
syn::custom_keyword!(typestate);
syn::custom_keyword!(no_diagram);
