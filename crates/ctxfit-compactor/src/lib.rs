//! The orchestrator of ctxfit: which stale tool results to shrink, by which rule, and when.
//!
//! A [`Compactor`] holds one profile's [`Settings`] (from a [`PolicyFile`] or a built-in profile), the rules
//! it names (found in the `ctxfit-retention` registry — this crate never names a concrete rule), and the
//! state of one growing conversation. Before each model call the agent hands it the history; it reads only the
//! appended messages, checks the trigger (always, or input tokens above the budget), asks each stale result's
//! rule oldest first (stopping at the target, if any), and reports.
//!
//! The key decision is that **every decision is sticky**: once a block is replaced, the same bytes replace it in
//! every later request. Compaction then happens in batches, and between batches the request prefix is
//! byte-identical, so the provider's prompt cache keeps working — the report names the first message that
//! changed, where the cache breaks. The cost of a request is proportional to the content appended since the
//! last one: tool names come from an incrementally updated index, token counts are kept per message, and a
//! result a history-independent rule chose to keep is never asked about again.
//!
//! Invariants (property-tested): tool_use/tool_result pairs stay valid; compacting twice changes nothing; a
//! block never grows (in tokens, and in characters unless it holds images or documents); results the model has
//! not answered yet are never touched; cuts fall on character boundaries; decisions are deterministic and sticky;
//! the source is left untouched by [`Compactor::project`].

mod aliases;
mod compactor;
mod ledger;
mod policy;
mod prefix_sums;
mod report;
mod retrieval;
mod session;
pub mod window;

pub use aliases::DEFAULT_ALIASES;
pub use compactor::{
    cache_expired, requested_cache_ttl, stated_cache_ttl, unix_millis, ChangeMark, Compactor,
    CompactorError, Decided, NextRequest, Projection, RestoreError, SavedDecision, SavedHeld,
    SavedState, BUDGET_RULE, CACHE_FIELDS, INGESTION_MARKER,
};
/// The plugin API, so that a compactor and its registry can be named with this crate alone.
pub use ctxfit_retention::{Decision, Registry, RetentionRule, RuleContext, RuleDescriptor};
pub use ledger::{write_in_reads, Ledger, RequestTokens, ONE_HOUR_CACHE, WRITE_IN_READS};
pub use policy::{
    built_in, PolicyError, PolicyFile, ProfileSpec, RuleSpec, Settings, Trigger, BUILT_IN_PROFILES,
    DEFAULT_CACHE_TTL, ENV_OVERRIDES, MAX_POLICY_BYTES,
};
pub use prefix_sums::PrefixSums;
pub use report::{Action, BlockReport, HeldBack, HoldReason, Report};
pub use retrieval::{handle_of, retrieval_tool_definition, retrieve, RETRIEVAL_TOOL};
pub use session::{AgentSession, Request};
