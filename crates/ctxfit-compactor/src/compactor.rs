//! The orchestrator: ingest appended messages, trigger, ask the rules about stale results oldest first, keep
//! every decision sticky, and project or apply the result.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolCallIndex, Value};
use ctxfit_retention::{
    content_chars, ends_with_marker, line_key, record_member_line, record_members,
    truncate_content, Decision, Registry, ResultIndex, ResultRef, RetentionRule, RuleContext,
    SameTool, ShownLines, WrappedOutput,
};
use ctxfit_tokens::conversation::count_block;
use ctxfit_tokens::conversation::MESSAGE_OVERHEAD;
use ctxfit_tokens::{
    count_message, count_preamble, count_tool_result, BudgetError, BudgetStatus, TokenEstimator,
};

use crate::aliases::ToolKinds;
use crate::ledger::{Ledger, RequestTokens};
use crate::policy::{Settings, Trigger};
use crate::report::{Action, BlockReport, HeldBack, HoldReason, Report};
use crate::retrieval::{retrieval_trailer, with_trailer};

mod budget;
pub use budget::BUDGET_RULE;

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

/// The compactor's per-kind result lists, as the rules see them.
struct ByKind<'a>(&'a HashMap<String, Vec<ResultRef>>);

impl ResultIndex for ByKind<'_> {
    fn results_of(&self, kind: &str) -> &[ResultRef] {
        self.0.get(kind).map_or(&[], Vec::as_slice)
    }
}

/// Every line that is final in the request (the system prompt, message text, tool-call inputs, decided results,
/// and the replacements of cuts held back, whose lines the original holds until the cut is made), counted by
/// key: what rules see as [`ShownLines`]. Nothing final leaves the request but under a request budget, so lines
/// leave the index only while a held cut's rule is asked again (it must not see its own lines as shown
/// elsewhere) and when the budget cuts further what was final (`budget.rs`) — and when the profile drops messages
/// from the front, the index stays empty.
#[derive(Default)]
struct ShownIndex {
    enabled: bool,
    lines: HashMap<u64, u32>,
}

impl ShownIndex {
    /// Call `f` with the key of each line of `text` as the model reads it (the output inside a tool's JSON
    /// wrapper, [`WrappedOutput`]) — and, when it is a record on one line, of each of its members after the first
    /// ([`record_member_line`]).
    fn each_key(text: &str, mut f: impl FnMut(u64)) {
        let wrapped = WrappedOutput::parse(text);
        let text = wrapped.as_ref().map_or(text, |w| w.output());
        text.lines().filter_map(line_key).for_each(&mut f);
        if let Some(members) = record_members(text) {
            let first = &text[members[0].clone()];
            for m in &members[1..] {
                if let Some(k) = line_key(&record_member_line(first, &text[m.clone()])) {
                    f(k);
                }
            }
        }
    }

    fn add_text(&mut self, text: &str) {
        if !self.enabled {
            return;
        }
        Self::each_key(text, |k| *self.lines.entry(k).or_default() += 1);
    }

    fn add_content(&mut self, content: &Content) {
        for text in content.blocks.iter().filter_map(Block::as_text) {
            self.add_text(text);
        }
    }

    /// Undo `add_content` (a held cut asked again).
    fn remove_content(&mut self, content: &Content) {
        if !self.enabled {
            return;
        }
        for text in content.blocks.iter().filter_map(Block::as_text) {
            Self::each_key(text, |k| {
                if let Some(n) = self.lines.get_mut(&k) {
                    *n = n.saturating_sub(1);
                }
            });
        }
    }

    fn add_value(&mut self, value: &Value) {
        match value {
            Value::String(s) => self.add_text(s),
            Value::Array(a) => a.iter().for_each(|v| self.add_value(v)),
            Value::Object(m) => m.values().for_each(|v| self.add_value(v)),
            _ => {}
        }
    }
}

impl ShownLines for ShownIndex {
    fn is_shown(&self, line: &str) -> bool {
        line_key(line).is_some_and(|k| self.lines.get(&k).is_some_and(|n| *n > 0))
    }
}

/// Keep a result as it is for good: never asked about again, and its lines are shown from now on.
fn keep_for_good(
    kept: &mut HashSet<ResultKey>,
    shown: &mut ShownIndex,
    key: &ResultKey,
    content: &Content,
) {
    kept.insert(key.clone());
    shown.add_content(content);
}

/// A result as the rules see it: its own content, or the output text inside a tool's JSON wrapper
/// ([`WrappedOutput`]), whose replacement goes back into the wrapper.
enum View<'c> {
    Plain(&'c Content),
    Wrapped(WrappedOutput, Content),
}

impl<'c> View<'c> {
    fn of(content: &'c Content) -> View<'c> {
        match WrappedOutput::of_content(content) {
            Some(w) => {
                let output = w.output_content();
                View::Wrapped(w, output)
            }
            None => View::Plain(content),
        }
    }

    fn content(&self) -> &Content {
        match self {
            View::Plain(c) => c,
            View::Wrapped(_, c) => c,
        }
    }

    /// A replacement of the viewed content as a replacement of the result.
    fn back(&self, original: &Content, replacement: Content) -> Content {
        match self {
            View::Plain(_) => replacement,
            View::Wrapped(w, _) => w.wrap_content(original, replacement),
        }
    }
}

/// What a sticky decision is attached to: the tool_use_id and which result with that id it is (0 for the first).
/// Real agents reuse ids (SWE-agent, tau-bench), so the id alone does not name one result.
type ResultKey = (String, u32);

/// Which new results can change a history-dependent rule's `Keep`.
#[derive(Debug, Clone)]
enum WaitingOn {
    /// Results of this group of this rule.
    Group(usize, String),
    /// Results of the result's own kind and these kinds.
    Kinds(&'static [&'static str]),
    /// Any result.
    Any,
}

/// A decision about to be committed, or a cut held back waiting for its turn.
#[derive(Clone)]
struct Change {
    content: Content,
    tokens_after: usize,
    chars_before: usize,
    rule: &'static str,
    action: Action,
    clear_input: bool,
    /// The count of tool results in the history when its rule was asked (last), for a cut held back.
    asked_at: usize,
}

/// Whether a held cut's rule, last asked when the history had `asked_at` tool results, is asked again with
/// `results` in it: once the results have grown by a quarter. Asking at every request would make each request
/// cost the size of everything held, and a long history holds many cuts too small to pay for rewriting the long
/// cached tail after them; asking as the history grows geometrically asks each a few times over a session, and
/// still lets it leave out what later results showed.
fn reask_due(asked_at: usize, results: usize) -> bool {
    results > asked_at && 4 * results >= 5 * asked_at
}

/// What the rules decide about a pending result.
enum Asked {
    /// Keep it as it is, for good.
    Keep,
    /// Kept by a history-dependent rule: ask again once this many more results it depends on have arrived.
    Wait(WaitingOn, usize),
    Cut(Change),
}

