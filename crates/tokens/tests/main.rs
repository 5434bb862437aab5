//! The integration tests of anvil-tokens, as one test binary (a new test
//! file needs its `mod` line below).

mod smollm2;
