//! The orchestrator: ingest appended messages, trigger, ask the rules about stale results oldest first, keep
//! every decision sticky, and project or apply the result.
//!
//! The `Compactor` and what it has read live here; each of its concerns is a file of `compactor/` (see
//! docs/architecture.md), which takes this module's names with `use super::*`.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolCallIndex, Value};
use ctxfit_retention::{
    content_chars, ends_with_marker, holds_media, line_key, record_member_line, record_members,
    truncate_content, Decision, Registry, ResultIndex, ResultRef, RetentionRule, RuleContext,
    SameTool, ShownLines, WrappedOutput,
};
use ctxfit_tokens::conversation::count_block;
use ctxfit_tokens::conversation::MESSAGE_OVERHEAD;
use ctxfit_tokens::{
    count_message, count_preamble, count_tool_result, BudgetError, BudgetStatus, TokenEstimator,
};

use crate::aliases::ToolKinds;
use crate::ledger::{write_in_reads, Ledger, RequestTokens, WRITE_IN_READS};
use crate::policy::{Settings, Trigger};
use crate::report::{Action, BlockReport, HeldBack, HoldReason, Report};
use crate::retrieval::{retrieval_trailer, with_trailer};

mod budget;
mod cache;
mod cold;
mod decide;
mod decision;
mod ingest;
mod payback;
mod projection;
mod saved;
mod shown;
mod sleep;

use crate::PrefixSums;

/// Whether a replacement of `tokens` tokens and `chars` characters keeps the promise that a block never grows,
/// for a result of `tokens_before` and `chars_before` (`original`): no more tokens and fewer characters — or, for
/// a result holding images or documents, whose text is not all it costs, fewer tokens whatever the characters
/// (each image written as a line).
fn never_grows(
    tokens: usize,
    chars: usize,
    tokens_before: usize,
    chars_before: usize,
    original: &Content,
) -> bool {
    tokens <= tokens_before
        && (chars < chars_before || (tokens < tokens_before && holds_media(original)))
}
pub use budget::BUDGET_RULE;
pub use cache::{cache_expired, requested_cache_ttl, stated_cache_ttl, unix_millis, CACHE_FIELDS};
use decision::{reask_due, Asked, Change, Replacement, Sticky, View, WaitingOn};
use projection::call_input;
use projection::drop_range;
pub use projection::Projection;
pub use saved::{Decided, RestoreError, SavedDecision, SavedHeld, SavedState};
use shown::{keep_for_good, ByKind, Consulted, Noting, ShownIndex};

/// Why a compactor could not be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactorError {
    #[error(
        "unknown rule `{name}` in profile `{profile}` (registered: {known}); a rule crate is registered only \
         when the binary links it: reference it from your code (`use my_rule_crate as _;`), and link the built-in \
         rules with `ctxfit-plugins`"
    )]
    UnknownRule {
        name: String,
        profile: String,
        known: String,
    },
    #[error(transparent)]
    RuleConfig(#[from] ctxfit_retention::RuleConfigError),
}

/// The marker of the ingestion cap (`max_tool_result_chars`).
pub const INGESTION_MARKER: &str = "\n[truncated: tool result exceeded the size limit]";

struct BoundRule {
    rule: Box<dyn RetentionRule>,
    tools: Vec<String>,
}

impl BoundRule {
    fn handles(&self, kind: &str, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t == "*" || t == kind || t == name)
    }
}

/// What a sticky decision is attached to: the tool_use_id and which result with that id it is (0 for the first).
/// Real agents reuse ids (SWE-agent, tau-bench), so the id alone does not name one result.
type ResultKey = (String, u32);

#[derive(Debug, Clone)]
struct ResultSite {
    message: usize,
    block: usize,
    /// The call's position, when the call was seen before the result.
    call: Option<(usize, usize)>,
    key: ResultKey,
    tool_use_id: String,
    tool: String,
    kind: String,
    /// Estimated tokens of the result as it is in the source, counted once at ingestion.
    tokens: usize,
}

/// A state's identity, unique in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StateId(u64);

impl Default for StateId {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        StateId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// How far a caller has read the messages changed by decisions ([`Projection::changes_since`]); the default
/// has read nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeMark {
    state: u64,
    seen: usize,
}

