//! Unit tests of the crate root, `parse.rs` and `detect.rs`.

use super::*;
use crate::parse::{count_values, parse};
use ctxfit_model::Role;

#[test]
fn numbers_keep_their_spelling_in_documents_and_lines() {
    let Ok(Parsed::Document(v)) = parse(r#"{"a": [1E+2, 1e2, 2E-3]}"#) else {
        panic!("a document")
    };
    assert_eq!(v.to_string(), r#"{"a":[1E+2,1e2,2E-3]}"#);
    let Ok(Parsed::Lines(lines)) = parse("{\"a\": 1E2}\n{\"b\": 5e1}{\"c\": 7E0}\n") else {
        panic!("lines")
    };
    let written: Vec<String> = lines.iter().map(|(_, v)| v.to_string()).collect();
    assert_eq!(written, [r#"{"a":1E2}"#, r#"{"b":5e1}"#, r#"{"c":7E0}"#]);
}

fn line(kind: &str, uuid: &str, content: &str) -> String {
    format!(
        r#"{{"type":"{kind}","sessionId":"s","uuid":"{uuid}","message":{{"role":"{kind}","content":"{content}"}}}}"#
    )
}

#[test]
fn two_values_on_one_line_are_read_as_the_two_they_are() {
    let text = format!(
        "{}\n{}{}\n",
        line("user", "1", "hi"),
        line("assistant", "2", "hello"),
        line("user", "3", "bye")
    );
    let sessions = import_str(&text, None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::ClaudeCode);
    assert_eq!(sessions[0].conversation.messages.len(), 3);
    // a broken second value still names its line and column
    let bad = format!(
        "{}\n{}{{\"type\":\n",
        line("user", "1", "hi"),
        line("user", "2", "x")
    );
    match import_str(&bad, None) {
        Err(ImportError::Model(ctxfit_model::ModelError::Json { line, .. })) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn half_an_emoji_a_client_cut_off_is_read_as_u_fffd_and_said_where() {
    // Claude Code cuts a long tool result by UTF-16 code units; the half of an emoji left is logged as a lone
    // escape, which no JSON reader here takes: the session reads, the half as U+FFFD, and the log's place is said
    let text = format!(
        "{}\n{}\n{}",
        line("user", "1", "hi"),
        line("assistant", "2", r"cut \ud83d and \ud83d\ude00 kept"),
        line("user", "3", r"\udc00")
    );
    let sessions = import_str(&text, None).unwrap();
    let messages = &sessions[0].conversation.messages;
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1].content.joined_text(),
        "cut \u{FFFD} and \u{1F600} kept"
    );
    let column = line("assistant", "2", "").find("\"}}").unwrap() + 1 + "cut ".len();
    assert_eq!(
        sessions[0].problems,
        [format!(
            "line 2, column {column}: a lone surrogate escape (half of a UTF-16 pair, such as an emoji a client \
             cut in two) read as U+FFFD (2 in all)"
        )]
    );
    // with a last line cut short too: both said
    let cut = format!(
        "{}\n{}",
        line("user", "1", r"a \ud800"),
        &line("user", "2", "b")[..30]
    );
    let sessions = import_str(&cut, None).unwrap();
    assert_eq!(sessions[0].problems.len(), 2, "{:?}", sessions[0].problems);
}

#[test]
fn a_log_cut_short_in_its_last_line_reads_without_it_and_says_so() {
    let (a, b, c) = (
        line("user", "1", "hi"),
        line("assistant", "2", "hello"),
        line("user", "3", "bye"),
    );
    let json_error_line = |text: &str| match import_str(text, None) {
        Err(ImportError::Model(ctxfit_model::ModelError::Json { line, .. })) => line,
        other => panic!("{other:?}"),
    };
    // a log still being written: its last line ends inside a value, with no line break after it
    for cut in [12, c.len() - 1] {
        let text = format!("{a}\n{b}\n{}", &c[..cut]);
        let sessions = import_str(&text, None).unwrap();
        assert_eq!(sessions[0].conversation.messages.len(), 2, "{text}");
        assert_eq!(
            sessions[0].problems,
            ["line 3 is cut short (a log still being written?): read without it"]
        );
    }
    // two writers' records on the cut line: the one completed before the cut is kept
    let text = format!("{a}\n{b}{}", &c[..20]);
    let sessions = import_str(&text, None).unwrap();
    assert_eq!(sessions[0].conversation.messages.len(), 2);
    assert_eq!(sessions[0].problems.len(), 1);
    // whole lines, with or without a last line break: nothing is wrong
    for text in [format!("{a}\n{b}\n{c}"), format!("{a}\n{b}\n{c}\n")] {
        let sessions = import_str(&text, None).unwrap();
        assert_eq!(sessions[0].conversation.messages.len(), 3);
        assert!(sessions[0].problems.is_empty());
    }
    // anything else stays an error naming its line: a last line that is wrong rather than short, a short line
    // that is not the last, a line break after the cut (the writer went on), a pretty-printed document cut off
    assert_eq!(json_error_line(&format!("{a}\n{b}\n{c}}}")), 3);
    assert_eq!(json_error_line(&format!("{a}\n{}\n{c}", &b[..12])), 2);
    assert_eq!(json_error_line(&format!("{a}\n{b}\n{}\n", &c[..12])), 3);
    assert!(import_str("[\n  {\"role\": \"user\",\n  \"content\": \"h", None).is_err());
    // nothing before the cut: an error, not an empty session
    assert!(import_str(&c[..12], None).is_err());
}

#[test]
fn a_compacted_claude_code_session_is_one_session_per_context_window() {
    let boundary = r#"{"type":"system","subtype":"compact_boundary","sessionId":"s","parentUuid":null,"content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":168483}}"#;
    let text = [
        line("user", "1", "fix the parser"),
        line("assistant", "2", "done"),
        boundary.to_owned(),
        line(
            "user",
            "3",
            "This session is being continued from a previous conversation.",
        ),
        line("assistant", "4", "continuing"),
        // a boundary right after another (or at the start) opens no empty window
        boundary.to_owned(),
        boundary.to_owned(),
        line("user", "5", "summary again"),
    ]
    .join("\n");
    let sessions = import_str(&text, None).unwrap();
    let shape: Vec<(&str, usize)> = sessions
        .iter()
        .map(|s| (s.name.as_str(), s.conversation.messages.len()))
        .collect();
    assert_eq!(shape, [("window 1", 2), ("window 2", 2), ("window 3", 1)]);
    assert!(sessions
        .iter()
        .all(|s| s.source == SourceFormat::ClaudeCode));
    assert_eq!(
        sessions[1].conversation.messages[0].content.joined_text(),
        "This session is being continued from a previous conversation."
    );
    // a session that never compacted is one unnamed session; a boundary at the end opens no window
    let once = format!("{}\n{boundary}\n", line("user", "1", "hi"));
    let sessions = import_str(&once, None).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].name, "");
}

#[test]
fn an_older_claude_code_log_gives_its_subagents_conversations_as_sessions_of_their_own() {
    // Claude Code up to 2.0: the subagent's lines sit in the session's log, between the `Task` call and
    // its result, marked `isSidechain`; two subagents ran in parallel
    let side = |uuid: &str, parent: &str, kind: &str, content: &str| {
        let parent = if parent.is_empty() {
            "null".to_owned()
        } else {
            format!("\"{parent}\"")
        };
        format!(
            r#"{{"type":"{kind}","isSidechain":true,"uuid":"{uuid}","parentUuid":{parent},"sessionId":"s","message":{{"role":"{kind}","content":"{content}"}}}}"#
        )
    };
    let task = r#"{"type":"assistant","isSidechain":false,"uuid":"m2","sessionId":"s","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"Task","input":{"prompt":"look"}},{"type":"tool_use","id":"toolu_b","name":"Task","input":{"prompt":"count"}}]}}"#;
    let results = r#"{"type":"user","uuid":"m3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"found it"},{"type":"tool_result","tool_use_id":"toolu_b","content":"42"}]}}"#;
    let text = [
        line("user", "m1", "explore"),
        task.to_owned(),
        // a marked line that is no message starts no subagent
        r#"{"type":"progress","isSidechain":true,"uuid":"p1","parentUuid":null}"#.to_owned(),
        side("a1", "", "user", "look"),
        side("b1", "", "user", "count"),
        side("a2", "a1", "assistant", "looking"),
        side("b2", "b1", "assistant", "42"),
        side("a3", "a2", "user", "more"),
        results.to_owned(),
        line("assistant", "m4", "done"),
    ]
    .join("\n");
    let sessions = import_str(&text, None).unwrap();
    let shape: Vec<(&str, Vec<String>)> = sessions
        .iter()
        .map(|s| {
            let texts = s
                .conversation
                .messages
                .iter()
                .map(|m| m.content.joined_text());
            (s.name.as_str(), texts.collect())
        })
        .collect();
    assert_eq!(
        shape[1],
        (
            "subagent 1",
            vec!["look".into(), "looking".into(), "more".into()]
        )
    );
    assert_eq!(shape[2], ("subagent 2", vec!["count".into(), "42".into()]));
    assert_eq!(shape.len(), 3);
    // the main conversation: the calls answered right after them
    assert_eq!(shape[0].0, "");
    let main = &sessions[0].conversation;
    assert_eq!(main.messages.len(), 4);
    assert_eq!(main.tool_use_count(), 2);
    assert!(main.messages[2].is_tool_results());
    assert!(ctxfit_model::ToolCallIndex::build(main)
        .orphan_results()
        .next()
        .is_none());
    // a subagent's own log (every line marked) reads as it is
    let own = [
        side("a1", "", "user", "look"),
        side("a2", "a1", "assistant", "looking"),
    ]
    .join("\n");
    let sessions = import_str(&own, None).unwrap();
    assert_eq!((sessions.len(), sessions[0].name.as_str()), (1, ""));
    assert_eq!(sessions[0].conversation.messages.len(), 2);
}

#[test]
fn logs_without_messages_are_sessions_without_messages() {
    assert!(import_str("", None).unwrap().is_empty());
    assert!(import_str(" \n\n", None).unwrap().is_empty());
    for text in [
        r#"{"type":"summary","summary":"Fix the parser","leafUuid":"a1"}"#,
        "{\"type\":\"file-history-snapshot\",\"messageId\":\"m\",\"snapshot\":{}}\n{\"type\":\"summary\",\"summary\":\"x\",\"leafUuid\":\"b\"}\n",
    ] {
        let sessions = import_str(text, None).unwrap();
        assert_eq!(sessions[0].source, SourceFormat::ClaudeCode);
        assert!(sessions[0].conversation.messages.is_empty());
    }
}

#[test]
fn an_empty_list_is_a_conversation_not_begun() {
    // as `{"messages": []}` is: read, not refused as no format
    for text in ["[]", " [ ]\n", r#"{"messages":[]}"#] {
        let sessions = import_str(text, None).unwrap();
        assert_eq!(sessions.len(), 1, "{text}");
        assert_eq!(sessions[0].source, SourceFormat::Anthropic, "{text}");
        assert!(sessions[0].conversation.messages.is_empty(), "{text}");
    }
    let sessions = import_str("[]", Some(SourceFormat::OpenAi)).unwrap();
    assert!(sessions[0].conversation.messages.is_empty());
}

#[test]
fn a_one_line_claude_code_log_is_not_taken_for_a_request() {
    let text = r#"{"type":"summary","sessionId":"s","summary":"x","messages":[{"id":"a"}]}"#;
    assert_eq!(detect(text), Some(SourceFormat::ClaudeCode));
}

#[test]
fn mini_swe_agent_without_tool_calls_links_each_bash_block_to_its_output() {
    let doc = serde_json::json!({
        "trajectory_format": "mini-swe-agent-1",
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "Your response must contain exactly ONE bash code block."},
            {"role": "user", "content": "<pr_description>fix it</pr_description>"},
            {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls -la\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsetup.py\n</output>"},
            {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
            {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
            {"role": "assistant", "content": "THOUGHT: done.\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n</output>"},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}
        ]
    });
    let sessions = import_str(&doc.to_string(), None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::MiniSweAgent);
    let conv = &sessions[0].conversation;
    assert_eq!(conv.messages.len(), 8);
    assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (2, 2));
    assert!(ctxfit_model::problems(conv).is_empty());
    let calls: Vec<_> = conv.messages[2].tool_uses().collect();
    assert_eq!(calls[0].name, "bash");
    assert_eq!(calls[0].input["command"], "ls -la");
    // the thought stays the assistant's text, the block is the call
    assert_eq!(conv.messages[2].content.joined_text(), "THOUGHT: look.");
    let result = conv.messages[3].tool_results().next().unwrap();
    assert_eq!(
        (result.tool_use_id.as_str(), conv.messages[3].role.clone()),
        ("mini-2", Role::Tool)
    );
    assert!(result.content.joined_text().contains("setup.py"));
    // two blocks are no call: the complaint after them is the user's
    assert_eq!(conv.messages[4].tool_uses().count(), 0);
    assert_eq!(conv.messages[5].role, Role::User);
    assert_eq!(conv.messages[7].tool_results().count(), 1);
}

