//! The agent-session type writes each turn as the conversation's wire format holds it.

use ctxfit_compactor::{AgentSession, Compactor, PolicyFile};
use ctxfit_model::{Block, Conversation, Message, WireFormat};
use serde_json::json;

fn session(format: WireFormat) -> AgentSession {
    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let compactor =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let mut first = Conversation::new(format);
    first.messages.push(Message::user("list the files"));
    let mut s = AgentSession::new(first, compactor);
    s.next_request();
    s.push_response(vec![
        Block::text("Listing."),
        Block::tool_use("c1", "bash", json!({"command": "ls"})),
        Block::tool_use("c2", "bash", json!({"command": "pwd"})),
    ]);
    s.push_tool_results(vec![
        Block::tool_result("c1", "a.rs\nb.rs", false),
        Block::tool_result("c2", "no such dir", true),
    ]);
    s
}

#[test]
fn each_format_gets_its_own_layout() {
    let body = session(WireFormat::Anthropic).next_request().body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(body["messages"][2]["content"][1]["is_error"], true);

    let body = session(WireFormat::OpenAi).next_request().body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(
        body["messages"][1]["tool_calls"].as_array().unwrap().len(),
        2
    );

    let body = session(WireFormat::Responses).next_request().body;
    let kinds: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert_eq!(
        body["input"][2]["arguments"],
        json!({"command": "ls"}).to_string()
    );
}

#[test]
fn a_session_resumes_from_its_saved_state() {
    let mut s = session(WireFormat::Anthropic);
    let saved = serde_json::to_string(&s.save()).unwrap();
    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let compactor =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let mut resumed = AgentSession::restore(
        s.conversation().clone(),
        compactor,
        serde_json::from_str(&saved).unwrap(),
    )
    .unwrap();
    assert_eq!(resumed.next_request().body, s.next_request().body);
}

/// A state file written by an earlier run reads back as it was: the saved form's field names are a format, kept
/// whatever the compactor's own types become.
#[test]
fn a_saved_state_keeps_its_format() {
    let written = json!({
        "version": 1,
        "profile": "smart",
        "messages": 4,
        "decided": [{
            "tool_use_id": "c1", "nth": 0,
            "content": "a.rs\n[excerpt of a stale result — re-run `ls` for the full text]",
            "clear_input": false, "rule": "excerpt",
            "chars_before": 900, "chars_after": 70, "tokens_before": 220, "tokens_after": 18,
            "input_tokens_saved": 0
        }, {
            "tool_use_id": "c2", "nth": 1, "content": null, "clear_input": true, "rule": "budget",
            "chars_before": 0, "chars_after": 0, "tokens_before": 0, "tokens_after": 0,
            "input_tokens_saved": 12
        }],
        "kept": [["c3", 0]],
        "compacted_results": 2,
        "last_sent_at": 1_700_000_000_000u64,
        "held": [{
            "tool_use_id": "c4", "nth": 0, "content": "x", "rule": "excerpt", "action": "replaced",
            "clear_input": false, "chars_before": 500, "tokens_after": 1, "asked_at": 3
        }],
        "expired_requests": 1,
        "ledger": {"none": [1000.5, 800.0], "saved": [40.0, 32.5], "previous_uncompacted": 300}
    });
    let state: ctxfit_compactor::SavedState = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(state.decided[0].decision.rule, "excerpt");
    assert_eq!(state.decided[1].decision.content, None);
    assert_eq!(serde_json::to_value(&state).unwrap(), written);

    // and a compactor of the same profile takes it and saves it back
    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let mut compactor =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    compactor.restore(state.clone()).unwrap();
    assert_eq!(compactor.save().decided, state.decided);
}

/// A request the provider refuses as too long for its model: the session learns the window from the refusal,
/// and the next request — the same one — is compacted within it; other errors teach nothing.
#[test]
fn a_refused_request_is_sent_again_within_the_window_the_refusal_said() {
    for format in [
        WireFormat::Anthropic,
        WireFormat::OpenAi,
        WireFormat::Responses,
    ] {
        let mut s = session(format);
        for k in 0..12 {
            s.next_request();
            let id = format!("read_{k}");
            s.push_response(vec![Block::tool_use(
                &id,
                "Read",
                json!({"file_path": format!("/src/f{k}.rs")}),
            )]);
            let text: String = (0..60)
                .map(|i| {
                    format!(
                        "    let value_{k}_{i} = compute_{i}(input_{k}); // step {i} of file {k}\n"
                    )
                })
                .collect();
            s.push_tool_results(vec![Block::tool_result(&id, text, false)]);
        }
        let sent = s.next_request().report.tokens_after;
        assert_eq!(
            s.refused(br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#),
            None
        );
        let refusal = match format {
            WireFormat::Anthropic => {
                json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("prompt is too long: {} tokens > {} maximum", sent * 3 / 2, sent)}})
            }
            _ => {
                json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                "message": format!("This model's maximum context length is {} tokens. However, your messages \
                                    resulted in {} tokens.", sent, sent * 3 / 2)}})
            }
        };
        let budget = s.refused(refusal.to_string().as_bytes()).unwrap();
        assert_eq!(budget, sent * 2 / 3, "{format:?}");
        let again = s.next_request();
        assert!(
            again.report.tokens_after <= budget,
            "{format:?}: {} > {budget}",
            again.report.tokens_after
        );
    }
}
