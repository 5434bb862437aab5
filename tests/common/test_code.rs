//! Which items of a source file are test code, for the tests that read the
//! project's own sources (module cycles, function length).

/// Whether an item carries `#[test]` or a `#[cfg(...)]` that needs `test`
/// (`cfg(test)`, `cfg(all(test, …))`).
pub fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    fn requires_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(l) if l.path.is_ident("all") => l
                .parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .map(|list| list.iter().any(requires_test))
                .unwrap_or(false),
            _ => false,
        }
    }
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| requires_test(&m)))
    })
}