#[test]
fn codex_rollouts_of_2025_link_shell_calls_to_their_outputs() {
    // Codex CLI before its plain-text output: a `shell` tool taking an argument vector, or the API's
    // `local_shell` tool, and every output a JSON object of the output and its metadata
    let lines = [
        r#"{"type":"session_meta","payload":{"id":"y","cli_version":"0.30.0","instructions":null}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls\"],\"workdir\":\"/w\"}","call_id":"call_1"}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"a.rs\\nb.rs\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}}"#,
        r#"{"type":"response_item","payload":{"type":"local_shell_call","id":"lsh_1","call_id":"call_2","status":"completed","action":{"type":"exec","command":["cat","a.rs"]}}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_2","output":"{\"output\":\"fn main() {}\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]}}"#,
    ];
    let sessions = import_str(&lines.join("\n"), None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::Codex);
    let conv = &sessions[0].conversation;
    assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (2, 2));
    assert!(
        ctxfit_model::problems(conv).is_empty(),
        "every output answers its call"
    );
    let index = ctxfit_model::ToolCallIndex::build(conv);
    let names: Vec<&str> = conv
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| index.tool_name(&r.tool_use_id).unwrap_or(""))
        .collect();
    assert_eq!(names, ["shell", "local_shell"]);
}

