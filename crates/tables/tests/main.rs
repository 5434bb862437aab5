//! anvil-tables' integration tests, one binary (see the workspace Cargo.toml).

mod round_trip;
mod schema;