/// What replaces a block in the request.
#[derive(Debug, Clone)]
enum Replacement {
    /// The sticky content decided for this result.
    Result(ResultKey),
    /// The call's input, cleared.
    ClearInput,
}

/// A decision that, once made, is repeated byte for byte in every later request.
#[derive(Debug, Clone)]
struct Sticky {
    /// New content of the tool result (`None` when only the call's input was cleared).
    content: Option<Content>,
    clear_input: bool,
    rule: String,
    chars_before: usize,
    chars_after: usize,
    tokens_before: usize,
    tokens_after: usize,
    input_tokens_saved: usize,
}

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

/// What has been read of the history so far (append-only; rebuilt when the history gets shorter).
#[derive(Default)]
struct State {
    index: ToolCallIndex,
    messages: usize,
    base_tokens: usize,
    message_tokens: usize,
    /// Tokens of each message as the request sends it (source minus sticky savings).
    sent_tokens: Vec<usize>,
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
}

/// What a compactor must remember across a restart to send the same bytes: its decisions, and the cuts waiting
/// for their turn. Saved with
/// [`Compactor::save`], serialisable with serde (JSON, or any serde format), put back with
/// [`Compactor::restore`]. Everything else it knows is rebuilt from the history on the next request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedState {
    /// The format of this structure; [`SavedState::VERSION`] today.
    pub version: u32,
    /// The profile the decisions were made under: restoring into another one is refused.
    pub profile: String,
    /// Messages of the last request compacted before the save (what the provider has cached).
    pub messages: usize,
    /// Results replaced for good, in history order.
    pub decided: Vec<SavedDecision>,
    /// Results a rule chose to keep for good: (tool_use_id, which result with that id, from 0).
    pub kept: Vec<(String, u32)>,
    pub compacted_results: usize,
    /// When the last request before the save was sent, in milliseconds since the Unix epoch, if the caller said
    /// ([`Compactor::compact_at`]): after a restart, whether the provider's cache has expired since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sent_at: Option<u64>,
    /// Cuts a rule chose that wait for their turn (the payback rule, the reclaim checks), in history order: the
    /// replacement was settled when the rule was asked, and is made as it is when the cut pays back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<SavedHeld>,
    /// Requests before the save that found the provider's cache expired (the payback rule's forecast).
    #[serde(default)]
    pub expired_requests: usize,
    /// What the conversation had cost by the save against sending everything (the regret bound's accounting).
    #[serde(default)]
    pub ledger: Ledger,
}

impl SavedState {
    pub const VERSION: u32 = 1;
}

/// One sticky decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedDecision {
    pub tool_use_id: String,
    /// Which result with this id (ids are reused by some agents), from 0.
    pub nth: u32,
    /// The result's new content, as `Content::to_json` writes it (`None` when only the call's input was cleared).
    pub content: Option<Value>,
    pub clear_input: bool,
    pub rule: String,
    pub chars_before: usize,
    pub chars_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub input_tokens_saved: usize,
}

/// One cut waiting for its turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedHeld {
    pub tool_use_id: String,
    /// Which result with this id, from 0.
    pub nth: u32,
    /// The result's content once cut, as `Content::to_json` writes it.
    pub content: Value,
    /// The rule that chose it (one of the profile's).
    pub rule: String,
    pub action: Action,
    pub clear_input: bool,
    pub chars_before: usize,
    pub tokens_after: usize,
    /// The count of tool results in the history when its rule was last asked (it is asked again as the history
    /// grows).
    pub asked_at: usize,
}

