//! What the user's enums say of themselves through attributes and items
//! beside them: derives (plain or under `cfg_attr`) and `impl Debug` blocks
//! in the module. Read by the rules, codegen and the error output alike.

use syn::ItemEnum;

/// Whether the enum's own `#[derive(..)]` names `name` (`Debug`,
/// `serde::Serialize`).
pub(crate) fn derives(e: &ItemEnum, name: &str) -> bool {
    let mut has = false;
    for attr in &e.attrs {
        if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|m| {
                if m.path.segments.last().is_some_and(|s| s.ident == name) {
                    has = true;
                }
                Ok(())
            });
        }
    }
    has
}

/// The traits derived under `cfg_attr(.., derive(..))` on the enum.
pub(crate) fn cfg_attr_derives(e: &ItemEnum) -> Vec<syn::Path> {
    use syn::punctuated::Punctuated;
    let mut found = Vec::new();
    for attr in e.attrs.iter().filter(|a| a.path().is_ident("cfg_attr")) {
        let Ok(args) = attr.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated) else {
            continue;
        };
        for meta in args.iter().skip(1) {
            let syn::Meta::List(list) = meta else { continue };
            if !list.path.is_ident("derive") {
                continue;
            }
            if let Ok(paths) = list.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated) {
                found.extend(paths);
            }
        }
    }
    found
}

/// Whether `items` (the module's) hold an `impl Debug for` the enum: in
/// the module itself, in a `const _: () = { .. };` block or a function
/// body there (`State`, `self::State`, unless the block declares a `State`
/// of its own), or in an inline module inside it (`super::State`, one
/// `super` per level, or `State` that module imports with `use super::..`).
/// A path from the crate's root also counts: `crate::..::machine::State`,
/// ending in the machine module's name and the enum's.
pub(crate) fn implements_debug(e: &ItemEnum, items: &[syn::Item], module: &syn::Ident) -> bool {
    implements_debug_at(e, &items.iter().collect::<Vec<_>>(), 0, false, module)
}

fn implements_debug_at(e: &ItemEnum, items: &[&syn::Item], depth: usize, imported: bool, module: &syn::Ident) -> bool {
    let nested = |stmts: &[syn::Stmt]| {
        let block: Vec<&syn::Item> =
            stmts.iter().filter_map(|s| if let syn::Stmt::Item(item) = s { Some(item) } else { None }).collect();
        !block.iter().any(|item| declares(item, &e.ident)) && implements_debug_at(e, &block, depth, imported, module)
    };
    let from_root = |path: &syn::Path| {
        let n = path.segments.len();
        path.leading_colon.is_none()
            && n >= 3
            && path.segments[0].ident == "crate"
            && path.segments[n - 2].ident == *module
            && path.segments.iter().all(|s| s.arguments.is_none())
            && path.segments[n - 1].ident == e.ident
    };
    items.iter().any(|item| match item {
        syn::Item::Impl(imp) => {
            let for_enum = matches!(&*imp.self_ty, syn::Type::Path(p) if p.qself.is_none()
                && (names_from(&p.path, &e.ident, depth) || (imported && names_local(&p.path, &e.ident)) || from_root(&p.path)));
            let debug = imp
                .trait_
                .as_ref()
                .is_some_and(|(_, path, _)| path.segments.last().is_some_and(|s| s.ident == "Debug"));
            for_enum && debug
        }
        syn::Item::Mod(m) => m.content.as_ref().is_some_and(|(_, inner)| {
            let imported =
                inner.iter().any(|i| matches!(i, syn::Item::Use(u) if imports(&u.tree, &e.ident, depth + 1)));
            implements_debug_at(e, &inner.iter().collect::<Vec<_>>(), depth + 1, imported, module)
        }),
        syn::Item::Const(c) => matches!(&*c.expr, syn::Expr::Block(b) if nested(&b.block.stmts)),
        syn::Item::Fn(f) => nested(&f.block.stmts),
        _ => false,
    })
}

/// Whether `item` declares a type or an import named `ident`.
fn declares(item: &syn::Item, ident: &syn::Ident) -> bool {
    match item {
        syn::Item::Enum(i) => i.ident == *ident,
        syn::Item::Struct(i) => i.ident == *ident,
        syn::Item::Union(i) => i.ident == *ident,
        syn::Item::Type(i) => i.ident == *ident,
        syn::Item::Use(u) => introduces(&u.tree, ident),
        _ => false,
    }
}

/// Whether a `use` brings a name `ident` into scope (a glob may).
fn introduces(tree: &syn::UseTree, ident: &syn::Ident) -> bool {
    match tree {
        syn::UseTree::Path(p) => introduces(&p.tree, ident),
        syn::UseTree::Name(n) => n.ident == *ident,
        syn::UseTree::Rename(r) => r.rename == *ident,
        syn::UseTree::Glob(_) => true,
        syn::UseTree::Group(g) => g.items.iter().any(|t| introduces(t, ident)),
    }
}

/// Whether `tree` is `super::..::ident` or `super::..::*`, with `supers`
/// `super`s, without renaming.
fn imports(tree: &syn::UseTree, ident: &syn::Ident, supers: usize) -> bool {
    match tree {
        syn::UseTree::Path(p) if supers > 0 && p.ident == "super" => imports(&p.tree, ident, supers - 1),
        syn::UseTree::Group(g) => g.items.iter().any(|t| imports(t, ident, supers)),
        syn::UseTree::Name(n) => supers == 0 && n.ident == *ident,
        syn::UseTree::Glob(_) => supers == 0,
        _ => false,
    }
}

/// Whether `path`, written `depth` inline modules below the machine's
/// module, names `ident` declared there.
fn names_from(path: &syn::Path, ident: &syn::Ident, depth: usize) -> bool {
    if depth == 0 {
        return names_local(path, ident);
    }
    path.leading_colon.is_none()
        && path.segments.len() == depth + 1
        && path.segments.iter().take(depth).all(|s| s.ident == "super" && s.arguments.is_none())
        && path.segments.last().is_some_and(|s| s.ident == *ident && s.arguments.is_none())
}

/// Whether `path` is `ident` or `self::ident`: the item declared in the
/// module.
pub(crate) fn names_local(path: &syn::Path, ident: &syn::Ident) -> bool {
    let mut segments = path.segments.iter().peekable();
    if path.leading_colon.is_none() && segments.peek().is_some_and(|s| s.ident == "self") && path.segments.len() == 2 {
        segments.next();
    }
    segments.next().is_some_and(|s| s.ident == *ident && s.arguments.is_none()) && segments.next().is_none()
}

/// The attributes of a module item other than an enum, a struct or a type
/// alias, where a role attribute may have been misplaced.
pub(crate) fn item_attrs(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    match item {
        syn::Item::Const(i) => Some(&mut i.attrs),
        syn::Item::Fn(i) => Some(&mut i.attrs),
        syn::Item::Impl(i) => Some(&mut i.attrs),
        syn::Item::Mod(i) => Some(&mut i.attrs),
        syn::Item::Static(i) => Some(&mut i.attrs),
        syn::Item::Trait(i) => Some(&mut i.attrs),
        syn::Item::Union(i) => Some(&mut i.attrs),
        syn::Item::Use(i) => Some(&mut i.attrs),
        _ => None,
    }
}
