//! Round trips, conversion and the tool-call index, on small hand-written documents.

use ctxfit_model::{
    convert, detect, from_json_str, from_value, parse_json, to_value, Block, ModelError,
    ToolCallIndex, WireFormat,
};
use serde_json::{json, Value};

/// Read `doc`, check its detected format, write it back and compare the JSON values.
fn check_round_trip(doc: Value, format: WireFormat) {
    assert_eq!(detect(&doc), format, "detected format of {doc}");
    let conv = from_value(doc.clone()).expect("reads");
    assert_eq!(conv.format, format);
    assert_eq!(to_value(&conv), doc);
}

#[test]
fn anthropic_round_trips_keep_unknown_fields_and_blocks() {
    check_round_trip(
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "read_file", "description": "Read", "input_schema": {"type": "object"},
                       "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "xyz"},
                    {"type": "text", "text": "reading", "citations": null},
                    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.rs"}},
                    {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
                ], "id": "msg_1", "usage": {"input_tokens": 10}},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "fn main() {}",
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
                     "content": [{"type": "text", "text": "no"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]},
                    {"type": "tool_result", "tool_use_id": "t3"},
                    {"type": "document", "source": {"type": "text", "data": "x"}},
                    {"type": "text", "text": "go on"}
                ]},
                {"role": "assistant", "content": []},
                {"role": "narrator", "content": "odd role, kept", "weird": [1, 2]}
            ],
            "stop_sequences": ["\n\nHuman:"]
        }),
        WireFormat::Anthropic,
    );
}

#[test]
fn odd_blocks_are_kept_verbatim() {
    check_round_trip(
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": 42},
            {"type": "tool_result", "tool_use_id": "t1", "is_error": "yes"},
            {"type": "tool_use", "id": "t1", "name": "x"},
            {"type": "text", "text": 5},
            "a bare string",
            {"no_type": true}
        ]}]),
        WireFormat::Anthropic,
    );
}

#[test]
fn openai_round_trips_keep_argument_strings_and_null_content() {
    check_round_trip(
        json!({
            "model": "gpt-4o",
            "tools": [{"type": "function", "function": {"name": "get_reservation_details",
                       "description": "d", "parameters": {"type": "object"}, "strict": true}}],
            "messages": [
                {"role": "system", "content": "policy"},
                {"role": "user", "content": [{"type": "text", "text": "look"},
                                             {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_reservation_details", "arguments": "{\"reservation_id\": \"ABC\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "name": "get_reservation_details", "content": "{\"ok\": true}"},
                {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "err"}]},
                {"role": "assistant", "content": "done", "tool_calls": []},
                {"role": "assistant", "content": "x", "tool_calls": null, "refusal": null}
            ],
            "temperature": 0
        }),
        WireFormat::OpenAi,
    );
}

#[test]
fn openai_tool_calls_become_blocks() {
    let conv = from_json_str(
        r#"[{"role":"assistant","content":"let me look","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"42"}]"#,
    )
    .unwrap();
    let kinds: Vec<&str> = conv.messages[0].blocks().iter().map(Block::kind).collect();
    assert_eq!(kinds, ["text", "tool_use"]);
    let index = ToolCallIndex::build(&conv);
    assert_eq!(index.tool_name("c1"), Some("f"));
    assert_eq!(index.input(&conv, "c1"), Some(&json!({"a": 1})));
    assert_eq!(index.get("c1").unwrap().result, Some((1, 0)));
}

#[test]
fn conversion_maps_both_ways_and_reports_losses() {
    let anthropic = json!({
        "system": "be kind",
        "model": "m",
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "u1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "u2", "name": "f", "input": {"a": 2}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "u1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "u2", "content": [{"type": "text", "text": "two"}]}]}
        ]
    });
    let conv = from_value(anthropic).unwrap();
    let (oa, report) = convert(&conv, WireFormat::OpenAi);
    assert_eq!(report.to_string(), "dropped: 1 thinking block");
    let expected_openai = json!({
        "messages": [
            {"role": "system", "content": "be kind"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "calling", "tool_calls": [
                {"id": "u1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                {"id": "u2", "type": "function", "function": {"name": "f", "arguments": "{\"a\":2}"}}]},
            {"role": "tool", "tool_call_id": "u1", "content": "one"},
            {"role": "tool", "tool_call_id": "u2", "content": "two"}
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "model": "m"
    });
    assert_eq!(to_value(&oa), expected_openai);

    let (back, report) = convert(&oa, WireFormat::Anthropic);
    assert!(report.is_lossless(), "{report}");
    let expected_anthropic = json!({
        "system": "be kind",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "u1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "u2", "name": "f", "input": {"a": 2}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "u1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "u2", "content": "two"}]}
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "model": "m"
    });
    assert_eq!(to_value(&back), expected_anthropic);
}