#[test]
fn codex_rollouts_from_before_the_envelope_read_as_the_envelope_s_lines() {
    // mid 2025: the session's own first line, state markers, and the items bare
    let lines = [
        r#"{"id":"c27a914d","timestamp":"2025-08-20T13:20:47.060Z","instructions":"You are Codex.","git":{"branch":"main"}}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"list the files"}]}"#,
        r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"}"#,
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls\"]}","call_id":"call_1"}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"a.rs\\nb.rs\\n\",\"metadata\":{\"exit_code\":0}}"}"#,
        r#"{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Two files."}]}"#,
    ];
    // spring 2025: one document
    let document = r#"{"session":{"timestamp":"2025-05-05T19:24:54Z","id":"legacy-1","instructions":"You are Codex."},"items":[
        {"role":"user","content":[{"type":"input_text","text":"list the files"}],"type":"message"},
        {"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}]},
        {"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls\"]}","call_id":"call_1"},
        {"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"a.rs\\nb.rs\\n\",\"metadata\":{\"exit_code\":0}}"},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]}]}"#;
    for text in [lines.join("\n"), document.to_owned()] {
        assert_eq!(crate::detect(&text), Some(SourceFormat::Codex));
        let sessions = import_str(&text, None).unwrap();
        assert_eq!(sessions.len(), 1);
        let conv = &sessions[0].conversation;
        assert_eq!(conv.format, ctxfit_model::WireFormat::Responses);
        assert_eq!(
            conv.system.as_ref().unwrap().joined_text(),
            "You are Codex."
        );
        assert_eq!(conv.messages.len(), 5, "the state markers are no messages");
        assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (1, 1));
        assert!(ctxfit_model::problems(conv).is_empty());
        assert_eq!(conv.messages[2].tool_uses().next().unwrap().name, "shell");
        assert!(conv.messages[3]
            .tool_results()
            .next()
            .unwrap()
            .content
            .joined_text()
            .contains("a.rs"));
    }
    // an item that is not one is named where it stands, in the file's own terms
    let bad_line = [lines[0], lines[1], r#"{"type":"message","content":"x"}"#].join("\n");
    assert_eq!(
        import_str(&bad_line, None).unwrap_err().to_string(),
        "line 3: $.role: missing or not a string"
    );
    let bad_document =
        r#"{"session":{"id":"s","timestamp":"t"},"items":[{"type":"message","content":"x"}]}"#;
    assert_eq!(
        import_str(bad_document, None).unwrap_err().to_string(),
        "items[0].role: missing or not a string"
    );
    // a first line like a header, followed by what no rollout holds, is not taken for one
    let other = [lines[0], r#"{"role":"user","content":"hi"}"#].join("\n");
    assert_ne!(crate::detect(&other), Some(SourceFormat::Codex));
}

#[test]
fn codex_rollouts_split_at_compaction_and_count_each_usage_once() {
    let lines = [
        r#"{"type":"session_meta","payload":{"id":"x","base_instructions":{"text":"You are Codex."}}}"#,
        r#"{"type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}}"#,
        r#"{"type":"event_msg","payload":{"type":"user_message","message":"list files"}}"#,
        r#"{"type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"e"}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#,
        r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a.rs\nb.rs"}}"#,
        r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":120},"last_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":20}}}}"#,
        r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":120},"last_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":20}}}}"#,
        r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#,
        r#"{"type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},{"type":"compaction","encrypted_content":"s"}]}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a.rs and b.rs"}]}}"#,
    ];
    let sessions = import_str(&lines.join("\n"), None).unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].source, SourceFormat::Codex);
    assert_eq!(sessions[0].name, "window 1");
    let first = &sessions[0].conversation;
    assert_eq!(first.format, ctxfit_model::WireFormat::Responses);
    assert_eq!(
        first.system.as_ref().unwrap().joined_text(),
        "You are Codex."
    );
    assert_eq!(first.extra["model"], "gpt-5.5");
    assert_eq!(
        first.messages.len(),
        4,
        "the UI's copy of the prompt is not a message"
    );
    assert_eq!((first.tool_use_count(), first.tool_result_count()), (1, 1));
    assert_eq!(
        sessions[0].usage.len(),
        1,
        "a repeated token_count is one request"
    );
    assert_eq!(sessions[0].usage[0].input_tokens, 100);
    // the next window starts from the replacement history, with the same instructions
    let second = &sessions[1].conversation;
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.system, first.system);
    assert!(sessions[1].usage.is_empty());
}