/// What has been read of the history so far (append-only; rebuilt when the history gets shorter).
#[derive(Default)]
struct State {
    index: ToolCallIndex,
    messages: usize,
    base_tokens: usize,
    message_tokens: usize,
    /// Tokens of each message as the request sends it (source minus sticky savings).
    sent_tokens: PrefixSums,
    /// assistants_before[i]: model responses begun among the first i messages (`begins_response`).
    assistants_before: Vec<usize>,
    results: Vec<ResultSite>,
    /// Results not decided yet, oldest first (indices into `results`).
    pending: Vec<usize>,
    by_kind: HashMap<String, Vec<ResultRef>>,
    last_result_message: Option<usize>,
    /// Tokens saved by the sticky decisions that apply to this history.
    saved: usize,
    /// Kept results a history-dependent rule will be asked about again, with the number of relevant results at
    /// which to ask (the count when it was last asked plus the rule's `reconsider_after`).
    waiting: HashMap<usize, usize>,
    /// What each waiting result depends on.
    waiting_on: HashMap<usize, WaitingOn>,
    /// The waiting results not due to be asked again, out of `pending` ([`sleep`]).
    sleepers: sleep::Sleepers,
    /// The messages whose replacements changed, in the order they did (a message may recur): what a caller
    /// holding its own copy of the messages converts again ([`Projection::changes_since`]).
    changed: Vec<usize>,
    /// Which state this is: marks of another (before a history was read afresh) start from the beginning.
    id: StateId,
    /// Results per (rule, group key), for history-dependent rules that group their results.
    groups: HashMap<(usize, String), Vec<ResultRef>>,
    /// How many results with each tool_use_id have been read (ids are reused by some agents).
    seen_ids: HashMap<String, u32>,
    /// message index → (block index, what replaces it): kept current so a projection costs nothing to set up.
    replaced: HashMap<usize, Vec<(usize, Replacement)>>,
    /// Lines final in the request, for rules that leave out what is shown elsewhere.
    shown: ShownIndex,
    /// Messages of the request the previous call compacted: the provider has cached them.
    cached_messages: usize,
}

/// Compacts a growing conversation under one profile, request after request.
///
/// Feed it the history before each model call ([`Compactor::compact`]); it reads only the messages appended
/// since the last call, decides about stale tool results when the profile's trigger fires, and returns a
/// [`Report`]. The compacted request is then [`Compactor::project`]ed (source untouched) or
/// [`Compactor::apply`]ed (in place). Decisions are sticky: a replaced block is replaced identically in every
/// later request, so the provider's prompt cache keeps the prefix.
pub struct Compactor {
    settings: Settings,
    kinds: ToolKinds,
    rules: Vec<BoundRule>,
    estimator: Box<dyn TokenEstimator>,
    state: State,
    decided: HashMap<ResultKey, Sticky>,
    /// Tool results with a sticky replacement (the ingestion cap included).
    compacted_results: usize,
    /// Of the decisions, those that replace a result's content (the report's `compacted_total`), counted as they
    /// are made rather than over every decision at each request.
    replaced: usize,
    /// Results a history-independent rule chose to keep: never asked again.
    kept: HashSet<ResultKey>,
    /// Cuts a rule chose that the reclaim checks hold back, waiting for their turn with the replacement the rule
    /// chose (asked again as the history grows, [`reask_due`], and when the cut is made). Their lines count as
    /// shown: the request holds them, in the original until the cut is made and in the replacement after.
    held: HashMap<ResultKey, Change>,
    /// Cuts put on hold so far: part of [`Compactor::revision`], since a saved state carries them.
    holds: usize,
    /// Requests so far that found the provider's cache expired: the payback rule's forecast of how often a cut
    /// will save a cache write rather than a read.
    expired_requests: usize,
    drop: Option<Range<usize>>,
    /// After [`Compactor::restore`]: the messages the last request before the save sent (the provider's cache).
    resumed_cached: Option<usize>,
    /// When the last request whose time the caller gave was sent (ms since the Unix epoch).
    last_sent_at: Option<u64>,
    /// What the conversation has cost so far against sending everything (the regret bound's accounting).
    ledger: Ledger,
    /// Under the regret bound, what this request may spend on cuts, per price model of the ledger.
    allowance: Option<[f64; 2]>,
    /// Decisions the request budget made or changed (`budget.rs`): part of [`Compactor::revision`], since a
    /// change of a decision leaves the other counts as they were.
    escalations: usize,
    /// Tokens each request holds besides the conversation the compactor is given ([`Compactor::set_unseen_tokens`]).
    unseen: usize,
    /// The profile's own `request_budget` (0: none), which a window learned cannot raise.
    configured_budget: usize,
    /// The model's context window a provider's refusal taught ([`Compactor::learn_window`]).
    window: Option<crate::window::Window>,
    /// The last two requests compacted, as the token guard counts them: the one before (which the provider
    /// accepted, since the agent went on) and the last.
    sizes: [usize; 2],
    /// What the provider counted of the request before the last, when the caller reported it with the last.
    reported_before_last: Option<usize>,
}

