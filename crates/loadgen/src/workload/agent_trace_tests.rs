//! Agent traces: a seeded fan-out/join graph whose schedule, critical path
//! and ideal cache hits are known by construction, read in both layouts;
//! every rule a file can break, named at its line; the fixtures.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::*;
use crate::workload::split_mix::SplitMix64;

fn read(text: &str, format: AgentTraceFormat) -> Result<AgentTrace, FileProblem> {
    AgentTrace::read_from(text.as_bytes(), format)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn task<'t>(trace: &'t AgentTrace, id: &str) -> &'t AgentTask {
    trace.tasks.iter().find(|t| t.id == id).unwrap_or_else(|| panic!("no task {id}"))
}

fn call_index(task: &AgentTask, id: &str) -> u32 {
    task.calls.iter().position(|c| c.id == id).unwrap_or_else(|| panic!("no call {id}")) as u32
}

fn names(task: &AgentTask, calls: &[u32]) -> Vec<String> {
    calls.iter().map(|&c| task.calls[c as usize].id.clone()).collect()
}

const BLOCK: u32 = 16;

/// One call of a generated task, and what the graph must say about it.
struct Built {
    id: String,
    parents: Vec<String>,
    inherit: Option<String>,
    /// Its own blocks (after the inherited ones).
    own: Vec<u64>,
    /// All its blocks.
    blocks: Vec<u64>,
    text: bool,
    delay_ms: u64,
    duration_ms: u64,
    /// When its reply ends and how many prompt tokens are cached for sure.
    end_ms: u64,
    ideal: Option<u64>,
}

/// A planner whose answer fans out to 2–5 chains of 1–3 sub-agent calls,
/// each inheriting the call before it, joined by one call that inherits
/// the planner, plus a side call with a text prompt; delays and server
/// times drawn from `seed` (whole milliseconds: sums are exact).
fn seeded_task(seed: u64, fresh: &mut u64) -> Vec<Built> {
    let mut rng = SplitMix64::new(seed, 41);
    let mut draw = |lo: u64, hi: u64| lo + rng.next_u64() % (hi - lo);
    let mut new_blocks = |n: u64| {
        (0..n)
            .map(|_| {
                *fresh += 1;
                *fresh
            })
            .collect::<Vec<u64>>()
    };
    let mut calls: Vec<Built> = Vec::new();
    let system = new_blocks(draw(2, 6));
    let (delay, duration) = (draw(0, 100), draw(50, 2000));
    calls.push(Built {
        id: "plan".into(),
        parents: vec![],
        inherit: None,
        own: system.clone(),
        blocks: system.clone(),
        text: false,
        delay_ms: delay,
        duration_ms: duration,
        end_ms: delay + duration,
        ideal: Some(0),
    });
    let plan_end = calls[0].end_ms;
    let mut ends = Vec::new();
    let mut lasts = Vec::new();
    for i in 0..draw(2, 6) {
        let mut prev = 0usize;
        for j in 0..draw(1, 4) {
            let own = new_blocks(draw(1, 4));
            let inherited = calls[prev].blocks.clone();
            let mut blocks = inherited.clone();
            blocks.extend(&own);
            let (delay, duration) = (draw(0, 500), draw(50, 2000));
            let start = calls[prev].end_ms + delay;
            calls.push(Built {
                id: format!("w{i}.{j}"),
                parents: vec![calls[prev].id.clone()],
                inherit: Some(calls[prev].id.clone()),
                own,
                blocks,
                text: false,
                delay_ms: delay,
                duration_ms: duration,
                end_ms: start + duration,
                // All of what it inherited: its parent's whole prompt.
                ideal: Some(inherited.len() as u64 * u64::from(BLOCK)),
            });
            prev = calls.len() - 1;
        }
        ends.push(calls[prev].end_ms);
        lasts.push(calls[prev].id.clone());
    }
    let own = new_blocks(draw(1, 3));
    let mut blocks = system.clone();
    blocks.extend(&own);
    let (delay, duration) = (draw(0, 300), draw(50, 2000));
    let start = ends.iter().max().unwrap() + delay;
    calls.push(Built {
        id: "join".into(),
        parents: lasts,
        inherit: Some("plan".into()),
        own,
        blocks,
        text: false,
        delay_ms: delay,
        duration_ms: duration,
        end_ms: start + duration,
        // Every chain began with the planner's blocks and went on with
        // blocks of its own: the planner's are all that is shared.
        ideal: Some(system.len() as u64 * u64::from(BLOCK)),
    });
    let (delay, duration) = (draw(0, 3000), draw(50, 2000));
    calls.push(Built {
        id: "log".into(),
        parents: vec!["plan".into()],
        inherit: None,
        own: vec![],
        blocks: vec![],
        text: true,
        delay_ms: delay,
        duration_ms: duration,
        end_ms: plan_end + delay + duration,
        ideal: None,
    });
    calls
}

