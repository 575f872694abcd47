//! How often the compactor asks a history-dependent rule: once per result and per change the rule said could
//! matter — never once per result per request, which made long replays quadratic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_model::{Content, Conversation};
use ctxfit_retention::{Decision, RetentionRule, RuleContext};
use serde_json::json;

/// A conversation of `n` tool calls, each answered.
fn history(n: usize) -> Conversation {
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for i in 0..n {
        let id = format!("t{i}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "ls", "input": {"path": format!("dir{i}")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": format!("file{i}.rs")}]}));
    }
    messages.push(json!({"role": "assistant", "content": "done"}));
    ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap()
}

/// Keeps the `keep` newest results; older ones get a stand-in of `stand_in` characters.
struct Window {
    keep: usize,
    stand_in: usize,
    asked: Arc<AtomicUsize>,
}

impl RetentionRule for Window {
    fn name(&self) -> &'static str {
        "window"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        self.asked.fetch_add(1, Ordering::Relaxed);
        if ctx.newer_results < self.keep {
            Decision::Keep
        } else {
            Decision::Replace(Content::text("x".repeat(self.stand_in)))
        }
    }

    fn depends_on_history(&self) -> bool {
        true
    }

    fn reconsider_after(&self, ctx: &RuleContext<'_>) -> usize {
        self.keep - ctx.newer_results
    }
}

/// Decisions asked of the rule over a live replay of `n` results.
fn asked(n: usize, keep: usize, stand_in: usize) -> usize {
    let settings = PolicyFile::default()
        .resolve(Some("keep-last-30"), None, &|_| None)
        .unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let rule = Window {
        keep,
        stand_in,
        asked: asked.clone(),
    };
    let mut c = Compactor::with_rules(
        settings,
        vec![(Box::new(rule), vec!["*".to_owned()])],
        Box::new(ctxfit_tokens::FastEstimator),
    );
    c.compact_history(&history(n), None);
    asked.load(Ordering::Relaxed)
}

#[test]
fn a_window_rule_is_asked_about_each_result_about_twice() {
    // once when the result goes stale, once when it leaves the window: not `keep` times
    for n in [100, 400] {
        let count = asked(n, 10, 1);
        assert!(count <= 2 * n, "{n} results: asked {count} times");
    }
}

#[test]
fn a_stand_in_larger_than_the_result_is_not_asked_for_again() {
    // the stand-in is refused (a block never grows) and the result kept for good
    for n in [100, 400] {
        let count = asked(n, 0, 1_000);
        assert!(count <= n, "{n} results: asked {count} times");
    }
}
