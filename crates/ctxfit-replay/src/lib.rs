//! Replays a recorded session turn by turn under a compaction policy, and measures what it cost and what it
//! kept of what the agent used later.
//!
//! The request before assistant turn *k* is the history up to that turn, compacted by the policy with its state
//! carried over from turn *k − 1* exactly as a live agent would carry it (sticky decisions; a budget trigger
//! compares with the previous request's input tokens). For each request the replay records:
//!
//! * **input tokens** (same estimator for every policy) and tokens saved against no compaction;
//! * **cache-aware cost** under a prompt-cache model: the longest prefix of messages unchanged since the previous
//!   request is a cache read, the rest a cache write ([`Prices`], defaults 0.1 and 1.25 per token, base 1.0);
//! * **reference recall**: the identifiers the assistant's turn uses (runs of `[A-Za-z0-9_./:-]` of 6+
//!   characters in its text and tool-call inputs) that had appeared earlier *only* in tool results — not in
//!   user, system or earlier assistant content — and the share of them still present in the compacted request.
//!
//! Recall is a proxy: with a compacted history the model would have acted differently, perhaps re-reading what
//! it lost. It measures what a policy hides of what the agent went on to use, not task success.
//!
//! The key design decision is that a replay costs about as much as the compaction it measures: per-message
//! token counts, the identifier multisets of the source and of the compacted request, and the cache prefix are
//! all updated from the compactor's per-request report, never recomputed over the history.

mod idents;

use std::collections::BTreeMap;

use ctxfit_compactor::{Compactor, CompactorError, Settings};
use ctxfit_model::{Block, Conversation, Role};
use ctxfit_retention::Registry;
use ctxfit_tokens::{count_message, count_preamble, TokenEstimator};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

pub use idents::{identifiers, MIN_IDENTIFIER_LEN};

/// Prices per token of the prompt-cache model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// Uncached input (what every token would cost without a cache).
    pub base: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            base: 1.0,
            cache_read: 0.1,
            cache_write: 1.25,
        }
    }
}

/// One request of a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnStats {
    /// Index of the assistant message this request produced.
    pub message: usize,
    pub input_tokens: usize,
    /// Input tokens without compaction.
    pub uncompacted_tokens: usize,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
    pub cost: f64,
    /// Identifiers this turn used that only tool results had shown, and how many of them the request still had.
    pub references: usize,
    pub references_visible: usize,
}

/// A whole session replayed under one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReplay {
    pub session: String,
    pub policy: String,
    pub turns: Vec<TurnStats>,
}

impl SessionReplay {
    pub fn input_tokens(&self) -> usize {
        self.turns.iter().map(|t| t.input_tokens).sum()
    }

    pub fn cost(&self) -> f64 {
        self.turns.iter().map(|t| t.cost).sum()
    }

    pub fn references(&self) -> (usize, usize) {
        self.turns.iter().fold((0, 0), |(r, v), t| {
            (r + t.references, v + t.references_visible)
        })
    }
}

/// A policy to replay under: no compaction, or a profile.
#[derive(Debug, Clone)]
pub enum Policy {
    None,
    Profile(Settings),
}

impl Policy {
    pub fn name(&self) -> &str {
        match self {
            Policy::None => "none",
            Policy::Profile(s) => &s.profile,
        }
    }
}

/// Multiset of identifiers.
#[derive(Default)]
struct Bag(FxHashMap<String, u32>);

impl Bag {
    fn add(&mut self, text: &str) {
        for id in identifiers(text) {
            *self.0.entry(id.to_owned()).or_default() += 1;
        }
    }

    fn remove(&mut self, text: &str) {
        for id in identifiers(text) {
            if let Some(n) = self.0.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    self.0.remove(id);
                }
            }
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }
}

/// Text of a block as the model reads it, for identifier extraction.
fn block_texts(block: &Block, out: &mut Vec<String>) {
    match block {
        Block::Text(t) => out.push(t.text.clone()),
        Block::Thinking(t) => out.push(t.thinking.clone()),
        Block::ToolUse(u) => collect_strings(&u.input, out),
        Block::ToolResult(r) => out.push(r.content.joined_text()),
        _ => {}
    }
}

