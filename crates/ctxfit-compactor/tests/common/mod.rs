//! Helpers shared by the compactor's integration tests.

use ctxfit_compactor::{Compactor, PolicyFile, Report, Settings};
use ctxfit_model::{Conversation, Value};
use serde_json::json;

/// A Claude Code-shaped conversation: each (tool, input, result) is one assistant call and its result, answered
/// by a short assistant message; the last result is the newest.
pub fn session(calls: &[(&str, Value, String)]) -> Conversation {
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    for (i, (tool, input, result)) in calls.iter().enumerate() {
        let id = format!("toolu_{i:02}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": id, "name": tool, "input": input}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result}]}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap()
}

/// `smart` with the payback rule off: every cut made as soon as its result is stale. `tests/excerpt.rs` tests what
/// the rules keep with it (its histories are a few requests long: the payback rule would keep most cuts waiting
/// for requests that never come); `tests/payback.rs` tests when `smart` makes a cut.
#[allow(dead_code)]
pub const EAGER: &str = "[profiles.eager]\nextends = \"smart\"\ncache_write_premium = 0\n";

/// A build log that `excerpt` cuts to its head, tail and error line.
#[allow(dead_code)]
pub fn build_log() -> String {
    let mut lines: Vec<String> = (0..200)
        .map(|i| format!("   Compiling crate-{i} v0.{i}.0 (/work/crates/crate-{i})"))
        .collect();
    lines.insert(
        120,
        "error[E0308]: mismatched types at src/parse.rs:88".into(),
    );
    lines.join("\n")
}

/// The settings of `profile` in the policy file text `policy`.
#[allow(dead_code)]
pub fn settings(policy: &str, profile: &str) -> Settings {
    PolicyFile::parse(policy, "test.toml")
        .unwrap()
        .resolve(Some(profile), None, &|_| None)
        .unwrap()
}

/// A compactor of `profile` in the policy file text `policy`, with every built-in rule and the fast estimator.
#[allow(dead_code)]
pub fn compactor(policy: &str, profile: &str) -> Compactor {
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(
        settings(policy, profile),
        &registry,
        Box::new(ctxfit_tokens::FastEstimator),
    )
    .unwrap()
}

/// The text of every result of `conv` once `c` has compacted it in one shot.
#[allow(dead_code)]
pub fn result_texts(c: &mut Compactor, conv: &Conversation) -> Vec<String> {
    c.compact_history(conv, None);
    c.project(conv)
        .messages
        .iter()
        .flat_map(|m| m.tool_results().map(|r| r.content.joined_text()))
        .collect()
}

#[allow(dead_code)]
/// `smart` with the `excerpt` rule at its own defaults (`smart` keeps more of logs and listings), every cut
/// made at once.
pub const EXCERPT: &str = "[profiles.excerpt]\nextends = \"smart\"\ncache_write_premium = 0\n\
    [[profiles.excerpt.rules]]\nrule = \"edit-file\"\ntools = [\"edit_file\"]\n\
    [[profiles.excerpt.rules]]\nrule = \"excerpt\"\n";

/// The text of every result after one-shot compaction by the `excerpt` rule at its defaults.
#[allow(dead_code)]
pub fn excerpted(conv: &Conversation) -> Vec<String> {
    under(
        conv,
        &PolicyFile::parse(EXCERPT, "excerpt.toml").unwrap(),
        "excerpt",
    )
}

/// The text of every result after one-shot compaction under `profile` of `policy`.
#[allow(dead_code)]
pub fn under(conv: &Conversation, policy: &PolicyFile, profile: &str) -> Vec<String> {
    let settings = policy.resolve(Some(profile), None, &|_| None).unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    result_texts(&mut c, conv)
}

/// A shell command's output, made stale by one more command after it.
#[allow(dead_code)]
pub fn stale_shell(command: &str, output: &[String]) -> Conversation {
    session(&[
        ("Bash", json!({ "command": command }), output.join("\n")),
        ("Bash", json!({"command": "git status"}), "clean".into()),
    ])
}

/// The reports of a live agent's requests (one before each assistant message), request `k` sent at `sent_at(k)`
/// (its index from 0; milliseconds since the Unix epoch), and the compactor after them.
#[allow(dead_code)]
pub fn live_at(
    conv: &Conversation,
    settings: Settings,
    sent_at: impl Fn(usize) -> Option<u64>,
) -> (Vec<Report>, Compactor) {
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let mut request = Conversation {
        messages: Vec::new(),
        ..conv.clone()
    };
    let mut previous = None;
    let mut reports = Vec::new();
    for (mi, msg) in conv.messages.iter().enumerate() {
        if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
            let report = c.compact_at(&request, previous, sent_at(reports.len()));
            previous = Some(report.tokens_after);
            reports.push(report);
        }
        request.messages.push(msg.clone());
    }
    (reports, c)
}

/// The text of the result in message `m` as the compactor sends it.
#[allow(dead_code)]
pub fn sent_text(c: &Compactor, conv: &Conversation, m: usize) -> String {
    c.project(conv).messages[m]
        .tool_results()
        .next()
        .unwrap()
        .content
        .joined_text()
}