#[test]
fn malformed_json_names_line_and_column() {
    let err = from_json_str("[\n  {\"role\": \"user\",\n   \"content\": \"x\",,}\n]").unwrap_err();
    match err {
        ModelError::Json { line, column, .. } => assert_eq!((line, column), (3, 19)),
        other => panic!("expected a JSON error, got {other}"),
    }
    // before a line's first character (serde_json's column 0): columns count from 1
    let e = serde_json::from_str::<std::collections::BTreeMap<String, u8>>("[1]").unwrap_err();
    assert_eq!(e.column(), 0, "serde_json's own count");
    match ModelError::from_json(&e) {
        ModelError::Json { line, column, .. } => assert_eq!((line, column), (1, 1)),
        other => panic!("expected a JSON error, got {other}"),
    }
    match from_json_str(
        "[
",
    )
    .unwrap_err()
    {
        ModelError::Json { line, column, .. } => assert_eq!((line, column), (2, 1)),
        other => panic!("expected a JSON error, got {other}"),
    }
}

#[test]
fn wrong_shapes_name_the_path() {
    let check = |text: &str, expected: &str| {
        let err = from_value(parse_json(text).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), expected);
    };
    check(
        r#"{"messages": 3}"#,
        "messages: expected a list, found a number",
    );
    check(
        r#"[{"role": "user", "content": "a"}, {"content": "b"}]"#,
        "messages[1].role: missing or not a string",
    );
    check(
        r#"[{"role": "user", "content": 7}]"#,
        "messages[0].content: expected a string, a list of blocks or null, found a number",
    );
    check(
        r#""hello""#,
        "$: expected a list of messages or an object with a \"messages\" list, found a string",
    );
}

#[test]
fn index_is_updated_with_appended_messages_only() {
    let mut conv = from_json_str(
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"x"}}]}]"#,
    )
    .unwrap();
    let mut index = ToolCallIndex::build(&conv);
    assert_eq!(index.calls_without_result().count(), 1);
    let more = from_json_str(
        r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]},
            {"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{"command":"ls"}}]}]"#,
    )
    .unwrap();
    conv.messages.extend(more.messages);
    index.update(&conv);
    assert_eq!(index.len(), 2);
    assert_eq!(index.get("a").unwrap().result, Some((1, 0)));
    assert_eq!(index.tool_name("b"), Some("Bash"));
    conv.messages.truncate(1);
    index.update(&conv);
    assert_eq!(index.len(), 1, "a shorter history is re-indexed");
}

#[test]
fn numbers_are_kept_as_written_and_a_byte_order_mark_is_no_error() {
    let text = "\u{feff}{\"model\": \"m\", \"seed\": 18446744073709551616, \"messages\": [\
        {\"role\": \"user\", \"content\": \"hi\", \"trace\": 123456789012345678901234567890, \"t\": 1.10, \"e\": 1e400, \
        \"x\": [1E+2, 2E-3, 1e2, 1e+2, -0.0]}]}";
    let conv = from_json_str(text).expect("reads");
    let out = serde_json::to_string(&to_value(&conv)).unwrap();
    for number in [
        "18446744073709551616",
        "123456789012345678901234567890",
        "1.10",
        // beyond f64, and exponents however they are spelled: as written
        "\"e\":1e400",
        "[1E+2,2E-3,1e2,1e+2,-0.0]",
    ] {
        assert!(out.contains(number), "{number} in {out}");
    }
}

