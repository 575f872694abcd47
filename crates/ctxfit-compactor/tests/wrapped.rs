//! Output a tool wraps in JSON (`{"output": "…", "metadata": {…}}`, Codex CLI's shell results of 2025): the
//! rules cut the output inside the wrapper exactly as they cut the same output sent bare, the wrapper's other
//! fields stay, and a second pass changes nothing.

mod common;

use common::{build_log, compactor, result_texts, session, EAGER};
use ctxfit_compactor::INGESTION_MARKER;
use ctxfit_model::{Conversation, Value};
use ctxfit_retention::WrappedOutput;
use serde_json::json;

/// A Codex CLI request of 2025: each (argument vector, output, exit code) a `shell` call and its wrapped output,
/// answered by a short message.
fn codex_2025(calls: &[(&[&str], String, i64)]) -> Conversation {
    let mut input = vec![json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "fix the build"}]})];
    for (i, (argv, output, code)) in calls.iter().enumerate() {
        let id = format!("call_{i}");
        let arguments = json!({"command": argv, "workdir": "/work"}).to_string();
        let wrapped =
            json!({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.5}})
                .to_string();
        input.push(json!({"type": "function_call", "name": "shell", "arguments": arguments, "call_id": id}));
        input.push(json!({"type": "function_call_output", "call_id": id, "output": wrapped}));
        input.push(json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Looking."}]}));
    }
    ctxfit_model::from_value(json!({"model": "gpt-5", "input": input})).unwrap()
}

