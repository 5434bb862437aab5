//! The loader as a pure function: recipe text in, typed declarations (or
//! problems with spans) out.

use std::time::Duration;

use super::Recipe;
use super::decls::{Arrival, Engine, Spec};
use super::testing::load_text;
use crate::words::{Api, CheckType, ThinkingMode};

fn spec<'a>(recipe: &'a Recipe, name: &str) -> &'a Spec {
    &recipe.step(name).unwrap_or_else(|| panic!("no step {name}")).spec
}

fn problems(text: &str) -> Vec<String> {
    match load_text(text) {
        Ok(_) => panic!("expected problems"),
        Err(err) => err.problems.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn a_cell_takes_in_its_workload_and_overrides_it() {
    let recipe = load_text(
        r#"
server "s"
workload "w" { api "completions"; concurrency 4; requests 8; timeout "90s"; thinking "off"; }
cell "c" server="s" workload="w" { concurrency 16; arrival "poisson"; rate 2.5; }
"#,
    )
    .expect("loads");
    let Spec::Cell(cell) = spec(&recipe, "c") else { panic!("a cell") };
    assert_eq!(cell.server, "s");
    assert_eq!(cell.workload.as_deref(), Some("w"));
    assert_eq!(cell.load.api, Api::Completions);
    assert_eq!(cell.load.concurrency, Some(16), "the cell's own setting wins");
    assert_eq!(cell.load.requests, Some(8), "taken in from the workload");
    assert_eq!(cell.load.timeout, Some(Duration::from_secs(90)));
    assert_eq!(cell.load.thinking, ThinkingMode::Off);
    assert_eq!(cell.load.arrival, Arrival::Poisson { rate_per_s: 2.5 });
    assert_eq!(cell.load.context_tokens, None, "unset stays unset: the load generator's default applies");
}

#[test]
fn a_server_engine_follows_from_what_is_set() {
    let recipe = load_text(
        r#"
server "simulated" { sim { decode-step-ms 5; }; }
server "launched" { command "vllm" "serve"; args "--port" "{port}"; port 8123; ready http="/v1/models" timeout="2m"; }
server "remote" { url "http://127.0.0.1:9/"; api-key-env "KEY"; }
"#,
    )
    .expect("loads");
    assert!(matches!(spec(&recipe, "simulated"), Spec::Server(s) if matches!(s.engine, Engine::Sim)));
    let Spec::Server(launched) = spec(&recipe, "launched") else { panic!("a server") };
    let Engine::Command(command) = &launched.engine else { panic!("a launched engine") };
    assert_eq!(command.command, ["vllm", "serve"]);
    assert_eq!(command.args, ["--port", "{port}"], "run-time placeholders are kept for launch");
    assert_eq!(command.port, Some(8123));
    assert_eq!(command.version_args, ["--version"]);
    assert_eq!(command.ready.http.as_deref(), Some("/v1/models"));
    assert_eq!(command.ready.timeout, Some(Duration::from_secs(120)));
    assert_eq!(launched.replicas, 1);
    let Spec::Server(remote) = spec(&recipe, "remote") else { panic!("a server") };
    assert!(
        matches!(&remote.engine, Engine::External { url, api_key_env: Some(var) } if url == "http://127.0.0.1:9/" && var == "KEY")
    );
}

#[test]
fn accumulating_settings_add_up_through_extends() {
    let recipe = load_text(
        r#"
server "base" { abstract #true; command "x"; args "--a"; sim { decode-step-ms 5; faults { http-500-rate 0.1; }; }; }
server "variant" { extends "base"; args "--b"; sim { faults { stall-rate 0.2; }; }; }
"#,
    )
    .expect("loads");
    assert!(recipe.step("base").is_none(), "abstract declarations are not steps");
    let Spec::Server(variant) = spec(&recipe, "variant") else { panic!("a server") };
    let Engine::Command(command) = &variant.engine else { panic!("launched") };
    assert_eq!(command.args, ["--a", "--b"]);
    let sim = variant.sim.as_ref().expect("sim block");
    assert_eq!(sim["decode-step-ms"], 5);
    assert_eq!(sim["faults"]["http-500-rate"], 0.1, "blocks merge at every depth");
    assert_eq!(sim["faults"]["stall-rate"], 0.2);
}

#[test]
fn expressions_are_parsed_at_load_and_point_at_their_text() {
    let text = "cell \"c\" server=\"s\"\nserver \"s\"\ngate \"g\" { require \"cell.c.failed == 0\"; }\n";
    let recipe = load_text(text).expect("loads");
    let Spec::Gate(gate) = spec(&recipe, "g") else { panic!("a gate") };
    let [expression] = gate.require.as_slice() else { panic!("one requirement") };
    let (start, len) = (expression.span.offset(), expression.span.len());
    assert_eq!(&text[start..start + len], "cell.c.failed == 0");
    assert_eq!(expression.parsed.references().len(), 1);
}

#[test]
fn a_check_type_is_a_word_of_the_enum() {
    let recipe = load_text("server \"s\"\ncheck \"k\" server=\"s\" type=\"json-schema\"\n").expect("loads");
    assert!(
        matches!(spec(&recipe, "k"), Spec::Check(c) if c.check_type == CheckType::JsonSchema && c.blocking)
    );
    let found = problems("server \"s\"\ncheck \"k\" server=\"s\" type=\"json\"\n");
    assert!(found.iter().any(|p| p.contains("\"json\" is not one of")), "{found:?}");
}

#[test]
fn an_open_loop_without_a_rate_is_reported_once() {
    // The cell takes the workload's arrival: the workload reports it, not both.
    let found = problems(
        "server \"s\"\nworkload \"w\" { arrival \"poisson\"; }\ncell \"c\" server=\"s\" workload=\"w\"\n",
    );
    let rate: Vec<_> = found.iter().filter(|p| p.contains("needs `rate`")).collect();
    assert_eq!(rate.len(), 1, "{found:?}");
    assert!(rate[0].starts_with("workload `w`"), "{found:?}");
}

#[test]
fn a_port_out_of_range_is_refused() {
    let found = problems("server \"s\" { command \"x\"; port 70000; }\n");
    assert!(found.iter().any(|p| p.contains("port 70000 is out of range")), "{found:?}");
}
