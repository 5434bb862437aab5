//! Settings that take one of a fixed set of words. Each is an enum whose
//! words are written once, here: the loader's "did you mean" lists, the
//! schema's `one of …` messages and the executors' matches all follow from it.

/// An enum of recipe words: `words! { pub enum Api { Chat = "chat", … } }`
/// gives `Api::WORDS`, `Api::from_word` and `Api::as_str`.
macro_rules! words {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every word, in the order the documentation lists them.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            pub fn from_word(word: &str) -> Option<$name> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

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
    /// The functional checks.
    pub enum CheckType {
        Smoke = "smoke",
        JsonSchema = "json-schema",
        ToolCall = "tool-call",
        Responses = "responses",
        CanaryIsolation = "canary-isolation",
    }
}

words! {
    /// Which way a screen's metric is better.
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
