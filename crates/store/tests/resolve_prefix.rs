//! Expanding short fingerprint prefixes.

use crate::common;
use crate::common::new_store;
use anvil_store::{Fingerprint, StoreError};
use serde_json::json;

fn commit(t: &common::TestStore, hex: &str) -> Fingerprint {
    let fp: Fingerprint = hex.parse().unwrap();
    let mut staged = t.store.stage(&fp).unwrap();
    staged.write_json("preimage.json", &json!({})).unwrap();
    staged.write_json("result.json", &json!({})).unwrap();
    staged.commit().unwrap();
    fp
}

#[test]
fn unique_ambiguous_and_missing_prefixes() {
    let t = new_store();
    let a = commit(&t, &format!("abcd1{}", "0".repeat(59)));
    let b = commit(&t, &format!("abcd2{}", "0".repeat(59)));
    let c = commit(&t, &format!("ef01{}", "f".repeat(60)));

    assert_eq!(t.store.resolve_prefix("abcd1").unwrap(), a);
    assert_eq!(t.store.resolve_prefix("ABCD2").unwrap(), b, "case-insensitive");
    assert_eq!(t.store.resolve_prefix("ef01").unwrap(), c);
    assert_eq!(t.store.resolve_prefix(&a.to_string()).unwrap(), a, "a full fingerprint resolves to itself");

    match t.store.resolve_prefix("abcd").unwrap_err() {
        StoreError::Ambiguous { candidates, .. } => assert_eq!(candidates, vec![a, b]),
        other => panic!("expected ambiguous, got {other}"),
    }
    let message = t.store.resolve_prefix("abcd").unwrap_err().to_string();
    assert!(message.contains(&a.to_string()) && message.contains(&b.to_string()), "{message}");

    assert!(matches!(t.store.resolve_prefix("abcd3").unwrap_err(), StoreError::NotFound { .. }));
    assert!(matches!(t.store.resolve_prefix("9999").unwrap_err(), StoreError::NotFound { .. }));
    assert!(matches!(t.store.resolve_prefix("abc").unwrap_err(), StoreError::PrefixTooShort { min: 4, .. }));
    for bad in ["xyzw", "abcd-", "ab/../cd", "ééé", &"a".repeat(65)] {
        assert!(
            matches!(t.store.resolve_prefix(bad).unwrap_err(), StoreError::InvalidPrefix { .. }),
            "{bad}"
        );
    }
}

#[test]
fn staged_but_uncommitted_entries_do_not_resolve() {
    let t = new_store();
    let fp: Fingerprint = format!("1234{}", "5".repeat(60)).parse().unwrap();
    let _staged = t.store.stage(&fp).unwrap();
    assert!(matches!(t.store.resolve_prefix("1234").unwrap_err(), StoreError::NotFound { .. }));
}