/// Why a saved state cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "saved state version {found} is not supported (this build reads version {})",
        SavedState::VERSION
    )]
    Version { found: u32 },
    #[error("saved state is of profile `{saved}`, this compactor runs `{running}`")]
    Profile { saved: String, running: String },
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

    /// Its decisions, to save across a restart (see [`SavedState`]).
    pub fn save(&self) -> SavedState {
        let mut decided: Vec<SavedDecision> = self
            .decided
            .iter()
            .map(|((id, nth), d)| SavedDecision {
                tool_use_id: id.clone(),
                nth: *nth,
                content: d.content.as_ref().map(Content::to_json),
                clear_input: d.clear_input,
                rule: d.rule.clone(),
                chars_before: d.chars_before,
                chars_after: d.chars_after,
                tokens_before: d.tokens_before,
                tokens_after: d.tokens_after,
                input_tokens_saved: d.input_tokens_saved,
            })
            .collect();
        decided.sort_by(|a, b| (&a.tool_use_id, a.nth).cmp(&(&b.tool_use_id, b.nth)));
        let mut kept: Vec<(String, u32)> = self.kept.iter().cloned().collect();
        kept.sort();
        let mut held: Vec<SavedHeld> = self
            .held
            .iter()
            .map(|((id, nth), c)| SavedHeld {
                tool_use_id: id.clone(),
                nth: *nth,
                content: c.content.to_json(),
                rule: c.rule.to_owned(),
                action: c.action,
                clear_input: c.clear_input,
                chars_before: c.chars_before,
                tokens_after: c.tokens_after,
                asked_at: c.asked_at,
            })
            .collect();
        held.sort_by(|a, b| (&a.tool_use_id, a.nth).cmp(&(&b.tool_use_id, b.nth)));
        SavedState {
            version: SavedState::VERSION,
            profile: self.settings.profile.clone(),
            messages: self.state.messages,
            decided,
            kept,
            compacted_results: self.compacted_results,
            last_sent_at: self.last_sent_at,
            held,
            expired_requests: self.expired_requests,
            ledger: self.ledger.clone(),
        }
    }

    /// Put back the decisions of a saved state, into a compactor built with the same profile that has not
    /// compacted yet. Its next [`Compactor::compact`] rebuilds the rest from the history, and from then on it
    /// sends, byte for byte, what the compactor that was saved would have sent.
    pub fn restore(&mut self, saved: SavedState) -> Result<(), RestoreError> {
        if saved.version != SavedState::VERSION {
            return Err(RestoreError::Version {
                found: saved.version,
            });
        }
        if saved.profile != self.settings.profile {
            return Err(RestoreError::Profile {
                saved: saved.profile,
                running: self.settings.profile.clone(),
            });
        }
        self.decided = saved
            .decided
            .into_iter()
            .map(|d| {
                (
                    (d.tool_use_id, d.nth),
                    Sticky {
                        content: d.content.map(Content::from_json),
                        clear_input: d.clear_input,
                        rule: d.rule,
                        chars_before: d.chars_before,
                        chars_after: d.chars_after,
                        tokens_before: d.tokens_before,
                        tokens_after: d.tokens_after,
                        input_tokens_saved: d.input_tokens_saved,
                    },
                )
            })
            .collect();
        self.replaced = self
            .decided
            .values()
            .filter(|d| d.content.is_some())
            .count();
        self.kept = saved.kept.into_iter().collect();
        // (a cut whose rule this profile no longer has is asked again)
        let rule_named = |name: &str| {
            self.rules
                .iter()
                .map(|r| r.rule.name())
                .find(|n| *n == name)
        };
        self.held = saved
            .held
            .into_iter()
            .filter_map(|h| {
                let change = Change {
                    content: Content::from_json(h.content),
                    tokens_after: h.tokens_after,
                    chars_before: h.chars_before,
                    rule: rule_named(&h.rule)?,
                    action: h.action,
                    clear_input: h.clear_input,
                    asked_at: h.asked_at,
                };
                Some(((h.tool_use_id, h.nth), change))
            })
            .collect();
        self.compacted_results = saved.compacted_results;
        self.expired_requests = saved.expired_requests;
        self.ledger = saved.ledger;
        self.state = State::default();
        self.resumed_cached = Some(saved.messages);
        self.last_sent_at = saved.last_sent_at;
        Ok(())
    }

    /// What the conversation has cost so far against sending everything (the regret bound's accounting; it
    /// changes at every request, and [`Compactor::save`] carries it).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The token guard on the request a [`Report`] describes, as compacted (`tokens_after`): an error over the
    /// profile's `request_budget` — do not send it — and a warning (also logged) over `warning_threshold`.
    pub fn check_request(&self, report: &Report) -> Result<BudgetStatus, BudgetError> {
        self.settings.token_guard().check(report.tokens_after)
    }

    fn excluded(&self, site: &ResultSite) -> bool {
        self.settings
            .exclude_tools
            .iter()
            .any(|t| *t == site.tool || *t == site.kind)
    }

    fn ingest(&mut self, conv: &Conversation) {
        if conv.messages.len() < self.state.messages || self.state.messages == 0 {
            self.state = State {
                base_tokens: count_preamble(self.estimator.as_ref(), conv),
                assistants_before: vec![0],
                shown: ShownIndex {
                    enabled: self.settings.max_conversation_messages == 0,
                    ..ShownIndex::default()
                },
                ..State::default()
            };
            // the system prompt is sent with every request
            if let Some(system) = &conv.system {
                self.state.shown.add_content(system);
            }
        }
        let st = &mut self.state;
        st.index.update(conv);
        let est = self.estimator.as_ref();
        for (mi, msg) in conv.messages.iter().enumerate().skip(st.messages) {
            st.message_tokens += MESSAGE_OVERHEAD;
            st.sent_tokens.push(MESSAGE_OVERHEAD);
            let before = *st.assistants_before.last().unwrap_or(&0);
            st.assistants_before
                .push(before + usize::from(ctxfit_model::begins_response(&conv.messages, mi)));
            for (bi, block) in msg.content.blocks.iter().enumerate() {
                let tokens = count_block(est, block);
                st.message_tokens += tokens;
                st.sent_tokens[mi] += tokens;
                match block {
                    Block::Text(t) => st.shown.add_text(&t.text),
                    // a cleared input is not final
                    Block::ToolUse(u) if !self.settings.clear_tool_inputs => {
                        st.shown.add_value(&u.input)
                    }
                    _ => {}
                }
                let Block::ToolResult(r) = block else {
                    continue;
                };
                let site = st.index.call_before(&r.tool_use_id, (mi, bi));
                let tool = site.map_or("", |c| c.name.as_str()).to_owned();
                let null = Value::Null;
                let call = site.map(|c| (c.message, c.block));
                let input = call_input(conv, call).unwrap_or(&null);
                let kind = self.kinds.kind_of(&tool, input).to_owned();
                let ri = st.results.len();
                let at = ResultRef {
                    result: (mi, bi),
                    call,
                };
                for (i, bound) in self.rules.iter().enumerate() {
                    if bound.rule.depends_on_history() && bound.handles(&kind, &tool) {
                        if let Some(group) = bound.rule.group_key(&tool, input) {
                            st.groups.entry((i, group)).or_default().push(at);
                        }
                    }
                }
                let seen = st.seen_ids.entry(r.tool_use_id.clone()).or_default();
                let key = (r.tool_use_id.clone(), *seen);
                *seen += 1;

                match st.by_kind.get_mut(&kind) {
                    Some(refs) => refs.push(at),
                    None => {
                        st.by_kind.insert(kind.clone(), vec![at]);
                    }
                }
                st.last_result_message = Some(mi);
                if let Some(sticky) = self.decided.get(&key) {
                    if let Some(c) = &sticky.content {
                        st.shown.add_content(c);
                    }
                    st.saved +=
                        sticky.tokens_before - sticky.tokens_after + sticky.input_tokens_saved;
                    st.sent_tokens[mi] -= sticky.tokens_before - sticky.tokens_after;
                    if let Some((cm, _)) = call {
                        st.sent_tokens[cm] -= sticky.input_tokens_saved;
                    }
                    st.replaced
                        .entry(mi)
                        .or_default()
                        .push((bi, Replacement::Result(key.clone())));
                    if let (true, Some((cm, cb))) = (sticky.clear_input, call) {
                        st.replaced
                            .entry(cm)
                            .or_default()
                            .push((cb, Replacement::ClearInput));
                    }
                } else if self.kept.contains(&key) {
                    st.shown.add_content(&r.content);
                } else {
                    if let Some(change) = self.held.get(&key) {
                        st.shown.add_content(&change.content);
                    }
                    st.pending.push(ri);
                }
                st.results.push(ResultSite {
                    message: mi,
                    block: bi,
                    call,
                    key,
                    tool_use_id: r.tool_use_id.clone(),
                    tool,
                    kind,
                    tokens,
                });
            }
        }
        st.messages = conv.messages.len();
    }

    /// Tokens the provider reads from its cache when the first `messages` messages are what the previous request
    /// sent (none: nothing is cached).
    fn read_before(&self, messages: usize) -> usize {
        if messages == 0 {
            return 0;
        }
        self.state.base_tokens + self.state.sent_tokens[..messages].iter().sum::<usize>()
    }

    /// Tokens of the request as compacted so far.
    fn current_tokens(&self) -> usize {
        self.state.base_tokens + self.state.message_tokens - self.state.saved
    }

    /// The lifetime, in seconds, of the prompt cache the agent's requests ask for, when they say
    /// ([`stated_cache_ttl`]: an Anthropic `cache_control` of `"ttl": "1h"` is 3600, OpenAI's
    /// `prompt_cache_retention` of `"24h"` 86400): it replaces the profile's `cache_ttl` from now on.
    pub fn set_cache_ttl(&mut self, seconds: u64) {
        self.settings.cache_ttl = seconds;
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
            self.ledger.allowance(share, none, uncut)
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
        self.ledger.settle(none, sent);
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

    fn result_block<'c>(
        conv: &'c Conversation,
        site: &ResultSite,
    ) -> Option<&'c ctxfit_model::ToolResult> {
        match conv.block(site.message, site.block)? {
            Block::ToolResult(r) => Some(r),
            _ => None,
        }
    }

    /// The line a result cut under this profile ends with, when it has a retrieval tool.
    fn retrieval_trailer(&self, key: &ResultKey) -> Option<String> {
        let tool = self.settings.retrieval_tool.as_deref()?;
        Some(retrieval_trailer(tool, &key.0, key.1))
    }

    fn cap_new_results(&mut self, conv: &Conversation, new_blocks: &mut Vec<BlockReport>) {
        let cap = self.settings.max_tool_result_chars;
        let pending = std::mem::take(&mut self.state.pending);
        let mut still = Vec::with_capacity(pending.len());
        for ri in pending {
            let site = self.state.results[ri].clone();
            let Some(result) = Self::result_block(conv, &site) else {
                continue;
            };
            let trailer = self.retrieval_trailer(&site.key);
            let view = View::of(&result.content);
            let already_capped = match trailer.as_deref() {
                Some(t) => ends_with_marker(view.content(), &format!("{INGESTION_MARKER}{t}")),
                None => ends_with_marker(view.content(), INGESTION_MARKER),
            };
            if already_capped {
                // capped by an earlier pass over this history: as final as if capped here
                self.keep_result_for_good(conv, ri);
                continue;
            }
            let est = self.estimator.as_ref();
            let cut = truncate_content(view.content(), cap, INGESTION_MARKER)
                .map(|c| view.back(&result.content, with_trailer(c, trailer.as_deref())))
                .map(|c| (count_tool_result(est, &c), c));
            match cut {
                Some((tokens_after, cut))
                    if content_chars(&cut) < content_chars(&result.content)
                        && tokens_after <= site.tokens =>
                {
                    self.state.shown.add_content(&cut);
                    let change = Change {
                        content: cut,
                        tokens_after,
                        chars_before: content_chars(&result.content),
                        rule: "max_tool_result_chars",
                        action: Action::Replaced,
                        clear_input: false,
                        asked_at: 0,
                    };
                    new_blocks.extend(self.commit(conv, &site, change));
                }
                // a capped result is final: compacting it again later would break the cached prefix
                _ => still.push(ri),
            }
        }
        self.state.pending = still;
    }

    /// Ask the rules about the pending results and make their cuts, unless the reclaim checks hold the batch
    /// back (then said in the return value).
    ///
    /// A cut the checks hold back is settled: it waits in `held`, and later requests test its timing with that
    /// replacement, asking its rule again only as the history grows ([`reask_due`]) — so a request costs what was
    /// appended since the previous one rather than everything held. When it is made, its rule is asked once more,
    /// so that it leaves out what was shown while it waited.
    fn run_rules(
        &mut self,
        conv: &Conversation,
        new_blocks: &mut Vec<BlockReport>,
    ) -> Option<HeldBack> {
        let total_assistants = *self.state.assistants_before.last().unwrap_or(&0);
        let keep_from = self
            .state
            .results
            .len()
            .saturating_sub(self.settings.keep_last_tool_uses);
        let latest_group = self
            .state
            .last_result_message
            .map(|m| self.state.assistants_before[m]);
        // the cuts of this request's batch: (result, its tokens after the cut); each one's change is in `held`
        let mut tentative: Vec<(usize, usize)> = Vec::new();
        let mut estimate = self.current_tokens();
        let target = self.settings.target;
        let pending = std::mem::take(&mut self.state.pending);
        let mut still = Vec::with_capacity(pending.len());
        let mut rest = pending.into_iter();
        for ri in rest.by_ref() {
            let site = &self.state.results[ri];
            let turns_ago = total_assistants - self.state.assistants_before[site.message + 1];
            let in_latest_group = self.settings.keep_latest_result_message
                && latest_group == Some(self.state.assistants_before[site.message]);
            if turns_ago == 0 || ri >= keep_from || in_latest_group {
                // too new, and so is every later result: they wait for a later request
                still.push(ri);
                break;
            }
            if self
                .state
                .waiting
                .get(&ri)
                .is_some_and(|&at| self.relevant_results(ri) < at)
            {
                // not enough has arrived since it was asked to change the rule's mind
                still.push(ri);
                continue;
            }
            let results = self.state.results.len();
            let settled = self
                .held
                .get(&site.key)
                .map(|c| (c.tokens_after, reask_due(c.asked_at, results)));
            let tokens_after = match settled {
                // a cut held back: settled, only its timing waits
                Some((tokens_after, false)) => tokens_after,
                Some((_, true)) => self.reask_held(conv, ri, turns_ago),
                None => match self.ask(conv, ri, turns_ago) {
                    Asked::Keep => {
                        self.keep_result_for_good(conv, ri);
                        continue;
                    }
                    Asked::Wait(on, after) => {
                        self.state.waiting_on.insert(ri, on);
                        let ask_again_at = self.relevant_results(ri) + after;
                        self.state.waiting.insert(ri, ask_again_at);
                        still.push(ri);
                        continue;
                    }
                    Asked::Cut(change) => {
                        // later results see the replacement as shown, as they will once it is made (and as a
                        // second pass over the compacted history sees it): that keeps compaction idempotent.
                        // Until it is made, the original holds these lines.
                        self.state.shown.add_content(&change.content);
                        let tokens_after = change.tokens_after;
                        self.holds += 1;
                        self.held.insert(self.state.results[ri].key.clone(), change);
                        tokens_after
                    }
                },
            };
            let site = &self.state.results[ri];
            estimate = estimate.saturating_sub(site.tokens - tokens_after);
            tentative.push((ri, tokens_after));
            if target > 0 && estimate <= target {
                break;
            }
        }
        still.extend(rest);
        // the cuts made now: all of the batch, or under the payback rule its latest ones that pay back (the
        // others wait, held); `held` says why any were not
        let (start, held) = self.batch_start(&tentative, total_assistants);
        for (ri, _) in tentative.drain(..start) {
            still.push(ri);
        }
        still.sort_unstable();
        self.state.pending = still;
        for (ri, _) in tentative {
            let site = self.state.results[ri].clone();
            if self
                .held
                .get(&site.key)
                .is_some_and(|c| c.asked_at < self.state.results.len())
            {
                // settled at an earlier request: asked again now it is made, so that what was shown while it
                // waited is not sent twice
                let turns_ago = total_assistants - self.state.assistants_before[site.message + 1];
                self.reask_held(conv, ri, turns_ago);
            }
            // its lines are in the index since it was tentative
            if let Some(change) = self.held.remove(&site.key) {
                new_blocks.extend(self.commit(conv, &site, change));
            }
        }
        held
    }

    /// Ask the rule of held cut `ri` again, without its own lines in the index (they are not shown elsewhere): a
    /// cut as small or smaller replaces the settled one, which stays otherwise (a rule that now keeps the result,
    /// or cuts less, does not undo it: what it left out is still shown elsewhere). Returns its tokens after the
    /// cut.
    fn reask_held(&mut self, conv: &Conversation, ri: usize, turns_ago: usize) -> usize {
        let key = self.state.results[ri].key.clone();
        let Some(mut change) = self.held.remove(&key) else {
            return self.state.results[ri].tokens;
        };
        self.state.shown.remove_content(&change.content);
        if let Asked::Cut(fresh) = self.ask(conv, ri, turns_ago) {
            if fresh.tokens_after <= change.tokens_after {
                change = fresh;
            }
        }
        change.asked_at = self.state.results.len();
        self.state.shown.add_content(&change.content);
        self.holds += 1;
        let tokens_after = change.tokens_after;
        self.held.insert(key, change);
        tokens_after
    }

    /// Keep result `ri` as it is, for good ([`keep_for_good`]).
    fn keep_result_for_good(&mut self, conv: &Conversation, ri: usize) {
        let site = &self.state.results[ri];
        if let Some(result) = Self::result_block(conv, site) {
            keep_for_good(
                &mut self.kept,
                &mut self.state.shown,
                &site.key,
                &result.content,
            );
        }
    }

    /// What the profile's rules decide about pending result `ri`, `turns_ago` requests after it arrived.
    fn ask(&self, conv: &Conversation, ri: usize, turns_ago: usize) -> Asked {
        let site = &self.state.results[ri];
        let Some(result) = Self::result_block(conv, site) else {
            return Asked::Keep;
        };
        let null = Value::Null;
        let trailer = self.retrieval_trailer(&site.key);
        // what the rules see: the output itself when the tool wrapped it in JSON
        let view = View::of(&result.content);
        let already_cut = trailer
            .as_deref()
            .is_some_and(|t| ends_with_marker(view.content(), t))
            || (self.settings.request_budget > 0
                && view
                    .content()
                    .blocks
                    .iter()
                    .filter_map(Block::as_text)
                    .any(|t| t.contains(budget::BUDGET_MARK)));
        if self.excluded(site) || already_cut {
            // (already cut: by an earlier pass over this history, as final as if cut here)
            return Asked::Keep;
        }
        let content = view.content();
        let chars = content_chars(&result.content);
        // (the output inside a wrapper is counted apart; a plain result is what it views)
        let view_chars = match &view {
            View::Plain(_) => chars,
            View::Wrapped(_, output) => content_chars(output),
        };
        let by_kind = ByKind(&self.state.by_kind);
        let ctx = RuleContext {
            tool_name: &site.tool,
            tool_kind: &site.kind,
            tool_use_id: &site.tool_use_id,
            input: call_input(conv, site.call).unwrap_or(&null),
            content,
            is_error: result.is_error == Some(true),
            message_index: site.message,
            block_index: site.block,
            turns_ago,
            chars: view_chars,
            tokens: site.tokens,
            newer_results: self.state.results.len() - ri - 1,
            same_tool: SameTool::new(by_kind.results_of(&site.kind), conv),
            group: SameTool::new(&[], conv),
            conversation: conv,
            results: &by_kind,
            shown: &self.state.shown,
        };
        // the first rule that handles the tool and does not defer decides
        let mut decided_by = None;
        for (i, bound) in self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.handles(&site.kind, &site.tool))
        {
            let group = bound
                .rule
                .group_key(&site.tool, ctx.input)
                .and_then(|key| self.state.groups.get(&(i, key)))
                .map_or(&[][..], Vec::as_slice);
            let ctx = RuleContext {
                group: SameTool::new(group, conv),
                ..ctx
            };
            match bound.rule.decide(&ctx) {
                Decision::Defer => continue,
                decision => {
                    let after = match decision {
                        Decision::Keep if bound.rule.depends_on_history() => {
                            bound.rule.reconsider_after(&ctx).max(1)
                        }
                        _ => 1,
                    };
                    decided_by = Some((i, bound, decision, after));
                    break;
                }
            }
        }
        let Some((rule_index, bound, decision, reconsider_after)) = decided_by else {
            return Asked::Keep;
        };
        // a stand-in refused for being larger than the result would be refused again: the rule's stand-in
        // for a result does not shrink as the history grows, and asking on every request is quadratic
        let kept_by_the_rule = matches!(decision, Decision::Keep | Decision::Defer);
        let replacement = match decision {
            Decision::Keep | Decision::Defer => None,
            Decision::Replace(c) => Some((c, Action::Replaced)),
            Decision::Pointer(text) => Some((Content::text(text), Action::Pointer)),
        }
        // with a retrieval tool, how to get the original back through it; in the tool's JSON wrapper if
        // it had one
        .map(|(c, action)| {
            let c = with_trailer(c, trailer.as_deref());
            (view.back(&result.content, c), action)
        })
        .map(|(c, action)| (count_tool_result(self.estimator.as_ref(), &c), c, action))
        // a block never grows (in characters or tokens): a larger "replacement" keeps the original
        .filter(|(tokens, c, _)| content_chars(c) < chars && *tokens <= site.tokens);
        let Some((tokens_after, content, action)) = replacement else {
            if bound.rule.depends_on_history() && kept_by_the_rule {
                let on = match bound.rule.group_key(&site.tool, ctx.input) {
                    Some(key) => WaitingOn::Group(rule_index, key),
                    None => match bound.rule.reconsider_on_kinds() {
                        Some(kinds) => WaitingOn::Kinds(kinds),
                        None => WaitingOn::Any,
                    },
                };
                return Asked::Wait(on, reconsider_after);
            }
            return Asked::Keep;
        };
        Asked::Cut(Change {
            content,
            tokens_after,
            chars_before: chars,
            rule: bound.rule.name(),
            action,
            clear_input: self.settings.clear_tool_inputs,
            asked_at: self.state.results.len(),
        })
    }

    /// Where the cuts made this request begin in the batch (results in order), and why the ones before were
    /// held back. A batch is made whole or not at all, by `min_reclaim_tokens` and `min_reclaim_ratio` — unless
    /// the payback rule is on (`cache_write_premium`): then its latest cuts that pay back are made, with the
    /// older ones that pay for the tail they add, and the others wait for a request where they do (each request
    /// tests them again, with the cut their rule chose).
    ///
    /// Payback: cutting `reclaim` tokens from results whose first message is followed by `tail` cached tokens
    /// writes the `tail − reclaim` tokens left to the cache again instead of reading the `tail` (an extra
    /// `(1 + premium) × (tail − reclaim) − tail` cache reads), and saves `reclaim` cache reads on each request
    /// to come — or `reclaim` cache writes, `1 + premium` reads each, on a request that finds the cache expired.
    /// With `to_come = max(horizon × requests, min_horizon)` requests forecast, as many of them after a pause as
    /// were of the requests so far (`expired`), a cut pays back when
    /// `reclaim × (to_come × (1 + premium × expired / requests) + premium + 1) ≥ premium × tail`. The latest cuts
    /// that pay back are made, and older
    /// ones join them only where what they add pays for the stretch of cached tail it adds — not on the surplus
    /// of a large cut after them. (Choosing the run that pays back the most, a close variant, broke the
    /// invariant that compacting a compacted history again changes nothing; this one keeps it.)
    fn batch_start(&self, batch: &[(usize, usize)], requests: usize) -> (usize, Option<HeldBack>) {
        let settings = &self.settings;
        let premium = settings.cache_write_premium;
        let expired = self.expired_requests;
        // what a token cut saves over the requests to come, in cache reads: a read on each, and a write's premium
        // on those that will find the cache expired, as often as the requests so far did
        let so_far = requests.max(1) as f64;
        let to_come = (settings.horizon * so_far).max(settings.min_horizon as f64);
        let saved_to_come = to_come * (1.0 + premium * expired as f64 / so_far);
        // the payback test, of a whole run or of what an older cut adds to one
        let pays = |reclaim: usize, tail: usize| {
            reclaim as f64 * (saved_to_come + premium + 1.0) >= premium * tail as f64
        };
        // the regret bound: what the cut costs now, under each price model, within what the conversation earned
        let affordable = |reclaim: usize, tail: usize| {
            self.allowance.is_none_or(|allowed| {
                let extra = Ledger::extra(reclaim, tail);
                (0..extra.len()).all(|m| extra[m] <= allowed[m])
            })
        };
        let check = |reclaim: usize, tail: usize| {
            if reclaim < settings.min_reclaim_tokens {
                Some(HoldReason::MinReclaimTokens)
            } else if (reclaim as f64) < settings.min_reclaim_ratio * tail as f64 {
                Some(HoldReason::MinReclaimRatio)
            } else if premium > 0.0 && !pays(reclaim, tail) {
                Some(HoldReason::CacheWritePremium)
            } else if !affordable(reclaim, tail) {
                Some(HoldReason::RegretBound)
            } else {
                None
            }
        };
        let reclaim_of = |&(ri, tokens_after): &(usize, usize)| {
            self.state.results[ri].tokens.saturating_sub(tokens_after)
        };
        // the cached part of the request from a message on: the provider writes it again when it changes
        let cached = self.state.cached_messages;
        let tail_from = |message: usize| -> usize {
            self.state.sent_tokens[message.min(cached)..cached]
                .iter()
                .sum()
        };
        let Some(first) = batch.first() else {
            return (0, None);
        };
        if premium <= 0.0 {
            let reclaim = batch.iter().map(reclaim_of).sum();
            let held = check(reclaim, tail_from(self.state.results[first.0].message));
            let start = if held.is_some() { batch.len() } else { 0 };
            let held = held.map(|reason| HeldBack {
                results: batch.len(),
                tokens: reclaim,
                reason,
            });
            return (start, held);
        }
        // the latest run of cuts that passes (the tail grown message by message going back), reaching further back
        // only where what it adds pays for the stretch of tail it adds
        let (mut start, mut reason) = (batch.len(), None);
        let (mut reclaim, mut tail) = (0, 0);
        let mut at_start = (0, 0);
        let mut tail_start = cached;
        for k in (0..batch.len()).rev() {
            reclaim += reclaim_of(&batch[k]);
            let from = self.state.results[batch[k].0].message.min(tail_start);
            tail += self.state.sent_tokens[from..tail_start]
                .iter()
                .sum::<usize>();
            tail_start = from;
            match check(reclaim, tail) {
                None if start == batch.len() || pays(reclaim - at_start.0, tail - at_start.1) => {
                    start = k;
                    at_start = (reclaim, tail);
                }
                None => {}
                Some(r) => reason = Some(r),
            }
        }
        debug_assert_eq!(tail, tail_from(self.state.results[first.0].message));
        let held = (start > 0).then(|| HeldBack {
            results: start,
            tokens: batch[..start].iter().map(reclaim_of).sum(),
            reason: reason.unwrap_or(HoldReason::CacheWritePremium),
        });
        (start, held)
    }

    /// The count of results that could change a waiting result's decision, as recorded when it was asked.
    fn relevant_results(&self, ri: usize) -> usize {
        match self.state.waiting_on.get(&ri) {
            Some(WaitingOn::Group(rule, key)) => self
                .state
                .groups
                .get(&(*rule, key.clone()))
                .map_or(0, Vec::len),
            Some(WaitingOn::Kinds(kinds)) => {
                self.count_results_of(&self.state.results[ri].kind, kinds)
            }
            _ => self.state.results.len(),
        }
    }

    fn count_results_of(&self, own: &str, kinds: &[&str]) -> usize {
        let len = |k: &str| self.state.by_kind.get(k).map_or(0, Vec::len);
        len(own)
            + kinds
                .iter()
                .filter(|k| **k != own)
                .map(|k| len(k))
                .sum::<usize>()
    }

    /// Record a sticky decision (its lines are already in the shown index); returns what to report.
    fn commit(
        &mut self,
        conv: &Conversation,
        site: &ResultSite,
        change: Change,
    ) -> Vec<BlockReport> {
        let Change {
            content,
            tokens_after,
            chars_before,
            rule,
            action,
            clear_input,
            ..
        } = change;
        let est = self.estimator.as_ref();
        let tokens_before = site.tokens;
        let mut reports = Vec::new();
        let mut input_tokens_saved = 0;
        let mut cleared_at = None;
        if clear_input {
            // (a call whose input the wire format requires whole keeps it)
            let free = |cm: usize| ctxfit_model::responses::call_input_is_free(&conv.messages[cm]);
            if let Some((cm, cb)) = site.call.filter(|&(cm, _)| free(cm)) {
                if let Some(Block::ToolUse(u)) = conv.block(cm, cb) {
                    let mut cleared = u.clone();
                    cleared.set_input(Value::Object(Default::default()));
                    let b = count_block(est, &Block::ToolUse(u.clone()));
                    let a = count_block(est, &Block::ToolUse(cleared));
                    input_tokens_saved = b.saturating_sub(a);
                    cleared_at = Some((cm, cb, b, a));
                }
            }
        }
        let sticky = Sticky {
            chars_before,
            chars_after: content_chars(&content),
            content: Some(content),
            clear_input: cleared_at.is_some(),
            rule: rule.to_owned(),
            tokens_before,
            tokens_after,
            input_tokens_saved,
        };
        self.state.saved += tokens_before - tokens_after + input_tokens_saved;
        self.state.sent_tokens[site.message] -= tokens_before - tokens_after;
        if let Some((cm, ..)) = cleared_at {
            self.state.sent_tokens[cm] -= input_tokens_saved;
        }
        self.state
            .replaced
            .entry(site.message)
            .or_default()
            .push((site.block, Replacement::Result(site.key.clone())));
        if let Some((message, block, ..)) = cleared_at {
            self.state
                .replaced
                .entry(message)
                .or_default()
                .push((block, Replacement::ClearInput));
        }
        reports.push(BlockReport {
            message: site.message,
            block: site.block,
            tool_use_id: site.tool_use_id.clone(),
            tool: site.tool.clone(),
            rule: sticky.rule.clone(),
            action,
            chars_before: sticky.chars_before,
            chars_after: sticky.chars_after,
            tokens_before,
            tokens_after,
        });
        if let Some((message, block, b, a)) = cleared_at {
            reports.push(BlockReport {
                message,
                block,
                tool_use_id: site.tool_use_id.clone(),
                tool: site.tool.clone(),
                rule: sticky.rule.clone(),
                action: Action::InputCleared,
                chars_before: 0,
                chars_after: 0,
                tokens_before: b,
                tokens_after: a,
            });
        }
        self.replaced += usize::from(sticky.content.is_some());
        if let Some(old) = self.decided.insert(site.key.clone(), sticky) {
            self.replaced -= usize::from(old.content.is_some());
        }
        self.compacted_results += 1;
        reports
    }

    /// Apply every decision so far to `conv` in place (the history [`Compactor::compact`] saw, possibly
    /// already compacted in place by an earlier call).
    pub fn apply(&mut self, conv: &mut Conversation) {
        if self.apply_to(conv) {
            // positions have shifted: read the history afresh next time (decisions are kept by id)
            self.state = State::default();
            self.drop = None;
        }
    }

    /// The compacted request as an owned conversation, leaving `conv` untouched (a full copy: to send the
    /// request, [`Compactor::projection`] writes it without one).
    pub fn project(&self, conv: &Conversation) -> Conversation {
        self.projection(conv).to_conversation()
    }

    /// A view of the compacted request that borrows everything unchanged from `conv`: only replaced blocks
    /// are held, so it costs a small fraction of the history.
    pub fn projection<'a>(&'a self, conv: &'a Conversation) -> Projection<'a> {
        Projection {
            source: conv,
            replaced: &self.state.replaced,
            decided: &self.decided,
            drop: self.drop.clone(),
        }
    }

    /// Write the decisions into `conv`; true when messages were dropped.
    fn apply_to(&self, conv: &mut Conversation) -> bool {
        let projection = self.projection(conv);
        let changed: Vec<(usize, Message)> = projection
            .replaced
            .keys()
            .filter(|&&i| i < conv.messages.len())
            .map(|&i| (i, projection.message(i).into_owned()))
            .collect();
        for (i, msg) in changed {
            conv.messages[i] = msg;
        }
        match &self.drop {
            Some(range) => {
                conv.messages.drain(range.clone());
                true
            }
            None => false,
        }
    }
}

