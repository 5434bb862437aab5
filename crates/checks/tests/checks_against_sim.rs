//! Every check against the real simulated engine over loopback HTTP: it
//! passes on a clean sim, and fails with a clear detail when the matching
//! fault is injected at rate 1.0.

use anvil_checks::{CheckOutcome, CheckSpec, CheckType, Target, run_check};
use anvil_sim::{SimHandle, SimProfile};
use serde_json::{Value, json};

/// A fast sim (1 ms decode steps) with `settings` applied.
async fn start_sim(settings: &[(&str, &str)]) -> SimHandle {
    let mut profile = SimProfile::default();
    let fast = [("decode-step-ms", "1"), ("decode-step-ms-per-seq", "0.01"), ("prefill-tok-s", "10000000")];
    for (key, value) in fast.iter().chain(settings) {
        profile.set(key, value).expect("valid sim setting");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    anvil_sim::spawn(profile, listener).await.expect("sim starts")
}

fn spec(check_type: CheckType) -> CheckSpec {
    let mut spec = CheckSpec::new("test-check", check_type, "anvil-sim");
    spec.timeout_ms = 20_000;
    spec
}

async fn run(spec: &CheckSpec, settings: &[(&str, &str)]) -> CheckOutcome {
    let sim = start_sim(settings).await;
    let outcome = run_check(spec, &Target::new(sim.base_url())).await.expect("check runs");
    sim.shutdown().await.expect("sim stops");
    outcome
}

fn attempts(outcome: &CheckOutcome) -> &Vec<Value> {
    outcome.evidence["attempts"].as_array().expect("evidence lists attempts")
}

fn assert_passed(outcome: &CheckOutcome, attempts_expected: u32) {
    assert!(outcome.passed, "expected a pass: {}\n{:#}", outcome.detail, outcome.evidence);
    assert_eq!((outcome.attempts, outcome.failures), (attempts_expected, 0));
    assert!(attempts(outcome).iter().all(|a| a["passed"] == true && a["http_status"] == 200));
}

fn assert_failed(outcome: &CheckOutcome, detail_part: &str) {
    assert!(!outcome.passed, "expected a failure: {:#}", outcome.evidence);
    assert_eq!(outcome.failures, outcome.attempts, "{}", outcome.detail);
    assert!(outcome.detail.contains(detail_part), "detail {:?} lacks {detail_part:?}", outcome.detail);
    assert!(
        attempts(outcome).iter().all(|a| a["passed"] == false && !a["why"].as_str().unwrap_or("").is_empty())
    );
}

#[tokio::test]
async fn smoke_passes_on_a_clean_sim() {
    let outcome = run(&spec(CheckType::Smoke), &[]).await;
    assert_passed(&outcome, 3);
    let reply = &attempts(&outcome)[0]["reply"];
    assert!(!reply["content"].as_str().unwrap().is_empty());
    assert!(reply["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    assert_eq!(outcome.evidence["type"], "smoke");
}

#[tokio::test]
async fn smoke_fails_on_http_500() {
    let outcome = run(&spec(CheckType::Smoke), &[("faults.http-500-rate", "1.0")]).await;
    assert_failed(&outcome, "HTTP 500");
    assert_eq!(attempts(&outcome)[0]["http_status"], 500);
}

#[tokio::test]
async fn smoke_fails_without_usage() {
    let outcome = run(&spec(CheckType::Smoke), &[("faults.missing-usage-rate", "1.0")]).await;
    assert_failed(&outcome, "no usage");
}

#[tokio::test]
async fn smoke_fails_on_a_cut_connection_without_erroring() {
    let outcome = run(&spec(CheckType::Smoke), &[("faults.disconnect-rate", "1.0")]).await;
    // The sim fails the body before its headers leave: the exchange breaks.
    assert_failed(&outcome, "connection closed before message completed");
}

#[tokio::test]
async fn json_schema_passes_with_and_without_thinking() {
    let mut json_spec = spec(CheckType::JsonSchema);
    json_spec.schema = Some(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "size": {"type": "integer", "minimum": 1, "maximum": 9}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
        "required": ["name", "size", "tags"],
        "additionalProperties": false
    }));
    let outcome = run(&json_spec, &[]).await;
    assert_passed(&outcome, 3);
    assert_eq!(outcome.evidence["settings"]["schema"], json_spec.schema.clone().unwrap());
    let content = attempts(&outcome)[0]["reply"]["content"].as_str().unwrap().to_owned();
    let value: Value = serde_json::from_str(&content).expect("the stored reply is the JSON value");
    assert!(value["size"].is_u64());

    json_spec.thinking = Some(true);
    let outcome = run(&json_spec, &[]).await;
    assert_passed(&outcome, 3);
    assert!(attempts(&outcome)[0]["reply"]["reasoning_chars"].as_u64().unwrap() > 0, "the sim thought");
}

#[tokio::test]
async fn json_schema_fails_on_duplicate_after_think() {
    let mut json_spec = spec(CheckType::JsonSchema);
    json_spec.thinking = Some(true);
    let outcome = run(&json_spec, &[("faults.json-duplicate-after-think-rate", "1.0")]).await;
    assert_failed(&outcome, "</think>");
    let content = attempts(&outcome)[0]["reply"]["content"].as_str().unwrap();
    assert!(content.contains("}</think>{"), "the evidence keeps the bad reply: {content}");
}

#[tokio::test]
async fn json_schema_fails_when_the_reply_is_cut_by_max_tokens() {
    let mut json_spec = spec(CheckType::JsonSchema);
    json_spec.max_tokens = 4;
    let outcome = run(&json_spec, &[]).await;
    assert_failed(&outcome, "finish_reason length");
}

#[tokio::test]
async fn tool_call_passes_with_a_shared_prefix_and_hits_the_prefix_cache() {
    let mut tool_spec = spec(CheckType::ToolCall);
    tool_spec.shared_prefix_tokens = 2000;
    let outcome = run(&tool_spec, &[]).await;
    assert_passed(&outcome, 3);
    let first = &attempts(&outcome)[0]["reply"];
    assert_eq!(first["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(first["cached_tokens"], 0, "nothing is cached before the first attempt");
    let later = attempts(&outcome)[2]["reply"]["cached_tokens"].as_u64().unwrap();
    assert!(later >= 1900, "later attempts reuse the shared prefix: {later} cached tokens");
    assert!(first["usage"]["prompt_tokens"].as_u64().unwrap() >= 2000);
}

#[tokio::test]
async fn tool_call_with_required_choice_and_a_custom_tool() {
    let mut tool_spec = spec(CheckType::ToolCall);
    tool_spec.tool_choice = Some("required".into());
    tool_spec.tool = Some(json!({
        "name": "book_table",
        "description": "Book a restaurant table.",
        "parameters": {"type": "object", "properties": {"guests": {"type": "integer", "minimum": 1, "maximum": 12}, "time": {"type": "string"}}, "required": ["guests", "time"]}
    }));
    let outcome = run(&tool_spec, &[]).await;
    assert_passed(&outcome, 3);
    assert!(outcome.detail.contains("book_table"), "{}", outcome.detail);
}

#[tokio::test]
async fn tool_call_fails_when_the_call_is_cut_off() {
    let mut tool_spec = spec(CheckType::ToolCall);
    tool_spec.max_tokens = 3;
    let outcome = run(&tool_spec, &[]).await;
    assert_failed(&outcome, "finish_reason is `length`, not `tool_calls`");
}

#[tokio::test]
async fn tool_call_fails_on_http_503() {
    let outcome = run(&spec(CheckType::ToolCall), &[("faults.http-503-rate", "1.0")]).await;
    assert_failed(&outcome, "HTTP 503");
}

#[tokio::test]
async fn responses_passes_on_a_clean_sim() {
    let outcome = run(&spec(CheckType::Responses), &[]).await;
    assert_passed(&outcome, 3);
    let reply = &attempts(&outcome)[0]["reply"];
    assert!(reply["non_streaming"]["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert_eq!(reply["streaming"]["last_event"], "response.completed");
    assert!(reply["streaming"]["event_counts"]["response.output_text.delta"].as_u64().unwrap() > 1);
}

#[tokio::test]
async fn responses_passes_with_reasoning() {
    let mut responses_spec = spec(CheckType::Responses);
    responses_spec.thinking = Some(true);
    let outcome = run(&responses_spec, &[]).await;
    assert_passed(&outcome, 3);
    let reply = &attempts(&outcome)[0]["reply"];
    assert_eq!(reply["non_streaming"]["output_types"], json!(["reasoning", "message"]));
    assert!(reply["streaming"]["event_counts"]["response.reasoning_text.delta"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn responses_fails_without_usage() {
    let outcome = run(&spec(CheckType::Responses), &[("faults.missing-usage-rate", "1.0")]).await;
    assert_failed(&outcome, "no usage");
}

#[tokio::test]
async fn responses_fails_on_a_truncated_stream() {
    // Disconnect cuts both halves: the non-streaming body first.
    let outcome = run(&spec(CheckType::Responses), &[("faults.disconnect-rate", "1.0")]).await;
    assert_failed(&outcome, "non-streaming");
}

#[tokio::test]
async fn responses_fails_on_a_malformed_stream_event() {
    let outcome = run(&spec(CheckType::Responses), &[("faults.malformed-sse-rate", "1.0")]).await;
    // The non-streaming body is cut in half by the same fault.
    assert_failed(&outcome, "not JSON");
}

#[tokio::test]
async fn canary_isolation_passes_on_a_clean_sim() {
    let mut canary_spec = spec(CheckType::CanaryIsolation);
    canary_spec.seed = 17;
    canary_spec.requests = 2;
    let outcome = run(&canary_spec, &[]).await;
    assert_passed(&outcome, 16);
    let markers: Vec<&str> =
        attempts(&outcome).iter().map(|a| a["reply"]["request_canary"]["marker"].as_str().unwrap()).collect();
    assert_eq!(markers.first(), Some(&"ANVIL_REQ_17_00000"));
    assert_eq!(markers.last(), Some(&"ANVIL_REQ_17_00015"));
    for attempt in attempts(&outcome) {
        let canary = &attempt["reply"]["request_canary"];
        assert_eq!(
            (canary["capture_complete"].clone(), canary["marker_at_start"].clone()),
            (json!(true), json!(true))
        );
        assert!(
            attempt["reply"]["content"].as_str().unwrap().starts_with(canary["marker"].as_str().unwrap())
        );
    }
}

#[tokio::test]
async fn canary_isolation_fails_on_a_leaked_marker() {
    let mut canary_spec = spec(CheckType::CanaryIsolation);
    canary_spec.requests = 1;
    canary_spec.seed = 5;
    let outcome = run(&canary_spec, &[("faults.canary-leak-rate", "1.0")]).await;
    assert_failed(&outcome, "foreign marker");
    assert!(outcome.detail.contains("ANVIL_REQ_5_00001"), "names the leaked marker: {}", outcome.detail);
    assert_eq!(attempts(&outcome)[0]["reply"]["request_canary"]["foreign_marker_count"], 1);
}

#[tokio::test]
async fn canary_isolation_fails_closed_on_a_truncated_stream() {
    let mut canary_spec = spec(CheckType::CanaryIsolation);
    canary_spec.requests = 1;
    canary_spec.concurrency = 4;
    let outcome = run(&canary_spec, &[("faults.disconnect-rate", "1.0")]).await;
    assert_failed(&outcome, "truncated capture fails closed");
    let canary = &attempts(&outcome)[0]["reply"]["request_canary"];
    assert_eq!(canary["marker_at_start"], true, "the marker arrived, yet the check fails closed");
    assert_eq!(canary["capture_complete"], false);
}

#[tokio::test]
async fn canary_isolation_fails_on_a_malformed_event() {
    let mut canary_spec = spec(CheckType::CanaryIsolation);
    canary_spec.requests = 1;
    canary_spec.concurrency = 2;
    let outcome = run(&canary_spec, &[("faults.malformed-sse-rate", "1.0")]).await;
    assert_failed(&outcome, "broken stream");
}

#[tokio::test]
async fn a_stalled_server_times_out_as_a_failure() {
    let mut smoke = spec(CheckType::Smoke);
    smoke.requests = 1;
    smoke.timeout_ms = 300;
    let outcome = run(&smoke, &[("faults.stall-rate", "1.0"), ("faults.stall-ms", "5000")]).await;
    assert_failed(&outcome, "300 ms timeout");
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_not_a_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let error =
        run_check(&spec(CheckType::Smoke), &Target::new(format!("http://{address}"))).await.unwrap_err();
    assert!(format!("{error:#}").contains("cannot reach"), "{error:#}");
}

#[tokio::test]
async fn a_wrong_model_name_fails_with_the_servers_message() {
    let mut smoke = spec(CheckType::Smoke);
    smoke.model = "other-model".into();
    smoke.requests = 1;
    let outcome = run(&smoke, &[("model", "served-model")]).await;
    assert_failed(&outcome, "HTTP 404: The model `other-model` does not exist.");
}

#[tokio::test]
async fn invalid_specs_are_rejected_before_any_request() {
    let mut bad = spec(CheckType::JsonSchema);
    bad.schema = Some(json!({"type": "objekt"}));
    let error = run_check(&bad, &Target::new("http://127.0.0.1:9")).await.unwrap_err();
    assert!(error.to_string().contains("not a valid JSON schema"), "{error}");
    let mut no_name = spec(CheckType::ToolCall);
    no_name.tool = Some(json!({"parameters": {"type": "object"}}));
    assert!(anvil_checks::validate(&no_name).unwrap_err().to_string().contains("non-empty `name`"));
    let mut zero = spec(CheckType::Smoke);
    zero.requests = 0;
    assert!(anvil_checks::validate(&zero).is_err());
}
