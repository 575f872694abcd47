//! The page tool as an agent registers it: a scripted agent loop that offers the tool, calls it against a page
//! server on 127.0.0.1, and is told its mistakes; and an OpenAI function call handled from its arguments text.

mod common;

use std::sync::atomic::Ordering;

use common::*;
use ctxfit_webfetch::{FetchOptions, PageTool, ToolFormat, SYSTEM_PROMPT_HINT, TOOL_NAME};

/// A scripted model in the Anthropic Messages shape: it reads the request an agent built and answers as a model
/// would, asserting that the request offers the page tool and that each result it gets back is the tool's.
fn scripted_model(request: &serde_json::Value, server: &Server) -> serde_json::Value {
    use serde_json::json;
    let tools = request["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == TOOL_NAME
        && t["input_schema"]["properties"]["strip_level"]["enum"]
            == json!(["minimal", "moderate", "aggressive"])));
    assert!(request["system"]
        .as_str()
        .unwrap()
        .contains("fetch_webpage_markdown"));
    let messages = request["messages"].as_array().unwrap();
    let results: Vec<serde_json::Value> = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| serde_json::from_str(b["content"].as_str().unwrap()).unwrap())
        .collect();
    let call = |id: &str, input: serde_json::Value| {
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me read it."},
            {"type": "tool_use", "id": id, "name": TOOL_NAME, "input": input}]})
    };
    match results.len() {
        0 => call(
            "toolu_1",
            json!({"url": server.url("/long"), "strip_level": "aggressive", "max_chars": 1000}),
        ),
        1 => {
            assert!(results[0]["success"].as_bool().unwrap());
            assert!(results[0]["was_truncated"].as_bool().unwrap());
            assert!(results[0]["total_chunks"].as_u64().unwrap() > 1);
            call(
                "toolu_2",
                json!({"url": server.url("/long"), "chunk": 2, "max_chars": 1000, "strip_level": "aggressive"}),
            )
        }
        2 => call(
            "toolu_3",
            json!({"url": server.url("/long"), "chunk": 99, "max_chars": "1000", "strip_level": "aggressive"}),
        ),
        3 => call(
            "toolu_4",
            json!({"url": server.url("/corpus"), "strip_levels": "minimal"}),
        ),
        _ => json!({"role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
    }
}

#[test]
fn an_agent_that_registers_the_page_tool_reads_a_page_chunk_by_chunk_and_is_told_its_mistakes() {
    use serde_json::json;
    let server = serve();
    let tool = PageTool::new(FetchOptions::default().allow_address(LOOPBACK));
    let mut messages =
        vec![json!({"role": "user", "content": "What does the long page say in its second part?"})];
    let mut results = Vec::new();
    for _ in 0..10 {
        let request = json!({
            "model": "scripted",
            "max_tokens": 1024,
            "system": SYSTEM_PROMPT_HINT,
            "tools": [tool.definition(ToolFormat::Anthropic)],
            "messages": messages,
        });
        // what the agent sends is a well-formed Messages request
        ctxfit_model::from_value(request.clone()).unwrap();
        let reply = scripted_model(&request, &server);
        let calls: Vec<serde_json::Value> = reply["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .cloned()
            .collect();
        messages.push(reply);
        if calls.is_empty() {
            break;
        }
        let blocks: Vec<serde_json::Value> = calls
            .iter()
            .map(|c| {
                let result = tool.call(&c["input"]);
                results.push(result.clone());
                json!({"type": "tool_result", "tool_use_id": c["id"], "content": serde_json::to_string(&result).unwrap()})
            })
            .collect();
        messages.push(json!({"role": "user", "content": blocks}));
    }
    assert_eq!(results.len(), 4);
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "Done.");
    let (first, second) = (&results[0], &results[1]);
    assert!(first.data.contains("# Long") && first.data.chars().count() <= 1000);
    assert_eq!(second.chunk_number, Some(2));
    assert!(second.data.contains("Part"));
    assert!(!second.data.contains("# Long"));
    // the page was fetched once for both chunks (and for the chunk that is not there)
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
    assert!(!results[2].success);
    assert!(
        results[2].message.contains("there is no chunk 99"),
        "{}",
        results[2].message
    );
    assert!(!results[3].success);
    assert!(results[3]
        .message
        .contains("unknown field \"strip_levels\""));
}

#[test]
fn an_openai_function_call_is_handled_from_its_arguments_text() {
    let server = serve();
    let tool = PageTool::new(FetchOptions::default().allow_address(LOOPBACK));
    let chat = tool.definition(ToolFormat::OpenAiChat);
    assert_eq!(chat["function"]["name"], TOOL_NAME);
    let arguments = format!(
        "{{\"url\": \"{}\", \"strip_level\": \"minimal\"}}",
        server.url("/article")
    );
    let result = tool.call_json(&arguments);
    assert!(result.success, "{}", result.message);
    assert!(result.data.contains("Café news"));
    assert!(result.message.contains("(minimal)"));
    // the program's defaults hold where the model says nothing
    let quiet = tool.call_json(&format!("{{\"url\": \"{}\"}}", server.url("/article")));
    assert!(quiet.message.contains("(moderate)"), "{}", quiet.message);
    // and the program's address policy holds whatever the model asks
    let open = PageTool::new(FetchOptions::default());
    let refused = open.call_json(&arguments);
    assert!(!refused.success);
}
