//! Every file of the shared corpus imports; per file, the number of sessions, messages, tool calls and tool
//! results is pinned (the counts of a few files were checked by hand against the raw logs, see
//! `docs/importers.md`).

use std::path::Path;

use ctxfit_import::{import_file, SourceFormat};
use ctxfit_model::ToolCallIndex;
use ctxfit_testkit::{corpus_dir, corpus_trajectory_files};

/// (path under trajectories/, format, sessions, messages, tool calls, tool results)
const EXPECTED: &[(&str, &str, usize, usize, usize, usize)] = &[
("claude-code/-Users-dain-workspace-danieldemmel-me-next/f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl", "claude-code", 1, 81, 35, 35),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl", "claude-code", 1, 12, 7, 7),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl", "claude-code", 1, 40, 24, 24),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a52886dc180afb356.jsonl", "claude-code", 1, 31, 17, 17),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a6aa8ad077d9ea083.jsonl", "claude-code", 1, 10, 6, 6),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-ab1e6e141221a29ab.jsonl", "claude-code", 1, 30, 17, 17),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-aef063ba534d73153.jsonl", "claude-code", 1, 10, 6, 6),
    ("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", "claude-code", 1, 37, 40, 40),
    ("claude-code/-src-experiments-claude_p/256ba646-2c15-437a-98e9-4171aafd030e.jsonl", "claude-code", 1, 8, 3, 3),
    ("claude-code/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl", "claude-code", 1, 20, 24, 24),
    ("claude-code/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl", "claude-code", 1, 4, 1, 1),
    ("claude-code/-src-experiments-claude_p/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl", "claude-code", 1, 20, 9, 9),
    ("claude-code/-src-experiments-claude_p/94604a7b-062f-4369-bdf0-da948381c3e5.jsonl", "claude-code", 1, 2, 0, 0),
    ("letta/lettabot-builder.af", "letta", 2, 191, 62, 62),
    ("openhands/basic.json", "openhands", 1, 4, 2, 1),
    ("openhands/basic_gui_mode.json", "openhands", 1, 10, 4, 4),
    ("openhands/basic_interactions.json", "openhands", 1, 6, 1, 0),
    ("openhands/resolver-output.jsonl", "openhands", 2, 52, 26, 24),
    ("openhands/wrong_initial_state.json", "openhands", 1, 8, 4, 3),
    ("swe-agent/ctf-web-i_got_id.traj", "swe-agent", 1, 43, 21, 20),
    ("swe-agent/function_calling_simple.traj", "swe-agent", 1, 12, 5, 5),
    ("swe-agent/marshmallow-1867.traj", "swe-agent", 1, 24, 11, 11),
    ("swe-agent/sweagenttestrepo-1c2844.traj", "swe-agent", 1, 10, 4, 4),
    ("tau-bench/gpt-4o-airline.fixture-0-19.json", "tau-bench", 20, 610, 123, 123),
];

fn corpus() -> std::path::PathBuf {
    corpus_dir().expect(
        "the shared corpus is missing: put it at ../shared/corpus beside the workspace or set CTXFIT_CORPUS",
    )
}

fn counts(path: &Path) -> (SourceFormat, usize, usize, usize, usize) {
    let sessions = import_file(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let source = sessions
        .first()
        .map(|s| s.source)
        .expect("at least one session");
    let messages = sessions.iter().map(|s| s.conversation.messages.len()).sum();
    let calls = sessions
        .iter()
        .map(|s| s.conversation.tool_use_count())
        .sum();
    let results = sessions
        .iter()
        .map(|s| s.conversation.tool_result_count())
        .sum();
    (source, sessions.len(), messages, calls, results)
}

#[test]
fn every_corpus_file_imports_with_the_expected_counts() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus = corpus();
    let root = corpus.join("trajectories");
    let mut actual = Vec::new();
    for path in corpus_trajectory_files(&corpus) {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let (source, sessions, messages, calls, results) = counts(&path);
        actual.push(format!(
            "    (\"{rel}\", \"{source}\", {sessions}, {messages}, {calls}, {results}),"
        ));
    }
    let expected: Vec<String> = EXPECTED
        .iter()
        .map(|(rel, source, s, m, c, r)| {
            format!("    (\"{rel}\", \"{source}\", {s}, {m}, {c}, {r}),")
        })
        .collect();
    assert_eq!(
        actual.join("\n"),
        expected.join("\n"),
        "actual (left) vs pinned (right)"
    );
}

