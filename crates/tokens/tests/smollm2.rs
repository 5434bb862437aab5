//! The alphabet of a real model's tokenizer: SmolLM2-135M's `tokenizer.json`
//! (tests/fixtures/tokenizers, built from the GGUF's own vocabulary and
//! checked against llama-server's `/tokenize`).

use anvil_tokens::{ServerAddress, TokenAlphabet, Tokenizer, TokenizerSpec};

fn smollm2() -> Tokenizer {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tokenizers/smollm2-135m");
    let spec = TokenizerSpec::parse(path).unwrap();
    let tls = Default::default();
    let nowhere = ServerAddress { base_url: "http://127.0.0.1:9", model: "m", api_key: None, tls: &tls };
    Tokenizer::load(&spec, &nowhere).expect("the fixture loads")
}

#[tokio::test]
async fn smollm2_words_are_one_token_each_and_keep_their_tokens_side_by_side() {
    let tokenizer = smollm2();
    let identity = tokenizer.identity();
    assert!(identity.location.ends_with("tokenizer.json"), "a folder means its tokenizer.json");
    assert!(identity.blake3.as_deref().is_some_and(|d| d.starts_with("blake3:")));
    let alphabet = TokenAlphabet::discover(&tokenizer).await.expect("an alphabet");
    let summary = alphabet.summary();
    eprintln!("{summary:?}");
    assert!(alphabet.len() >= 500, "SmolLM2 has ~600 single-token CVC words: {}", alphabet.len());
    // Blocks of 16 words from 300 different seeds, laid end to end: the
    // text's tokens are exactly the words' tokens (none merged, none split).
    let mut text = String::new();
    let mut expected = Vec::new();
    let mut state = 12345u64;
    for _ in 0..300 * 16 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let (word, id) = alphabet.pick(state >> 17);
        text.push_str(word);
        expected.push(id);
    }
    assert_eq!(tokenizer.encode(&text).await.unwrap(), expected);
    let again = TokenAlphabet::discover(&tokenizer).await.unwrap();
    assert_eq!(again.digest(), alphabet.digest(), "the same tokenizer gives the same alphabet");
    assert!(alphabet.holds_for(&tokenizer).await.unwrap(), "a found alphabet holds for its tokenizer");
    // The same words under other ids (another model's tokenizer) do not.
    let mut state = 1u64;
    let shifted: Vec<(String, u32)> = (0..alphabet.len())
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let (word, id) = alphabet.pick(state >> 20);
            (word.to_string(), id + 1)
        })
        .collect();
    let other = TokenAlphabet::from_words(shifted);
    assert!(!other.holds_for(&tokenizer).await.unwrap(), "ids that are not the tokenizer's do not hold");
}