/// The compacted request as a view over the source history: unchanged messages are borrowed, changed ones
/// are built block by block (unchanged blocks cloned, replaced ones from the compactor's decisions).
pub struct Projection<'a> {
    source: &'a Conversation,
    replaced: &'a HashMap<usize, Vec<(usize, Replacement)>>,
    decided: &'a HashMap<ResultKey, Sticky>,
    drop: Option<Range<usize>>,
}

impl<'a> Projection<'a> {
    /// Indices (in the source) of the messages the request keeps.
    fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.source.messages.len())
            .filter(|i| !self.drop.as_ref().is_some_and(|r| r.contains(i)))
    }

    /// Message `i` of the source as the request sends it.
    pub fn message(&self, i: usize) -> std::borrow::Cow<'a, Message> {
        let msg = &self.source.messages[i];
        let Some(changes) = self.replaced.get(&i) else {
            return std::borrow::Cow::Borrowed(msg);
        };
        let mut blocks = Vec::with_capacity(msg.content.blocks.len());
        for (bi, block) in msg.content.blocks.iter().enumerate() {
            let change = changes.iter().find(|(b, _)| *b == bi).map(|(_, r)| r);
            let decided_content =
                |key: &ResultKey| self.decided.get(key).and_then(|d| d.content.as_ref());
            blocks.push(match (change, block) {
                (Some(Replacement::Result(id)), Block::ToolResult(r))
                    if decided_content(id).is_some() =>
                {
                    Block::ToolResult(ctxfit_model::ToolResult {
                        tool_use_id: r.tool_use_id.clone(),
                        content: decided_content(id).cloned().unwrap_or_default(),
                        is_error: r.is_error,
                        extra: r.extra.clone(),
                    })
                }
                (Some(Replacement::ClearInput), Block::ToolUse(u)) => {
                    let mut u = u.clone();
                    u.set_input(Value::Object(Default::default()));
                    Block::ToolUse(u)
                }
                _ => block.clone(),
            });
        }
        std::borrow::Cow::Owned(Message {
            role: msg.role.clone(),
            content: Content {
                blocks,
                shape: msg.content.shape,
            },
            extra: msg.extra.clone(),
        })
    }

    /// The source messages the request leaves out (`max_conversation_messages`), if any.
    pub fn dropped(&self) -> Option<Range<usize>> {
        self.drop.clone()
    }

    /// The source messages with sticky decisions — `(index, how many of its blocks)` in no particular order —
    /// among those the request keeps; every other kept message is sent as the source has it. Decisions never
    /// change once made, so while a message's count stays the same, [`Projection::message`] gives the same
    /// message: a caller holding its own copy of the source's messages (a binding to another language, a proxy
    /// with the client's bytes) sends that copy for the rest and converts each of these once per count.
    pub fn changes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.replaced
            .iter()
            .map(|(&i, changes)| (i, changes.len()))
            .filter(|(i, _)| {
                *i < self.source.messages.len()
                    && !self.drop.as_ref().is_some_and(|r| r.contains(i))
            })
    }

    /// Every message of the request, in order.
    pub fn messages(&self) -> impl Iterator<Item = std::borrow::Cow<'a, Message>> + '_ {
        self.kept().map(|i| self.message(i))
    }

    /// The request as an owned conversation (a full copy).
    pub fn to_conversation(&self) -> Conversation {
        Conversation {
            format: self.source.format,
            envelope: self.source.envelope,
            system: self.source.system.clone(),
            messages: self.messages().map(std::borrow::Cow::into_owned).collect(),
            tools: self.source.tools.clone(),
            extra: self.source.extra.clone(),
        }
    }

    /// Write the request as JSON in the source's wire format, one message at a time: the whole compacted
    /// history is never held in memory.
    pub fn write_json(&self, mut w: impl std::io::Write, pretty: bool) -> std::io::Result<()> {
        let write_message = |m: &Message| ctxfit_model::write_message(self.source.format, m);
        let write_value = |w: &mut dyn std::io::Write, v: &Value| {
            if pretty {
                serde_json::to_writer_pretty(w, v)
            } else {
                serde_json::to_writer(w, v)
            }
            .map_err(std::io::Error::from)
        };
        let write_messages = |w: &mut dyn std::io::Write| -> std::io::Result<()> {
            w.write_all(b"[")?;
            for (n, m) in self.messages().enumerate() {
                if n > 0 {
                    w.write_all(b",")?;
                }
                write_value(w, &write_message(&m))?;
            }
            w.write_all(b"]")
        };
        let header = Conversation {
            messages: Vec::new(),
            ..Conversation::new(self.source.format)
        };
        let header = Conversation {
            envelope: self.source.envelope,
            system: self.source.system.clone(),
            tools: self.source.tools.clone(),
            extra: self.source.extra.clone(),
            ..header
        };
        match ctxfit_model::to_value(&header) {
            Value::Object(fields) => {
                w.write_all(b"{")?;
                for (n, (k, v)) in fields.iter().enumerate() {
                    if n > 0 {
                        w.write_all(b",")?;
                    }
                    write_value(&mut w, &Value::String(k.clone()))?;
                    w.write_all(b":")?;
                    if k == self.source.format.messages_key() && v.is_array() {
                        write_messages(&mut w)?;
                    } else {
                        write_value(&mut w, v)?;
                    }
                }
                w.write_all(b"}")
            }
            _ => write_messages(&mut w),
        }
    }
}

