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
    answered(n, |i| format!("file{i}.rs"))
}

/// A conversation of `n` listing calls, the `i`th answered with `result(i)`.
fn answered(n: usize, result: impl Fn(usize) -> String) -> Conversation {
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for i in 0..n {
        let id = format!("t{i}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "ls", "input": {"path": format!("dir{i}")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result(i)}]}));
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
        // every result but the newest goes stale and is asked about; then once more as it leaves the window
        assert!(count >= 2 * (n - 11), "{n} results: asked {count} times");
        assert!(count <= 2 * n, "{n} results: asked {count} times");
    }
}

#[test]
fn a_stand_in_larger_than_the_result_is_not_asked_for_again() {
    // the stand-in is refused (a block never grows) and the result kept for good
    for n in [100, 400] {
        let count = asked(n, 0, 1_000);
        assert!(count >= n - 1, "{n} results: asked {count} times");
        assert!(count <= n, "{n} results: asked {count} times");
    }
}

/// A conversation of `n` tool calls, each answered with a result of `chars` characters.
fn long_results(n: usize, chars: usize) -> Conversation {
    answered(n, |i| {
        let line = format!("file{i}.rs ");
        line.repeat(chars / line.len())
    })
}

/// Cuts every stale result by `cut` characters — with `grow`, plus one for each result that arrived after it (the
/// way a rule that leaves out what later results show cuts more as the history grows).
struct Trim {
    cut: usize,
    grow: bool,
    asked: Arc<AtomicUsize>,
}

impl RetentionRule for Trim {
    fn name(&self) -> &'static str {
        "trim"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let text = ctx.content.blocks[0].as_text().unwrap();
        let more = if self.grow { ctx.newer_results } else { 0 };
        let keep = text.len().saturating_sub(self.cut + more);
        Decision::Replace(Content::text(&text[..keep]))
    }

    fn depends_on_history(&self) -> bool {
        true
    }
}

/// The payback rule on (`smart`'s cache write premium), over [`Trim`].
fn paying(cut: usize, grow: bool) -> (Compactor, Arc<AtomicUsize>) {
    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    assert!(settings.cache_write_premium > 0.0);
    let asked = Arc::new(AtomicUsize::new(0));
    let rule = Trim {
        cut,
        grow,
        asked: asked.clone(),
    };
    let c = Compactor::with_rules(
        settings,
        vec![(Box::new(rule), vec!["*".to_owned()])],
        Box::new(ctxfit_tokens::FastEstimator),
    );
    (c, asked)
}

#[test]
fn a_cut_held_back_for_its_cache_write_is_asked_again_as_the_history_grows_not_at_every_request() {
    // a cut of a token from results of 20,000 characters never pays for rewriting the cached tail after it:
    // every one waits, all session long. Asked at every request they cost n²/2 decisions (80,000 at 400 results).
    for n in [100, 400] {
        let (mut c, asked) = paying(4, false);
        let report = c.compact_history(&long_results(n, 20_000), None);
        assert_eq!(report.new_blocks.len(), 0, "nothing pays back");
        assert!(report.held_back.is_some_and(|h| h.results + 2 >= n));
        let count = asked.load(Ordering::Relaxed);
        assert!(count >= n - 2, "{n} results: asked {count} times");
        assert!(count <= 8 * n, "{n} results: asked {count} times");
    }
}

#[test]
fn a_held_cut_is_asked_again_when_it_is_made() {
    // the agent pauses for an hour after its 60th result (message 120): the request after the pause, which holds
    // 61 results, finds the cache expired, and every waiting cut is made then — as its rule cuts it now, not as
    // it was settled when it went stale or last asked
    let n = 80;
    let conv = long_results(n, 20_000);
    let (mut c, _) = paying(8, true);
    let start = 1_700_000_000_000u64;
    let times: Vec<Option<u64>> = (0..conv.messages.len())
        .map(|m| Some(start + m as u64 * 1_000 + if m > 120 { 3_600_000 } else { 0 }))
        .collect();
    let report = c.compact_history_at(&conv, None, &times);
    let cut_at = |m: usize| report.new_blocks.iter().find(|b| b.message == m);
    assert!((2..=120).step_by(2).all(|m| cut_at(m).is_some()));
    // the first result: 60 results arrived after it
    let first = cut_at(2).unwrap();
    assert_eq!(first.chars_before - first.chars_after, 8 + 60);
}