#[test]
fn gemini_cli_sessions_link_each_call_to_its_logged_result() {
    let text = r#"{"sessionId":"s","projectHash":"p","messages":[
        {"id":"1","type":"user","content":"append hi to a.txt"},
        {"id":"2","type":"gemini","content":"","thoughts":[{"subject":"x","description":"y"}],
         "tokens":{"input":1000,"cached":800,"output":12},
         "toolCalls":[
           {"id":"read-1","name":"read_file","args":{"file_path":"a.txt"},"status":"success",
            "result":[{"functionResponse":{"id":"read-1","name":"read_file","response":{"output":"hello"}}}]},
           {"id":"write-1","name":"write_file","args":{"file_path":"a.txt","content":"hello hi"},"status":"error",
            "result":[{"functionResponse":{"id":"write-1","name":"write_file","response":{"error":"denied"}}}]}]},
        {"id":"3","type":"info","content":"update available"},
        {"id":"4","type":"gemini","content":"Done."}]}"#;
    let sessions = import_str(text, None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::GeminiCli);
    let conv = &sessions[0].conversation;
    assert_eq!(
        conv.messages.len(),
        4,
        "user, calls, their results, answer; the note skipped"
    );
    let results: Vec<_> = conv.messages[2].tool_results().collect();
    assert_eq!(results[0].tool_use_id, "read-1");
    assert_eq!(results[0].content.joined_text(), "hello");
    assert_eq!(results[1].content.joined_text(), "denied");
    assert_eq!(results[1].is_error, Some(true));
    assert_eq!(sessions[0].usage[0].cached_input_tokens, 800);
}

#[test]
fn copilot_cli_logs_keep_what_was_sent() {
    let lines = [
        r#"{"type":"session.start","data":{"sessionId":"s","producer":"copilot-agent"}}"#,
        r#"{"type":"system.message","data":{"role":"system","content":"You are Copilot."}}"#,
        r#"{"type":"user.message","data":{"content":"fix it","transformedContent":"<date/>\nfix it"}}"#,
        r#"{"type":"hook.start","data":{"hookType":"userPromptSubmitted"}}"#,
        r#"{"type":"assistant.message","data":{"content":"Looking.","toolRequests":[{"toolCallId":"t1","name":"bash","arguments":{"command":"ls"}},{"toolCallId":"t2","name":"view","arguments":{"path":"a.rs"}}]}}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"t1","success":true,"result":{"content":"a.rs"}}}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"t2","success":false,"error":{"message":"no such file"}}}"#,
        r#"{"type":"assistant.message","data":{"content":"Fixed.","toolRequests":[]}}"#,
    ];
    let sessions = import_str(&lines.join("\n"), None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::CopilotCli);
    let conv = &sessions[0].conversation;
    assert_eq!(
        conv.system.as_ref().unwrap().joined_text(),
        "You are Copilot."
    );
    assert_eq!(conv.messages.len(), 4);
    assert_eq!(conv.messages[0].content.joined_text(), "<date/>\nfix it");
    let results: Vec<_> = conv.messages[2].tool_results().collect();
    assert_eq!(
        results.len(),
        2,
        "one user message holds the results of one response"
    );
    assert_eq!(results[1].content.joined_text(), "no such file");
    assert_eq!(results[1].is_error, Some(true));
}

