//! Replays a recorded session turn by turn under a compaction policy, and measures what it cost and what it
//! kept of what the agent used later.
//!
//! The request before assistant turn *k* is the history up to that turn, compacted by the policy with its state
//! carried over from turn *k − 1* exactly as a live agent would carry it (sticky decisions; a budget trigger
//! compares with the previous request's input tokens). For each request the replay records:
//!
//! * **input tokens** (same estimator for every policy) and tokens saved against no compaction;
//! * **cache-aware cost** under a prompt-cache model: the longest prefix of messages unchanged since the previous
//!   request is a cache read, the rest a cache write, priced by a [`PriceModel`] (`anthropic`: read 0.1, write
//!   1.25; `openai`: cached input 0.1, no write premium; `uncached`: every token 1.0). When the log records
//!   when its messages were written ([`Timing`]: Claude Code, Codex CLI, mini-swe-agent) and more than the
//!   cache's lifetime (the one the session asked for, when its log shows it, else five minutes) passed between
//!   two requests, the cache has expired and the whole request is a write, under every policy — and the
//!   compactor is told the same time and lifetime, as a live agent would tell it;
//! * **reference recall**: the identifiers the assistant's turn uses (runs of `[A-Za-z0-9_./:-]` of 6+
//!   characters in its text and tool-call inputs) that had appeared earlier *only* in tool results — not in
//!   user, system or earlier assistant content — and the share of them still present in the compacted request.
//!
//! [`Policy::Oracle`] is the corner of the frontier: it reads the session's future and keeps of each stale result
//! only the lines that hold a later reference (see [`oracle`](crate::Policy::Oracle)); every real policy's token
//! saving is reported as a share of the oracle's.
//!
//! Recall is a proxy: with a compacted history the model would have acted differently, perhaps re-reading what
//! it lost. It measures what a policy hides of what the agent went on to use, not task success.
//!
//! The key design decision is that a replay costs about as much as the compaction it measures: per-message
//! token counts, the identifier multisets of the source and of the compacted request, and the cache prefix are
//! all updated from the compactor's per-request report, never recomputed over the history.

mod billed_scale;
mod idents;
mod oracle;
mod references;
pub mod spread;
pub use billed_scale::ANTHROPIC_TOOL_RESULT_SCALE;
mod tools;

use std::collections::BTreeMap;

use ctxfit_compactor::{
    cache_expired, Action, Compactor, CompactorError, Settings, Trigger, DEFAULT_CACHE_TTL,
};
use ctxfit_model::{Block, Conversation};
use ctxfit_retention::{Registry, WrappedOutput};
use ctxfit_tokens::{count_message, count_preamble, TokenEstimator};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

pub use idents::{identifiers, MIN_IDENTIFIER_LEN};
pub use tools::{sum_tools, tool_label, ToolTokens};

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
        PriceModel::Anthropic.prices()
    }
}

impl Prices {
    /// The cost of a request (or of many) from its cache reads and writes.
    pub fn cost(&self, cache_read_tokens: usize, cache_write_tokens: usize) -> f64 {
        cache_read_tokens as f64 * self.cache_read + cache_write_tokens as f64 * self.cache_write
    }
}

/// The named price models, relative to one uncached input token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceModel {
    /// Anthropic's prompt cache: a cache read costs 0.1, a cache write 1.25 (5-minute cache).
    Anthropic,
    /// OpenAI's automatic cache: cached input costs 0.1, with no premium for writing.
    #[serde(rename = "openai")]
    OpenAi,
    /// No prompt cache: every input token costs 1.0, so cost is input tokens.
    Uncached,
}