/// What a live conversation's next request says besides its messages ([`Compactor::next_request`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NextRequest {
    /// The first message appended since the previous request (its `cache_control` marks are read).
    pub first_new: usize,
    /// The input tokens the provider reported for the previous request (cache reads and writes included).
    pub reported_input_tokens: Option<usize>,
    /// The cache lifetime the request asks for in its own fields (OpenAI's `prompt_cache_retention`, a mark on
    /// the request or its tools: [`requested_cache_ttl`]): the longer of it and what the new messages' marks
    /// state is taken.
    pub requested_cache_ttl: Option<u64>,
    /// The provider's cache lifetime as the caller knows it, whatever the request states (an operator's setting).
    pub cache_ttl: Option<u64>,
    /// When the request is sent, in milliseconds since the Unix epoch; `None`: now.
    pub sent_at: Option<u64>,
}

impl Compactor {
    /// Build the rules of `settings` from the registry.
    pub fn new(
        settings: Settings,
        registry: &Registry,
        estimator: Box<dyn TokenEstimator>,
    ) -> Result<Compactor, CompactorError> {
        let mut rules = Vec::new();
        for spec in &settings.rules {
            let descriptor =
                registry
                    .get(&spec.rule)
                    .ok_or_else(|| CompactorError::UnknownRule {
                        name: spec.rule.clone(),
                        profile: settings.profile.clone(),
                        known: registry.names().join(", "),
                    })?;
            let rule = (descriptor.factory)(&spec.params)?;
            let tools = if spec.tools.is_empty() {
                descriptor.tools.iter().map(|t| (*t).to_owned()).collect()
            } else {
                spec.tools.clone()
            };
            rules.push((rule, tools));
        }
        Ok(Compactor::with_rules(settings, rules, estimator))
    }

    /// A compactor over rules the caller built rather than found in the registry (`settings.rules` is then not
    /// read): for rules that cannot be registered, such as the replay's oracle, which is built from the session's
    /// future. Each rule comes with the tools it handles (kinds or names, `"*"` for any), first match decides.
    pub fn with_rules(
        settings: Settings,
        rules: Vec<(Box<dyn RetentionRule>, Vec<String>)>,
        estimator: Box<dyn TokenEstimator>,
    ) -> Compactor {
        Compactor {
            kinds: ToolKinds::with(&settings.aliases),
            configured_budget: settings.request_budget,
            settings,
            rules: rules
                .into_iter()
                .map(|(rule, tools)| BoundRule { rule, tools })
                .collect(),
            estimator,
            state: State::default(),
            decided: HashMap::default(),
            compacted_results: 0,
            replaced: 0,
            kept: HashSet::default(),
            held: HashMap::default(),
            holds: 0,
            expired_requests: 0,
            drop: None,
            resumed_cached: None,
            last_sent_at: None,
            ledger: Ledger::default(),
            allowance: None,
            escalations: 0,
            unseen: 0,
            window: None,
            sizes: [0, 0],
            reported_before_last: None,
        }
    }

    /// A count that grows each time a decision is made (a result replaced or kept for good): a saved state is
    /// out of date when the revision it was saved at differs.
    pub fn revision(&self) -> usize {
        self.compacted_results
            + self.kept.len()
            + self.holds
            + self.expired_requests
            + self.escalations
    }