#[test]
fn tau2_bench_results_read_as_the_agent_saw_each_simulation() {
    let results = r#"{"timestamp":"2025-06-10T10:00:00","info":{"num_trials":1,"environment_info":{"domain_name":"telecom","policy":"You are a telecom agent."}},"tasks":[{"id":"7"}],"simulations":[{"id":"sim-1","task_id":"7","trial":0,"termination_reason":"agent_stop","messages":[
        {"role":"assistant","content":"Hi! How can I help you today?","tool_calls":null,"turn_idx":0},
        {"role":"user","content":"My phone has no signal. My number is 555.","tool_calls":null,"turn_idx":1},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","name":"get_customer","arguments":{"phone":"555"},"requestor":"assistant"}],"turn_idx":2},
        {"role":"tool","id":"call_1","content":"{\"customer_id\": \"C9\", \"plan\": \"basic\"}","requestor":"assistant","error":false,"turn_idx":3},
        {"role":"user","content":null,"tool_calls":[{"id":"u_1","name":"toggle_airplane_mode","arguments":{},"requestor":"user"}],"turn_idx":4},
        {"role":"tool","id":"u_1","content":"Airplane mode: off","requestor":"user","turn_idx":5},
        {"role":"assistant","content":"Let me check two things.","tool_calls":[{"id":"call_2","name":"get_line","arguments":{"customer_id":"C9"}},{"id":"call_3","name":"get_bill","arguments":{"customer_id":"C9"}}],"turn_idx":6},
        {"role":"tool","tool_messages":[{"role":"tool","id":"call_2","content":"line active"},{"role":"tool","id":"call_3","content":"bill paid","error":false}]},
        {"role":"assistant","content":"Your line is active and your bill is paid.","turn_idx":8}
    ]}]}"#;
    assert_eq!(crate::detect(results), Some(SourceFormat::TauBench));
    let sessions = import_str(results, None).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].name, "task 7 trial 0");
    let conv = &sessions[0].conversation;
    let roles: Vec<Role> = conv.messages.iter().map(|m| m.role.clone()).collect();
    use Role::{Assistant as A, System as S, Tool as T, User as U};
    // the policy first; the simulated user's own tool call and its result are not the agent's
    assert_eq!(roles, [S, A, U, A, T, A, T, T, A]);
    assert_eq!(
        conv.messages[0].content.joined_text(),
        "You are a telecom agent."
    );
    assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (3, 3));
    assert!(
        ctxfit_model::problems(conv).is_empty(),
        "every result answers its call"
    );
    let call = conv.messages[3].tool_uses().next().unwrap();
    assert_eq!(
        (call.name.as_str(), &call.input),
        ("get_customer", &serde_json::json!({"phone": "555"}))
    );
    assert_eq!(conv.messages[5].tool_uses().count(), 2);

    // a run saved as a folder: each simulation its own file, the metadata beside them holding none
    let one: Value = serde_json::from_str(results).unwrap();
    let simulation = one["simulations"][0].to_string();
    let sessions = import_str(&simulation, None).unwrap();
    assert_eq!(sessions[0].source, SourceFormat::TauBench);
    assert_eq!(
        sessions[0].conversation.messages.len(),
        8,
        "no policy in the file, no system message"
    );
    let metadata = r#"{"info":{"num_trials":1},"tasks":[{"id":"7"}],"simulation_index":[{"id":"sim-1","task_id":"7","trial":0}]}"#;
    assert!(import_str(metadata, None).unwrap().is_empty());

    // what cannot be read is named where it stands
    let broken = results.replace(r#""role":"tool","id":"call_1","#, r#""role":"tool","#);
    assert_eq!(
        import_str(&broken, None).unwrap_err().to_string(),
        "simulations[0].messages[3]: a tool result needs the `id` of its call"
    );
}

#[test]
fn openhands_evaluation_histories_read_whole_events_and_pairs_of_them() {
    // since late 2024: a run's history is the event stream itself, each event with its source and metadata
    let flat = r#"{"instance_id":"django__django-11099","instruction":"Fix the validator.","history":[
        {"id":0,"source":"user","message":"Fix the validator.","action":"message","args":{"content":"Fix the validator.","wait_for_response":false}},
        {"id":1,"source":"agent","message":"Running command: ls","action":"run","tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"toolu_01","model_response":{"id":"r1","choices":[{"message":{"role":"assistant","content":"Let me look around.","tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"execute_bash","arguments":"{\"command\": \"ls\"}"}}]}}]}},"args":{"command":"ls","thought":"Let me look around."}},
        {"id":2,"source":"agent","cause":1,"observation":"run","tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"toolu_01"},"content":"a.py\nb.py","extras":{"command":"ls"}}
    ]}"#;
    // OpenDevin of 2024: [action, observation] pairs; an observation answers its action, with or without `cause`
    let pairs = r#"{"instance_id":"django__django-11099","instruction":"Fix the validator.","history":[
        [{"id":0,"source":"user","message":"Fix the validator.","action":"message","args":{"content":"Fix the validator."}},{"message":"No observation","observation":"null","content":"","extras":{}}],
        [{"source":"agent","message":"Running command: ls","action":"run","args":{"command":"ls","thought":"Let me look around."}},{"source":"agent","observation":"run","content":"a.py\nb.py","extras":{"exit_code":0}}],
        [{"source":"agent","message":"Running command: cat a.py","action":"run","args":{"command":"cat a.py","thought":""}},{"source":"agent","observation":"run","content":"import re","extras":{"exit_code":0}}]
    ]}"#;
    for (text, calls) in [(flat, 1), (pairs, 2)] {
        assert_eq!(crate::detect(text), Some(SourceFormat::OpenHands));
        let conv = &import_str(text, None).unwrap()[0].conversation;
        assert_eq!(conv.messages[0].role, Role::User);
        assert_eq!(conv.messages[0].content.joined_text(), "Fix the validator.");
        assert_eq!(
            (conv.tool_use_count(), conv.tool_result_count()),
            (calls, calls)
        );
        assert!(
            ctxfit_model::problems(conv).is_empty(),
            "each result answers its own call"
        );
        let call = conv.messages[1].tool_uses().next().unwrap();
        assert_eq!(
            (call.name.as_str(), &call.input["command"]),
            ("execute_bash", &serde_json::json!("ls"))
        );
        assert_eq!(
            conv.messages[1].content.joined_text(),
            "Let me look around."
        );
        assert!(conv.messages[2]
            .tool_results()
            .next()
            .unwrap()
            .content
            .joined_text()
            .contains("b.py"));
    }
}