#[test]
fn every_tool_result_answers_a_call_made_before_it() {
    ctxfit_testkit::skip_without_corpus!();
    for path in corpus_trajectory_files(&corpus()) {
        for session in import_file(&path, None).unwrap() {
            let index = ToolCallIndex::build(&session.conversation);
            let orphans: Vec<_> = index.orphan_results().collect();
            assert!(
                orphans.is_empty(),
                "{} {}: {orphans:?}",
                path.display(),
                session.name
            );
            for (id, site) in index.calls_without_result() {
                // only a session's last calls (finish/submit) may go unanswered
                let later_results = session.conversation.messages[site.message + 1..]
                    .iter()
                    .any(|m| m.tool_results().next().is_some());
                assert!(
                    !later_results || site.name == "finish" || site.name == "submit",
                    "{} {}: call {id} ({}) has no result",
                    path.display(),
                    session.name,
                    site.name
                );
            }
        }
    }
}

/// A SWE-agent response without function calling (its thought, then the action in a fence) is the thought's
/// text and a call holding the action: the action is not counted twice.
#[test]
fn a_swe_agent_action_is_in_its_call_only() {
    ctxfit_testkit::skip_without_corpus!();
    let path = corpus().join("trajectories/swe-agent/ctf-web-i_got_id.traj");
    let conv = &import_file(&path, None).unwrap()[0].conversation;
    let mut calls = 0;
    for m in &conv.messages {
        let Some(command) = m
            .tool_uses()
            .next()
            .and_then(|u| u.input["command"].as_str())
        else {
            continue;
        };
        calls += 1;
        let text = m.content.joined_text();
        assert!(
            !text.is_empty() && !text.contains(command.trim()),
            "{command} in {text}"
        );
    }
    assert_eq!(calls, 21);
}

/// Real Anthropic and OpenAI messages from the corpus read and write back to the same JSON value.
#[test]
fn real_wire_messages_round_trip_losslessly() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus = corpus();
    let mut checked = 0;
    for path in corpus_trajectory_files(&corpus) {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.to_string_lossy();
        if name.contains("claude-code") {
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                if let Some(m) = v.get("message").filter(|m| m.get("role").is_some()) {
                    let msg = ctxfit_model::anthropic::read_message(m.clone(), "m").unwrap();
                    assert_eq!(&ctxfit_model::anthropic::write_message(&msg), m);
                    checked += 1;
                }
            }
        } else if name.contains("tau-bench") {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            for episode in v.as_array().unwrap() {
                let traj = episode["traj"].clone();
                let conv = ctxfit_model::openai::from_value(traj.clone()).unwrap();
                assert_eq!(ctxfit_model::to_value(&conv), traj);
                checked += conv.messages.len();
            }
        }
    }
    assert!(checked > 1000, "only {checked} messages checked");
}

#[test]
fn bad_input_is_reported_with_its_position() {
    let err =
        ctxfit_import::import_str("{\"type\":\"user\"}\n{\"type\": oops}\n", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed JSON at line 2, column 10: expected value"
    );
    let err = ctxfit_import::import_str("[1, 2", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed JSON at line 1, column 5: EOF while parsing a list"
    );
    let err = ctxfit_import::import_str("{\"hello\": 1}", None).unwrap_err();
    assert!(matches!(err, ctxfit_import::ImportError::Unrecognised));
    let line = r#"{"type":"user","sessionId":"s","message":{"role":7}}"#;
    let err = ctxfit_import::import_str(line, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1: message.role: missing or not a string"
    );
}