fn search_hits() -> String {
    (0..120)
        .map(|i| {
            format!(
                "src/module_{i}.rs:{}:fn handle_request_{i}(req: Request) -> Response {{",
                i + 10
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_wrapped_output_is_cut_inside_its_wrapper_as_it_would_be_bare() {
    let (log, hits) = (build_log(), search_hits());
    let conv = codex_2025(&[
        (&["bash", "-lc", "cargo build"], log.clone(), 101),
        (&["rg", "-n", "fn handle_request"], hits.clone(), 0),
        (&["bash", "-lc", "git status"], "clean".into(), 0),
    ]);
    let got = result_texts(&mut compactor(EAGER, "eager"), &conv);
    // the same outputs, bare, from a Claude Code `Bash`
    let bare = result_texts(
        &mut compactor(EAGER, "eager"),
        &session(&[
            ("Bash", json!({"command": "cargo build"}), log.clone()),
            (
                "Bash",
                json!({"command": "rg -n 'fn handle_request'"}),
                hits.clone(),
            ),
            ("Bash", json!({"command": "git status"}), "clean".into()),
        ]),
    );
    assert!(bare[0].contains("lines omitted") && bare[1].contains("lines omitted"));
    for (i, code) in [(0, 101), (1, 0)] {
        let wrapper = WrappedOutput::parse(&got[i]).expect("still the tool's JSON object");
        assert_eq!(wrapper.output(), bare[i], "result {i}");
        let fields: Value = serde_json::from_str(&got[i]).unwrap();
        assert_eq!(
            fields["metadata"],
            json!({"exit_code": code, "duration_seconds": 0.5})
        );
    }
    assert!(got[0].contains("error[E0308]"));
    assert!(got[0].ends_with(r#"re-run the command for its full output]","metadata":{"exit_code":101,"duration_seconds":0.5}}"#));
    // the newest result is not stale
    assert_eq!(
        got[2],
        r#"{"output":"clean","metadata":{"exit_code":0,"duration_seconds":0.5}}"#
    );
}

#[test]
fn a_second_pass_over_wrapped_cuts_changes_nothing() {
    let retrieving = "[profiles.retrieving]\nextends = \"smart\"\ncache_write_premium = 0\n\
                      retrieval_tool = \"ctxfit_retrieve\"\n";
    for (policy, profile) in [(EAGER, "eager"), (retrieving, "retrieving")] {
        let conv = codex_2025(&[
            (&["bash", "-lc", "cargo build"], build_log(), 101),
            (&["bash", "-lc", "git status"], "clean".into(), 0),
        ]);
        let mut first = compactor(policy, profile);
        first.compact_history(&conv, None);
        let once = first.project(&conv);
        assert_ne!(once, conv, "{profile}: the log is cut");
        let text = once.messages[2]
            .tool_results()
            .next()
            .unwrap()
            .content
            .joined_text();
        let output = WrappedOutput::parse(&text)
            .expect("a wrapper")
            .output()
            .to_owned();
        if profile == "retrieving" {
            assert!(output
                .ends_with(r#"[the full result: call ctxfit_retrieve with {"handle":"call_0"}]"#));
        }
        let mut second = compactor(policy, profile);
        let report = second.compact_history(&once, None);
        assert!(
            report.new_blocks.is_empty(),
            "{profile}: {:?}",
            report.new_blocks
        );
        assert_eq!(second.project(&once), once, "{profile}");
    }
}

#[test]
fn the_ingestion_cap_cuts_inside_the_wrapper() {
    let capped = "[profiles.capped]\nextends = \"smart\"\nmax_tool_result_chars = 500\n";
    let conv = codex_2025(&[(&["bash", "-lc", "cargo build"], build_log(), 101)]);
    let got = result_texts(&mut compactor(capped, "capped"), &conv);
    let wrapper = WrappedOutput::parse(&got[0]).expect("still the tool's JSON object");
    assert!(wrapper.output().ends_with(INGESTION_MARKER));
    assert!(wrapper.output().starts_with("   Compiling crate-0"));
    assert!(wrapper.output().chars().count() <= 500 + INGESTION_MARKER.chars().count());
    // capped once is final: a second pass over the capped history leaves it
    let mut first = compactor(capped, "capped");
    first.compact_history(&conv, None);
    let once = first.project(&conv);
    let mut second = compactor(capped, "capped");
    assert!(second.compact_history(&once, None).new_blocks.is_empty());
    assert_eq!(second.project(&once), once);
}

/// `clear_tool_inputs` empties a compacted call's input, but a Responses `local_shell_call` keeps its
/// `action`: the API requires it whole, and an emptied one would make the request invalid.
#[test]
fn a_local_shell_calls_action_is_never_cleared() {
    let (log, action) = (
        build_log(),
        json!({"type": "exec", "command": ["bash", "-lc", "cargo build"]}),
    );
    let output = |id: &str| json!({"type": "local_shell_call_output", "id": id, "output": log});
    let answer = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Next."}]});
    let conv = ctxfit_model::from_value(json!({"model": "gpt-5", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "build it"}]},
        {"type": "local_shell_call", "call_id": "ls_0", "status": "completed", "action": action},
        output("ls_0"),
        answer,
        {"type": "function_call", "name": "shell", "call_id": "fc_1",
         "arguments": json!({"command": ["bash", "-lc", "cargo build"]}).to_string()},
        {"type": "function_call_output", "call_id": "fc_1", "output": log},
        answer,
        {"type": "local_shell_call", "call_id": "ls_2", "status": "completed", "action": action},
        output("ls_2"),
        answer,
    ]}))
    .unwrap();
    let policy = format!("{EAGER}clear_tool_inputs = true\n");
    let mut c = compactor(&policy, "eager");
    c.compact_history(&conv, None);
    let sent = ctxfit_model::to_value(&c.project(&conv));
    let items = sent["input"].as_array().unwrap();
    // both stale results are cut; the function call's arguments are cleared, the shell call's action stays
    for i in [2, 5] {
        let text = items[i]["output"].as_str().unwrap();
        assert!(text.contains("lines omitted"), "item {i}: {text}");
    }
    assert_eq!(items[1]["action"], action);
    assert_eq!(items[4]["arguments"], "{}");
    assert_eq!(
        items[7],
        conv_item(&conv, 7),
        "the newest call is not stale"
    );
}

fn conv_item(conv: &Conversation, i: usize) -> Value {
    ctxfit_model::responses::write_item(&conv.messages[i])
}

/// A Letta memory edit: the tool answers `{"status", "message", "time"}` as Python's `json.dumps(indent=2)`
/// writes it, the message the whole block — whose lines the system prompt shows too.
#[test]
fn a_status_and_message_envelope_is_cut_inside_and_keeps_its_shape() {
    let block: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "- task {i}: review pull request #{} and answer its author",
                200 + i
            )
        })
        .collect();
    let mut edited = block.clone();
    edited[7] = "- task 7: merged, release notes written".to_owned();
    let echo = |lines: &[String]| {
        format!(
            "{{\n  \"status\": \"OK\",\n  \"message\": {},\n  \"time\": \"2026-02-11 08:08:35 PM UTC+0000\"\n}}",
            Value::String(lines.join("\n"))
        )
    };
    let original = echo(&edited);
    let conv: Conversation = ctxfit_model::from_value(json!({"model": "gpt-5", "messages": [
        {"role": "system", "content": format!("<memory_blocks>\n{}\n</memory_blocks>", block.join("\n"))},
        {"role": "user", "content": "task 7 is merged"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
            "function": {"name": "memory_replace", "arguments": "{\"label\":\"todo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": original},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "thanks"}
    ]}))
    .unwrap();
    let got = result_texts(&mut compactor(EAGER, "eager"), &conv);
    let wrapper = WrappedOutput::parse(&got[0]).expect("still the tool's JSON object");
    // the changed line stays, the 29 the system prompt shows become markers, the way back is named
    assert!(wrapper
        .output()
        .contains("- task 7: merged, release notes written"));
    assert!(wrapper
        .output()
        .contains("lines shown elsewhere in this conversation]"));
    assert!(wrapper
        .output()
        .ends_with("[excerpt of a stale result — call memory_replace again for the full result]"));
    assert!(got[0].len() * 3 < original.len(), "{}", got[0]);
    // the same object, indented as it came, its other fields as they were
    assert!(got[0].starts_with("{\n  \"status\": \"OK\",\n  \"message\": \""));
    assert!(got[0].ends_with("\",\n  \"time\": \"2026-02-11 08:08:35 PM UTC+0000\"\n}"));
}

/// The Responses API's `shell` tool (hosted, or the OpenAI Agents SDK's `ShellTool`): a stale
/// `shell_call_output` is cut as the same log from a `Bash` call is, and written back in its own shape — one
/// chunk of `stdout`, the last command's outcome — with its call's action whole; an `apply_patch_call` is an edit,
/// kept with its output.
#[test]
fn a_shell_call_output_is_cut_as_a_log_and_keeps_its_shape() {
    let log = build_log();
    let answer = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Next."}]});
    let action = json!({"commands": ["cargo build"], "timeout_ms": 60000});
    let exit = json!({"type": "exit", "exit_code": 101});
    let patch = json!({"type": "apply_patch_call", "call_id": "ap_1", "status": "completed",
        "operation": {"type": "update_file", "path": "src/parse.rs", "diff": "@@\n-let a: u8 = x;\n+let a: u32 = x;\n"}});
    let patched = json!({"type": "apply_patch_call_output", "call_id": "ap_1", "status": "completed", "output": "Updated src/parse.rs"});
    let conv = ctxfit_model::from_value(json!({"model": "gpt-5.1", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "build it"}]},
        {"type": "shell_call", "call_id": "sh_0", "status": "completed", "action": action},
        {"type": "shell_call_output", "call_id": "sh_0", "output": [
            {"stdout": "", "stderr": log, "outcome": exit}]},
        answer,
        patch,
        patched,
        answer,
        {"type": "shell_call", "call_id": "sh_2", "status": "completed", "action": {"commands": ["git status"]}},
        {"type": "shell_call_output", "call_id": "sh_2", "output": [
            {"stdout": "clean\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        answer,
    ]}))
    .unwrap();
    let mut c = compactor(EAGER, "eager");
    c.compact_history(&conv, None);
    let sent = ctxfit_model::to_value(&c.project(&conv));
    let items = sent["input"].as_array().unwrap();
    let bare = result_texts(
        &mut compactor(EAGER, "eager"),
        &session(&[
            ("Bash", json!({"command": "cargo build"}), log.clone()),
            ("Bash", json!({"command": "git status"}), "clean\n".into()),
        ]),
    );
    let chunks = items[2]["output"].as_array().unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0]["stdout"], bare[0].as_str());
    assert!(bare[0].contains("lines omitted") && bare[0].contains("error[E0308]"));
    assert_eq!(
        (&chunks[0]["stderr"], &chunks[0]["outcome"]),
        (&json!(""), &exit)
    );
    assert_eq!(items[1]["action"], action);
    assert_eq!(
        (&items[4], &items[5]),
        (&patch, &patched),
        "an edit is never cut"
    );
    assert_eq!(
        items[8],
        conv_item(&conv, 8),
        "the newest result is not stale"
    );
    // a second pass over what was sent changes nothing
    let again = ctxfit_model::from_value(sent.clone()).unwrap();
    let mut second = compactor(EAGER, "eager");
    second.compact_history(&again, None);
    assert_eq!(ctxfit_model::to_value(&second.project(&again)), sent);
}