#[test]
fn claude_code_stream_json_reads_as_lines_or_gathered_in_one_array() {
    // `claude -p --output-format stream-json`, and the same messages kept as one JSON array (the GitHub Action's
    // execution log)
    let lines = [
        r#"{"type":"system","subtype":"init","cwd":"/repo","session_id":"abc","tools":["Bash"],"model":"claude-sonnet-4"}"#,
        r#"{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":4,"cache_creation_input_tokens":1200,"cache_read_input_tokens":13000,"output_tokens":60}},"parent_tool_use_id":null,"session_id":"abc"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"a.py\nb.py"}]},"parent_tool_use_id":null,"session_id":"abc"}"#,
        r#"{"type":"assistant","message":{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"text","text":"Two files."}],"usage":{"input_tokens":4,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"abc"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Two files.","session_id":"abc"}"#,
    ];
    let array = format!("[{}]", lines.join(","));
    let read = |text: &str| {
        assert_eq!(crate::detect(text), Some(SourceFormat::ClaudeCode));
        import_str(text, None).unwrap().remove(0)
    };
    let (jsonl, gathered) = (read(&lines.join("\n")), read(&array));
    for session in [&jsonl, &gathered] {
        let conv = &session.conversation;
        assert_eq!(conv.messages.len(), 3);
        assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (1, 1));
        assert!(ctxfit_model::problems(conv).is_empty());
    }
    assert_eq!(jsonl.conversation.messages, gathered.conversation.messages);
    assert_eq!(jsonl.billed, gathered.billed);
}

#[test]
fn openhands_1_x_event_streams_read_with_a_window_per_condensation() {
    let events = [
        r#"{"kind":"SystemPromptEvent","id":"e0","source":"agent","system_prompt":{"type":"text","text":"You are OpenHands."},"tools":[]}"#,
        r#"{"kind":"MessageEvent","id":"e1","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"Fix the bug"}]},"extended_content":[{"type":"text","text":" in a.py"}]}"#,
        r#"{"kind":"ActionEvent","id":"e2","source":"agent","thought":[{"type":"text","text":"Looking."}],"action":{"kind":"TerminalAction","command":"ls"},"tool_name":"terminal","tool_call_id":"c1","tool_call":{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"ls\"}"}},"llm_response_id":"r1"}"#,
        r#"{"kind":"ActionEvent","id":"e3","source":"agent","thought":[],"action":{"kind":"FileEditorAction","command":"view","path":"a.py"},"tool_name":"file_editor","tool_call_id":"c2","tool_call":{"id":"c2","name":"file_editor","arguments":"{\"command\": \"view\", \"path\": \"a.py\"}","origin":"completion"},"llm_response_id":"r1"}"#,
        r#"{"kind":"ObservationEvent","id":"e4","source":"environment","tool_name":"terminal","tool_call_id":"c1","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"a.py\nb.py"}],"is_error":false},"action_id":"e2"}"#,
        r#"{"kind":"ObservationEvent","id":"e5","source":"environment","tool_name":"file_editor","tool_call_id":"c2","observation":{"kind":"FileEditorObservation","content":"def f(): pass"},"action_id":"e3"}"#,
        r#"{"kind":"ActionEvent","id":"e6","source":"agent","action":{"kind":"TerminalAction","command":"pytest"},"tool_name":"terminal","tool_call_id":"c3","tool_call":{"id":"c3","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"pytest\"}"}},"llm_response_id":"r2"}"#,
        r#"{"kind":"AgentErrorEvent","id":"e7","source":"agent","tool_name":"terminal","tool_call_id":"c3","error":"timed out"}"#,
        r#"{"kind":"Condensation","id":"e8","source":"environment","forgotten_event_ids":["e2","e4"],"summary":"Listed the files.","summary_offset":2}"#,
        r#"{"kind":"ActionEvent","id":"e9","source":"agent","action":{"kind":"TerminalAction","command":"git diff"},"tool_name":"terminal","tool_call_id":"c4","tool_call":{"id":"c4","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"git diff\"}"}},"llm_response_id":"r3"}"#,
        r#"{"kind":"ObservationEvent","id":"e10","source":"environment","tool_name":"terminal","tool_call_id":"c4","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"diff --git a/a.py"}]},"action_id":"e9"}"#,
        r#"{"kind":"MessageEvent","id":"e11","source":"agent","llm_message":{"role":"assistant","content":[{"type":"text","text":"Done."}]}}"#,
    ];
    let list = format!("[{}]", events.join(","));
    let run =
        format!(r#"{{"instance_id":"django__django-1","instruction":"Fix it.","history":{list}}}"#);
    for (text, name) in [
        (list.clone(), "window"),
        (events.join("\n"), "window"),
        (run, "django__django-1 window"),
    ] {
        assert_eq!(crate::detect(&text), Some(SourceFormat::OpenHands));
        let sessions = import_str(&text, None).unwrap();
        assert_eq!(sessions.len(), 2, "a condensation ends a window");
        assert_eq!(sessions[0].name, format!("{name} 1"));
        let (first, second) = (&sessions[0].conversation, &sessions[1].conversation);
        assert_eq!(first.messages.len(), 7);
        assert_eq!(first.messages[0].role, Role::System);
        assert_eq!(
            first.messages[1].content.joined_text(),
            "Fix the bug in a.py"
        );
        // the two calls of one model response are one assistant message, with its words
        let calls: Vec<_> = first.messages[2]
            .tool_uses()
            .map(|u| u.name.as_str())
            .collect();
        assert_eq!(calls, ["terminal", "file_editor"]);
        assert_eq!(first.messages[2].content.joined_text(), "Looking.");
        assert_eq!(
            first.messages[2].tool_uses().nth(1).unwrap().input["path"],
            "a.py"
        );
        let error = first.messages[6].tool_results().next().unwrap();
        assert_eq!(
            (error.is_error, error.content.joined_text().as_str()),
            (Some(true), "timed out")
        );
        for conv in [first, second] {
            assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (3, 3));
            assert!(
                ctxfit_model::problems(conv).is_empty(),
                "a call and its result leave together"
            );
        }
        // the forgotten call and its result are gone, the summary stands at its offset
        assert_eq!(second.messages.len(), 10);
        assert_eq!(
            second.messages[2].content.joined_text(),
            "Listed the files."
        );
        assert!(second
            .messages
            .iter()
            .all(|m| m.tool_uses().all(|u| u.id != "c1")));
        assert_eq!(second.messages[9].content.joined_text(), "Done.");
    }
}

