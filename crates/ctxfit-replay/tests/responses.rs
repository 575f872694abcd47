//! A Responses session (Codex CLI's format): one request per model response, however many items the response
//! has, and the references of a response counted over all its items.

use ctxfit_replay::{replay, Policy, Prices};
use ctxfit_tokens::{FastEstimator, TokenEstimator};
use serde_json::json;

fn fast() -> Box<dyn TokenEstimator> {
    Box::new(FastEstimator)
}

/// The replay of a Responses document with no compaction.
fn replay_none(doc: serde_json::Value) -> ctxfit_replay::SessionReplay {
    let conv = ctxfit_model::from_value(doc).unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    replay(
        "s",
        &conv,
        &Policy::None,
        &registry,
        &fast,
        Prices::default(),
    )
    .unwrap()
}

#[test]
fn a_response_of_several_items_is_one_request_and_its_calls_count_as_references() {
    let call = |id: &str, cmd: &str| {
        json!({"type": "function_call", "call_id": id, "name": "exec_command",
               "arguments": json!({"cmd": cmd}).to_string()})
    };
    let output = |id: &str, text: &str| json!({"type": "function_call_output", "call_id": id, "output": text});
    let reasoning = json!({"type": "reasoning", "summary": [], "encrypted_content": "x"});
    let doc = json!({"instructions": "You are a coding agent.", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]},
        reasoning, call("c1", "ls src"), call("c2", "git status"),
        output("c1", "alpha_module.rs\nbeta_module.rs"), output("c2", "clean"),
        reasoning,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
        call("c3", "cat beta_module.rs"),
        output("c3", "fn parse() {}"),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    ]});
    let r = replay_none(doc);
    let starts: Vec<usize> = r.turns.iter().map(|t| t.message).collect();
    assert_eq!(
        starts,
        [1, 6, 10],
        "a request before each response, not each item"
    );
    // the second response's call names a file only the first call's output showed, three items in
    assert_eq!(r.turns[1].references, 1);
    assert_eq!(r.turns[1].references_visible, 1);
}

#[test]
fn identifiers_of_an_output_wrapped_in_json_are_read_from_the_output() {
    // Codex CLI of 2025: `{"output": "…", "metadata": {…}}`, so the file list's second line follows an escaped
    // newline (`\n`), which must not glue an `n` to it
    let wrapped = json!({"output": "alpha_module.rs\nbeta_module.rs\n",
                         "metadata": {"exit_code": 0, "duration_seconds": 0.1}})
    .to_string();
    let doc = json!({"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]},
        {"type": "function_call", "call_id": "c1", "name": "shell",
         "arguments": json!({"command": ["bash", "-lc", "ls src"]}).to_string()},
        {"type": "function_call_output", "call_id": "c1", "output": wrapped},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading beta_module.rs now"}]}
    ]});
    let r = replay_none(doc);
    assert_eq!(r.turns[1].references, 1);
    assert_eq!(r.turns[1].references_visible, 1);
}
