//! The retrieval handle (`retrieval_tool` in a profile): every cut result names the tool and its handle, and
//! the original comes back from the conversation byte for byte.

mod common;

use common::{build_log, compactor, sent_text, session, settings, EAGER};
use ctxfit_compactor::{
    handle_of, retrieval_tool_definition, retrieve, AgentSession, PolicyFile, INGESTION_MARKER,
    RETRIEVAL_TOOL,
};
use ctxfit_model::{Block, Conversation, Message, WireFormat};
use serde_json::json;

/// `smart` with the payback rule off (every cut made once its result is stale) and the retrieval tool on.
const RETRIEVING: &str = "[profiles.retrieving]\nextends = \"smart\"\ncache_write_premium = 0\n\
                          retrieval_tool = \"ctxfit_retrieve\"\n";

#[test]
fn a_cut_result_names_the_tool_and_its_handle_and_the_original_comes_back_whole() {
    let log = build_log();
    let conv = session(&[
        ("Bash", json!({"command": "cargo build"}), log.clone()),
        ("Bash", json!({"command": "git status"}), "clean".into()),
        ("Bash", json!({"command": "git diff"}), "".into()),
    ]);
    let mut c = compactor(RETRIEVING, "retrieving");
    c.compact_history(&conv, None);
    let text = sent_text(&c, &conv, 2);
    // the excerpt as `smart` writes it, then the handle: the first result's tool_use_id
    assert!(text.contains("error[E0308]: mismatched types"), "{text}");
    // (of 201 lines: the first 10, the outcome, the last 40)
    assert!(text.len() < log.len() / 3, "{text}");
    assert!(
        text.ends_with("\n[the full result: call ctxfit_retrieve with {\"handle\":\"toolu_00\"}]"),
        "{text}"
    );
    let original = retrieve(&conv, "toolu_00").unwrap();
    assert_eq!(original.joined_text(), log);
    // a compaction of the history as it was sent leaves it as it is: the trailer says it was cut already
    let mut projected = c.project(&conv);
    let mut again = compactor(RETRIEVING, "retrieving");
    let report = again.compact_history(&projected, None);
    assert!(report.new_blocks.is_empty(), "{:?}", report.new_blocks);
    again.apply(&mut projected);
    assert_eq!(projected, c.project(&conv));
}

#[test]
fn without_the_setting_no_result_names_a_tool_the_agent_does_not_have() {
    let conv = session(&[
        ("Bash", json!({"command": "cargo build"}), build_log()),
        ("Bash", json!({"command": "git status"}), "clean".into()),
    ]);
    let mut c = compactor(EAGER, "eager");
    let report = c.compact_history(&conv, None);
    assert_eq!(report.new_blocks.len(), 1, "the log is cut");
    let text = sent_text(&c, &conv, 2);
    assert!(!text.contains("the full result"), "{text}");
    assert!(
        text.ends_with("re-run the command for its full output]"),
        "{text}"
    );
}

#[test]
fn a_reused_id_gets_a_handle_of_its_own() {
    // SWE-agent and tau-bench reuse ids: the second result answering `call_1` is `call_1#1`
    let mut conv = Conversation::new(WireFormat::OpenAi);
    conv.messages.push(Message::user("build it twice"));
    let first = build_log();
    let second = build_log().replace("mismatched types", "unresolved import");
    for log in [&first, &second] {
        conv.push_response(vec![Block::tool_use(
            "call_1",
            "bash",
            json!({"command": "cargo build"}),
        )]);
        conv.push_tool_results(vec![Block::tool_result("call_1", log.as_str(), false)]);
    }
    conv.push_response(vec![Block::text("Both failed.")]);
    let mut c = compactor(RETRIEVING, "retrieving");
    c.compact_history(&conv, None);
    let handles: Vec<String> = c
        .project(&conv)
        .messages
        .iter()
        .flat_map(|m| {
            m.tool_results()
                .map(|r| r.content.joined_text())
                .collect::<Vec<_>>()
        })
        .map(|t| t.rsplit("with ").next().unwrap().to_owned())
        .collect();
    assert_eq!(
        handles,
        ["{\"handle\":\"call_1\"}]", "{\"handle\":\"call_1#1\"}]"]
    );
    assert_eq!(handle_of("call_1", 1), "call_1#1");
    assert_eq!(retrieve(&conv, "call_1").unwrap().joined_text(), first);
    assert_eq!(retrieve(&conv, " call_1#1 ").unwrap().joined_text(), second);
    assert!(retrieve(&conv, "call_1#2").is_none());
    assert!(retrieve(&conv, "call_9").is_none());
    assert!(retrieve(&conv, "").is_none());
    // an id with a `#` of its own is its first result's handle
    let mut odd = Conversation::new(WireFormat::Anthropic);
    odd.messages.push(Message::user("go"));
    for (id, text) in [("run#1", "first"), ("run", "second"), ("run#1", "third")] {
        odd.push_response(vec![Block::tool_use(
            id,
            "bash",
            json!({"command": "true"}),
        )]);
        odd.push_tool_results(vec![Block::tool_result(id, text, false)]);
    }
    let text = |h: &str| retrieve(&odd, h).map(|c| c.joined_text());
    assert_eq!(text("run#1").as_deref(), Some("first"));
    assert_eq!(text(&handle_of("run#1", 1)).as_deref(), Some("third"));
    assert_eq!(text("run").as_deref(), Some("second"));
}