/// The task as lines of anvil's layout.
fn as_jsonl(task: &str, calls: &[Built]) -> Vec<String> {
    calls
        .iter()
        .map(|c| {
            let mut line = format!("{{\"task\": \"{task}\", \"call\": \"{}\"", c.id);
            if !c.parents.is_empty() {
                let _ = write!(line, ", \"parents\": {:?}", c.parents);
            }
            if let Some(from) = &c.inherit {
                let _ = write!(line, ", \"inherit\": \"{from}\"");
            }
            if c.text {
                line.push_str(", \"prompt\": \"Write the log line.\"");
            } else {
                let _ = write!(line, ", \"hash_ids\": {:?}", c.own);
            }
            let _ = write!(line, ", \"delay_ms\": {}, \"output_tokens\": 8}}", c.delay_ms);
            line
        })
        .collect()
}

/// The task as Agentic Mooncake rows (cumulative `hash_ids`, the delay
/// split between `delay` and `tool_wait_ms`); no text rows in that layout.
fn as_agentic_mooncake(task: &str, calls: &[Built], at_ms: u64) -> Vec<String> {
    calls
        .iter()
        .filter(|c| !c.text)
        .map(|c| {
            let id = |name: &str| format!("{task}/{name}");
            let mut line = format!("{{\"request_id\": \"{}\", \"session_id\": \"{task}\"", id(&c.id));
            let _ = write!(line, ", \"hash_ids\": {:?}, \"output_length\": 8", c.blocks);
            if c.parents.is_empty() {
                // A root starts at its timestamp plus its own delay.
                let _ = write!(line, ", \"timestamp\": {at_ms}, \"delay\": {}", c.delay_ms);
            } else {
                let waits: Vec<String> = c.parents.iter().map(|p| id(p)).collect();
                let tool = c.delay_ms / 3;
                let _ = write!(
                    line,
                    ", \"wait_for\": {waits:?}, \"delay\": {}, \"tool_wait_ms\": {tool}",
                    c.delay_ms - tool
                );
            }
            line.push('}');
            line
        })
        .collect()
}