#[test]
fn a_tool_call_s_arguments_keep_their_numbers_across_formats() {
    let text = r#"{"messages": [{"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
         "function": {"name": "f", "arguments": "{\"a\":1E+2,\"b\":5e3}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}]}"#;
    let conv = from_json_str(text).expect("reads");
    let anthropic = ctxfit_model::convert(&conv, WireFormat::Anthropic).0;
    let out = serde_json::to_string(&to_value(&anthropic)).unwrap();
    assert!(out.contains(r#""input":{"a":1E+2,"b":5e3}"#), "{out}");
}

fn problem_texts(conv: &ctxfit_model::Conversation) -> Vec<String> {
    ctxfit_model::problems(conv)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn openai_deprecated_function_calling_is_kept_as_written_and_said_not_compacted() {
    let doc = json!({"model": "gpt-4", "functions": [{"name": "sh", "parameters": {}}], "messages": [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": null, "function_call": {"name": "sh", "arguments": "{\"cmd\":\"ls\"}"}},
        {"role": "function", "name": "sh", "content": "a.rs\nb.rs"},
        {"role": "chatbot", "content": "?"}
    ]});
    let conv = ctxfit_model::openai::from_value(doc.clone()).unwrap();
    assert_eq!(ctxfit_model::openai::to_value(&conv), doc);
    let found = problem_texts(&conv);
    assert_eq!(
        found,
        [
            "message 2: a `function` message (OpenAI's deprecated function calling, the answer to an assistant's \
             `function_call`) is kept as written but not compacted: only results of `tools` (`tool_calls`, `tool` \
             messages) are",
            "message 3: role `chatbot` is not a message role of the openai format",
        ]
    );
}

#[test]
fn problems_are_named_where_they_are() {
    let conv = from_value(json!({"messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "early", "content": "x"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "tool", "content": "odd"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "g", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "y"}]}
    ]}))
    .unwrap();
    let found = problem_texts(&conv);
    assert_eq!(
        found,
        [
            "message 0: tool result `early` answers no earlier call",
            "tool_use id `a` is used by 2 calls (messages 1, 3): each result is credited to the latest call before it (calls in one message: in order)",
            "message 2: role `tool` is not a message role of the anthropic format",
        ]
    );
    // the result at message 4 answers the call at message 3
    let index = ToolCallIndex::build(&conv);
    assert_eq!(index.call_before("a", (4, 0)).unwrap().name, "g");
    assert_eq!(index.call_before("a", (2, 0)).unwrap().name, "f");
    assert!(index.call_before("a", (1, 0)).is_none());
}

#[test]
fn an_openai_tool_message_without_its_call_id_and_odd_tool_calls_are_named() {
    let conv = from_value(json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
        {"role": "tool", "content": "no id"},
        {"role": "tool", "tool_call_id": 7, "content": "a number for an id"},
        {"role": "assistant", "content": "done", "tool_calls": []},
        {"role": "assistant", "content": "done", "tool_calls": null}
    ]}))
    .unwrap();
    assert_eq!(conv.format, WireFormat::OpenAi);
    let found = problem_texts(&conv);
    assert_eq!(
        found,
        [
            "message 1: `tool_calls` not of its format's shape (a list of calls, each with an `id`, a `function.name` and a `function.arguments` string); kept as written, not read as a tool call or result",
            "message 2: a `tool` message without a `tool_call_id` string answers no call (the API refuses it); kept as written, not compacted",
            "message 3: a `tool` message without a `tool_call_id` string answers no call (the API refuses it); kept as written, not compacted",
        ]
    );
    // kept as written
    let written = serde_json::to_string(&to_value(&conv)).unwrap();
    assert!(written.contains(r#""tool_call_id":7"#), "{written}");
    assert!(
        written.contains(r#""tool_calls":[{"id":"c","function":{"name":"f"}}]"#),
        "{written}"
    );
}

#[test]
fn tool_blocks_and_items_of_another_shape_are_named() {
    let anthropic = from_value(json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}
    ]}))
    .unwrap();
    assert_eq!(
        problem_texts(&anthropic),
        [
            "message 1: a `tool_use` block not of its format's shape (an `id` and a `name` string and an `input`); kept as written, not read as a tool call or result",
            "message 2: a `tool_result` block not of its format's shape (a `tool_use_id` string, content of text or blocks and an `is_error` of true or false); kept as written, not read as a tool call or result",
        ]
    );
    let responses = from_value(json!({"input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "output": "x"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "y"}
    ]}))
    .unwrap();
    assert_eq!(responses.format, WireFormat::Responses);
    assert_eq!(
        problem_texts(&responses),
        [
            "message 1: a `function_call` item not of its format's shape (`call_id`, `name` and `arguments` strings); kept as written, not read as a tool call or result",
            "message 2: a tool output item not of its format's shape (a `call_id` string and an `output` string or list); kept as written, not read as a tool call or result",
        ]
    );
    let written = serde_json::to_string(&to_value(&responses)).unwrap();
    assert!(
        written.contains(r#"{"type":"function_call_output","output":"x"}"#),
        "{written}"
    );
}