#[test]
fn an_input_of_tiny_values_is_refused_before_it_is_read() {
    // structure is counted outside strings only, past escaped quotes
    assert_eq!(
        count_values(r#"{"a":"[,:{\"}\\","b":[1,2]}"#, usize::MAX),
        (6, 2)
    );
    assert_eq!(count_values("0\n0\n0\n", usize::MAX), (3, 0));
    // a text that ends inside a string, or right after its backslash
    for cut in ["\"", "\"abc", "\"\\", "[\"a\\\"", "{\"a\":\"\\"] {
        assert!(count_values(cut, usize::MAX).0 <= 2, "{cut}");
        assert!(import_str(cut, None).is_err(), "{cut}");
    }
    // 2,000,000 empty objects (6 MB) would take about 160 MB to read: past a million and one per 8 bytes
    let lines = "{}\n".repeat(2_000_000);
    match import_str(&lines, None) {
        Err(e @ ImportError::TooManyValues { .. }) => {
            assert!(e.is_bad_input());
            assert!(
                e.to_string()
                    .contains("about 4000000 JSON values in 6000000 bytes"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    let array = format!("[{}0]", "0,".repeat(2_000_000));
    assert!(matches!(
        import_str(&array, None),
        Err(ImportError::TooManyValues { .. })
    ));
    // a million values are taken whatever the size, and a real session is far under its limit
    let small = format!("[{}0]", "0,".repeat(900_000));
    assert!(!matches!(
        import_str(&small, None),
        Err(ImportError::TooManyValues { .. })
    ));
}

#[test]
fn a_key_written_twice_in_one_object_is_a_problem_named_where_it_is() {
    let call = r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]}"#;
    let result = r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}"#;
    let doc = |first: &str| format!("{{\"messages\": [\n{first},\n{call},\n{result}]}}");
    let clean = import_str(&doc(r#"{"role": "user", "content": "hi"}"#), None).unwrap();
    assert!(clean[0].problems.is_empty(), "{:?}", clean[0].problems);
    // the last value read, as Python's json and JavaScript's JSON.parse read it; the earlier one named as lost
    let twice = import_str(
        &doc(r#"{"role": "user", "content": "hi", "content": "again"}"#),
        None,
    )
    .unwrap();
    assert_eq!(
        twice[0].conversation.messages[0].content.joined_text(),
        "again"
    );
    assert_eq!(
        twice[0].problems,
        ["line 2, column 35: the key \"content\" is written twice in one object; read with its last value, \
          the earlier one left out"]
    );
    // in JSON Lines (a Claude Code log) likewise, the line counted in the file
    let l1 = line("user", "1", "hi");
    let l2 = line("assistant", "2", "hello").replacen(
        r#""sessionId":"s","#,
        r#""sessionId":"s","sessionId":"s","#,
        1,
    );
    let sessions = import_str(&format!("{l1}\n{l2}\n"), None).unwrap();
    assert_eq!(sessions[0].conversation.messages.len(), 2);
    assert!(
        sessions[0].problems[0].starts_with("line 2, column 37: the key \"sessionId\""),
        "{:?}",
        sessions[0].problems
    );
}

#[test]
fn a_list_of_conversation_documents_is_one_session_each() {
    // what `ctxfit compact` and `ctxfit convert` write for a file of several sessions
    let list = r#"[
      {"system": "s", "messages": [{"role": "user", "content": "one"}]},
      {"messages": [{"role": "user", "content": "two"}, {"role": "assistant", "content": "2"}]}
    ]"#;
    assert_eq!(detect(list), Some(SourceFormat::Anthropic));
    let sessions = import_str(list, None).unwrap();
    let names: Vec<&str> = sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["document 1", "document 2"]);
    assert_eq!(sessions[1].conversation.messages.len(), 2);
    assert!(sessions.iter().all(|s| s.source == SourceFormat::Anthropic));
    // Responses documents, detected and forced alike
    let responses = r#"[{"input": [{"type": "message", "role": "user", "content": "a"}]},
                        {"input": "b"}]"#;
    for format in [None, Some(SourceFormat::Responses)] {
        let sessions = import_str(responses, format).unwrap();
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions[0].source, SourceFormat::Responses);
    }
    // a document that does not read is named by its place in the list
    let bad = r#"[{"messages": []}, {"messages": [{"role": 5, "content": "x"}]}]"#;
    let err = import_str(bad, None).unwrap_err().to_string();
    assert!(err.starts_with("$[1]") && err.contains("role"), "{err}");
    // lists of messages (OpenAI Chat without an envelope, as tau-bench and SWE-agent sessions are written)
    let lists = r#"[[{"role": "user", "content": "a"}], [], [{"role": "system", "content": "s"},
                    {"role": "user", "content": "b"}]]"#;
    assert_eq!(detect(lists), Some(SourceFormat::OpenAi));
    let sessions = import_str(lists, None).unwrap();
    let sizes: Vec<usize> = sessions
        .iter()
        .map(|s| s.conversation.messages.len())
        .collect();
    assert_eq!(sizes, [1, 0, 2]);
    assert_eq!(detect("[[], []]"), None);
    // lists of Responses items, whose calls and outputs have no role
    let items = r#"[[{"role": "user", "content": "a"},
                     {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                     {"type": "function_call_output", "call_id": "c", "output": "o"}]]"#;
    assert_eq!(detect(items), Some(SourceFormat::Responses));
    assert_eq!(
        import_str(items, None).unwrap()[0]
            .conversation
            .messages
            .len(),
        3
    );
    // a bare list of messages is still one conversation
    let bare = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]"#;
    assert_eq!(import_str(bare, None).unwrap().len(), 1);
    // and a list of something else is not taken for documents
    assert_eq!(detect(r#"[{"other": 1}]"#), None);
    assert_eq!(detect(r#"[{"messages": []}, {"other": 1}]"#), None);
}

#[test]
fn messages_written_one_a_line_are_a_conversation_in_their_own_format() {
    // an agent that appends each message it sends to a log: JSON Lines of bare messages, in any of the formats
    let anthropic = concat!(
        r#"{"role":"user","content":"go"}"#,
        "\n",
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}"#,
        "\n\n",
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}"#,
        "\n"
    );
    let openai = concat!(
        r#"{"role":"system","content":"be brief"}"#,
        "\n",
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
        "\n",
        r#"{"role":"tool","tool_call_id":"c1","content":"a"}"#,
        "\n"
    );
    let responses = concat!(
        r#"{"role":"user","content":"go"}"#,
        "\n",
        r#"{"type":"function_call","call_id":"c1","name":"ls","arguments":"{}"}"#,
        "\n",
        r#"{"type":"function_call_output","call_id":"c1","output":"a"}"#,
        "\n"
    );
    for (text, format) in [
        (anthropic, SourceFormat::Anthropic),
        (openai, SourceFormat::OpenAi),
        (responses, SourceFormat::Responses),
    ] {
        let sessions = import_str(text, None).unwrap();
        assert_eq!(sessions.len(), 1);
        let s = &sessions[0];
        assert_eq!(s.source, format, "{text}");
        assert_eq!(s.conversation.messages.len(), 3, "{text}");
        assert_eq!(s.conversation.envelope, ctxfit_model::Envelope::Lines);
        assert_eq!(
            ctxfit_model::ToolCallIndex::build(&s.conversation).len(),
            1,
            "the call and its result are paired across lines: {text}"
        );
        // forcing the format reads it the same
        assert_eq!(
            import_str(text, Some(format)).unwrap()[0].conversation,
            s.conversation
        );
    }
    // written back a message a line, as read (blank lines aside)
    let conv = &import_str(anthropic, None).unwrap()[0].conversation;
    let written = ctxfit_model::Envelope::Lines
        .write_lines(&ctxfit_model::anthropic::to_value(conv))
        .unwrap();
    assert_eq!(written, anthropic.replace("\n\n", "\n"));

    // a log of one message so far is one such too, written back as it is
    let one = "{\"role\":\"user\",\"content\":\"go\"}\n";
    let s = &import_str(one, None).unwrap()[0];
    assert_eq!(
        (
            s.source,
            s.conversation.messages.len(),
            s.conversation.envelope
        ),
        (SourceFormat::Anthropic, 1, ctxfit_model::Envelope::Lines)
    );
    let written = ctxfit_model::Envelope::Lines
        .write_lines(&ctxfit_model::anthropic::to_value(&s.conversation));
    assert_eq!(written.as_deref(), Some(one));
    let tool = "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"a\"}";
    assert_eq!(
        import_str(tool, None).unwrap()[0].source,
        SourceFormat::OpenAi
    );
    // what does not read is named by its line (the blank one counted)
    let bad = format!("{anthropic}{}\n", r#"{"role":"user","content":{"a":1}}"#);
    let err = import_str(&bad, None).unwrap_err().to_string();
    assert!(
        err.starts_with("line 5: content: expected a string, a list of blocks or null"),
        "{err}"
    );
    // lines that are not all messages, or are requests, are not taken for a conversation
    for other in [
        "{\"role\":\"user\",\"content\":\"a\"}\n{\"event\":\"x\"}\n",
        "{\"type\":\"click\",\"x\":1}\n{\"type\":\"key\"}\n",
    ] {
        assert!(
            matches!(import_str(other, None), Err(ImportError::Unrecognised)),
            "{other}"
        );
    }
    // requests one a line, or two documents one after the other: named by where the second begins
    for two in [
        "{\"role\":\"user\",\"messages\":[]}\n{\"role\":\"user\",\"messages\":[]}\n",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n\n{\"x\":1}",
    ] {
        let err = import_str(two, None).unwrap_err().to_string();
        assert!(
            err.contains("another JSON document after the whole anthropic conversation of line 1")
                && err.contains("line "),
            "{two}: {err}"
        );
    }
}