/// The input of the call at `at`.
fn call_input(conv: &Conversation, at: Option<(usize, usize)>) -> Option<&Value> {
    let (m, b) = at?;
    match conv.block(m, b)? {
        Block::ToolUse(u) => Some(&u.input),
        _ => None,
    }
}

/// Messages to drop from the front to keep at most `max` (0 = no limit): never the leading system messages or
/// the first user message, and never leaving a tool result whose call was dropped.
pub fn drop_range(conv: &Conversation, max: usize) -> Option<Range<usize>> {
    let n = conv.messages.len();
    if max == 0 || n <= max {
        return None;
    }
    let head = conv
        .messages
        .iter()
        .position(|m| m.role == Role::User)
        .map_or_else(
            || {
                conv.messages
                    .iter()
                    .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                    .count()
            },
            |i| i + 1,
        );
    let mut start = n - max.saturating_sub(head).min(n);
    if start <= head {
        return None;
    }
    let is_result_message = |m: &Message| {
        m.content
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolResult(_)))
    };
    while start < n && is_result_message(&conv.messages[start]) {
        start += 1;
    }
    Some(head..start)
}

/// Has the provider's cache expired between a request sent at `last` and one sent at `now` (milliseconds since
/// the Unix epoch), when it keeps a prefix `ttl` seconds after its last use (0: forever)?
pub fn cache_expired(last: u64, now: u64, ttl: u64) -> bool {
    ttl > 0 && now.saturating_sub(last) > ttl.saturating_mul(1000)
}

