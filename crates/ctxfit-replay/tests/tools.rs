//! Where a replay's tokens go: each tool's results as the requests sent them, and what a policy saved of them.

use ctxfit_replay::{replay, Policy, PriceModel, SessionReplay, ToolTokens};
use ctxfit_tokens::{FastEstimator, TokenEstimator};
use serde_json::json;

fn fast() -> Box<dyn TokenEstimator> {
    Box::new(FastEstimator)
}

/// A file read, a test run whose long log `smart` cuts to its outcome, two searches, and an answer after each.
fn session() -> ctxfit_model::Conversation {
    let read = (1..=60)
        .map(|i| format!("fn step_{i}(x: u32) -> u32 {{ x + {i} }}"))
        .collect::<Vec<_>>()
        .join("\n");
    let log = (1..=1000)
        .map(|i| format!("test tests::case_{i} ... ok"))
        .chain(["test result: FAILED. 999 passed; 1 failed".to_owned()])
        .collect::<Vec<_>>()
        .join("\n");
    let calls = [
        ("Read", json!({"file_path": "src/lib.rs"}), read),
        (
            "Bash",
            json!({"command": "cd /repo && cargo test 2>&1"}),
            log,
        ),
        (
            "Bash",
            json!({"command": "grep -rn step_7 src"}),
            "src/lib.rs:7:fn step_7".to_owned(),
        ),
        (
            "Bash",
            json!({"command": "grep -rn step_9 src"}),
            "src/lib.rs:9:fn step_9".to_owned(),
        ),
    ];
    let mut messages = vec![json!({"role": "user", "content": "fix the failing test"})];
    for (i, (name, input, result)) in calls.into_iter().enumerate() {
        let id = format!("toolu_{i:02}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {i}.")},
            {"type": "tool_use", "id": id, "name": name, "input": input}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result}]}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap()
}

fn run(conv: &ctxfit_model::Conversation, policy: Policy) -> SessionReplay {
    let registry = ctxfit_plugins::registry().unwrap();
    replay(
        "s",
        conv,
        &policy,
        &registry,
        &fast,
        PriceModel::Anthropic.prices(),
    )
    .unwrap()
}

fn tool<'a>(r: &'a SessionReplay, name: &str) -> &'a ToolTokens {
    r.tools
        .iter()
        .find(|t| t.tool == name)
        .unwrap_or_else(|| panic!("{name} in {:?}", r.tools))
}

#[test]
fn each_tool_s_results_are_summed_over_the_requests_that_sent_them() {
    let conv = session();
    let none = run(&conv, Policy::None);
    // a shell tool's results per program; the two searches together
    let names: Vec<&str> = none.tools.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(
        names,
        ["Bash: cargo", "Read", "Bash: grep"],
        "costliest first"
    );
    assert_eq!(tool(&none, "Bash: grep").results, 2);
    for t in &none.tools {
        assert_eq!(t.input_tokens, t.uncompacted_tokens, "{t:?}");
    }
    // the read is sent with the four requests after it, the log with three: each time whole
    let est = FastEstimator;
    let result = |mi: usize| {
        ctxfit_tokens::conversation::count_block(&est, &conv.messages[mi].content.blocks[0])
    };
    assert_eq!(tool(&none, "Read").input_tokens, 4 * result(2));
    assert_eq!(tool(&none, "Bash: cargo").input_tokens, 3 * result(4));
    assert_eq!(
        tool(&none, "Bash: grep").input_tokens,
        2 * result(6) + result(8)
    );

    // what `smart` saves is its tools' savings: the rest of the request is sent as it was
    let smart = run(&conv, Policy::named("smart").unwrap());
    let saved = |r: &SessionReplay| {
        r.tools
            .iter()
            .map(|t| t.uncompacted_tokens - t.input_tokens)
            .sum::<usize>()
    };
    assert!(saved(&smart) > 0);
    assert_eq!(none.input_tokens() - smart.input_tokens(), saved(&smart));
    let log = tool(&smart, "Bash: cargo");
    assert_eq!(
        log.uncompacted_tokens,
        tool(&none, "Bash: cargo").uncompacted_tokens
    );
    assert!(log.input_tokens * 2 < log.uncompacted_tokens, "{log:?}");
}

#[test]
fn results_in_messages_a_request_leaves_out_are_not_counted() {
    let conv = session();
    let file = ctxfit_compactor::PolicyFile::parse(
        "default_profile = \"short\"\n[profiles.short]\ntrigger = \"always\"\nmax_conversation_messages = 3\n\
         rules = [{ rule = \"recent\", tools = [\"*\"], params = { keep = 100 } }]\n",
        "short.toml",
    )
    .unwrap();
    let settings = file.resolve(None, None, &|_| None).unwrap();
    let short = run(&conv, Policy::Profile(Box::new(settings)));
    let none = run(&conv, Policy::None);
    // the read leaves the request once three newer messages follow it: sent less often than under `none`
    let read = tool(&short, "Read");
    assert_eq!(
        read.uncompacted_tokens,
        tool(&none, "Read").uncompacted_tokens
    );
    assert!(read.input_tokens < read.uncompacted_tokens, "{read:?}");
    let sent: usize = short.tools.iter().map(|t| t.input_tokens).sum();
    assert!(sent < short.input_tokens());
}

#[test]
fn the_references_a_policy_hid_are_named_with_the_tool_that_showed_them() {
    // the read defines `step_41`; the agent names it after seed 000's pass has cut the read to its first 500
    // characters (a budget of 1 token: every stale result is cut) — and quotes the newest result, uncut
    let mut conv = session();
    let last = conv.messages.len() - 1;
    conv.messages[last] = ctxfit_model::read_message(
        ctxfit_model::WireFormat::Anthropic,
        json!({"role": "assistant", "content": "Done: step_41, src/lib.rs:9:fn, step_41 again."}),
        "messages[9]",
    )
    .unwrap();
    let tight = "[profiles.t]\nextends = \"seed-000\"\nbudget = 1\n";
    let settings = ctxfit_compactor::PolicyFile::parse(tight, "t.toml")
        .unwrap()
        .resolve(Some("t"), None, &|_| None)
        .unwrap();
    let cut = run(&conv, Policy::Profile(Box::new(settings)));
    let turn = cut.turns.last().unwrap();
    assert_eq!(turn.references, 2, "{turn:?}");
    assert_eq!(turn.references_visible, 1, "the newest result is whole");
    assert_eq!(
        turn.hidden,
        [ctxfit_replay::HiddenReference {
            identifier: "step_41".into(),
            tool: "Read".into()
        }],
        "named once, with the tool whose result showed it"
    );
    // under `none` nothing is hidden, and the JSON leaves the empty list out
    let none = run(&conv, Policy::None);
    assert!(none.turns.iter().all(|t| t.hidden.is_empty()));
    let doc = serde_json::to_value(&cut).unwrap();
    let turns = doc["turns"].as_array().unwrap();
    assert!(turns[..turns.len() - 1]
        .iter()
        .all(|t| t.get("hidden").is_none()));
    assert_eq!(
        turns.last().unwrap()["hidden"],
        json!([{"identifier": "step_41", "tool": "Read"}])
    );
}
