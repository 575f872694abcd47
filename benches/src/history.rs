//! Long realistic histories for benchmarks: runs of real turns (a tool-calling assistant message and the
//! results it got) sampled from the corpus' sessions, reproducible from a seed.

use ctxfit_model::{convert, Block, Content, Conversation, Message, Role, WireFormat};
use ctxfit_tokens::{count_message, FastEstimator};

use crate::corpus_sessions;

/// An assistant message that calls tools, and the user message holding their results.
#[derive(Clone)]
pub struct Turn {
    pub assistant: Message,
    pub results: Message,
}

/// The turns of every corpus session (in Anthropic form), session by session; sessions without tool calls
/// are left out.
pub fn corpus_turns() -> Vec<Vec<Turn>> {
    corpus_sessions()
        .into_iter()
        .map(|s| convert(&s.conversation, WireFormat::Anthropic).0)
        .map(|conv| {
            conv.messages
                .windows(2)
                .filter(|w| {
                    w[0].role == Role::Assistant
                        && w[0].tool_uses().next().is_some()
                        && w[1].tool_results().count() == w[0].tool_uses().count()
                })
                .map(|w| Turn {
                    assistant: w[0].clone(),
                    results: w[1].clone(),
                })
                .collect::<Vec<_>>()
        })
        .filter(|turns| !turns.is_empty())
        .collect()
}

/// SplitMix64: small, fast, and the same sequence everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Give a turn's tool calls fresh ids (`g{n}-…`) so that a history made of many copies stays valid.
fn renumber(turn: &Turn, n: usize) -> Turn {
    let mut t = turn.clone();
    let fresh = |id: &str| format!("g{n}-{id}");
    for b in &mut t.assistant.content.blocks {
        if let Block::ToolUse(u) = b {
            u.id = fresh(&u.id);
        }
    }
    for b in &mut t.results.content.blocks {
        if let Block::ToolResult(r) = b {
            r.tool_use_id = fresh(&r.tool_use_id);
        }
    }
    t
}

/// A history of at least `tokens` estimated tokens: a user request, then runs of 1–8 consecutive real turns
/// from randomly chosen sessions, ending with a tool-result message (a request about to be sent). The same
/// seed gives the same history.
pub fn generate_history(sessions: &[Vec<Turn>], tokens: usize, seed: u64) -> Conversation {
    let mut rng = Rng::new(seed);
    let mut conv = Conversation::new(WireFormat::Anthropic);
    conv.messages.push(Message::new(
        Role::User,
        Content::text("Work through the task; use the tools as needed."),
    ));
    let mut total = 0;
    let mut n = 0;
    while total < tokens && !sessions.is_empty() {
        let session = &sessions[rng.below(sessions.len())];
        let start = rng.below(session.len());
        let run = 1 + rng.below(8);
        for turn in session.iter().skip(start).take(run) {
            n += 1;
            let t = renumber(turn, n);
            total += count_message(&FastEstimator, &t.assistant)
                + count_message(&FastEstimator, &t.results);
            conv.messages.push(t.assistant);
            conv.messages.push(t.results);
            if total >= tokens {
                break;
            }
        }
    }
    conv
}
