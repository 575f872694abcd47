//! What a compaction did: per block the action, rule and sizes; totals; where the provider's cache breaks.

use ctxfit_retention::thousands;
use serde::Serialize;

/// What happened to one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Content replaced by a shorter version (truncation, head/tail, ...).
    Replaced,
    /// Replaced by a one-line pointer.
    Pointer,
    /// A tool call's input cleared (`clear_tool_inputs`).
    InputCleared,
}

/// One compacted block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockReport {
    pub message: usize,
    pub block: usize,
    pub tool_use_id: String,
    pub tool: String,
    pub rule: String,
    pub action: Action,
    pub chars_before: usize,
    pub chars_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// Why the rules' cuts were not made this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldReason {
    /// They would reclaim fewer tokens than `min_reclaim_tokens`.
    MinReclaimTokens,
    /// They would reclaim less than `min_reclaim_ratio` of the cached part the provider must write again.
    MinReclaimRatio,
    /// They would not pay back their cache write yet (`cache_write_premium`): they wait, and each request tests
    /// them again.
    CacheWritePremium,
    /// Their cache write would take the conversation's cost past `max_regret` above sending everything: they
    /// wait until its savings cover it (or the cache expires).
    RegretBound,
}

/// A batch of cuts the rules chose but the reclaim checks held back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldBack {
    /// Tool results the batch would have changed.
    pub results: usize,
    /// Estimated tokens it would have reclaimed.
    pub tokens: usize,
    pub reason: HoldReason,
}

/// The outcome of one request's compaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub profile: String,
    /// Input tokens the trigger looked at, and whether they were reported by the provider or estimated.
    pub input_tokens: usize,
    pub input_tokens_reported: bool,
    pub triggered: bool,
    /// Estimated tokens of the history as it is, and of the request as compacted (all decisions so far).
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// Blocks compacted by this request (earlier, sticky ones are counted in `compacted_total`).
    pub new_blocks: Vec<BlockReport>,
    /// Tool results compacted so far, this request included.
    pub compacted_total: usize,
    /// The first message whose content differs from the previous request's: the provider's prompt cache breaks
    /// here. `None` when nothing new was compacted.
    pub first_changed_message: Option<usize>,
    /// Messages dropped from the front (`max_conversation_messages`).
    pub dropped_messages: usize,
    /// The budget the trigger compared with (0 when the trigger is `always`).
    pub budget: usize,
    /// Cuts the rules chose that the reclaim checks held back this request, if any.
    pub held_back: Option<HeldBack>,
    /// Whether the request came longer than the provider's cache lives after the previous one (only known when
    /// its time was given, [`Compactor::compact_at`](crate::Compactor::compact_at)): nothing of it is read from
    /// the cache, and every cut that was waiting for its cache write to pay was free to make.
    pub cache_expired: bool,
}

impl Report {
    /// Tool results newly compacted by this request.
    pub fn newly_compacted_results(&self) -> usize {
        self.new_blocks
            .iter()
            .filter(|b| b.action != Action::InputCleared)
            .count()
    }

    /// The one-line diagnostic (seed 000's wording), when this request compacted something.
    pub fn note(&self) -> Option<String> {
        let n = self.newly_compacted_results();
        if n == 0 {
            return None;
        }
        Some(if self.budget > 0 {
            format!(
                "Note: Compacted {n} old tool result(s) — input tokens ({}) exceeded budget ({})",
                thousands(self.input_tokens),
                thousands(self.budget)
            )
        } else {
            format!(
                "Note: Compacted {n} old tool result(s) — profile {} compacts on every request",
                self.profile
            )
        })
    }
}
