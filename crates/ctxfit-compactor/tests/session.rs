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
