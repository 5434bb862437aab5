//! Reading scored datasets: the three formats, and errors that name the
//! line and the field at fault rather than panicking.

use anvil_quality::{
    Format, Item, ReadError, Scorer, read, read_anvil, read_gsm8k, read_mmlu, score, write_anvil,
};

/// The error of reading `text`, with its line and field.
fn error(format: Format, text: &str) -> (ReadError, Option<usize>, Option<&'static str>) {
    let e = read(format, text).expect_err("an error");
    let (line, field) = (e.line(), e.field());
    (e, line, field)
}

#[test]
fn anvil_reads_and_writes_back() {
    let text = concat!(
        r#"{"id":"a","prompt":"Capital of France?","reference":"Paris","scorer":"exact"}"#,
        "\n\n",
        r#"{"id":"b","prompt":"6 x 7?","reference":"42","scorer":"number"}"#,
        "\n",
        r#"{"id":"c","prompt":"Pick one","reference":"c","scorer":"choice"}"#,
        "\n",
        r#"{"id":"d","prompt":"Say yes","reference":"(?i)\\byes\\b","scorer":"regex","extra":1}"#,
        "\n",
    );
    let items = read_anvil(text).expect("reads");
    assert_eq!(items.len(), 4);
    assert_eq!(items[2].reference, "C", "a choice letter made uppercase");
    assert_eq!(items[3].scorer, Scorer::Regex);
    assert!(score(&items[3], "Yes, it is").correct);
    assert_eq!(read_anvil(&write_anvil(&items)).expect("reads back"), items);
}

#[test]
fn anvil_errors_name_line_and_field() {
    let ok = r#"{"id":"a","prompt":"p","reference":"1","scorer":"number"}"#;
    let cases: [(String, usize, Option<&str>); 10] = [
        (format!("{ok}\n{{not json"), 2, None),
        (format!("{ok}\n[1, 2]"), 2, None),
        (format!("\n\n{}", r#"{"prompt":"p","reference":"1","scorer":"number"}"#), 3, Some("id")),
        (r#"{"id":"a","prompt":"  ","reference":"1","scorer":"number"}"#.into(), 1, Some("prompt")),
        (r#"{"id":"a","prompt":"p","reference":"1","scorer":"numeric"}"#.into(), 1, Some("scorer")),
        (r#"{"id":"a","prompt":"p","reference":"forty","scorer":"number"}"#.into(), 1, Some("reference")),
        (r#"{"id":"a","prompt":"p","reference":"K","scorer":"choice"}"#.into(), 1, Some("reference")),
        (r#"{"id":"a","prompt":"p","reference":"(","scorer":"regex"}"#.into(), 1, Some("reference")),
        (r#"{"id":"a","prompt":"p","reference":2,"scorer":"number"}"#.into(), 1, Some("reference")),
        (format!("{ok}\n{ok}"), 2, Some("id")),
    ];
    for (text, line, field) in cases {
        let (e, l, f) = error(Format::Anvil, &text);
        assert_eq!((l, f), (Some(line), field), "{text}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
    let (e, ..) = error(Format::Anvil, &format!("{ok}\n{ok}"));
    assert_eq!(e.to_string(), "line 2: id `a` is already the id of line 1");
    let (e, ..) = error(Format::Anvil, r#"{"id":"a","prompt":"p","reference":"1","scorer":"numeric"}"#);
    assert_eq!(e.to_string(), "line 1: field `scorer` is `numeric`, not one of exact, number, choice, regex");
    assert!(matches!(read_anvil("\n  \n"), Err(ReadError::Empty)));
    assert!(matches!(read_anvil(""), Err(ReadError::Empty)));
}

#[test]
fn gsm8k() {
    let text = concat!(
        r#####"{"question":"Natalia sold 48 clips in April and half as many in May. How many in all?","answer":"48/2 = <<48/2=24>>24 in May.\n48+24 = <<48+24=72>>72\n#### 72"}"#####,
        "\n",
        r#####"{"question":"Big sum?","answer":"#### 1,250","id":"q2"}"#####,
        "\n",
    );
    let items = read_gsm8k(text).expect("reads");
    assert_eq!(
        items[0],
        Item {
            id: "1".into(),
            prompt: "Natalia sold 48 clips in April and half as many in May. How many in all?".into(),
            reference: "72".into(),
            scorer: Scorer::Number,
        }
    );
    assert_eq!((items[1].id.as_str(), items[1].reference.as_str()), ("q2", "1250"));
    assert!(score(&items[1], "She has 1250 dollars.").correct);
    let cases = [
        (r#"{"question":"q","answer":"72"}"#, Some("answer")),
        (r#####"{"question":"q","answer":"#### seventy"}"#####, Some("answer")),
        (r#####"{"answer":"#### 1"}"#####, Some("question")),
        (r#####"{"question":"q","answer":"#### 1","id":[1]}"#####, Some("id")),
        (r#"{"question":"q","answer":1}"#, Some("answer")),
    ];
    for (text, field) in cases {
        let (e, line, f) = error(Format::Gsm8k, text);
        assert_eq!((line, f), (Some(1), field), "{text}: {e}");
    }
}

#[test]
fn mmlu() {
    let text = concat!(
        r#"{"question":"What is 2 + 2?","choices":["3","4","5","22"],"answer":1,"subject":"math"}"#,
        "\n",
        r#"{"question":"Largest planet?","choices":["Mars","Venus","Jupiter","Earth"],"answer":"C"}"#,
        "\n",
    );
    let items = read_mmlu(text).expect("reads");
    assert_eq!(
        items[0].prompt,
        "What is 2 + 2?\nA. 3\nB. 4\nC. 5\nD. 22\nAnswer with the letter of the correct choice (A, B, C or D).\nAnswer:"
    );
    assert_eq!((items[0].reference.as_str(), items[0].scorer), ("B", Scorer::Choice));
    assert_eq!((items[1].id.as_str(), items[1].reference.as_str()), ("2", "C"));
    assert!(score(&items[1], " C. Jupiter").correct);
    let cases = [
        (r#"{"question":"q","choices":["a","b","c","d"],"answer":4}"#, "answer"),
        (r#"{"question":"q","choices":["a","b","c","d"],"answer":"E"}"#, "answer"),
        (r#"{"question":"q","choices":["a","b","c","d"],"answer":-1}"#, "answer"),
        (r#"{"question":"q","choices":["a","b","c","d"],"answer":1.5}"#, "answer"),
        (r#"{"question":"q","choices":["a","b","c","d"]}"#, "answer"),
        (r#"{"question":"q","choices":["a"],"answer":0}"#, "choices"),
        (r#"{"question":"q","choices":"abcd","answer":0}"#, "choices"),
        (r#"{"question":"q","choices":["a",2,"c","d"],"answer":0}"#, "choices"),
    ];
    for (text, field) in cases {
        let (e, line, f) = error(Format::Mmlu, text);
        assert_eq!((line, f), (Some(1), Some(field)), "{text}: {e}");
    }
    let (e, ..) = error(Format::Mmlu, cases[0].0);
    assert_eq!(e.to_string(), "line 1: field `answer` is not a choice: an index 0 to 3 or a letter A to D");
}

#[test]
fn shipped_dataset_reads() {
    let text = include_str!("../../../datasets/arith-v1.jsonl");
    let items = read(Format::Anvil, text).expect("reads");
    assert_eq!(items.len(), 200);
    assert!(items.iter().all(|i| i.scorer == Scorer::Number));
}
