//! The OpenAI Responses format: lossless round trips, one message per item, detection and conversion to and from
//! the other two formats, on hand-written documents (the Codex CLI rollouts of the corpus are checked in
//! ctxfit-import).

use ctxfit_model::{
    begins_response, convert, detect, from_value, responses, to_value, Block, Role, WireFormat,
};
use serde_json::{json, Value};

fn request() -> Value {
    json!({
        "model": "gpt-5.5",
        "instructions": "You are a coding agent.",
        "tools": [
            {"type": "function", "name": "exec_command", "description": "Run a command",
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}, "strict": false},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark"}}
        ],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: none"}]},
            {"role": "user", "content": "fix the build"},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command",
             "arguments": "{\"cmd\": \"cargo build\",  \"yield_time_ms\": 1000}", "id": "fc_1"},
            {"type": "function_call", "call_id": "c2", "name": "exec_command", "arguments": "not json"},
            {"type": "function_call_output", "call_id": "c1", "output": "error[E0425]: cannot find value `x`"},
            {"type": "function_call_output", "call_id": "c2",
             "output": [{"type": "input_text", "text": "ok"}, {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]},
            {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "status": "completed",
             "input": "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch\n"},
            {"type": "custom_tool_call_output", "call_id": "c3", "output": "Success. Updated the following files:\nM src/a.rs\n"},
            {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rust E0425"}},
            {"type": "item_reference", "id": "rs_9"},
            {"type": "function_call", "name": "broken"},
            {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}
        ],
        "store": false,
        "stream": true
    })
}

#[test]
fn a_request_round_trips_item_for_item() {
    let doc = request();
    assert_eq!(detect(&doc), WireFormat::Responses);
    let conv = from_value(doc.clone()).unwrap();
    assert_eq!(conv.format, WireFormat::Responses);
    assert_eq!(to_value(&conv), doc);
    assert_eq!(conv.messages.len(), 14, "one message per item");
    assert_eq!(
        conv.system.as_ref().unwrap().joined_text(),
        "You are a coding agent."
    );
    assert_eq!(conv.tools.as_ref().unwrap()[1].name, "apply_patch");
    // calls and results are blocks like in the other formats, linked by call_id
    assert_eq!(conv.tool_use_count(), 3);
    assert_eq!(conv.tool_result_count(), 3);
    let Block::ToolUse(patch) = &conv.messages[8].content.blocks[0] else {
        panic!("custom_tool_call is a tool use")
    };
    assert_eq!(
        (patch.id.as_str(), patch.name.as_str()),
        ("c3", "apply_patch")
    );
    assert!(patch.input.as_str().unwrap().starts_with("*** Begin Patch"));
    assert_eq!(conv.messages[6].role, Role::Tool);
    // reasoning and built-in tool calls are the model's; an item of unknown side keeps its type as role
    assert_eq!(conv.messages[2].role, Role::Assistant);
    assert_eq!(conv.messages[10].role, Role::Assistant);
    assert_eq!(conv.messages[11].role, Role::Other("item_reference".into()));
    // the model's answer to one request is the run of items from the reasoning to the last parallel call
    let starts: Vec<usize> = (0..conv.messages.len())
        .filter(|&i| begins_response(&conv.messages, i))
        .collect();
    assert_eq!(starts, vec![2, 8, 10, 12]);
}

#[test]
fn bare_item_lists_and_string_inputs_round_trip() {
    let list = json!([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}
    ]);
    assert_eq!(detect(&list), WireFormat::Responses);
    assert_eq!(to_value(&from_value(list.clone()).unwrap()), list);
    let prompt = json!({"model": "gpt-5", "input": "Say hi", "instructions": "Be brief."});
    let conv = from_value(prompt.clone()).unwrap();
    assert!(conv.messages.is_empty());
    assert_eq!(to_value(&conv), prompt);
    // a tool written without `type` is written back without one (found by fuzzing)
    let untyped = json!({"input": [], "tools": [{"name": "f", "parameters": {}}]});
    assert_eq!(to_value(&from_value(untyped.clone()).unwrap()), untyped);
    // built-in tools have no name: the list is kept as it was
    let builtin = json!({"input": [], "tools": [{"type": "web_search"}]});
    let conv = from_value(builtin.clone()).unwrap();
    assert!(conv.tools.is_none());
    assert_eq!(to_value(&conv), builtin);
}

#[test]
fn wrong_shapes_name_the_item() {
    let err = |doc: Value| responses::from_value(doc).unwrap_err().to_string();
    assert_eq!(
        err(json!({"input": [{"type": "message", "content": "x"}]})),
        "input[0].role: missing or not a string"
    );
    assert_eq!(
        err(json!({"input": [3]})),
        "input[0]: expected an item object, found a number"
    );
    assert_eq!(
        err(json!({"input": {"a": 1}})),
        "input: expected a list of items or a string, found an object"
    );
}

