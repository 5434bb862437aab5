//! Preimages as a pure function of the recipe: what enters a fingerprint
//! and what does not.

use serde_json::json;

use super::{EngineMode, Plan};
use crate::recipe::testing::load_text;

fn plan(text: &str, mode: EngineMode) -> Plan {
    Plan::build(load_text(text).expect("loads"), None, mode).expect("plans")
}

fn node<'a>(plan: &'a Plan, name: &str) -> &'a super::PlannedNode {
    &plan.nodes[plan.index_of(name).expect("step")]
}

#[test]
fn descriptions_comments_and_order_do_not_count() {
    let a = plan(
        "server \"s\" { description \"one\"; }\ncell \"c\" server=\"s\" { concurrency 2; requests 4; }\n",
        EngineMode::AsDeclared,
    );
    let b = plan(
        "// a comment\ncell \"c\" server=\"s\" { requests 4\n concurrency 2; description \"two\"; }\nserver \"s\"\n",
        EngineMode::AsDeclared,
    );
    assert_eq!(node(&a, "c").fingerprint, node(&b, "c").fingerprint);
    assert_eq!(node(&a, "s").fingerprint, node(&b, "s").fingerprint);
}

#[test]
fn a_cell_hashes_its_settings_its_server_and_the_protocol() {
    let p = plan(
        "server \"s\"\ncell \"c\" server=\"s\" { concurrency 2; timeout \"2s\"; }\n",
        EngineMode::AsDeclared,
    );
    let cell = &node(&p, "c").preimage.value();
    assert_eq!(cell["settings"]["concurrency"], 2);
    assert_eq!(cell["settings"]["timeout"], 2000, "durations hash as milliseconds");
    assert!(cell["settings"].get("server").is_none(), "a reference is hashed by the server's fingerprint");
    assert_eq!(cell["upstream"]["server"], json!(node(&p, "s").fingerprint.to_string()));
    assert_eq!(cell["environment"]["protocol"], super::MEASUREMENT_PROTOCOL);
}

#[test]
fn a_simulated_twin_keeps_only_what_changes_a_simulated_result() {
    let text = "server \"s\" { command \"/no/such/engine\"; args \"--tp\" \"2\"; model \"m\"; sim { decode-step-ms 7; }; }\n";
    let declared = plan(text, EngineMode::AsDeclared);
    let twin = plan(text, EngineMode::SimulatedTwins);
    let real = &node(&declared, "s").preimage.value();
    assert_eq!(real["settings"]["args"], json!(["--tp", "2"]));
    assert!(real["environment"]["engine"]["unresolved"].is_string(), "a missing engine is recorded: {real}");
    let sim = &node(&twin, "s").preimage.value();
    assert_eq!(sim["settings"]["engine"], "sim");
    assert_eq!(sim["settings"]["model"], "m");
    assert_eq!(sim["settings"]["sim"]["decode-step-ms"], 7);
    assert!(sim["settings"].get("args").is_none() && sim["settings"].get("command").is_none(), "{sim}");
    assert_eq!(sim["environment"]["engine"]["simulated"], true);
}

#[test]
fn a_gate_hashes_the_params_it_reads_and_waits_for_results() {
    let text = "param \"want\" 0\ntask \"t\" { run \"true\"; }\ngate \"g\" { require \"task.t.exit_code == {want}\"; require \"param.want == 0\"; }\n";
    let p = plan(text, EngineMode::AsDeclared);
    let gate = node(&p, "g");
    assert_eq!(gate.preimage.value()["upstream"]["params"], json!({"want": 0}));
    assert!(gate.provisional, "no store: its inputs are not produced yet");
    assert_eq!(gate.preimage.value()["upstream"]["reads"]["task.t"], "not yet produced");
}

#[test]
fn after_orders_steps_without_entering_settings() {
    let p = plan(
        "task \"a\" { run \"true\"; }\ntask \"b\" { run \"true\"; after \"a\"; }\n",
        EngineMode::AsDeclared,
    );
    let b = &node(&p, "b").preimage.value();
    assert!(b["settings"].get("after").is_none());
    assert_eq!(b["upstream"]["after"], json!([node(&p, "a").fingerprint.to_string()]));
}