mod shell_outputs {
    use super::*;
    use proptest::prelude::*;

    /// A chunk's stream: empty, a line, or a long log (cut when stale).
    fn stream() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-zé😀 ]{0,20}\n?",
            (0..300usize).prop_map(|n| format!(
                "{}\n",
                build_log().lines().take(n).collect::<Vec<_>>().join("\n")
            )),
        ]
    }

    fn chunk() -> impl Strategy<Value = Value> {
        (stream(), stream(), prop::option::of(0..3i64)).prop_map(|(stdout, stderr, code)| {
            let outcome = match code {
                Some(c) => json!({"type": "exit", "exit_code": c}),
                None => json!({"type": "timeout"}),
            };
            json!({"stdout": stdout, "stderr": stderr, "outcome": outcome})
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever its chunks hold, a `shell_call_output` reads back as it was written, and once compacted it is
        /// still what the API takes: chunks of string `stdout` and `stderr`, each with an outcome of the original's
        /// — and a second pass changes nothing.
        #[test]
        fn shell_outputs_keep_their_shape(calls in prop::collection::vec(prop::collection::vec(chunk(), 0..4), 1..6)) {
            let mut input = vec![json!({"role": "user", "content": "go"})];
            for (i, chunks) in calls.iter().enumerate() {
                input.push(json!({"type": "shell_call", "call_id": format!("c{i}"), "status": "completed",
                    "action": {"commands": ["make"]}}));
                input.push(json!({"type": "shell_call_output", "call_id": format!("c{i}"), "output": chunks}));
                input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Next."}]}));
            }
            let doc = json!({"model": "gpt-5.1", "input": input});
            let conv = ctxfit_model::from_value(doc.clone()).unwrap();
            prop_assert_eq!(&ctxfit_model::to_value(&conv), &doc);
            let mut c = compactor(EAGER, "eager");
            c.compact_history(&conv, None);
            let sent = ctxfit_model::to_value(&c.project(&conv));
            for (i, chunks) in calls.iter().enumerate() {
                let out = &sent["input"][2 + 3 * i]["output"];
                let out = out.as_array().unwrap();
                prop_assert!(!out.is_empty() || chunks.is_empty());
                for chunk in out {
                    prop_assert!(chunk["stdout"].is_string() && chunk["stderr"].is_string(), "{}", chunk);
                    prop_assert!(chunks.iter().any(|c| c["outcome"] == chunk["outcome"]), "{}", chunk);
                }
            }
            let again = ctxfit_model::from_value(sent.clone()).unwrap();
            let mut second = compactor(EAGER, "eager");
            second.compact_history(&again, None);
            prop_assert_eq!(ctxfit_model::to_value(&second.project(&again)), sent);
        }
    }
}
