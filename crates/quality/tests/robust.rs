//! Bad input never panics: any text read in any format is items or an
//! error naming its line, and any output scores under any scorer.

use anvil_quality::{Format, Item, Scorer, read, score};
use proptest::prelude::*;

/// Lines that look like the formats' lines, half-broken.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\{\"(id|prompt|question|answer|choices|reference|scorer)\":(\"[^\"]{0,12}\"|[0-9-]{1,4}|\\[\\]|null)\\}",
        (
            "[a-z ]{0,8}",
            "[A-Jb-d0-9#, .-]{0,8}",
            prop::sample::select(vec!["exact", "number", "choice", "regex", "x"])
        )
            .prop_map(|(p, r, s)| format!(r#"{{"id":"i","prompt":"{p}","reference":"{r}","scorer":"{s}"}}"#)),
        ("[a-z ]{0,8}", "[0-9a-d# ,]{0,8}")
            .prop_map(|(q, a)| format!(r#"{{"question":"{q}","answer":"{a}","choices":["x","y","z"]}}"#)),
    ]
}

proptest! {
    #[test]
    fn reading_never_panics(lines in prop::collection::vec(line(), 0..6)) {
        let text = lines.join("\n");
        for &format in Format::ALL {
            if let Err(e) = read(format, &text) {
                prop_assert!(e.line().is_none_or(|l| l >= 1 && l <= lines.len().max(1)), "{e}");
            }
        }
    }

    #[test]
    fn scoring_never_panics(output in any::<String>(), reference in "[ -~]{0,10}") {
        for &scorer in Scorer::ALL {
            let item = Item { id: "i".into(), prompt: "p".into(), reference: reference.clone(), scorer };
            let scored = score(&item, &output);
            prop_assert!(!scored.correct || scored.extracted.is_some());
        }
    }
}
