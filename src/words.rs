//! Settings that take one of a fixed set of words. Each is an enum whose
//! words are written once, here: the loader's "did you mean" lists, the
//! schema's `one of …` messages and the executors' matches all follow from it
//! (`anvil_words::words!`, the one way to declare such an enum).

use anvil_words::words;

words! {
    /// What a `search` varies: the Poisson arrival rate, or the closed-loop concurrency.
    pub enum SearchVariable { Rate = "rate", Concurrency = "concurrency" }
}

words! {
    /// How a `search` chooses its probes: double until a probe fails, then bisect; or a fixed list.
    pub enum SearchMethod { Bracket = "bracket", Ladder = "ladder" }
}

words! {
    /// How a server is provided.
    pub enum EngineKind {
        Command = "command",
        Sim = "sim",
        External = "external",
        Vllm = "vllm",
        Sglang = "sglang",
        LlamaCpp = "llama.cpp",
    }
}

words! {
    /// Whether prompts share a prefix (to exercise the server's prefix cache).
    pub enum PromptCache { Unique = "unique", SharedPrefix = "shared-prefix" }
}

words! {
    /// How requests arrive: a closed loop of `concurrency` clients, or open-loop at `rate`.
    pub enum ArrivalWord { Closed = "closed", Poisson = "poisson", Constant = "constant" }
}

/// Words the load generator's cell spec takes as they are: its own enums,
/// declared once (`anvil_loadgen::CellSpec`).
pub use anvil_loadgen::{Api, Connect, OutputPolicy, SloFrom, ThinkingMode};

words! {
    /// How requests are spread over a server's replicas. The recipe's own
    /// words: the artifact stores the load generator's `anvil_loadgen::Balance`
    /// as `round_robin` / `least_outstanding`.
    pub enum Balance { RoundRobin = "round-robin", LeastOutstanding = "least-outstanding" }
}

/// The functional checks: the checks crate's own word enum (a check's
/// result stores its word as `"type"`).
pub use anvil_checks::CheckType;

words! {
    #[serde]
    /// Which way a screen's metric is better (a screen's result stores its word).
    pub enum Goal { Maximize = "maximize", Minimize = "minimize" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_round_trips() {
        for word in CheckType::WORDS {
            assert_eq!(CheckType::from_word(word).map(CheckType::as_str), Some(*word));
        }
        assert_eq!(Api::from_word("chats"), None);
        assert_eq!(Balance::LeastOutstanding.to_string(), "least-outstanding");
    }
}