/// Two lists of lines, alternated (each keeps its own order).
fn interleave(a: Vec<String>, b: Vec<String>) -> String {
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    let mut text = String::new();
    loop {
        match (a.next(), b.next()) {
            (None, None) => return text,
            (x, y) => {
                for line in x.into_iter().chain(y) {
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        }
    }
}

fn check_against(task: &AgentTask, built: &[Built]) {
    // The public layout has no text rows, and its ids carry their task.
    let same = |c: &AgentCall, b: &Built| c.id == b.id || c.id == format!("{}/{}", task.id, b.id);
    let built: Vec<&Built> = built.iter().filter(|b| task.calls.iter().any(|c| same(c, b))).collect();
    assert_eq!(task.calls.len(), built.len());
    let durations: Vec<f64> = built.iter().map(|b| b.duration_ms as f64).collect();
    // The schedule: every call at its parents' last end plus its delay.
    let times = task.schedule(&durations);
    for (c, b) in built.iter().enumerate() {
        assert_eq!(times[c].end_ms, b.end_ms as f64, "{} of {}", b.id, task.id);
    }
    // The critical path: as long as the latest end, and a chain of
    // parent links whose delays and durations add up to it.
    let path = task.critical_path(&durations);
    let latest = built.iter().map(|b| b.end_ms).max().unwrap() as f64;
    assert_eq!(path.length_ms, latest);
    assert_eq!(path.server_ms + path.delay_ms, latest, "{path:?}");
    assert!(task.calls[path.calls[0] as usize].parents.is_empty());
    for pair in path.calls.windows(2) {
        assert!(task.calls[pair[1] as usize].parents.contains(&pair[0]), "{path:?}");
    }
    // The ideal cache hits, from the graph.
    let ideal = task.ideal_cached_tokens(BLOCK);
    let expected: Vec<Option<u64>> = built.iter().map(|b| b.ideal).collect();
    assert_eq!(ideal, expected, "task {}", task.id);
}

#[test]
fn a_seeded_fan_out_and_join_has_the_schedule_path_and_hits_it_was_built_with() {
    for seed in 0..40u64 {
        let mut fresh = 0;
        let (a, b) = (seeded_task(seed, &mut fresh), seeded_task(seed + 1000, &mut fresh));
        // anvil's layout, two tasks interleaved line by line.
        let text = interleave(as_jsonl("a", &a), as_jsonl("b", &b));
        let trace = read(&text, AgentTraceFormat::Jsonl).unwrap_or_else(|p| panic!("{p}\n{text}"));
        assert_eq!(trace.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        check_against(task(&trace, "a"), &a);
        check_against(task(&trace, "b"), &b);
        let join = task(&trace, "a").calls.iter().find(|c| c.id == "join").unwrap();
        assert!(join.parents.len() >= 2, "a join");
        let summary = trace.summary();
        assert_eq!(summary.joins, 2);
        assert_eq!((summary.tasks, summary.text_prompts), (2, 2));
        assert!(summary.fan_outs >= 2 && summary.longest_chain >= 3, "{summary:?}");
        // The same graphs in the public layout: the same answers.
        let text = interleave(as_agentic_mooncake("a", &a, 0), as_agentic_mooncake("b", &b, 0));
        let trace = read(&text, AgentTraceFormat::AgenticMooncake).unwrap_or_else(|p| panic!("{p}\n{text}"));
        assert_eq!(trace.tasks.len(), 2);
        check_against(task(&trace, "a"), &a);
        check_against(task(&trace, "b"), &b);
    }
}

#[test]
fn roots_children_and_order_follow_the_file() {
    let trace = AgentTrace::read(&fixture("agent-trace.jsonl"), AgentTraceFormat::Jsonl).unwrap();
    let fix = task(&trace, "fix-bug");
    assert_eq!(names(fix, &fix.roots()), ["plan"]);
    assert_eq!(names(fix, fix.children(call_index(fix, "plan"))), ["read-a", "read-b"]);
    assert_eq!(names(fix, fix.children(call_index(fix, "read-a"))), ["patch"]);
    assert_eq!(fix.topological_order(), (0..6).collect::<Vec<u32>>());
    for (c, call) in fix.calls.iter().enumerate() {
        assert!(call.parents.iter().all(|&p| (p as usize) < c), "parents come first");
    }
}

#[test]
fn the_anvil_fixture_reads_as_documented() {
    let summary = check_file(&fixture("agent-trace.jsonl"), AgentTraceFormat::Jsonl).unwrap();
    assert_eq!((summary.tasks, summary.calls, summary.joins, summary.fan_outs), (2, 8, 1, 1));
    assert_eq!((summary.longest_chain, summary.text_prompts, summary.tasks_with_deadline), (5, 1, 2));
    assert!(summary.keys.unknown_keys.is_empty());
    assert_eq!(summary.keys.usable, 8);

    let trace = AgentTrace::read(&fixture("agent-trace.jsonl"), AgentTraceFormat::Jsonl).unwrap();
    let fix = task(&trace, "fix-bug");
    assert_eq!((fix.line, fix.arrival_ms, fix.deadline_ms), (1, Some(0.0), Some(60000.0)));
    let test = &fix.calls[call_index(fix, "test") as usize];
    assert_eq!(test.line, 8, "the blank line still counts");
    assert_eq!(
        test.prompt,
        CallPrompt::Blocks {
            input_tokens: None,
            blocks: vec![1, 2, 3, 4, 30, 31, 40],
            inherited: Some((call_index(fix, "patch"), 6)),
        }
    );
    assert_eq!(test.prompt.tokens(16), Some(112));
    let ideal: Vec<Option<u64>> = fix.ideal_cached_tokens(16);
    assert_eq!(ideal, [Some(0), Some(64), Some(64), Some(80), Some(64), Some(96)]);
    let path = fix.critical_path(&[1000.0; 6]);
    assert_eq!(names(fix, &path.calls), ["plan", "read-b", "read-b2", "patch", "test"]);
    assert_eq!((path.length_ms, path.server_ms, path.delay_ms), (8370.0, 5000.0, 3370.0));

    let summarise = task(&trace, "summarise");
    assert_eq!(summarise.calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["0", "1"]);
    assert_eq!((summarise.arrival_ms, summarise.deadline_ms), (Some(1500.0), Some(20000.0)));
    assert!(matches!(summarise.calls[0].prompt, CallPrompt::Text(_)));
    // Blocks 1 and 2 are fix-bug's too, but no ancestor in this task has
    // them: hits across tasks are the replay's to count.
    assert_eq!(summarise.ideal_cached_tokens(16), [None, Some(0)]);
    assert_eq!(summarise.calls[1].prompt.tokens(16), Some(200));
}

#[test]
fn the_agentic_mooncake_fixture_reads_as_dynamo_documents_it() {
    let path = fixture("agent-agentic-mooncake.jsonl");
    let summary = check_file(&path, AgentTraceFormat::AgenticMooncake).unwrap();
    assert!(summary.keys.unknown_keys.is_empty(), "branches and prefix_reset are known");
    assert_eq!((summary.tasks, summary.calls, summary.joins, summary.fan_outs), (2, 7, 1, 1));
    let trace = AgentTrace::read(&path, AgentTraceFormat::AgenticMooncake).unwrap();
    // Rows joined by `wait_for` are one task, named by its first row's session.
    assert_eq!(trace.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["main", "other"]);
    let main = task(&trace, "main");
    assert_eq!(
        main.calls.iter().map(|c| (c.id.as_str(), c.line)).collect::<Vec<_>>(),
        [("m-1", 1), ("s1-1", 2), ("s2-1", 3), ("s1-2", 4), ("m-2", 6)]
    );
    assert_eq!(main.arrival_ms, Some(1000.0));
    // `delay` plus `tool_wait_ms`, after the dependencies end; a recorded
    // `timestamp` on a row with dependencies is not its schedule.
    let delays: Vec<f64> = main.calls.iter().map(|c| c.delay_ms).collect();
    assert_eq!(delays, [0.0, 150.0, 200.0, 940.0, 30.0]);
    assert_eq!(names(main, &main.calls[4].parents), ["m-1", "s1-2", "s2-1"]);
    assert_eq!(main.calls[4].output_tokens, Some(200));
    assert_eq!(main.calls[4].prompt.tokens(64), Some(370));
    assert_eq!(main.ideal_cached_tokens(64), [Some(0), Some(128), Some(128), Some(192), Some(256)]);
    let path = main.critical_path(&[500.0; 5]);
    assert_eq!(names(main, &path.calls), ["m-1", "s1-1", "s1-2", "m-2"]);
    assert_eq!(path.length_ms, 500.0 + 150.0 + 500.0 + 940.0 + 500.0 + 30.0 + 500.0);
    let other = task(&trace, "other");
    assert_eq!((other.arrival_ms, other.calls[1].delay_ms), (Some(6000.0), 260.0));
    assert_eq!(other.ideal_cached_tokens(64), [Some(0), Some(192)]);
}

#[test]
fn an_agentic_mooncake_task_with_two_roots_starts_each_at_its_timestamp() {
    let text = concat!(
        "{\"request_id\": \"a\", \"session_id\": \"s\", \"hash_ids\": [1], \"timestamp\": 500}\n",
        "{\"request_id\": \"b\", \"session_id\": \"s\", \"hash_ids\": [2], \"timestamp\": 800, \"delay_ms\": 5}\n",
        "{\"request_id\": \"c\", \"session_id\": \"s\", \"hash_ids\": [1, 3], \"wait_for\": [\"a\", \"b\"]}\n",
        "{\"request_id\": \"d\", \"session_id\": \"s\", \"input_tokens\": 7, \"created_time\": 10}\n",
    );
    let trace = read(text, AgentTraceFormat::AgenticMooncake).unwrap();
    // `d` waits for nothing and nothing waits for it: a task of its own,
    // named by its request since its session's name is taken.
    assert_eq!(trace.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["s", "d"]);
    let s = &trace.tasks[0];
    assert_eq!(s.arrival_ms, Some(500.0));
    assert_eq!(s.calls.iter().map(|c| c.delay_ms).collect::<Vec<_>>(), [0.0, 305.0, 0.0]);
    assert_eq!(names(s, &s.roots()), ["a", "b"]);
    assert_eq!(trace.tasks[1].arrival_ms, Some(10.0));
    assert_eq!(trace.tasks[1].calls[0].prompt.tokens(64), Some(7));
}

/// Lines of anvil's layout that refer to nothing, as the first lines of a case.
const PLAN: &str = r#"{"task": "t", "call": "plan", "input_tokens": 10, "output_tokens": 5}"#;

#[test]
fn every_broken_rule_is_named_at_its_line() {
    use AgentTraceFormat::{AgenticMooncake as Am, Jsonl};
    let cases: &[(AgentTraceFormat, &str, u64, &str)] = &[
        // Unknown parent: the line that names it.
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "parents": ["ghost"], "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "`parents` names `ghost`, which no line of task `t` defines",
        ),
        // A parent of another task is unknown in this one.
        (
            Jsonl,
            r#"{"task": "u", "call": "a", "parents": ["plan"], "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "`parents` names `plan`, which no line of task `u` defines",
        ),
        // A cycle, at the first of its lines.
        (
            Jsonl,
            "{\"task\": \"t\", \"call\": \"a\", \"parents\": [\"b\"], \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"task\": \"t\", \"call\": \"b\", \"parents\": [\"a\"], \"input_tokens\": 1, \"output_tokens\": 1}",
            2,
            "call `a` waits for itself: a → b → a (lines 2, 3)",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "me", "parents": ["me"], "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "call `me` waits for itself: me → me (lines 2)",
        ),
        // A call before its parent.
        (
            Jsonl,
            "{\"task\": \"t\", \"call\": \"late\", \"parents\": [\"early\"], \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"task\": \"t\", \"call\": \"early\", \"parents\": [\"plan\"], \"input_tokens\": 1, \"output_tokens\": 1}",
            2,
            "`parents` names `early`, which is defined later (line 3): a call's parents come before it",
        ),
        // Duplicate ids.
        (
            Jsonl,
            r#"{"task": "t", "call": "plan", "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "call `plan` of task `t` is already defined at line 1",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "parents": ["plan", "plan"], "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "`parents` names `plan` twice",
        ),
        // Negative delays.
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "parents": ["plan"], "delay_ms": -5, "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "`delay_ms` -5 is negative",
        ),
        // Keys that exclude each other.
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "input_tokens": 3, "prompt": "hi", "output_tokens": 1}"#,
            2,
            "holds both `input_tokens` and `prompt`, which exclude each other",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "hash_ids": [1], "prompt": "hi", "output_tokens": 1}"#,
            2,
            "holds both `hash_ids` and `prompt`, which exclude each other",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "parents": ["plan"], "inherit": "plan", "prompt": "hi", "output_tokens": 1}"#,
            2,
            "holds both `inherit` and `prompt`, which exclude each other",
        ),
        // What a prompt inherits must be a call it waits for, and have blocks.
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "inherit": "plan", "hash_ids": [1], "output_tokens": 1}"#,
            2,
            "`inherit` names `plan`, which it does not wait for",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "parents": ["plan"], "inherit": "nope", "output_tokens": 1}"#,
            2,
            "`inherit` names `nope`, which no line of task `t` defines",
        ),
        (
            Jsonl,
            "{\"task\": \"t\", \"call\": \"say\", \"prompt\": \"hi\", \"output_tokens\": 1}\n\
             {\"task\": \"t\", \"call\": \"a\", \"parents\": [\"say\"], \"inherit\": \"say\", \"output_tokens\": 1}",
            3,
            "`inherit` names `say`, whose prompt is text (line 2)",
        ),
        (Jsonl, r#"{"task": "t", "call": "a", "output_tokens": 1}"#, 2, "needs a prompt"),
        (Jsonl, r#"{"task": "t", "call": "a", "input_tokens": 1}"#, 2, "missing field `output_tokens`"),
        (
            Jsonl,
            r#"{"task": "t", "call": [1], "input_tokens": 1, "output_tokens": 1}"#,
            2,
            "`call`: an id must be",
        ),
        // A task has one deadline and one arrival.
        (
            Jsonl,
            "{\"task\": \"t\", \"call\": \"a\", \"input_tokens\": 1, \"output_tokens\": 1, \"deadline_ms\": 500}\n\
             {\"task\": \"t\", \"call\": \"b\", \"input_tokens\": 1, \"output_tokens\": 1, \"deadline_ms\": 900}",
            3,
            "`deadline_ms` 900 differs from line 2's 500 for task `t`",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "input_tokens": 1, "output_tokens": 1, "deadline_ms": 0}"#,
            2,
            "`deadline_ms` 0 must be above 0",
        ),
        (
            Jsonl,
            r#"{"task": "t", "call": "a", "input_tokens": 5000000000, "output_tokens": 1}"#,
            2,
            "`input_tokens` 5000000000 is too large",
        ),
        // The public layout's rules.
        (
            Am,
            r#"{"request_id": "r1", "hash_ids": [1], "timestamp": 0}"#,
            2,
            "`request_id` `r1` is already used at line 1",
        ),
        (
            Am,
            r#"{"request_id": "r2", "hash_ids": [1], "wait_for": ["nobody"]}"#,
            2,
            "`wait_for` names `nobody`, which no row of the file defines",
        ),
        (
            Am,
            "{\"request_id\": \"r2\", \"hash_ids\": [1], \"wait_for\": [\"r3\"]}\n\
             {\"request_id\": \"r3\", \"hash_ids\": [1], \"wait_for\": [\"r1\"]}",
            2,
            "`wait_for` names `r3`, which is defined later (line 3)",
        ),
        (
            Am,
            "{\"request_id\": \"r2\", \"hash_ids\": [1], \"wait_for\": [\"r3\"]}\n\
             {\"request_id\": \"r3\", \"hash_ids\": [1], \"wait_for\": [\"r2\"]}",
            2,
            "call `r2` waits for itself: r2 → r3 → r2 (lines 2, 3)",
        ),
        (Am, r#"{"request_id": "r2", "hash_ids": [1]}"#, 2, "a row without `wait_for` needs a `timestamp`"),
        (Am, r#"{"request_id": "r2", "timestamp": 3}"#, 2, "needs `input_length` or `hash_ids`"),
        (
            Am,
            r#"{"request_id": "r2", "hash_ids": [1], "wait_for": ["r1"], "tool_wait_ms": -1}"#,
            2,
            "`tool_wait_ms` -1 is negative",
        ),
        (
            Am,
            r#"{"request_id": "r2", "hash_ids": [1], "wait_for": ["r1"], "delay": 1, "delay_ms": 1}"#,
            2,
            "holds both `delay` and `delay_ms`, which exclude each other",
        ),
        (
            Am,
            r#"{"request_id": "r2", "hash_ids": [1], "timestamp": 1, "created_time": 1}"#,
            2,
            "holds both `timestamp` and `created_time`, which exclude each other",
        ),
        (
            Am,
            r#"{"request_id": "r2", "input_length": 1, "input_tokens": 1, "timestamp": 1}"#,
            2,
            "holds both `input_length` and `input_tokens`, which exclude each other",
        ),
    ];
    for &(format, lines, line, says) in cases {
        let first = match format {
            AgentTraceFormat::Jsonl => PLAN,
            AgentTraceFormat::AgenticMooncake => r#"{"request_id": "r1", "hash_ids": [1], "timestamp": 0}"#,
        };
        let text = format!("{first}\n{lines}\n");
        let problem = read(&text, format).expect_err(says);
        assert_eq!(problem.line, Some(line), "{says}: {problem}");
        assert!(problem.message.contains(says), "expected «{says}», got «{problem}»");
    }
}

#[test]
fn a_json_error_has_its_column_and_null_is_absent() {
    let text = format!(
        "{PLAN}\n{{\"task\": \"t\", \"call\": \"a\", \"input_tokens\": \"x\", \"output_tokens\": 1}}\n"
    );
    let problem = read(&text, AgentTraceFormat::Jsonl).unwrap_err();
    assert_eq!(problem.line, Some(2));
    assert!(problem.column.is_some(), "{problem}");
    assert!(problem.message.starts_with("invalid type: string \"x\""), "{problem}");
    // A `null` value is no value: this line says one thing.
    let null = r#"{"task": "t", "call": "a", "input_tokens": null, "prompt": "hi", "parents": null, "inherit": null, "output_tokens": 1}"#;
    assert_eq!(
        read(null, AgentTraceFormat::Jsonl).unwrap().tasks[0].calls[0].prompt,
        CallPrompt::Text("hi".into())
    );
}

#[test]
fn an_empty_missing_or_folder_file_is_a_whole_file_problem() {
    let empty = read("\n \n", AgentTraceFormat::Jsonl).unwrap_err();
    assert_eq!((empty.line, empty.message.as_str()), (None, "holds no call (no non-empty line)"));
    let missing = check_file(&fixture("agent-no-such-file.jsonl"), AgentTraceFormat::Jsonl).unwrap_err();
    assert!(missing.line.is_none() && missing.message.starts_with("cannot be read"), "{missing}");
    let folder = check_file(&fixture(""), AgentTraceFormat::Jsonl).unwrap_err();
    assert_eq!(folder.message, "is a folder, not a file");
}

#[test]
fn an_unknown_key_is_named_once_at_its_first_line() {
    let text = concat!(
        "{\"task\": \"t\", \"call\": \"a\", \"input_tokens\": 1, \"output_tokens\": 1}\n",
        "{\"task\": \"t\", \"call\": \"b\", \"parent\": [\"a\"], \"input_tokens\": 1, \"output_tokens\": 1, \"model\": \"m\"}\n",
        "{\"task\": \"t\", \"call\": \"c\", \"parent\": [\"a\"], \"input_tokens\": 1, \"output_tokens\": 1}\n",
    );
    let summary = read(text, AgentTraceFormat::Jsonl).unwrap().summary();
    let named: Vec<_> = summary.keys.unknown_keys.iter().map(|k| (k.key.as_str(), k.line, k.like)).collect();
    assert_eq!(named, [("parent", 2, Some("parents")), ("model", 2, None)]);
    assert_eq!(
        summary.keys.unknown_keys[0].to_string(),
        "unknown key `parent`, ignored (did you mean `parents`?)"
    );
    assert!(
        summary.keys.unknown_keys[1]
            .to_string()
            .starts_with("unknown key `model`, ignored (a line reads `task`, `call`, `parents`")
    );
    // The public layout's own keys are known, its typos are not.
    let row = r#"{"request_id": "r", "hash_ids": [1], "timestamp": 0, "branches": [], "prefix_reset": true, "tool_events": [], "wait_fro": []}"#;
    let summary = read(row, AgentTraceFormat::AgenticMooncake).unwrap().summary();
    let named: Vec<_> = summary.keys.unknown_keys.iter().map(|k| (k.key.as_str(), k.like)).collect();
    assert_eq!(named, [("wait_fro", Some("wait_for"))]);
    // Many distinct keys: the first few are named, and that there were more.
    let many: String = (0..40)
        .map(|i| {
            format!(
                "{{\"task\": \"t\", \"call\": {i}, \"input_tokens\": 1, \"output_tokens\": 1, \"k{i}\": 0}}\n"
            )
        })
        .collect();
    let summary = read(&many, AgentTraceFormat::Jsonl).unwrap().summary();
    assert_eq!(summary.keys.unknown_keys.len(), UNKNOWN_KEYS_NAMED);
    assert!(summary.keys.more_unknown_keys);
}

#[test]
fn format_names_round_trip() {
    for format in [AgentTraceFormat::Jsonl, AgentTraceFormat::AgenticMooncake] {
        assert_eq!(AgentTraceFormat::from_word(format.as_str()), Some(format));
    }
    assert_eq!(AgentTraceFormat::from_word("mooncake"), None);
}