/// Now, in milliseconds since the Unix epoch (0 if the clock is set before it): the time to give
/// [`Compactor::compact_at`] for a request about to be sent.
pub fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The prompt cache lifetime a request asks for, in seconds: the longest any of its marks asks for — the Anthropic
/// `cache_control` marks on the system prompt's blocks, on the blocks of `conv.messages[from..]` (the messages new
/// to this request) and on the tool definitions, and the request-level fields [`requested_cache_ttl`] reads in
/// `conv.extra`. 3600 for a `"ttl": "1h"` mark, 300 for any other mark, 86400 for OpenAI's
/// `"prompt_cache_retention": "24h"`; `None` when the request asks for nothing (the profile's `cache_ttl` holds).
///
/// The longest wins, although Anthropic keeps each part of a prompt as long as its own mark says: believing a
/// cache warm for too long only keeps a cut waiting, while believing it expired too soon makes cuts that rewrite it.
pub fn stated_cache_ttl(conv: &Conversation, from: usize) -> Option<u64> {
    let of_block = |b: &Block| match b {
        Block::Text(t) => mark_ttl(&t.extra),
        Block::ToolUse(u) => mark_ttl(&u.extra),
        Block::ToolResult(r) => mark_ttl(&r.extra),
        Block::Thinking(t) => mark_ttl(&t.extra),
        Block::RedactedThinking(m) | Block::Image(m) | Block::Document(m) => mark_ttl(m),
        Block::Unknown(Value::Object(m)) => mark_ttl(m),
        Block::Unknown(_) => None,
    };
    conv.system
        .iter()
        .flat_map(|c| c.blocks.iter())
        .chain(
            conv.messages
                .get(from..)
                .unwrap_or_default()
                .iter()
                .flat_map(|m| m.content.blocks.iter()),
        )
        .filter_map(of_block)
        .chain(
            conv.tools
                .iter()
                .flatten()
                .filter_map(|t| mark_ttl(&t.extra)),
        )
        .chain(requested_cache_ttl(&conv.extra))
        .max()
}