#[test]
fn conversion_gathers_a_response_into_one_message_and_back() {
    let conv = from_value(request()).unwrap();
    let (anthropic, report) = convert(&conv, WireFormat::Anthropic);
    // reasoning, the built-in search, the reference, the refusal and the broken call have no counterpart
    assert!(!report.is_lossless());
    let text = report.to_string();
    for dropped in [
        "`reasoning` item",
        "`web_search_call` item",
        "item field `id`",
    ] {
        assert!(text.contains(dropped), "{text}");
    }
    let v = to_value(&anthropic);
    assert_eq!(v["system"], "You are a coding agent.\n\nsandbox: none");
    let assistant = &v["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let kinds: Vec<&str> = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "tool_use", "tool_use"], "{assistant}");
    assert_eq!(
        v["messages"][1]["content"][1]["input"]["cmd"],
        "cargo build"
    );
    // the results of the parallel calls are one user message
    assert_eq!(v["messages"][2]["content"].as_array().unwrap().len(), 2);
    // a custom tool's free-form input becomes the one field of an object
    assert!(v["messages"][3]["content"][0]["input"]["input"]
        .as_str()
        .unwrap()
        .starts_with("*** Begin Patch"));

    let (chat, _) = convert(&conv, WireFormat::OpenAi);
    let v = to_value(&chat);
    // instructions, the developer message, the user's, then the response with both calls
    assert_eq!(v["messages"][1]["role"], "developer");
    assert_eq!(v["messages"][3]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(v["messages"][4]["role"], "tool");
    assert_eq!(v["messages"][4]["tool_call_id"], "c1");

    // and back: each call and result its own item, texts as message items of the right part type
    let (back, report) = convert(&anthropic, WireFormat::Responses);
    assert!(report.is_lossless(), "{report}");
    let v = to_value(&back);
    let kinds: Vec<&str> = v["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(v["input"][1]["content"][0]["type"], "output_text");
    assert_eq!(
        v["instructions"],
        "You are a coding agent.\n\nsandbox: none"
    );
    assert_eq!(
        v["input"][2]["arguments"],
        json!({"cmd": "cargo build", "yield_time_ms": 1000}).to_string()
    );
    // the round trip through Anthropic keeps every call and result
    let again = from_value(v).unwrap();
    assert_eq!(again.tool_use_count(), 3);
    assert_eq!(again.tool_result_count(), 3);
}

#[test]
fn local_shell_items_are_a_call_and_its_result() {
    // the API's own pair (the output names its call by `id`), and Codex CLI's (a `function_call_output`)
    let doc = json!({"input": [
        {"role": "user", "content": "what is here?"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "c1", "status": "completed",
         "action": {"type": "exec", "command": ["bash", "-lc", "ls"], "timeout_ms": 1000}},
        {"type": "local_shell_call_output", "id": "c1", "output": "a.rs\nb.rs", "status": "completed"},
        {"type": "local_shell_call", "call_id": "c2", "status": "completed",
         "action": {"type": "exec", "command": ["cat", "a.rs"]}},
        {"type": "function_call_output", "call_id": "c2", "output": "fn main() {}"},
        {"type": "local_shell_call", "status": "completed", "action": {"type": "exec", "command": ["pwd"]}}
    ]});
    assert_eq!(detect(&doc["input"]), WireFormat::Responses);
    let conv = from_value(doc.clone()).unwrap();
    assert_eq!(to_value(&conv), doc);
    // the last call has no call_id: nothing can answer it, and it stays an item the model does not read
    assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (2, 2));
    assert!(ctxfit_model::problems(&conv).is_empty());
    let Block::ToolUse(call) = &conv.messages[1].content.blocks[0] else {
        panic!("a local_shell_call is a tool use")
    };
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("c1", responses::LOCAL_SHELL)
    );
    assert_eq!(call.input["command"], json!(["bash", "-lc", "ls"]));
    let results: Vec<_> = conv.messages[2].tool_results().collect();
    assert_eq!(results[0].tool_use_id, "c1");
    assert_eq!(results[0].content.joined_text(), "a.rs\nb.rs");
    // in the other formats it is a call of `local_shell` with the action as its input
    let (chat, _) = convert(&conv, WireFormat::Anthropic);
    let blocks = &chat.messages[1].content.blocks;
    let Block::ToolUse(call) = &blocks[0] else {
        panic!("a tool use in Anthropic messages too")
    };
    assert_eq!(call.name, "local_shell");
    assert_eq!(call.input["command"][2], "ls");
}

/// The `shell` and `apply_patch` tools' items (the hosted tools, the OpenAI Agents SDK's `ShellTool` and
/// `ApplyPatchTool`): calls of `shell` and `apply_patch` and their results, written back as they were read.
#[test]
fn shell_and_apply_patch_items_are_calls_and_results() {
    let exit = |code: i64| json!({"type": "exit", "exit_code": code});
    let doc = json!({"model": "gpt-5.1", "input": [
        {"role": "user", "content": "run the tests"},
        {"type": "shell_call", "id": "sh_1", "call_id": "call_1", "status": "completed",
         "action": {"commands": ["cargo test -q", "git status --short"], "timeout_ms": 60000, "max_output_length": 4096}},
        {"type": "shell_call_output", "call_id": "call_1", "max_output_length": 4096, "output": [
            {"stdout": "running 3 tests\n...\ntest result: ok\n", "stderr": "   Compiling a v0.1.0\n", "outcome": exit(0)},
            {"stdout": "", "stderr": "", "outcome": exit(0)},
            {"stdout": "", "stderr": "fatal: not a git repository\n", "outcome": exit(128)}]},
        {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_2", "status": "completed",
         "operation": {"type": "update_file", "path": "src/lib.rs", "diff": "@@\n-x\n+y\n"}},
        {"type": "apply_patch_call_output", "call_id": "call_2", "status": "completed", "output": "Updated src/lib.rs"},
        {"type": "apply_patch_call", "call_id": "call_3", "status": "completed",
         "operation": {"type": "delete_file", "path": "old.rs"}},
        {"type": "apply_patch_call_output", "call_id": "call_3", "status": "failed"}
    ]});
    // a list of one such item is told from the other formats too
    for item in doc["input"].as_array().unwrap().iter().skip(1) {
        assert_eq!(detect(&json!([item])), WireFormat::Responses, "{item}");
    }
    let conv = from_value(doc.clone()).unwrap();
    assert_eq!(to_value(&conv), doc);
    assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (3, 3));
    assert!(ctxfit_model::problems(&conv).is_empty());
    let Block::ToolUse(call) = &conv.messages[1].content.blocks[0] else {
        panic!("a shell_call is a tool use")
    };
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_1", responses::SHELL)
    );
    assert_eq!(call.input["commands"][1], "git status --short");
    // each non-empty stream of each command is a text block saying which it is
    let result = conv.messages[2].tool_results().next().unwrap();
    let streams: Vec<(&str, &str)> = (result.content.blocks.iter())
        .map(|b| {
            let Block::Text(t) = b else { panic!("text") };
            (
                t.extra[responses::STREAM].as_str().unwrap(),
                t.text.as_str(),
            )
        })
        .collect();
    assert_eq!(
        streams,
        [
            ("stdout", "running 3 tests\n...\ntest result: ok\n"),
            ("stderr", "   Compiling a v0.1.0\n"),
            ("stderr", "fatal: not a git repository\n")
        ]
    );
    let Block::ToolUse(patch) = &conv.messages[3].content.blocks[0] else {
        panic!("an apply_patch_call is a tool use")
    };
    assert_eq!(patch.name, responses::APPLY_PATCH);
    assert_eq!(patch.input["path"], "src/lib.rs");
    // neither call may have its input cleared: the API requires the action and the operation whole
    assert!(!responses::call_input_is_free(&conv.messages[1]));
    assert!(!responses::call_input_is_free(&conv.messages[3]));

    // compacted to other text, the output is one chunk of stdout with the last command's outcome
    let mut cut = conv.clone();
    let Block::ToolResult(r) = &mut cut.messages[2].content.blocks[0] else {
        panic!("a result")
    };
    r.content = ctxfit_model::Content::list(vec![
        Block::text("running 3 tests"),
        Block::text("[2 lines left out]"),
    ]);
    let item = responses::write_item(&cut.messages[2]);
    assert_eq!(
        item,
        json!({"type": "shell_call_output", "call_id": "call_1", "max_output_length": 4096, "output": [
            {"stdout": "running 3 tests\n[2 lines left out]", "stderr": "", "outcome": exit(128)}]})
    );
    // and in the other formats, calls of `shell` and `apply_patch` with their results' text
    let (chat, _) = convert(&conv, WireFormat::OpenAi);
    let back = to_value(&chat);
    let text = back.to_string();
    assert!(text.contains("\"name\":\"shell\"") && text.contains("fatal: not a git repository"));
    assert_eq!(chat.tool_result_count(), 3);
}