    /// What the conversation has cost so far against sending everything (the regret bound's accounting; it
    /// changes at every request, and [`Compactor::save`] carries it).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The token guard on the request a [`Report`] describes, as compacted (`tokens_after`, and what the request
    /// holds besides: [`Compactor::set_unseen_tokens`]): an error over the profile's `request_budget` — do not
    /// send it — and a warning (also logged) over `warning_threshold`.
    pub fn check_request(&self, report: &Report) -> Result<BudgetStatus, BudgetError> {
        self.settings
            .token_guard()
            .check(report.tokens_after + self.unseen)
    }

    /// Tokens the requests hold besides the conversation given to [`Compactor::compact`] — a system prompt and
    /// tool definitions kept elsewhere, or what a recorded log leaves out of each request (the replay sets it
    /// from the log's bill) — counted against `request_budget` and by [`Compactor::check_request`] from the next
    /// request on; nothing else is affected (the regret bound and the reports count the conversation). 0 by
    /// default.
    pub fn set_unseen_tokens(&mut self, tokens: usize) {
        self.unseen = tokens;
    }

    fn excluded(&self, site: &ResultSite) -> bool {
        self.settings
            .exclude_tools
            .iter()
            .any(|t| *t == site.tool || *t == site.kind)
    }

    /// Hold `tokens` as the request budget from the next request on, in place of the profile's `request_budget`
    /// (0: none): what a proxy does once the provider has said how large its model's context window is. Every
    /// decision made so far stands.
    pub fn set_request_budget(&mut self, tokens: usize) {
        self.settings.request_budget = tokens;
    }

    /// The provider refused the last request compacted as too long for its model (`overflow`, read from its
    /// answer with [`crate::window::overflow`]): hold the window it implies from the next request on — compact
    /// the same history again and send that. The window is the refusal's own numbers at the rate the provider's
    /// count and this compactor's stand in on that request, or, where it says none, the request before it (which
    /// the provider took); each later request's `reported_input_tokens` measures the rate again. The profile's
    /// own `request_budget` still holds where it is lower. The budget it comes to, or `None` when the refusal
    /// teaches nothing (no request yet, or no budget lower than the one held: what no step may cut is above it).
    pub fn learn_window(&mut self, overflow: &crate::window::Overflow) -> Option<usize> {
        let [before, last] = self.sizes;
        if last == 0 {
            return None;
        }
        let accepted = (before > 0).then_some((before, self.reported_before_last));
        let window = overflow.window(last, accepted)?;
        let held = self.settings.request_budget;
        if held != 0 && window.budget >= held {
            return None;
        }
        self.window = Some(window);
        self.hold_window();
        // the refused request is not one the provider took: the next is measured against the one before it
        self.sizes[1] = before;
        Some(self.settings.request_budget)
    }

    /// The window a refusal taught this conversation, if any ([`Compactor::learn_window`]).
    pub fn window(&self) -> Option<crate::window::Window> {
        self.window
    }

    /// Hold a window learned before (by another compactor of the same agent and model: a conversation started
    /// over), as [`Compactor::learn_window`] would have.
    pub fn set_window(&mut self, window: crate::window::Window) {
        self.window = Some(window);
        self.hold_window();
    }

    /// Hold the learned window's budget, or the profile's own where that is lower.
    fn hold_window(&mut self) {
        if let Some(w) = self.window {
            self.settings.request_budget = match self.configured_budget {
                0 => w.budget,
                c => c.min(w.budget),
            };
        }
    }

    /// The lifetime, in seconds, of the prompt cache the agent's requests ask for, when they say
    /// ([`stated_cache_ttl`]: an Anthropic `cache_control` of `"ttl": "1h"` is 3600, OpenAI's
    /// `prompt_cache_retention` of `"24h"` 86400): it replaces the profile's `cache_ttl` from now on.
    pub fn set_cache_ttl(&mut self, seconds: u64) {
        self.settings.cache_ttl = seconds;
    }

    /// The next request of a live conversation — what an agent loop, the Python `Compactor` and the proxy call
    /// before each model call: the cache lifetime the request asks for is taken in (see [`NextRequest`]), then
    /// the request is compacted as sent at `sent_at` (now, unless the caller says). `conv`'s messages from
    /// `next.first_new` on were appended since the previous request.
    pub fn next_request(&mut self, conv: &Conversation, next: NextRequest) -> Report {
        self.take_cache_ttl(conv, &next);
        let sent_at = next.sent_at.unwrap_or_else(unix_millis);
        self.compact_at(conv, next.reported_input_tokens, Some(sent_at))
    }

