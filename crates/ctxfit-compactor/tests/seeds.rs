//! The seed profiles reproduce the seeds' passes on real sessions.
//!
//! Each test re-implements a seed's pass the straightforward way — a loop over the messages, as the seed
//! describes it — and compares the compactor's projection with it on real Claude Code sessions from the corpus.
//! One deliberate difference, from ctxfit's invariant that a block never grows: a result only slightly longer
//! than the limit, which the seed's cut + marker would make *longer*, is left as it is.

use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_import::{import_file, Session};
use ctxfit_model::{Block, Content, Conversation, ToolCallIndex};
use ctxfit_testkit::corpus_dir;

fn settings(profile: &str, env: &[(&str, &str)]) -> Settings {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    PolicyFile::default()
        .resolve(Some(profile), None, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .unwrap()
}

fn compactor(s: Settings) -> Compactor {
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(s, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap()
}

fn sessions(rel: &str) -> Vec<Session> {
    let corpus =
        corpus_dir().expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    import_file(&corpus.join("trajectories").join(rel), None).unwrap()
}

const CLAUDE_CODE: &[&str] = &[
    "claude-code/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl",
    "claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    "claude-code/-Users-dain-workspace-danieldemmel-me-next/f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl",
];

/// The seeds' cut, written here from their text alone (not with the library's `truncate_content`, so that a fault
/// there cannot show on both sides): a result's text, its first `limit` characters (Unicode scalar values, as
/// Python counts them) and then `marker`; unless it already ends with the marker, or is no longer than `limit`.
/// A result that is a list of blocks has its text blocks' characters counted in order: the block the limit falls
/// in is cut and gets the marker, the text blocks after it go, and other blocks (images) stay.
fn seed_cut(content: &Content, limit: usize, marker: &str) -> Option<Content> {
    let texts: Vec<&str> = content.blocks.iter().filter_map(Block::as_text).collect();
    if texts.last().is_some_and(|t| t.ends_with(marker)) {
        return None;
    }
    if texts.iter().map(|t| t.chars().count()).sum::<usize>() <= limit {
        return None;
    }
    let mut left = limit;
    let mut done = false;
    let mut blocks = Vec::new();
    for block in &content.blocks {
        let Some(text) = block.as_text() else {
            blocks.push(block.clone());
            continue;
        };
        if done {
            continue;
        }
        let n = text.chars().count();
        if n <= left {
            left -= n;
            blocks.push(block.clone());
            continue;
        }
        let kept: String = text.chars().take(left).chain(marker.chars()).collect();
        let mut cut = block.clone();
        if let Block::Text(t) = &mut cut {
            t.text = kept;
        }
        blocks.push(cut);
        done = true;
    }
    let shape = if content.shape == ctxfit_model::Shape::String && blocks.len() == 1 {
        ctxfit_model::Shape::String
    } else {
        ctxfit_model::Shape::List
    };
    let cut = Content { blocks, shape };
    let chars = |c: &Content| -> usize {
        c.blocks
            .iter()
            .filter_map(Block::as_text)
            .map(|t| t.chars().count())
            .sum()
    };
    (chars(&cut) < chars(content) || cut.blocks.len() < content.blocks.len()).then_some(cut)
}

/// Seed 002's tiers, as its text lists them: confirmations 150 characters, actions 300, data 400, search 600,
/// anything else 800.
fn seed_002_limit(tool: &str) -> usize {
    match tool {
        "store_memory" | "update_memory" | "delete_memory" | "explore_memory"
        | "manage_clusters" => 150,
        "execute_trade" | "close_position" | "modify_position" | "manage_watchpoints"
        | "manage_conflicts" => 300,
        "get_market_data"
        | "get_multi_timeframe"
        | "get_orderbook"
        | "get_funding_history"
        | "get_liquidations"
        | "get_options_flow"
        | "get_institutional_flow"
        | "get_global_sentiment"
        | "get_trade_stats"
        | "get_my_costs"
        | "get_account" => 400,
        "recall_memory" | "search_web" => 600,
        _ => 800,
    }
}

fn has_results(conv: &Conversation, i: usize) -> bool {
    conv.messages[i].tool_results().next().is_some()
}

/// Seed 000: over budget, every tool result longer than 500 characters, in every tool-result message except the
/// most recent one, becomes its first 500 characters + the marker.
fn seed_000(conv: &Conversation, input_tokens: usize, budget: usize) -> (Conversation, usize) {
    let mut out = conv.clone();
    if budget == 0 || input_tokens <= budget {
        return (out, 0);
    }
    let last = (0..conv.messages.len())
        .rev()
        .find(|&i| has_results(conv, i));
    let mut n = 0;
    for (i, msg) in out.messages.iter_mut().enumerate() {
        if Some(i) == last {
            continue;
        }
        for block in &mut msg.content.blocks {
            if let Block::ToolResult(r) = block {
                if let Some(cut) = seed_cut(&r.content, 500, "\n[truncated for context management]")
                {
                    r.content = cut;
                    n += 1;
                }
            }
        }
    }
    (out, n)
}

/// Seed 002: on every request, every tool result of every message except the last (when it is a tool-result
/// message) is cut to its tool's tier limit + the marker.
fn seed_002(conv: &Conversation) -> Conversation {
    let index = ToolCallIndex::build(conv);
    let mut out = conv.clone();
    let n = out.messages.len();
    let skip_last = n > 0 && has_results(conv, n - 1);
    for (i, msg) in out.messages.iter_mut().enumerate() {
        if skip_last && i == n - 1 {
            continue;
        }
        for block in &mut msg.content.blocks {
            if let Block::ToolResult(r) = block {
                let limit = seed_002_limit(index.tool_name(&r.tool_use_id).unwrap_or(""));
                if let Some(cut) =
                    seed_cut(&r.content, limit, "\n...[truncated, already processed]")
                {
                    r.content = cut;
                }
            }
        }
    }
    out
}

/// Every prefix of the history ending before an assistant message is a request the agent sent.
fn requests(conv: &Conversation) -> Vec<Conversation> {
    (1..=conv.messages.len())
        .filter(|&k| {
            k == conv.messages.len() || conv.messages[k].role == ctxfit_model::Role::Assistant
        })
        .map(|k| Conversation {
            messages: conv.messages[..k].to_vec(),
            ..conv.clone()
        })
        .collect()
}

#[test]
fn seed_000_matches_the_seed_pass_request_by_request() {
    ctxfit_testkit::skip_without_corpus!();
    for rel in CLAUDE_CODE {
        for session in sessions(rel) {
            for budget in [1_000usize, 40_000] {
                let mut c = compactor(settings(
                    "seed-000",
                    &[("CTXFIT_BUDGET", &budget.to_string())],
                ));
                let mut compacted = 0;
                for request in requests(&session.conversation) {
                    let report = c.compact(&request, None);
                    // seed 000 compares the input tokens with the budget; feed the same number to both
                    let (expected, n) = seed_000(&request, report.input_tokens, budget);
                    let projected = c.project(&request);
                    assert_eq!(
                        projected,
                        expected,
                        "{rel} budget {budget} at {} messages",
                        request.messages.len()
                    );
                    assert_eq!(
                        report.compacted_total, n,
                        "{rel}: sticky decisions are all the seed's cuts"
                    );
                    compacted = compacted.max(n);
                }
                if budget == 1_000 {
                    assert!(
                        compacted > 3,
                        "{rel}: the test must exercise the trigger ({compacted} cuts)"
                    );
                }
            }
        }
    }
}

#[test]
fn seed_002_matches_the_seed_pass_request_by_request() {
    ctxfit_testkit::skip_without_corpus!();
    for rel in CLAUDE_CODE {
        for session in sessions(rel) {
            let mut c = compactor(settings("seed-002", &[]));
            for request in requests(&session.conversation) {
                c.compact(&request, None);
                assert_eq!(
                    c.project(&request),
                    seed_002(&request),
                    "{rel} at {}",
                    request.messages.len()
                );
            }
        }
    }
}

#[test]
fn seed_000_note_reads_like_the_seed() {
    ctxfit_testkit::skip_without_corpus!();
    let session = &sessions(CLAUDE_CODE[0])[0];
    let mut c = compactor(settings("seed-000", &[]));
    let report = c.compact(&session.conversation, Some(45_231));
    let n = report.newly_compacted_results();
    assert!(n > 0);
    assert_eq!(
        report.note().unwrap(),
        format!("Note: Compacted {n} old tool result(s) — input tokens (45,231) exceeded budget (40,000)")
    );
    let mut below = compactor(settings("seed-000", &[]));
    let quiet = below.compact(&session.conversation, Some(40_000));
    assert!(!quiet.triggered && quiet.note().is_none());
}

#[test]
fn streamed_projection_is_the_projected_conversation() {
    ctxfit_testkit::skip_without_corpus!();
    for rel in CLAUDE_CODE {
        for session in sessions(rel) {
            let mut c = compactor(settings("seed-002", &[]));
            c.compact(&session.conversation, None);
            let mut out = Vec::new();
            c.projection(&session.conversation)
                .write_json(&mut out, false)
                .unwrap();
            let streamed: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(
                streamed,
                ctxfit_model::to_value(&c.project(&session.conversation)),
                "{rel}"
            );
        }
    }
}

/// SWE-agent and tau-bench reuse tool_call ids within a session: each result is still decided on its own.
#[test]
fn reused_tool_use_ids_are_compacted_result_by_result() {
    ctxfit_testkit::skip_without_corpus!();
    for rel in [
        "swe-agent/marshmallow-1867.traj",
        "tau-bench/gpt-4o-airline.fixture-0-19.json",
    ] {
        for session in sessions(rel) {
            let conv = &session.conversation;
            let mut c = compactor(settings("seed-002", &[]));
            c.compact(conv, None);
            let out = c.project(conv);
            let last_assistant = conv
                .messages
                .iter()
                .rposition(|m| m.role == ctxfit_model::Role::Assistant)
                .unwrap();
            for (i, (before, after)) in conv.messages.iter().zip(&out.messages).enumerate() {
                for (b, a) in before.tool_results().zip(after.tool_results()) {
                    assert_eq!(b.tool_use_id, a.tool_use_id);
                    let text = b.content.joined_text();
                    if i > last_assistant {
                        assert_eq!(a, b, "unanswered results are untouched");
                    } else {
                        // a cut result is a prefix of its own original, never of another result with the same id
                        let kept = a.content.joined_text();
                        let kept = kept
                            .strip_suffix("\n...[truncated, already processed]")
                            .unwrap_or(&kept);
                        assert!(text.starts_with(kept), "{rel} message {i}");
                    }
                }
            }
        }
    }
}
