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
    /// Which OpenAI-compatible API a cell drives.
    pub enum Api { Chat = "chat", Completions = "completions", Responses = "responses" }
}

words! {
    /// Whether prompts share a prefix (to exercise the server's prefix cache).
    pub enum PromptCache { Unique = "unique", SharedPrefix = "shared-prefix" }
}

words! {
    /// The reasoning switch sent to the server.
    pub enum Thinking { Default = "default", On = "on", Off = "off" }
}

words! {
    /// What a cell does with output that breaks the controlled-output contract.
    pub enum OutputPolicy { Observe = "observe", Strict = "strict" }
}

words! {
    /// How requests arrive: a closed loop of `concurrency` clients, or open-loop at `rate`.
    pub enum ArrivalWord { Closed = "closed", Poisson = "poisson", Constant = "constant" }
}

words! {
    /// Where an SLO's TTFT and E2E count from: the actual send, or an
    /// open-loop request's scheduled one.
    #[derive(Default)]
    pub enum SloFrom {
        #[default]
        Send = "send",
        Schedule = "schedule",
    }
}

words! {
    /// How requests are spread over a server's replicas.
    pub enum Balance { RoundRobin = "round-robin", LeastOutstanding = "least-outstanding" }
}

words! {
    /// When a cell's connections are opened.
    #[derive(Default)]
    pub enum ConnectWord {
        /// Before each measured run's clock starts (the default).
        #[default]
        Ahead = "ahead",
        /// When a request finds none open: connection setup is measured.
        OnDemand = "on-demand",
    }
}

words! {
    #[serde]
    /// The functional checks (a check's result stores its word as `"type"`).
    pub enum CheckType {
        Smoke = "smoke",
        JsonSchema = "json-schema",
        ToolCall = "tool-call",
        Responses = "responses",
        CanaryIsolation = "canary-isolation",
    }
}

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