    /// The cache lifetime a request asks for, taken in ([`Compactor::set_cache_ttl`]): the caller's
    /// `cache_ttl` if it has one, else the longer of the request's own fields and its new messages' marks, else
    /// the lifetime stays what it was.
    pub fn take_cache_ttl(&mut self, conv: &Conversation, next: &NextRequest) {
        let stated = stated_cache_ttl(conv, next.first_new).max(next.requested_cache_ttl);
        if let Some(ttl) = next.cache_ttl.or(stated) {
            self.set_cache_ttl(ttl);
        }
    }

    /// Decide about this request. `reported_input_tokens` are the input tokens the provider reported for the
    /// previous call (the seeds' trigger); without them the estimate of this request is used.
    pub fn compact(&mut self, conv: &Conversation, reported_input_tokens: Option<usize>) -> Report {
        self.compact_at(conv, reported_input_tokens, None)
    }

    /// [`Compactor::compact`] for a request sent at `sent_at` (milliseconds since the Unix epoch; `None`: not
    /// known). When more than the profile's `cache_ttl` has passed since the previous request whose time was
    /// given, the provider's cache has expired: nothing of the request is cached, so no cut makes the provider
    /// write anything it would not write anyway, and the payback rule makes every cut waiting for its turn. A
    /// live agent passes the time it sends each request; a replay, the time its log recorded.
    pub fn compact_at(
        &mut self,
        conv: &Conversation,
        reported_input_tokens: Option<usize>,
        sent_at: Option<u64>,
    ) -> Report {
        let expired = match (self.last_sent_at, sent_at) {
            (Some(last), Some(now)) => cache_expired(last, now, self.settings.cache_ttl),
            _ => false,
        };
        if sent_at.is_some() {
            self.last_sent_at = sent_at;
        }
        self.expired_requests += usize::from(expired);
        // what the provider counted of the previous request measures again the rate at which a learned window
        // comes to this compactor's count
        if let Some(theirs) = reported_input_tokens {
            let measured = (self.window).and_then(|w| w.at_rate(self.sizes[1], theirs));
            if let (Some(w), Some(budget)) = (&mut self.window, measured) {
                w.budget = budget;
                self.hold_window();
            }
        }
        self.reported_before_last = reported_input_tokens;
        // what the previous call sent is what the provider has cached (none of it, when the history is new or
        // the cache has expired)
        let previous = self.resumed_cached.take().unwrap_or(self.state.messages);
        let cached = if conv.messages.len() >= previous && !expired {
            previous
        } else {
            0
        };
        self.ingest(conv);
        self.state.cached_messages = cached;
        let mut new_blocks = Vec::new();
        if self.settings.max_tool_result_chars > 0 {
            self.cap_new_results(conv, &mut new_blocks);
        }
        // what sending everything sends, and this request without new cuts: the regret bound's allowance
        let uncompacted = self.state.base_tokens + self.state.message_tokens;
        let none = RequestTokens {
            read: if cached > 0 {
                self.ledger.previous_uncompacted
            } else {
                0
            },
            total: uncompacted,
        };
        // (with `cache_write_premium = 0` the cache's costs are not counted: every cut is made at once)
        let bound = self
            .settings
            .max_regret
            .filter(|_| self.settings.cache_write_premium > 0.0);
        self.allowance = bound.map(|share| {
            let uncut = RequestTokens {
                read: self.read_before(cached),
                total: self.current_tokens(),
            };
            self.ledger
                .allowance(write_in_reads(self.settings.cache_ttl), share, none, uncut)
        });
        let input_tokens = reported_input_tokens.unwrap_or_else(|| self.current_tokens());
        let triggered = match self.settings.trigger {
            Trigger::Always => true,
            Trigger::Budget => self.settings.budget > 0 && input_tokens > self.settings.budget,
        };
        let held_back = if triggered {
            self.run_rules(conv, &mut new_blocks)
        } else {
            None
        };
        // a request written whole anyway is where old reads go for free
        if expired {
            self.leave_out_cold_reads(conv, &mut new_blocks);
        }
        // the request budget holds before anything else
        self.hold_budget(conv, &mut new_blocks);
        self.drop = drop_range(conv, self.settings.max_conversation_messages);
        let dropped_tokens: usize = self.drop.clone().map_or(0, |r| {
            conv.messages[r]
                .iter()
                .map(|m| count_message(self.estimator.as_ref(), m))
                .sum()
        });
        let first_changed_message = new_blocks.iter().map(|b| b.message).min();
        // the request as sent, into the ledger: it reads what the previous one sent up to the first change
        let unchanged = if self.drop.is_some() {
            0
        } else {
            first_changed_message.unwrap_or(cached).min(cached)
        };
        let sent = RequestTokens {
            read: self.read_before(unchanged),
            total: self.current_tokens().saturating_sub(dropped_tokens),
        };
        self.ledger
            .settle(write_in_reads(self.settings.cache_ttl), none, sent);
        let report = Report {
            profile: self.settings.profile.clone(),
            input_tokens,
            input_tokens_reported: reported_input_tokens.is_some(),
            triggered,
            tokens_before: self.state.base_tokens + self.state.message_tokens,
            tokens_after: self.current_tokens().saturating_sub(dropped_tokens),
            compacted_total: self.replaced,
            first_changed_message: first_changed_message.or(self.drop.as_ref().map(|r| r.start)),
            dropped_messages: self.drop.as_ref().map_or(0, |r| r.len()),
            budget: match self.settings.trigger {
                Trigger::Budget => self.settings.budget,
                Trigger::Always => 0,
            },
            new_blocks,
            held_back,
            cache_expired: expired,
        };
        if let Some(note) = report.note() {
            tracing::info!(target: "ctxfit", "{note}");
        }
        self.sizes = [self.sizes[1], report.tokens_after + self.unseen];
        report
    }