#[test]
fn content_items_that_are_not_blocks_are_named_and_kept_as_written() {
    let conv = from_value(json!({"messages": [
        {"role": "user", "content": [1, "text", {"text": "no type"}, {"type": 7}, {"type": "text", "text": "ok"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"text": "no type"}, null]},
        {"role": "user", "content": [[]]}
    ]}))
    .unwrap();
    assert_eq!(
        problem_texts(&conv),
        [
            "message 0: content item 0 is a number, not a block (the API takes only objects with a `type` string), nor are 3 more items of the message; kept as written",
            "message 1: content item 1 is an object without a `type` string, not a block (the API takes only objects with a `type` string), nor is 1 more item of the message; kept as written",
            "message 2: content item 0 is a list, not a block (the API takes only objects with a `type` string); kept as written",
        ]
    );
    let written = serde_json::to_string(&to_value(&conv)).unwrap();
    assert!(
        written.contains(r#"[1,"text",{"text":"no type"},{"type":7},{"type":"text","text":"ok"}]"#),
        "{written}"
    );
}

#[test]
fn parallel_calls_sharing_an_id_take_their_results_in_order() {
    let conv = from_value(json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.py\"}"}},
            {"id": "x", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "print('a')"},
        {"role": "tool", "tool_call_id": "x", "content": "a.py"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "a.py:1"}
    ]}))
    .unwrap();
    let index = ToolCallIndex::build(&conv);
    let answered = |m: usize| index.call_before("x", (m, 0)).map(|s| s.name.as_str());
    assert_eq!(answered(2), Some("read_file"));
    assert_eq!(answered(3), Some("bash"));
    assert_eq!(answered(5), Some("grep"));
    let found = problem_texts(&conv);
    assert_eq!(
        found,
        ["tool_use id `x` is used by 3 calls (messages 1, 1, 4): each result is credited to the latest call before it (calls in one message: in order)"]
    );
}

#[test]
fn a_system_message_among_anthropic_messages_is_the_apis_own() {
    // what Claude Code 2.1 sends: the system prompt on top, and one more instruction after the first user message
    let anthropic = json!({
        "system": [{"type": "text", "text": "be kind"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "system", "content": "Available agent types: claude"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
        ]
    });
    let conv = from_value(anthropic.clone()).unwrap();
    assert_eq!(conv.format, WireFormat::Anthropic);
    assert_eq!(conv.messages[1].role, ctxfit_model::Role::System);
    assert!(
        problem_texts(&conv).is_empty(),
        "{:?}",
        problem_texts(&conv)
    );
    assert_eq!(to_value(&conv), anthropic);
    // its messages alone, as a bare list, read as Anthropic's too (the system message decides nothing while a
    // block does); a plain chat with a system message is OpenAI's
    let bare = anthropic["messages"].clone();
    let mut with_call = bare.as_array().unwrap().clone();
    with_call.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "f", "input": {}}]}));
    assert_eq!(
        ctxfit_model::detect(&json!(with_call)),
        WireFormat::Anthropic
    );
    assert_eq!(
        ctxfit_model::detect(
            &json!([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}])
        ),
        WireFormat::OpenAi
    );
    // OpenAI Chat keeps it where it is, and back again
    let (oa, report) = convert(&conv, WireFormat::OpenAi);
    assert!(report.is_lossless(), "{report}");
    let roles: Vec<&str> = oa.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "system", "assistant"]);
    let (back, report) = convert(&oa, WireFormat::Anthropic);
    assert!(report.is_lossless(), "{report}");
    assert_eq!(
        to_value(&back),
        json!({"system": "be kind", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "Available agent types: claude"},
            {"role": "assistant", "content": "hello"}
        ]})
    );
    // a developer message in Chat is a system message in Anthropic's
    let chat = from_value(json!({"messages": [
        {"role": "developer", "content": "first"},
        {"role": "user", "content": "hi"},
        {"role": "developer", "content": "from here on, be brief"}
    ]}))
    .unwrap();
    let (a, _) = convert(&chat, WireFormat::Anthropic);
    assert_eq!(
        to_value(&a),
        json!({"system": "first", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "from here on, be brief"}
        ]})
    );
}

