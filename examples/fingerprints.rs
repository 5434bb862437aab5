//! Using anvil as a library: load a recipe, plan it, and print every
//! step's fingerprint and what it depends on.
//!
//!     cargo run --example fingerprints -- recipes/quickstart.kdl

use anvil::plan::{EngineMode, Plan};

fn main() -> miette::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "recipes/quickstart.kdl".to_string());
    let recipe = anvil::recipe::load(path.as_ref(), &[])?;
    // Without a store every step is pending; fingerprints are the same either way.
    let plan = Plan::build(recipe, None, EngineMode::AsDeclared)?;
    for &i in &plan.order {
        let node = &plan.nodes[i];
        let deps: Vec<&str> = node.deps.iter().map(|&d| plan.nodes[d].name.as_str()).collect();
        println!(
            "{} {:<8} {:<24} after [{}]",
            node.fingerprint.short(),
            node.kind.as_str(),
            node.name,
            deps.join(", ")
        );
    }
    Ok(())
}