    /// Compact a whole recorded history as a live agent would have, request by request: the history up to each
    /// assistant message is compacted in turn (each request's budget trigger sees the previous request's
    /// compacted estimate), and then the whole history as the next request, with `reported_input_tokens` if the
    /// caller has them. The decisions are exactly those a live agent running this profile would have made, so
    /// the projection of `conv` afterwards is, byte for byte, what it would send next. The report lists every
    /// block changed along the way.
    pub fn compact_history(
        &mut self,
        conv: &Conversation,
        reported_input_tokens: Option<usize>,
    ) -> Report {
        self.compact_history_at(conv, reported_input_tokens, &[])
    }

    /// [`Compactor::compact_history`] with the time each message was written (milliseconds since the Unix epoch,
    /// one per message, `None` where unknown; an empty slice: none known), as an imported log records them: each
    /// request is taken as sent when the latest of its messages with a time was written, as
    /// [`Compactor::compact_at`] is told by a live agent — the whole history too, as the next request.
    pub fn compact_history_at(
        &mut self,
        conv: &Conversation,
        reported_input_tokens: Option<usize>,
        times: &[Option<u64>],
    ) -> Report {
        let mut request = Conversation {
            messages: Vec::with_capacity(conv.messages.len()),
            ..Conversation::new(conv.format)
        };
        request.envelope = conv.envelope;
        request.system.clone_from(&conv.system);
        request.tools.clone_from(&conv.tools);
        request.extra.clone_from(&conv.extra);
        let mut previous = None;
        let mut changed = Vec::new();
        // the input tokens of the last request that triggered compaction, for the note
        let mut last_trigger = None;
        // when the latest message so far with a time was written
        let mut latest = None;
        for (mi, msg) in conv.messages.iter().enumerate() {
            if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
                let report = self.compact_at(&request, previous, latest);
                previous = Some(report.tokens_after);
                if report.triggered {
                    last_trigger = Some((report.input_tokens, report.input_tokens_reported));
                }
                changed.extend(report.new_blocks);
            }
            latest = times.get(mi).copied().flatten().or(latest);
            request.messages.push(msg.clone());
        }
        drop(request);
        let mut report = self.compact_at(conv, reported_input_tokens.or(previous), latest);
        report.input_tokens_reported = reported_input_tokens.is_some();
        if let (false, Some((tokens, reported))) = (report.triggered, last_trigger) {
            report.triggered = true;
            report.input_tokens = tokens;
            report.input_tokens_reported = reported;
        }
        changed.append(&mut report.new_blocks);
        report.first_changed_message = changed
            .iter()
            .map(|b| b.message)
            .min()
            .or(self.drop.as_ref().map(|r| r.start));
        report.new_blocks = changed;
        report
    }
}