#[test]
fn an_image_in_a_tool_result_is_reported_when_openai_chat_cannot_carry_it() {
    // (a screenshot tool's result: OpenAI Chat's tool messages hold text only)
    let anthropic = json!([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": [
            {"type": "text", "text": "the page"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]}
    ]);
    let conv = from_value(anthropic).unwrap();
    let (oa, report) = convert(&conv, WireFormat::OpenAi);
    assert_eq!(report.to_string(), "dropped: 1 image block");
    assert_eq!(
        to_value(&oa)[1],
        json!({"role": "tool", "tool_call_id": "u1", "content": "the page"})
    );
}

#[test]
fn tool_definitions_given_apart_read_in_every_formats_spelling() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let tools = json!([
        {"name": "read", "description": "Read a file", "input_schema": schema},
        {"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": schema}},
        {"type": "function", "name": "read", "description": "Read a file", "parameters": schema},
        {"type": "web_search"}
    ]);
    let read = ctxfit_model::read_tool_definitions(tools).unwrap();
    assert_eq!(read.len(), 4);
    for tool in &read[..3] {
        assert_eq!(tool.name, "read");
        assert_eq!(tool.description.as_deref(), Some("Read a file"));
        assert_eq!(tool.input_schema.as_ref(), Some(&schema));
    }
    assert_eq!(read[1].wrapper_extra.get("type"), Some(&json!("function")));
    // a built-in tool has no name: its fields are kept as extras
    assert_eq!(read[3].name, "");
    assert_eq!(read[3].extra.get("type"), Some(&json!("web_search")));

    // what is not a tool is named
    let err = ctxfit_model::read_tool_definitions(json!([{"name": "a"}, "b"])).unwrap_err();
    assert!(err.to_string().contains("tools[1]"), "{err}");
    let err = ctxfit_model::read_tool_definitions(json!({"name": "a"})).unwrap_err();
    assert!(
        err.to_string().contains("tools") && err.to_string().contains("list"),
        "{err}"
    );
    let err = ctxfit_model::read_tool_definitions(json!([{"function": "f"}])).unwrap_err();
    assert!(err.to_string().contains("tools[0].function"), "{err}");
    let err = ctxfit_model::read_tool_definitions(json!([{"name": 3}])).unwrap_err();
    assert!(err.to_string().contains("tools[0].name"), "{err}");
}

/// A message read with an empty path and its error put under its place says what it says read at that place,
/// in every format, for errors at the message and deeper in it.
#[test]
fn errors_put_under_a_path_as_if_read_there() {
    use ctxfit_model::read_message;
    let bad = [
        json!("a string"),
        json!(3),
        json!({"content": "no role"}),
        json!({"role": 7, "content": "x"}),
        json!({"role": "user", "content": 5}),
        json!({"role": "user", "content": [{"type": "text", "text": 1}]}),
        json!({"role": "user", "content": [3]}),
        json!({"role": "assistant", "tool_calls": [{"id": "a", "function": 4}]}),
        json!({"type": "message", "content": "x"}),
        json!({"type": "message", "role": "user", "content": {"a": 1}}),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": 1, "input": {}}]}),
    ];
    let mut errors = 0;
    for format in [
        WireFormat::Anthropic,
        WireFormat::OpenAi,
        WireFormat::Responses,
    ] {
        for value in &bad {
            let there = read_message(format, value.clone(), "messages[3]");
            let under = read_message(format, value.clone(), "").map_err(|e| e.under("messages[3]"));
            assert_eq!(
                there.as_ref().err(),
                under.as_ref().err(),
                "{format:?} {value}"
            );
            if let Err(e) = there {
                errors += 1;
                assert!(e.to_string().starts_with("messages[3]"), "{e}");
            }
        }
    }
    // (most of them are errors in some format)
    assert!(errors >= 15, "{errors}");
}