impl PriceModel {
    pub const ALL: [PriceModel; 3] = [
        PriceModel::Anthropic,
        PriceModel::OpenAi,
        PriceModel::Uncached,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PriceModel::Anthropic => "anthropic",
            PriceModel::OpenAi => "openai",
            PriceModel::Uncached => "uncached",
        }
    }

    /// The model named `name` (`anthropic`, `openai`, `uncached`).
    pub fn parse(name: &str) -> Option<PriceModel> {
        PriceModel::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn prices(self) -> Prices {
        let (cache_read, cache_write) = match self {
            PriceModel::Anthropic => (0.1, 1.25),
            PriceModel::OpenAi => (0.1, 1.0),
            PriceModel::Uncached => (1.0, 1.0),
        };
        Prices {
            base: 1.0,
            cache_read,
            cache_write,
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
    /// More than the cache's lifetime passed since the previous request: nothing of this one was cached.
    pub cache_expired: bool,
    /// Identifiers this turn used that only tool results had shown, and how many of them the request still had.
    pub references: usize,
    pub references_visible: usize,
    /// Where the log records what the provider billed for this request: the part of the bill the log does not
    /// show (system prompt, tool definitions, injected reminders, and what the estimate counts low), the same
    /// under every policy — the billed input minus the uncompacted estimate, 0 at least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlogged_tokens: Option<usize>,
}

impl TurnStats {
    /// Input tokens, cache reads and cache writes as billed: the request's bill under `none` (the uncompacted
    /// estimate and the unlogged part, `unlogged_tokens`) less what the policy cut, counted as Anthropic counts
    /// tool results ([`ANTHROPIC_TOOL_RESULT_SCALE`], fitted on the logs' bills by `cargo xtask fit-billed`).
    /// The difference from the estimate is read from the cache when the request reads anything from it, written
    /// otherwise. `None` without a bill.
    pub fn billed(&self) -> Option<(usize, usize, usize)> {
        let u = self.unlogged_tokens?;
        let bill = self.uncompacted_tokens + u;
        let cut = self.uncompacted_tokens.saturating_sub(self.input_tokens) as f64;
        let input = bill.saturating_sub((cut * ANTHROPIC_TOOL_RESULT_SCALE).round() as usize);
        let extra = input.saturating_sub(self.input_tokens);
        let (read, write) = if self.cache_read_tokens > 0 {
            (self.cache_read_tokens + extra, self.cache_write_tokens)
        } else {
            (self.cache_read_tokens, self.cache_write_tokens + extra)
        };
        Some((input, read, write))
    }
}

/// A whole session replayed under one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReplay {
    pub session: String,
    pub policy: String,
    pub turns: Vec<TurnStats>,
    /// Each tool's results, as the requests sent them: where the tokens went.
    pub tools: Vec<ToolTokens>,
}

impl SessionReplay {
    pub fn input_tokens(&self) -> usize {
        self.turns.iter().map(|t| t.input_tokens).sum()
    }

    /// The largest request.
    pub fn peak_tokens(&self) -> usize {
        self.turns.iter().map(|t| t.input_tokens).max().unwrap_or(0)
    }

    /// Cache reads and writes over the whole session.
    pub fn cache_tokens(&self) -> (usize, usize) {
        self.turns.iter().fold((0, 0), |(r, w), t| {
            (r + t.cache_read_tokens, w + t.cache_write_tokens)
        })
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

/// A policy to replay under: no compaction, a profile, or the oracle.
#[derive(Debug, Clone)]
pub enum Policy {
    None,
    /// (boxed: the settings are large beside the other variants)
    Profile(Box<Settings>),
    /// **Evaluation only — reads the future.** Of each stale result, as soon as the model has answered it, keep
    /// only the lines holding an identifier that a later turn uses for the first time; drop the rest. Full
    /// recall at the least tokens any line-keeping policy can send: the corner of the frontier.
    Oracle,
}

impl Policy {
    pub fn name(&self) -> &str {
        match self {
            Policy::None => "none",
            Policy::Profile(s) => &s.profile,
            Policy::Oracle => "oracle",
        }
    }

    /// The policy `name` stands for: `none`, `oracle`, a policy file, `FILE:PROFILE` (that profile of the file),
    /// else a built-in profile (a name with a dot or a path separator that names no file is an error: no such
    /// policy file). A file alone stands for its `default_profile`, else its only profile, else `smart` when it
    /// defines none; a file defining several and no default is an error that lists them. A profile from a file is
    /// labelled by its own name, or `FILE:NAME` when a built-in profile has that name (the file may change it),
    /// so that a row says what ran. `env` supplies the policy's environment overrides
    /// ([`ctxfit_compactor::ENV_OVERRIDES`]; `&|_| None` for none). Errors name the policy.
    pub fn resolve(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Policy, String> {
        if name == "none" || name == "oracle" {
            return Policy::named(name).map_err(|e| e.to_string());
        }
        let is_file = |p: &str| std::path::Path::new(p).is_file();
        let (file, profile) = if is_file(name) {
            (Some(name), None)
        } else {
            match name.rsplit_once(':') {
                Some((f, p)) if is_file(f) && !p.is_empty() => (Some(f), Some(p)),
                _ => (None, None),
            }
        };
        let settings = if let Some(file) = file {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{file}: cannot read: {e}"))?;
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let f = ctxfit_compactor::PolicyFile::parse(text, file).map_err(|e| e.to_string())?;
            let profile = match (profile, &f.default_profile, f.profiles.len()) {
                (Some(p), _, _) => Some(p.to_owned()),
                (None, Some(_), _) | (None, None, 0) => None,
                (None, None, 1) => f.profiles.keys().next().cloned(),
                (None, None, _) => {
                    let names: Vec<&str> = f.profiles.keys().map(String::as_str).collect();
                    return Err(format!(
                        "--policy {file}: it defines the profiles {} and no `default_profile`: name one as {file}:PROFILE",
                        names.join(", ")
                    ));
                }
            };
            let mut settings = f
                .resolve(profile.as_deref(), None, env)
                .map_err(|e| format!("--policy {name}: {e}"))?;
            if ctxfit_compactor::BUILT_IN_PROFILES.contains(&settings.profile.as_str()) {
                settings.profile = format!("{file}:{}", settings.profile);
            }
            settings
        } else if name.contains(['/', '\\', '.']) {
            // no built-in profile's name holds a dot or a path separator: a file was meant
            return Err(format!("--policy {name}: no such policy file"));
        } else {
            ctxfit_compactor::PolicyFile::default()
                .resolve(Some(name), None, env)
                .map_err(|e| format!("--policy {name}: {e}"))?
        };
        Ok(Policy::Profile(Box::new(settings)))
    }

    /// Every policy of `names` ([`Policy::resolve`]), refusing two that would be labelled alike: their rows would
    /// be added into one.
    pub fn resolve_all(
        names: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<Policy>, String> {
        let mut out: Vec<(String, Policy)> = Vec::with_capacity(names.len());
        for name in names {
            let policy = Policy::resolve(name, env)?;
            if let Some((first, _)) = out.iter().find(|(_, p)| p.name() == policy.name()) {
                return Err(format!(
                    "--policy {first} and --policy {name} both run as `{}`: name each once (a file's other profile as FILE:PROFILE)",
                    policy.name()
                ));
            }
            out.push((name.clone(), policy));
        }
        Ok(out.into_iter().map(|(_, p)| p).collect())
    }

    /// The policy named `name`: `none`, `oracle`, or a built-in profile.
    pub fn named(name: &str) -> Result<Policy, ctxfit_compactor::PolicyError> {
        match name {
            "none" => Ok(Policy::None),
            "oracle" => Ok(Policy::Oracle),
            _ => ctxfit_compactor::PolicyFile::default()
                .resolve(Some(name), None, &|_| None)
                .map(|s| Policy::Profile(Box::new(s))),
        }
    }
}

/// The oracle's settings: compact on every request, as soon as a result is stale, whatever it reclaims.
fn oracle_settings() -> Settings {
    Settings {
        profile: "oracle".into(),
        trigger: Trigger::Always,
        budget: 0,
        target: 0,
        keep_latest_result_message: false,
        keep_last_tool_uses: 0,
        exclude_tools: Vec::new(),
        clear_tool_inputs: false,
        min_reclaim_tokens: 0,
        min_reclaim_ratio: 0.0,
        cache_write_premium: 0.0,
        horizon: 0.0,
        min_horizon: 0,
        max_regret: None,
        cache_ttl: 0,
        max_tool_result_chars: 0,
        max_conversation_messages: 0,
        request_budget: 0,
        warning_threshold: 0,
        retrieval_tool: None,
        rules: Vec::new(),
        aliases: BTreeMap::new(),
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

/// Call `f` with each text of a block as the model reads it.
fn for_each_text(block: &Block, mut f: impl FnMut(&str)) {
    let mut texts = Vec::new();
    block_texts(block, &mut texts);
    texts.iter().for_each(|t| f(t));
}

/// Text of a block as the model reads it, for identifier extraction: a result wrapped in `{"output",
/// "metadata"}` JSON by its tool as its output's text, not its escaped form (where `a.rs\nb.rs` would give
/// `nb.rs`).
fn block_texts(block: &Block, out: &mut Vec<String>) {
    match block {
        Block::Text(t) => out.push(t.text.clone()),
        Block::Thinking(t) => out.push(t.thinking.clone()),
        Block::ToolUse(u) => collect_strings(&u.input, out),
        Block::ToolResult(r) => out.push(match WrappedOutput::of_content(&r.content) {
            Some(w) => w.output().to_owned(),
            None => r.content.joined_text(),
        }),
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

/// When a session's messages were written, and how long the provider keeps a cached prefix: what tells the
/// replay (and the compactor) that the cache expired between two requests.
#[derive(Debug, Clone, Copy)]
pub struct Timing<'a> {
    /// Per message, milliseconds since the Unix epoch (`None` where unknown); empty: no times at all. A request
    /// is taken as sent when the latest of its messages with a time was written.
    pub times: &'a [Option<u64>],
    /// Seconds a cached prefix lives after its last use (0: forever), where the session does not say.
    pub cache_ttl: u64,
    /// The lifetime the session's requests asked for, when its log shows it (Claude Code's one-hour or
    /// five-minute cache): the provider's, and the compactor's (`Compactor::set_cache_ttl`), as a live agent
    /// knows the cache it asks for.
    pub stated_ttl: Option<u64>,
    /// Per message, what the provider billed as input for the request that produced it (`Session::billed`);
    /// empty: the log does not say.
    pub billed: &'a [Option<u64>],
}

impl Timing<'_> {
    /// No times: the cache never expires.
    pub const NONE: Timing<'static> = Timing {
        times: &[],
        cache_ttl: DEFAULT_CACHE_TTL,
        stated_ttl: None,
        billed: &[],
    };
}

/// Replay `conv` under `policy`, as if the cache never expired.
pub fn replay(
    name: &str,
    conv: &Conversation,
    policy: &Policy,
    registry: &Registry,
    estimator: &dyn Fn() -> Box<dyn TokenEstimator>,
    prices: Prices,
) -> Result<SessionReplay, CompactorError> {
    replay_timed(
        name,
        conv,
        Timing::NONE,
        policy,
        registry,
        estimator,
        prices,
    )
}

/// Replay `conv` under `policy`, with the times its log recorded: a request sent more than the cache's
/// lifetime after the one before is written to the cache whole, and the compactor is told when each request was
/// sent ([`Compactor::compact_at`]).
pub fn replay_timed(
    name: &str,
    conv: &Conversation,
    timing: Timing<'_>,
    policy: &Policy,
    registry: &Registry,
    estimator: &dyn Fn() -> Box<dyn TokenEstimator>,
    prices: Prices,
) -> Result<SessionReplay, CompactorError> {
    let est = estimator();
    let mut compactor = match policy {
        Policy::None => None,
        Policy::Profile(s) => {
            let mut c = Compactor::new((**s).clone(), registry, estimator())?;
            if let Some(ttl) = timing.stated_ttl {
                c.set_cache_ttl(ttl);
            }
            Some(c)
        }
        Policy::Oracle => {
            let rule = oracle::Oracle {
                first_use: oracle::future_references(conv),
            };
            Some(Compactor::with_rules(
                oracle_settings(),
                vec![(Box::new(rule), vec!["*".to_owned()])],
                estimator(),
            ))
        }
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
    // identifiers: where they have been seen (tool results or elsewhere), and in the request as sent
    let mut provenance = references::Provenance::new(conv);
    let mut visible = Bag::default();
    let mut previous_len = 0;
    let mut previous_input: Option<usize> = None;
    let mut turns = Vec::new();
    let mut texts = Vec::new();
    let mut tally = tools::Tally::default();
    let provider_ttl = timing.stated_ttl.unwrap_or(timing.cache_ttl);
    // when the latest message so far with a time was written, and when the previous request was sent
    let (mut latest, mut previous_sent): (Option<u64>, Option<u64>) = (None, None);
    for (mi, msg) in conv.messages.iter().enumerate() {
        if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
            let expired = match (previous_sent, latest) {
                (Some(last), Some(now)) => cache_expired(last, now, provider_ttl),
                _ => false,
            };
            previous_sent = latest.or(previous_sent);
            // the request for this turn: everything before it
            let (first_changed, dropped, compacted_total) = match compactor.as_mut() {
                Some(c) => {
                    let report = c.compact_at(&request, previous_input, latest);
                    for b in &report.new_blocks {
                        sent_tokens[b.message] -= b.tokens_before - b.tokens_after;
                        if b.action != Action::InputCleared {
                            tally.cut(b.message, b.block, b.tokens_before - b.tokens_after);
                        }
                    }
                    if report.dropped_messages > 0 {
                        tally.request(c.projection(&request).dropped());
                    } else {
                        tally.request(None);
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
                None => {
                    tally.request(None);
                    (None, 0, None)
                }
            };
            let input_tokens =
                compacted_total.unwrap_or_else(|| preamble + sent_tokens.iter().sum::<usize>());
            let uncompacted_tokens = preamble + source_tokens.iter().sum::<usize>();
            let (cache_read_tokens, cache_write_tokens) =
                if dropped > 0 || previous_len == 0 || expired {
                    (0, input_tokens)
                } else {
                    let unchanged = first_changed.unwrap_or(previous_len).min(previous_len);
                    let read = preamble + sent_tokens[..unchanged].iter().sum::<usize>();
                    (read, input_tokens - read)
                };
            let cost = prices.cost(cache_read_tokens, cache_write_tokens);
            let refs = provenance.references(&conv.messages, mi);
            let seen = refs.iter().filter(|id| visible.contains(id)).count();
            tally.used(&refs, |id| visible.contains(id));
            turns.push(TurnStats {
                message: mi,
                input_tokens,
                uncompacted_tokens,
                cache_read_tokens,
                cache_write_tokens,
                cost,
                cache_expired: expired,
                references: refs.len(),
                references_visible: seen,
                unlogged_tokens: timing
                    .billed
                    .get(mi)
                    .copied()
                    .flatten()
                    .map(|b| (b as usize).saturating_sub(uncompacted_tokens)),
            });
            previous_len = request.messages.len();
            previous_input = Some(input_tokens);
        }
        // the message joins the history
        latest = timing.times.get(mi).copied().flatten().or(latest);
        let tokens = count_message(est.as_ref(), msg);
        tally.join(est.as_ref(), mi, msg);
        source_tokens.push(tokens);
        sent_tokens.push(tokens);
        for block in &msg.content.blocks {
            if matches!(block, Block::ToolResult(_)) {
                for_each_text(block, |t| visible.add(t));
            }
        }
        provenance.join(msg);
        request.messages.push(msg.clone());
    }
    Ok(SessionReplay {
        session: name.to_owned(),
        policy: policy.name().to_owned(),
        turns,
        tools: tally.finish(),
    })
}

/// Totals of many sessions under one policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PolicyTotals {
    pub policy: String,
    pub sessions: usize,
    pub turns: usize,
    pub input_tokens: usize,
    /// The largest single request of any session.
    pub peak_tokens: usize,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
    /// Cost under the prices the sessions were replayed with.
    pub cost: f64,
    pub references: usize,
    pub references_visible: usize,
}

impl PolicyTotals {
    /// The cost of these requests under other prices.
    pub fn cost_under(&self, prices: Prices) -> f64 {
        prices.cost(self.cache_read_tokens, self.cache_write_tokens)
    }

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
        let (read, write) = r.cache_tokens();
        t.sessions += 1;
        t.turns += r.turns.len();
        t.input_tokens += r.input_tokens();
        t.peak_tokens = t.peak_tokens.max(r.peak_tokens());
        t.cache_read_tokens += read;
        t.cache_write_tokens += write;
        t.cost += r.cost();
        t.references += refs;
        t.references_visible += vis;
    }
    order.into_iter().filter_map(|p| by.remove(&p)).collect()
}

/// A policy's sessions against the same sessions under `none`, under one price model: the totals can hide a
/// session that costs more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SessionCosts {
    /// Sessions that cost more than with no compaction.
    pub costlier: usize,
    /// Of those, the sessions that cost more than 3% more: `smart`'s regret bound (`max_regret`) says none.
    pub over_3_percent: usize,
    /// The largest excess of one session's cost over its cost under `none`, as a fraction (0.144: 14.4% more); 0
    /// when no session costs more.
    pub worst: f64,
}

/// One policy's figures as `ctxfit replay` shows them (its table, and its JSON's `policies`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyRow {
    pub policy: String,
    pub sessions: usize,
    pub turns: usize,
    pub input_tokens: usize,
    /// Input tokens saved against `none`, as a fraction of `none`'s.
    pub tokens_saved: Option<f64>,
    /// This policy's token saving as a share of the oracle's.
    pub share_of_oracle: Option<f64>,
    pub peak_tokens: usize,
    /// Cost under the first price model.
    pub cost: f64,
    /// Cost under each price model asked for.
    pub costs: BTreeMap<&'static str, f64>,
    /// Cost against `none`'s under each price model (−0.25: a quarter cheaper).
    pub cost_vs_none: BTreeMap<&'static str, f64>,
    /// Session by session against `none` under each price model (empty when `none` was not replayed).
    pub costlier_sessions: BTreeMap<&'static str, SessionCosts>,
    pub recall: f64,
    pub references: usize,
    pub references_visible: usize,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
    /// How far `share_of_oracle` would move on other sessions like these: its 5th and 95th percentiles over
    /// [`spread::RESAMPLES`] bootstrap resamples of the sessions, every policy on the same resample (`None` with
    /// fewer than two sessions, or without `none` and the oracle).
    pub share_of_oracle_spread: Option<[f64; 2]>,
    /// The same of `recall` (`None` with fewer than two sessions).
    pub recall_spread: Option<[f64; 2]>,
    /// Each tool's results over all the sessions, as the requests sent them, most costly first (uncompacted).
    pub tools: Vec<ToolTokens>,
    /// The same against what the logs say was billed, over the requests whose log records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billed: Option<BilledRow>,
}

/// A policy's figures against the billed baseline: every request whose log records its bill, with the part of it
/// the log does not show added to what the policy sends (the same under every policy, cached as the rest is).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BilledRow {
    pub requests: usize,
    pub input_tokens: usize,
    /// Input tokens saved against `none`'s billed input, as a fraction of it.
    pub tokens_saved: Option<f64>,
    pub costs: BTreeMap<&'static str, f64>,
    pub cost_vs_none: BTreeMap<&'static str, f64>,
}

/// Requests with a bill, and their billed input, cache reads and writes, of one policy's replays.
fn billed_sums<'a>(
    replays: impl Iterator<Item = &'a SessionReplay>,
) -> (usize, usize, usize, usize) {
    replays
        .flat_map(|r| r.turns.iter().filter_map(TurnStats::billed))
        .fold((0, 0, 0, 0), |(n, i, r, w), (bi, br, bw)| {
            (n + 1, i + bi, r + br, w + bw)
        })
}

fn billed_rows(
    replays: &[SessionReplay],
    policies: &[&str],
    models: &[PriceModel],
) -> BTreeMap<String, BilledRow> {
    let sums = |p: &str| billed_sums(replays.iter().filter(|r| r.policy == p));
    let none = sums("none");
    let cost = |(_, _, r, w): (usize, usize, usize, usize), m: &PriceModel| m.prices().cost(r, w);
    policies
        .iter()
        .filter_map(|&p| {
            let s = sums(p);
            (s.0 > 0).then(|| {
                let costs: BTreeMap<&'static str, f64> =
                    models.iter().map(|m| (m.name(), cost(s, m))).collect();
                let cost_vs_none = models
                    .iter()
                    .filter(|m| none.0 > 0 && cost(none, m) > 0.0)
                    .map(|m| (m.name(), costs[m.name()] / cost(none, m) - 1.0))
                    .collect();
                let row = BilledRow {
                    requests: s.0,
                    input_tokens: s.1,
                    tokens_saved: (none.1 > 0).then(|| 1.0 - s.1 as f64 / none.1 as f64),
                    costs,
                    cost_vs_none,
                };
                (p.to_owned(), row)
            })
        })
        .collect()
}

/// Each policy's row: its totals against `none`'s and the oracle's (when they were replayed), costs under each
/// price model in `models` (the first is `cost`), and its sessions against the same sessions under `none`.
pub fn policy_rows(replays: &[SessionReplay], models: &[PriceModel]) -> Vec<PolicyRow> {
    let totals = totals(replays);
    let by_session = session_costs(replays, totals.iter().map(|t| t.policy.as_str()), models);
    let mut spreads = spreads(replays, totals.iter().map(|t| t.policy.as_str()));
    let names: Vec<&str> = totals.iter().map(|t| t.policy.as_str()).collect();
    let mut billed = billed_rows(replays, &names, models);
    let find = |name: &str| totals.iter().find(|r| r.policy == name);
    let none = find("none");
    let oracle = find("oracle");
    totals
        .iter()
        .map(|t| {
            let costs: BTreeMap<&'static str, f64> = models
                .iter()
                .map(|m| (m.name(), t.cost_under(m.prices())))
                .collect();
            let cost_vs_none = match none {
                Some(n) => models
                    .iter()
                    .filter_map(|m| {
                        let base = n.cost_under(m.prices());
                        (base > 0.0).then(|| (m.name(), costs[m.name()] / base - 1.0))
                    })
                    .collect(),
                None => BTreeMap::new(),
            };
            let saved = none.map(|n| n.input_tokens as f64 - t.input_tokens as f64);
            let tokens_saved = match (saved, none) {
                (Some(s), Some(n)) if n.input_tokens > 0 => Some(s / n.input_tokens as f64),
                _ => None,
            };
            let share_of_oracle = match (saved, none, oracle) {
                (Some(s), Some(n), Some(o)) if n.input_tokens > o.input_tokens => {
                    Some(s / (n.input_tokens - o.input_tokens) as f64)
                }
                _ => None,
            };
            PolicyRow {
                policy: t.policy.clone(),
                sessions: t.sessions,
                turns: t.turns,
                input_tokens: t.input_tokens,
                tokens_saved,
                share_of_oracle,
                peak_tokens: t.peak_tokens,
                cost: models.first().map_or(t.cost, |m| costs[m.name()]),
                costs,
                cost_vs_none,
                costlier_sessions: by_session.get(&t.policy).cloned().unwrap_or_default(),
                recall: t.recall(),
                references: t.references,
                references_visible: t.references_visible,
                cache_read_tokens: t.cache_read_tokens,
                cache_write_tokens: t.cache_write_tokens,
                share_of_oracle_spread: spreads.get_mut(&t.policy).and_then(|s| s.0.take()),
                recall_spread: spreads.get_mut(&t.policy).and_then(|s| s.1.take()),
                tools: sum_tools(
                    (replays.iter())
                        .filter(|r| r.policy == t.policy)
                        .map(|r| r.tools.as_slice()),
                ),
                billed: billed.remove(&t.policy),
            }
        })
        .collect()
}

/// A session's replays paired across policies: each replay keyed by its label and its order among that label's
/// replays of the same policy.
fn paired<'a>(
    replays: &'a [SessionReplay],
    policy: &str,
) -> Vec<((&'a str, usize), &'a SessionReplay)> {
    let mut seen: FxHashMap<&str, usize> = FxHashMap::default();
    replays
        .iter()
        .filter(|r| r.policy == policy)
        .map(|r| {
            let k = seen.entry(r.session.as_str()).or_insert(0);
            *k += 1;
            ((r.session.as_str(), *k), r)
        })
        .collect()
}

/// A policy's 5th and 95th percentiles over resamples: of its share of the oracle's saving, and of its recall.
type Spreads = (Option<[f64; 2]>, Option<[f64; 2]>);

/// Per policy, the 5th and 95th percentiles of its share of the oracle's saving and of its recall over bootstrap
/// resamples of the sessions (paired: each resample draws the same sessions for every policy). A policy
/// missing one of the sessions gets none.
fn spreads<'a>(
    replays: &[SessionReplay],
    policies: impl Iterator<Item = &'a str>,
) -> BTreeMap<String, Spreads> {
    let policies: Vec<&str> = policies.collect();
    let Some(first) = policies.first() else {
        return BTreeMap::new();
    };
    let keys: Vec<(&str, usize)> = paired(replays, first).into_iter().map(|(k, _)| k).collect();
    if keys.len() < 2 {
        return BTreeMap::new();
    }
    // each policy's (input tokens, references, references visible) per session, in the order of `keys`
    let per_session = |policy: &str| -> Option<Vec<(usize, usize, usize)>> {
        let by: FxHashMap<(&str, usize), &SessionReplay> =
            paired(replays, policy).into_iter().collect();
        keys.iter()
            .map(|k| {
                by.get(k).map(|r| {
                    let (refs, visible) = r.references();
                    (r.input_tokens(), refs, visible)
                })
            })
            .collect()
    };
    let sessions: BTreeMap<&str, Vec<(usize, usize, usize)>> = policies
        .iter()
        .filter_map(|&p| per_session(p).map(|s| (p, s)))
        .collect();
    let tokens = |policy: &str, draw: &[usize]| -> Option<usize> {
        sessions
            .get(policy)
            .map(|s| draw.iter().map(|&i| s[i].0).sum())
    };
    let mut shares: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut recalls: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for draw in spread::resamples(keys.len(), spread::RESAMPLES) {
        let none = tokens("none", &draw);
        let oracle = tokens("oracle", &draw);
        for (&policy, s) in &sessions {
            let mine: usize = draw.iter().map(|&i| s[i].0).sum();
            if let (Some(n), Some(o)) = (none, oracle) {
                if n > o {
                    shares
                        .entry(policy)
                        .or_default()
                        .push((n as f64 - mine as f64) / (n - o) as f64);
                }
            }
            let (refs, visible) = draw
                .iter()
                .fold((0, 0), |(r, v), &i| (r + s[i].1, v + s[i].2));
            recalls.entry(policy).or_default().push(if refs == 0 {
                1.0
            } else {
                visible as f64 / refs as f64
            });
        }
    }
    sessions
        .keys()
        .map(|&p| {
            let share = shares.get_mut(p).map(|v| spread::middle_90(v));
            let recall = recalls.get_mut(p).map(|v| spread::middle_90(v));
            (p.to_owned(), (share, recall))
        })
        .collect()
}

/// Per policy (each of `policies` once) and price model, its sessions against the same sessions under `none`
/// (a session's replays are paired by label and by their order among that label's replays). Empty when `none`
/// was not replayed.
fn session_costs<'a>(
    replays: &[SessionReplay],
    policies: impl Iterator<Item = &'a str>,
    models: &[PriceModel],
) -> BTreeMap<String, BTreeMap<&'static str, SessionCosts>> {
    let none: FxHashMap<(&str, usize), &SessionReplay> =
        paired(replays, "none").into_iter().collect();
    let mut out = BTreeMap::new();
    if none.is_empty() {
        return out;
    }
    for policy in policies {
        let mut per_model: BTreeMap<&'static str, SessionCosts> = BTreeMap::new();
        for (key, r) in paired(replays, policy) {
            let Some(base) = none.get(&key) else { continue };
            let ((read, write), (base_read, base_write)) = (r.cache_tokens(), base.cache_tokens());
            for m in models {
                let prices = m.prices();
                let (cost, base) = (prices.cost(read, write), prices.cost(base_read, base_write));
                let entry = per_model.entry(m.name()).or_default();
                if base > 0.0 && cost > base * (1.0 + 1e-9) {
                    entry.costlier += 1;
                    entry.over_3_percent += usize::from(cost > base * 1.03 * (1.0 + 1e-9));
                    entry.worst = entry.worst.max(cost / base - 1.0);
                }
            }
        }
        out.insert(policy.to_owned(), per_model);
    }
    out
}

/// The policies `ctxfit replay` compares when none are named: `none`, `oracle` and every built-in profile.
pub fn default_policies() -> Vec<String> {
    ["none", "oracle"]
        .into_iter()
        .chain(ctxfit_compactor::BUILT_IN_PROFILES.iter().copied())
        .map(str::to_owned)
        .collect()
}

/// `ctxfit replay --json`'s document: the price models, a row per policy, and every session's replay.
pub fn document(
    rows: &[PolicyRow],
    replays: &[SessionReplay],
    models: &[PriceModel],
) -> serde_json::Value {
    let prices: BTreeMap<&str, Prices> = models.iter().map(|m| (m.name(), m.prices())).collect();
    serde_json::json!({"prices": prices, "policies": rows, "sessions": replays})
}
