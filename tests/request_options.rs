//! Every request option the load generator declares (`REQUEST_OPTIONS`)
//! works end to end from one declaration: a recipe that sets it is
//! accepted, the resolved cell in the artifact holds it, and (for one sent
//! in the body) every request the server received carries it as its body
//! field, and the artifact's `sampling` record says it was sent. Generic over the table, so a new
//! option is covered here without a line of this file changing.

use anvil_loadgen::{CellSpec, OptionKind, REQUEST_OPTIONS};
use serde_json::{Value, json};

use crate::common::entry_dir;
use crate::support_servers::{self, Bench};

/// A value of each kind, written as KDL and as the JSON it becomes.
fn example(kind: OptionKind) -> (&'static str, Value) {
    match kind {
        OptionKind::Int => ("7", json!(7)),
        OptionKind::Number => ("0.25", json!(0.25)),
        OptionKind::Bool => ("#true", json!(true)),
        OptionKind::Str => ("\"x\"", json!("x")),
    }
}

#[test]
fn every_request_option_reaches_the_server_and_the_artifact() {
    let (_sim, sim_port) = support_servers::start_sim(&[]);
    let proxy = support_servers::RecordingProxy::start(sim_port);
    let settings: String =
        REQUEST_OPTIONS.iter().map(|o| format!("    {} {}\n", o.setting, example(o.kind).0)).collect();
    let bench = Bench::new();
    let recipe = bench.recipe(
        "recipe.kdl",
        &format!(
            "server \"ext\" {{\n    url \"http://127.0.0.1:{}\"\n    model \"m\"\n}}\n\
             cell \"c\" server=\"ext\" {{\n    context-tokens 32\n    requests 3\n    max-tokens 8\n{settings}}}\n",
            proxy.port
        ),
    );
    let outcome = bench.run(&recipe, &[], 0);

    let bodies = proxy.json_bodies();
    assert!(!bodies.is_empty(), "no request body seen: {}", outcome.transcript());
    let fingerprint = bench.plan(&recipe, &[]).fingerprint("c");
    let path = entry_dir(&bench.store(), &fingerprint).join("benchmark.json");
    let artifact: Value =
        serde_json::from_slice(&std::fs::read(path).expect("benchmark.json")).expect("JSON");
    for option in REQUEST_OPTIONS {
        let Some(field) = option.body_field else { continue };
        let value = example(option.kind).1;
        for body in &bodies {
            assert_eq!(body[field], value, "`{}` in a request body: {body}", option.setting);
        }
        let sampling = &artifact["sampling"][field];
        assert_eq!((&sampling["requested"], &sampling["sent"]), (&value, &json!(true)), "{}", option.setting);
    }
    let resolved: CellSpec =
        serde_json::from_value(artifact["resolved_cell"].clone()).expect("a resolved cell");
    let set: std::collections::BTreeMap<&str, Value> =
        REQUEST_OPTIONS.iter().map(|o| (o.setting, example(o.kind).1)).collect();
    let expected = anvil_loadgen::RequestOptions::from_settings(|name| set.get(name));
    assert_eq!(resolved.options, expected, "the resolved cell holds every option as set");
}