fn collect_strings(v: &ctxfit_model::Value, out: &mut Vec<String>) {
    match v {
        ctxfit_model::Value::String(s) => out.push(s.clone()),
        ctxfit_model::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        ctxfit_model::Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Replay `conv` under `policy`.
pub fn replay(
    name: &str,
    conv: &Conversation,
    policy: &Policy,
    registry: &Registry,
    estimator: &dyn Fn() -> Box<dyn TokenEstimator>,
    prices: Prices,
) -> Result<SessionReplay, CompactorError> {
    let est = estimator();
    let mut compactor = match policy {
        Policy::None => None,
        Policy::Profile(s) => Some(Compactor::new(s.clone(), registry, estimator())?),
    };
    let preamble = count_preamble(est.as_ref(), conv);
    let mut request = Conversation {
        format: conv.format,
        envelope: conv.envelope,
        system: conv.system.clone(),
        messages: Vec::with_capacity(conv.messages.len()),
        tools: conv.tools.clone(),
        extra: conv.extra.clone(),
    };
    // per message of the request: source tokens and tokens as sent
    let mut source_tokens: Vec<usize> = Vec::new();
    let mut sent_tokens: Vec<usize> = Vec::new();
    // identifiers: in tool results (source), elsewhere (user/system/assistant), and in the request as sent
    let mut in_results = Bag::default();
    let mut elsewhere: FxHashSet<String> = FxHashSet::default();
    let mut visible = Bag::default();
    if let Some(system) = &conv.system {
        for b in &system.blocks {
            let mut texts = Vec::new();
            block_texts(b, &mut texts);
            for t in texts {
                elsewhere.extend(identifiers(&t).map(str::to_owned));
            }
        }
    }
    let mut previous_len = 0;
    let mut previous_input: Option<usize> = None;
    let mut turns = Vec::new();
    let mut texts = Vec::new();
    for (mi, msg) in conv.messages.iter().enumerate() {
        if msg.role == Role::Assistant && mi > 0 {
            // the request for this turn: everything before it
            let (first_changed, dropped, compacted_total) = match compactor.as_mut() {
                Some(c) => {
                    let report = c.compact(&request, previous_input);
                    for b in &report.new_blocks {
                        sent_tokens[b.message] -= b.tokens_before - b.tokens_after;
                    }
                    // identifiers visible: swap the replaced blocks' text
                    if !report.new_blocks.is_empty() {
                        let projection = c.projection(&request);
                        let mut seen = FxHashSet::default();
                        for b in &report.new_blocks {
                            if !seen.insert((b.message, b.block)) {
                                continue;
                            }
                            texts.clear();
                            block_texts(
                                &request.messages[b.message].content.blocks[b.block],
                                &mut texts,
                            );
                            texts.iter().for_each(|t| visible.remove(t));
                            texts.clear();
                            block_texts(
                                &projection.message(b.message).content.blocks[b.block],
                                &mut texts,
                            );
                            texts.iter().for_each(|t| visible.add(t));
                        }
                    }
                    (
                        report.first_changed_message,
                        report.dropped_messages,
                        Some(report.tokens_after),
                    )
                }
                None => (None, 0, None),
            };
            let input_tokens =
                compacted_total.unwrap_or_else(|| preamble + sent_tokens.iter().sum::<usize>());
            let uncompacted_tokens = preamble + source_tokens.iter().sum::<usize>();
            let (cache_read_tokens, cache_write_tokens) = if dropped > 0 || previous_len == 0 {
                (0, input_tokens)
            } else {
                let unchanged = first_changed.unwrap_or(previous_len).min(previous_len);
                let read = preamble + sent_tokens[..unchanged].iter().sum::<usize>();
                (read, input_tokens - read)
            };
            let cost = cache_read_tokens as f64 * prices.cache_read
                + cache_write_tokens as f64 * prices.cache_write;
            // references of this turn
            let mut used: FxHashSet<String> = FxHashSet::default();
            texts.clear();
            msg.content
                .blocks
                .iter()
                .for_each(|b| block_texts(b, &mut texts));
            for t in &texts {
                used.extend(identifiers(t).map(str::to_owned));
            }
            let refs: Vec<&String> = used
                .iter()
                .filter(|id| in_results.contains(id) && !elsewhere.contains(*id))
                .collect();
            let seen = refs.iter().filter(|id| visible.contains(id)).count();
            turns.push(TurnStats {
                message: mi,
                input_tokens,
                uncompacted_tokens,
                cache_read_tokens,
                cache_write_tokens,
                cost,
                references: refs.len(),
                references_visible: seen,
            });
            previous_len = request.messages.len();
            previous_input = Some(input_tokens);
        }
        // the message joins the history
        let tokens = count_message(est.as_ref(), msg);
        source_tokens.push(tokens);
        sent_tokens.push(tokens);
        for block in &msg.content.blocks {
            texts.clear();
            block_texts(block, &mut texts);
            for t in &texts {
                if matches!(block, Block::ToolResult(_)) {
                    in_results.add(t);
                    visible.add(t);
                } else {
                    elsewhere.extend(identifiers(t).map(str::to_owned));
                }
            }
        }
        request.messages.push(msg.clone());
    }
    Ok(SessionReplay {
        session: name.to_owned(),
        policy: policy.name().to_owned(),
        turns,
    })
}

/// Totals of many sessions under one policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PolicyTotals {
    pub policy: String,
    pub sessions: usize,
    pub turns: usize,
    pub input_tokens: usize,
    pub cost: f64,
    pub references: usize,
    pub references_visible: usize,
}

impl PolicyTotals {
    pub fn recall(&self) -> f64 {
        if self.references == 0 {
            1.0
        } else {
            self.references_visible as f64 / self.references as f64
        }
    }
}

/// Sum replays per policy, in the order policies first appear.
pub fn totals(replays: &[SessionReplay]) -> Vec<PolicyTotals> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, PolicyTotals> = BTreeMap::new();
    for r in replays {
        if !by.contains_key(&r.policy) {
            order.push(r.policy.clone());
        }
        let t = by.entry(r.policy.clone()).or_insert_with(|| PolicyTotals {
            policy: r.policy.clone(),
            ..PolicyTotals::default()
        });
        let (refs, vis) = r.references();
        t.sessions += 1;
        t.turns += r.turns.len();
        t.input_tokens += r.input_tokens();
        t.cost += r.cost();
        t.references += refs;
        t.references_visible += vis;
    }
    order.into_iter().filter_map(|p| by.remove(&p)).collect()
}