#[test]
fn the_ingestion_cap_names_the_handle_too_and_a_second_pass_keeps_it() {
    let policy = "[profiles.capped]\nextends = \"smart\"\nmax_tool_result_chars = 500\n\
                  retrieval_tool = \"get_original\"\n";
    let log = build_log();
    let conv = session(&[("Bash", json!({"command": "cargo build"}), log.clone())]);
    let mut c = compactor(policy, "capped");
    c.compact_history(&conv, None);
    let text = sent_text(&c, &conv, 2);
    let trailer = "\n[the full result: call get_original with {\"handle\":\"toolu_00\"}]";
    assert!(
        text.ends_with(&format!("{INGESTION_MARKER}{trailer}")),
        "{text}"
    );
    assert!(
        text.chars().count() <= 500 + INGESTION_MARKER.len() + trailer.len(),
        "{text}"
    );
    let projected = c.project(&conv);
    let mut again = compactor(policy, "capped");
    assert!(again
        .compact_history(&projected, None)
        .new_blocks
        .is_empty());
    assert_eq!(retrieve(&conv, "toolu_00").unwrap().joined_text(), log);
}

#[test]
fn an_agent_loop_answers_the_call_with_the_original() {
    let mut first = Conversation::new(WireFormat::Anthropic);
    first.tools = Some(vec![retrieval_tool_definition(
        WireFormat::Anthropic,
        RETRIEVAL_TOOL,
    )]);
    first
        .messages
        .push(Message::user("Why does the build fail?"));
    let mut s = AgentSession::new(first, compactor(RETRIEVING, "retrieving"));
    let log = build_log();
    s.next_request();
    s.push_response(vec![Block::tool_use(
        "toolu_a",
        "Bash",
        json!({"command": "cargo build"}),
    )]);
    s.push_tool_results(vec![Block::tool_result("toolu_a", log.as_str(), false)]);
    s.next_request();
    s.push_response(vec![Block::tool_use(
        "toolu_b",
        "Bash",
        json!({"command": "git status"}),
    )]);
    s.push_tool_results(vec![Block::tool_result("toolu_b", "clean", false)]);
    // the log is stale and cut: the request names the handle
    let body = s.next_request().body;
    let cut = body["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap();
    let handle = cut
        .rsplit("{\"handle\":\"")
        .next()
        .and_then(|h| h.split('"').next())
        .unwrap();
    assert_eq!(handle, "toolu_a");
    assert_eq!(body["tools"][0]["name"], RETRIEVAL_TOOL);
    // the model calls the tool; the agent answers with the original, byte for byte
    s.push_response(vec![Block::tool_use(
        "toolu_c",
        RETRIEVAL_TOOL,
        json!({ "handle": handle }),
    )]);
    let original = s.retrieve(handle).unwrap();
    s.push_tool_results(vec![Block::ToolResult(ctxfit_model::ToolResult {
        tool_use_id: "toolu_c".into(),
        content: original,
        is_error: None,
        extra: Default::default(),
    })]);
    let body = s.next_request().body;
    let messages = body["messages"].as_array().unwrap();
    let back = &messages[messages.len() - 1]["content"][0]["content"];
    assert_eq!(back.as_str(), Some(log.as_str()));
}

#[test]
fn the_definition_is_written_as_a_tool_of_each_wire_format() {
    let written = |format: WireFormat| {
        let mut conv = Conversation::new(format);
        conv.tools = Some(vec![retrieval_tool_definition(format, "get_back")]);
        conv.messages.push(Message::user("hi"));
        let request = ctxfit_model::to_value(&conv);
        // read back as the same format, with the same tool
        let read = ctxfit_model::from_value(request.clone()).unwrap();
        assert_eq!(read.format, format);
        assert_eq!(read.tools, conv.tools);
        request["tools"][0].clone()
    };
    let schema = json!({
        "type": "object",
        "properties": {"handle": {"type": "string", "description": "The handle the shortened result names"}},
        "required": ["handle"],
        "additionalProperties": false,
    });
    let anthropic = written(WireFormat::Anthropic);
    assert_eq!(anthropic["name"], "get_back");
    assert_eq!(anthropic["input_schema"], schema);
    assert!(anthropic["description"]
        .as_str()
        .unwrap()
        .contains("shortened"));
    let chat = written(WireFormat::OpenAi);
    assert_eq!(chat["type"], "function");
    assert_eq!(chat["function"]["name"], "get_back");
    assert_eq!(chat["function"]["parameters"], schema);
    let responses = written(WireFormat::Responses);
    assert_eq!(responses["type"], "function");
    assert_eq!(responses["name"], "get_back");
    assert_eq!(responses["parameters"], schema);
}

#[test]
fn a_name_no_provider_takes_is_refused_and_an_empty_one_turns_it_off() {
    let bad = "[profiles.p]\nextends = \"smart\"\nretrieval_tool = \"get original\"\n";
    let err = PolicyFile::parse(bad, "p.toml")
        .unwrap()
        .resolve(Some("p"), None, &|_| None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "profiles.p.retrieval_tool: must be a tool name of 1 to 64 letters, digits, `_` or `-`, got \"get original\""
    );
    let off = "[profiles.p]\nextends = \"retrieving\"\nretrieval_tool = \"\"\n";
    assert_eq!(
        settings(&format!("{RETRIEVING}{off}"), "p").retrieval_tool,
        None
    );
    assert_eq!(
        settings(RETRIEVING, "retrieving").retrieval_tool.as_deref(),
        Some("ctxfit_retrieve")
    );
}
