//! The orchestrator: ingest appended messages, trigger, ask the rules about stale results oldest first, keep
//! every decision sticky, and project or apply the result.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolCallIndex, Value};
use ctxfit_retention::{
    content_chars, truncate_content, Decision, Registry, RetentionRule, RuleContext, SiblingResult,
};
use ctxfit_tokens::conversation::count_block;
use ctxfit_tokens::{count_message, count_preamble, count_tool_result, TokenEstimator};

use crate::aliases::ToolKinds;
use crate::policy::{Settings, Trigger};
use crate::report::{Action, BlockReport, Report};

/// Why a compactor could not be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactorError {
    #[error("unknown rule `{name}` in profile `{profile}` (registered: {known})")]
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
    tool_use_id: String,
    tool: String,
    kind: String,
}

/// What has been read of the history so far (append-only; rebuilt when the history gets shorter).
#[derive(Default)]
struct State {
    index: ToolCallIndex,
    messages: usize,
    base_tokens: usize,
    message_tokens: usize,
    /// assistants_before[i]: assistant messages among the first i.
    assistants_before: Vec<usize>,
    results: Vec<ResultSite>,
    /// Results not decided yet, oldest first (indices into `results`).
    pending: Vec<usize>,
    by_kind: HashMap<String, Vec<usize>>,
    last_result_message: Option<usize>,
    /// Tokens saved by the sticky decisions that apply to this history.
    saved: usize,
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
    decided: HashMap<String, Sticky>,
    /// Results a history-independent rule chose to keep: never asked again.
    kept: HashSet<String>,
    drop: Option<Range<usize>>,
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
            rules.push(BoundRule { rule, tools });
        }
        Ok(Compactor {
            kinds: ToolKinds::with(&settings.aliases),
            settings,
            rules,
            estimator,
            state: State::default(),
            decided: HashMap::new(),
            kept: HashSet::new(),
            drop: None,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
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
                ..State::default()
            };
        }
        let st = &mut self.state;
        st.index.update(conv);
        let est = self.estimator.as_ref();
        for (mi, msg) in conv.messages.iter().enumerate().skip(st.messages) {
            st.message_tokens += count_message(est, msg);
            let before = *st.assistants_before.last().unwrap_or(&0);
            st.assistants_before
                .push(before + usize::from(msg.role == Role::Assistant));
            for (bi, block) in msg.content.blocks.iter().enumerate() {
                let Block::ToolResult(r) = block else {
                    continue;
                };
                let tool = st.index.tool_name(&r.tool_use_id).unwrap_or("").to_owned();
                let null = Value::Null;
                let input = st.index.input(conv, &r.tool_use_id).unwrap_or(&null);
                let kind = self.kinds.kind_of(&tool, input).to_owned();
                let ri = st.results.len();
                st.by_kind.entry(kind.clone()).or_default().push(ri);
                st.last_result_message = Some(mi);
                if let Some(sticky) = self.decided.get(&r.tool_use_id) {
                    st.saved +=
                        sticky.tokens_before - sticky.tokens_after + sticky.input_tokens_saved;
                } else if !self.kept.contains(&r.tool_use_id) {
                    st.pending.push(ri);
                }
                st.results.push(ResultSite {
                    message: mi,
                    block: bi,
                    tool_use_id: r.tool_use_id.clone(),
                    tool,
                    kind,
                });
            }
        }
        st.messages = conv.messages.len();
    }

    /// Tokens of the request as compacted so far.
    fn current_tokens(&self) -> usize {
        self.state.base_tokens + self.state.message_tokens - self.state.saved
    }

    /// Decide about this request. `reported_input_tokens` are the input tokens the provider reported for the
    /// previous call (the seeds' trigger); without them the estimate of this request is used.
    pub fn compact(&mut self, conv: &Conversation, reported_input_tokens: Option<usize>) -> Report {
        self.ingest(conv);
        let mut new_blocks = Vec::new();
        if self.settings.max_tool_result_chars > 0 {
            self.cap_new_results(conv, &mut new_blocks);
        }
        let input_tokens = reported_input_tokens.unwrap_or_else(|| self.current_tokens());
        let triggered = match self.settings.trigger {
            Trigger::Always => true,
            Trigger::Budget => self.settings.budget > 0 && input_tokens > self.settings.budget,
        };
        if triggered {
            self.run_rules(conv, &mut new_blocks);
        }
        self.drop = drop_range(conv, self.settings.max_conversation_messages);
        let dropped_tokens: usize = self.drop.clone().map_or(0, |r| {
            conv.messages[r]
                .iter()
                .map(|m| count_message(self.estimator.as_ref(), m))
                .sum()
        });
        let first_changed_message = new_blocks.iter().map(|b| b.message).min();
        let report = Report {
            profile: self.settings.profile.clone(),
            input_tokens,
            input_tokens_reported: reported_input_tokens.is_some(),
            triggered,
            tokens_before: self.state.base_tokens + self.state.message_tokens,
            tokens_after: self.current_tokens().saturating_sub(dropped_tokens),
            compacted_total: self
                .decided
                .values()
                .filter(|d| d.content.is_some())
                .count(),
            first_changed_message: first_changed_message.or(self.drop.as_ref().map(|r| r.start)),
            dropped_messages: self.drop.as_ref().map_or(0, |r| r.len()),
            budget: match self.settings.trigger {
                Trigger::Budget => self.settings.budget,
                Trigger::Always => 0,
            },
            new_blocks,
        };
        if let Some(note) = report.note() {
            tracing::info!(target: "ctxfit", "{note}");
        }
        report
    }

    fn result_block<'c>(
        conv: &'c Conversation,
        site: &ResultSite,
    ) -> Option<&'c ctxfit_model::ToolResult> {
        match conv
            .messages
            .get(site.message)?
            .content
            .blocks
            .get(site.block)?
        {
            Block::ToolResult(r) => Some(r),
            _ => None,
        }
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
            let already_capped = result
                .content
                .blocks
                .iter()
                .rev()
                .find_map(Block::as_text)
                .is_some_and(|t| t.ends_with(INGESTION_MARKER));
            if already_capped {
                // capped by an earlier pass over this history: as final as if capped here
                self.kept.insert(site.tool_use_id.clone());
                continue;
            }
            let est = self.estimator.as_ref();
            match truncate_content(&result.content, cap, INGESTION_MARKER) {
                Some(cut)
                    if content_chars(&cut) < content_chars(&result.content)
                        && count_tool_result(est, &cut)
                            <= count_tool_result(est, &result.content) =>
                {
                    let report = self.commit(
                        conv,
                        &site,
                        result,
                        cut,
                        "max_tool_result_chars",
                        Action::Replaced,
                        false,
                    );
                    new_blocks.extend(report);
                }
                // a capped result is final: compacting it again later would break the cached prefix
                _ => still.push(ri),
            }
        }
        self.state.pending = still;
    }

    fn run_rules(&mut self, conv: &Conversation, new_blocks: &mut Vec<BlockReport>) {
        let total_assistants = *self.state.assistants_before.last().unwrap_or(&0);
        let n_results = self.state.results.len();
        let keep_from = n_results.saturating_sub(self.settings.keep_last_tool_uses);
        let latest_group = self
            .state
            .last_result_message
            .map(|m| self.state.assistants_before[m]);
        let mut tentative: Vec<(usize, Content, &'static str, Action)> = Vec::new();
        let mut estimate = self.current_tokens();
        let target = self.settings.target;
        let mut sibling_cache: HashMap<String, Vec<SiblingResult<'_>>> = HashMap::new();
        let pending = std::mem::take(&mut self.state.pending);
        let mut still = Vec::with_capacity(pending.len());
        let mut stop = false;
        let null = Value::Null;
        for ri in pending {
            if stop {
                still.push(ri);
                continue;
            }
            let site = &self.state.results[ri];
            let turns_ago = total_assistants - self.state.assistants_before[site.message + 1];
            let in_latest_group = self.settings.keep_latest_result_message
                && latest_group == Some(self.state.assistants_before[site.message]);
            if turns_ago == 0 || ri >= keep_from || in_latest_group || self.excluded(site) {
                still.push(ri);
                continue;
            }
            let Some(result) = Self::result_block(conv, site) else {
                continue;
            };
            let content = &result.content;
            let Some(bound) = self
                .rules
                .iter()
                .find(|r| r.handles(&site.kind, &site.tool))
            else {
                self.kept.insert(site.tool_use_id.clone());
                continue;
            };
            let siblings = sibling_cache.entry(site.kind.clone()).or_insert_with(|| {
                self.state.by_kind[&site.kind]
                    .iter()
                    .filter_map(|&i| {
                        let s = &self.state.results[i];
                        let r = Self::result_block(conv, s)?;
                        Some(SiblingResult {
                            tool_use_id: &r.tool_use_id,
                            input: self
                                .state
                                .index
                                .input(conv, &s.tool_use_id)
                                .unwrap_or(&null),
                            message_index: s.message,
                            content: &r.content,
                        })
                    })
                    .collect()
            });
            let chars = content_chars(content);
            let ctx = RuleContext {
                tool_name: &site.tool,
                tool_kind: &site.kind,
                tool_use_id: &site.tool_use_id,
                input: self
                    .state
                    .index
                    .input(conv, &site.tool_use_id)
                    .unwrap_or(&null),
                content,
                is_error: result.is_error == Some(true),
                message_index: site.message,
                block_index: site.block,
                turns_ago,
                chars,
                tokens: count_tool_result(self.estimator.as_ref(), content),
                same_tool: siblings,
            };
            let (new_content, action) = match bound.rule.decide(&ctx) {
                Decision::Keep => {
                    if bound.rule.depends_on_history() {
                        still.push(ri);
                    } else {
                        self.kept.insert(site.tool_use_id.clone());
                    }
                    continue;
                }
                Decision::Replace(c) => (c, Action::Replaced),
                Decision::Pointer(text) => (Content::text(text), Action::Pointer),
            };
            let est = self.estimator.as_ref();
            let before = count_tool_result(est, content);
            let after = count_tool_result(est, &new_content);
            if content_chars(&new_content) >= chars || after > before {
                // a block never grows (in characters or tokens): the original stays
                if !bound.rule.depends_on_history() {
                    self.kept.insert(site.tool_use_id.clone());
                } else {
                    still.push(ri);
                }
                continue;
            }
            estimate = estimate.saturating_sub(before - after);
            tentative.push((ri, new_content, bound.rule.name(), action));
            if target > 0 && estimate <= target {
                stop = true;
            }
        }
        drop(sibling_cache);
        let reclaim = self.current_tokens().saturating_sub(estimate);
        if tentative.is_empty() || reclaim < self.settings.min_reclaim_tokens {
            still.extend(tentative.iter().map(|(ri, ..)| *ri));
            still.sort_unstable();
            self.state.pending = still;
            return;
        }
        for (ri, content, rule, action) in tentative {
            let site = self.state.results[ri].clone();
            if let Some(result) = Self::result_block(conv, &site) {
                let clear = self.settings.clear_tool_inputs;
                new_blocks.extend(self.commit(conv, &site, result, content, rule, action, clear));
            }
        }
        self.state.pending = still;
    }

    /// Record a sticky decision; returns what to report.
    #[allow(clippy::too_many_arguments)]
    fn commit(
        &mut self,
        conv: &Conversation,
        site: &ResultSite,
        result: &ctxfit_model::ToolResult,
        content: Content,
        rule: &str,
        action: Action,
        clear_input: bool,
    ) -> Vec<BlockReport> {
        let est = self.estimator.as_ref();
        let tokens_before = count_tool_result(est, &result.content);
        let tokens_after = count_tool_result(est, &content);
        let mut reports = Vec::new();
        let mut input_tokens_saved = 0;
        let mut cleared_at = None;
        if clear_input {
            if let Some(call) = self.state.index.get(&site.tool_use_id) {
                if let Some(Block::ToolUse(u)) =
                    conv.messages[call.message].content.blocks.get(call.block)
                {
                    let mut cleared = u.clone();
                    cleared.set_input(Value::Object(Default::default()));
                    let b = count_block(est, &Block::ToolUse(u.clone()));
                    let a = count_block(est, &Block::ToolUse(cleared));
                    input_tokens_saved = b.saturating_sub(a);
                    cleared_at = Some((call.message, call.block, b, a));
                }
            }
        }
        let sticky = Sticky {
            chars_before: content_chars(&result.content),
            chars_after: content_chars(&content),
            content: Some(content),
            clear_input: cleared_at.is_some(),
            rule: rule.to_owned(),
            tokens_before,
            tokens_after,
            input_tokens_saved,
        };
        self.state.saved += tokens_before - tokens_after + input_tokens_saved;
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
        self.decided.insert(site.tool_use_id.clone(), sticky);
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

    /// The compacted request, leaving `conv` untouched.
    pub fn project(&self, conv: &Conversation) -> Conversation {
        let mut out = conv.clone();
        self.apply_to(&mut out);
        out
    }

    /// Write the decisions into `conv`; true when messages were dropped.
    fn apply_to(&self, conv: &mut Conversation) -> bool {
        for site in &self.state.results {
            let Some(sticky) = self.decided.get(&site.tool_use_id) else {
                continue;
            };
            if let (Some(content), Some(Block::ToolResult(r))) = (
                &sticky.content,
                conv.messages
                    .get_mut(site.message)
                    .and_then(|m| m.content.blocks.get_mut(site.block)),
            ) {
                r.content = content.clone();
            }
            if sticky.clear_input {
                if let Some(call) = self.state.index.get(&site.tool_use_id) {
                    if let Some(Block::ToolUse(u)) = conv
                        .messages
                        .get_mut(call.message)
                        .and_then(|m| m.content.blocks.get_mut(call.block))
                    {
                        u.set_input(Value::Object(Default::default()));
                    }
                }
            }
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