/// The names of the request-level fields [`requested_cache_ttl`] reads: a gateway that keeps a request's
/// top-level fields apart from its conversation hands over these.
pub const CACHE_FIELDS: [&str; 3] = ["cache_control", "prompt_cache_retention", "tools"];

/// The prompt cache lifetime, in seconds, that a request's top-level fields ask for: Anthropic's request-level
/// `cache_control` (automatic caching) and the `cache_control` of a definition in `tools` (3600 for `"ttl": "1h"`,
/// else 300), OpenAI's `prompt_cache_retention` (86400 for `"24h"`; `"in_memory"` states no lifetime — OpenAI
/// keeps such a prefix five to ten minutes, at most an hour). The longest wins; `None` when none asks.
pub fn requested_cache_ttl(fields: &serde_json::Map<String, Value>) -> Option<u64> {
    let tools = fields
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_object().and_then(mark_ttl));
    let retention = match fields.get("prompt_cache_retention").and_then(Value::as_str) {
        Some("24h") => Some(86_400),
        _ => None,
    };
    mark_ttl(fields)
        .into_iter()
        .chain(tools)
        .chain(retention)
        .max()
}

/// The lifetime an object's Anthropic `cache_control` mark asks for: 3600 for `"ttl": "1h"`, else 300.
fn mark_ttl(extra: &serde_json::Map<String, Value>) -> Option<u64> {
    extra
        .get("cache_control")
        .filter(|c| c.is_object())
        .map(|c| match c.get("ttl").and_then(Value::as_str) {
            Some("1h") => 3600,
            _ => 300,
        })
}
