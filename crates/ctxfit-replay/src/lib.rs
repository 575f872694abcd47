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
mod prices;
mod references;
mod rows;
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
pub use prices::{CacheTokens, PriceModel, Prices};
pub use rows::{
    default_policies, document, policy_rows, totals, BilledRow, PolicyRow, PolicyTotals,
    SessionCosts,
};
pub use tools::{sum_tools, tool_label, ToolTokens};

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
    /// Its writes go to the one-hour cache (the session asked for one: Claude Code's `"ttl": "1h"`), which
    /// Anthropic charges 2.0 a token for, not 1.25.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cache_hour: bool,
    pub cost: f64,
    /// More than the cache's lifetime passed since the previous request: nothing of this one was cached.
    pub cache_expired: bool,
    /// Identifiers this turn used that only tool results had shown, and how many of them the request still had.
    pub references: usize,
    pub references_visible: usize,
    /// The references the request no longer showed, in the order the turn first used them: what the recall
    /// figure counts as lost, and the tool whose result showed each last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenReference>,
    /// Where the log records what the provider billed for this request: the part of the bill the log does not
    /// show (system prompt, tool definitions, injected reminders, and what the estimate counts low), the same
    /// under every policy — the billed input minus the uncompacted estimate, 0 at least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlogged_tokens: Option<usize>,
    /// The request was above the profile's `request_budget` after every cut (the part that is not stale tool
    /// results did not fit): the token guard refuses it live (`check_request`, Python's `PromptTooLarge`). The
    /// replay goes on as if it had been sent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub over_request_budget: bool,
}

/// A reference a request no longer showed: an identifier the turn used that, before it, only tool results had
/// shown — the latest of them a result of `tool` (labelled as `--by-tool` labels it, `bash: grep`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenReference {
    pub identifier: String,
    pub tool: String,
}

impl TurnStats {
    /// The request's tokens as the request budget counts them: what was sent, and — where the log records the
    /// bill — the part of it the log does not show (`unlogged_tokens`).
    pub fn budgeted_tokens(&self) -> usize {
        self.input_tokens + self.unlogged_tokens.unwrap_or(0)
    }

    /// Its tokens read from the cache and written to it (to the one-hour cache where it asked for that).
    pub fn cache(&self) -> CacheTokens {
        CacheTokens::of(
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.cache_hour,
        )
    }

    /// Input tokens, cache reads and cache writes as billed: the request's bill under `none` (the uncompacted
    /// estimate and the unlogged part, `unlogged_tokens`) less what the policy cut, counted as Anthropic counts
    /// tool results ([`ANTHROPIC_TOOL_RESULT_SCALE`], fitted on the logs' bills by `cargo xtask fit-billed`).
    /// The difference from the estimate is read from the cache when the request reads anything from it, written
    /// otherwise. `None` without a bill.
    pub fn billed(&self) -> Option<(usize, CacheTokens)> {
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
        Some((input, CacheTokens::of(read, write, self.cache_hour)))
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

    /// The largest request sent — not one the token guard refuses — counted as the request budget counts it
    /// ([`TurnStats::budgeted_tokens`]).
    pub fn peak_sent_tokens(&self) -> usize {
        self.turns
            .iter()
            .filter(|t| !t.over_request_budget)
            .map(TurnStats::budgeted_tokens)
            .max()
            .unwrap_or(0)
    }

    /// Requests above the profile's `request_budget` after every cut: refused live by the token guard.
    pub fn over_request_budget(&self) -> usize {
        self.turns.iter().filter(|t| t.over_request_budget).count()
    }

    /// Cache reads and writes over the whole session.
    pub fn cache_tokens(&self) -> CacheTokens {
        self.turns.iter().map(TurnStats::cache).sum()
    }

    /// Input tokens, cache reads and cache writes as billed ([`TurnStats::billed`]), summed over the requests
    /// whose log records the bill; `None` when none does.
    pub fn billed(&self) -> Option<(usize, CacheTokens)> {
        self.turns
            .iter()
            .filter_map(TurnStats::billed)
            .reduce(|(i, c), (bi, bc)| (i + bi, c + bc))
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
        // a file, a pipe such as `<(…)`, a device; a folder only where the name is a path (a folder `smart` in the
        // working directory does not hide the profile), and then refused by name when read
        let is_file = |p: &str| {
            let path = std::path::Path::new(p);
            path.exists() && (!path.is_dir() || p.contains(['/', '\\', '.']))
        };
        let (file, profile) = if is_file(name) {
            (Some(name), None)
        } else {
            match name.rsplit_once(':') {
                Some((f, p)) if is_file(f) && !p.is_empty() => (Some(f), Some(p)),
                _ => (None, None),
            }
        };
        let settings = if let Some(file) = file {
            let f = ctxfit_compactor::PolicyFile::read(std::path::Path::new(file))
                .map_err(|e| e.to_string())?;
            // (a file of several profiles and no default is refused by the library too: here with the way out)
            if profile.is_none() {
                f.default_name()
                    .map_err(|e| format!("policy {file}: {e} as {file}:PROFILE"))?;
            }
            let mut settings = f
                .resolve(profile, None, env)
                .map_err(|e| format!("policy {name}: {e}"))?;
            if ctxfit_compactor::BUILT_IN_PROFILES.contains(&settings.profile.as_str()) {
                settings.profile = format!("{file}:{}", settings.profile);
            }
            settings
        } else if name.contains(['/', '\\', '.']) {
            // no built-in profile's name holds a dot or a path separator: a file was meant
            return Err(format!("policy {name}: no such policy file"));
        } else {
            ctxfit_compactor::PolicyFile::default()
                .resolve(Some(name), None, env)
                .map_err(|e| format!("policy {name}: {e}"))?
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
                    "policies {first} and {name} both run as `{}`: name each once (a file's other profile as FILE:PROFILE)",
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
        cold_read_age: 0,
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

/// Text of a block as the model reads it, for identifier extraction: a result its tool sent in a JSON envelope
/// (`{"output", "metadata"}`, `{"status", "message"}`: [`WrappedOutput`]) as the text inside, not its escaped
/// form (where `a.rs\nb.rs` would give `nb.rs`).
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

/// Sessions a caller replays together (in parallel, over every policy) before it reads the next ones: enough
/// to keep the cores busy, few enough that a folder of any size is never held in memory at once. `ctxfit
/// replay` and the Python package's `replay` read their inputs in batches of this many sessions.
pub const REPLAY_BATCH: usize = 32;

/// One recorded session to replay: its label in the rows, its conversation, and its log's times.
#[derive(Debug, Clone, Copy)]
pub struct SessionInput<'a> {
    /// The session's name in the rows (`SessionReplay::session`): a file's path, and its window.
    pub label: &'a str,
    /// The recorded conversation, replayed request by request.
    pub conversation: &'a Conversation,
    /// When its messages were written and how long the cache lives ([`Timing::NONE`]: never expires).
    pub timing: Timing<'a>,
}

/// Replay every session under every policy, in parallel (every core, rayon's pool), and return the replays in
/// job order — session by session, each under the policies in their order — the same result as a serial run.
/// An error (a policy the registry cannot build) ends the batch: no replays, that error.
pub fn replay_batch(
    sessions: &[SessionInput<'_>],
    policies: &[Policy],
    registry: &Registry,
    estimator: &(dyn Fn() -> Box<dyn TokenEstimator> + Sync),
    prices: Prices,
) -> Result<Vec<SessionReplay>, CompactorError> {
    use rayon::prelude::*;
    let jobs: Vec<(usize, usize)> = (0..sessions.len())
        .flat_map(|s| (0..policies.len()).map(move |p| (s, p)))
        .collect();
    jobs.par_iter()
        .map(|&(s, p)| {
            let session = &sessions[s];
            replay_timed(
                session.label,
                session.conversation,
                session.timing,
                &policies[p],
                registry,
                estimator,
                prices,
            )
        })
        .collect()
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
    // (summed in logarithmic time: a history is asked its sums once per request)
    let mut source_tokens: usize = 0;
    let mut sent_tokens = ctxfit_compactor::PrefixSums::default();
    // identifiers: where they have been seen (tool results or elsewhere), and in the request as sent
    let mut provenance = references::Provenance::new(conv);
    let mut visible = Bag::default();
    let mut previous_len = 0;
    let mut previous_input: Option<usize> = None;
    let mut turns = Vec::new();
    let mut texts = Vec::new();
    let mut tally = tools::Tally::default();
    let provider_ttl = timing.stated_ttl.unwrap_or(timing.cache_ttl);
    // a cache that lives an hour is written at the one-hour price
    let cache_hour = provider_ttl >= ctxfit_compactor::ONE_HOUR_CACHE;
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
            let mut over_request_budget = false;
            let uncompacted_tokens = preamble + source_tokens;
            // where the log records the bill, the part of it the log does not show: the same under every policy
            let unlogged_tokens = (timing.billed.get(mi).copied().flatten())
                .map(|b| (b as usize).saturating_sub(uncompacted_tokens));
            let (first_changed, dropped, compacted_total) = match compactor.as_mut() {
                Some(c) => {
                    // what the request holds besides its logged messages (system prompt, tools, reminders) counts
                    // against the request budget, as the proxy counts them live (a request without a bill is
                    // counted as logged, as everywhere in the replay)
                    c.set_unseen_tokens(unlogged_tokens.unwrap_or(0));
                    let report = c.compact_at(&request, previous_input, latest);
                    over_request_budget = c.check_request(&report).is_err();
                    for b in &report.new_blocks {
                        sent_tokens.sub(b.message, b.tokens_before - b.tokens_after);
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
                compacted_total.unwrap_or_else(|| preamble + sent_tokens.prefix(sent_tokens.len()));
            let (cache_read_tokens, cache_write_tokens) =
                if dropped > 0 || previous_len == 0 || expired {
                    (0, input_tokens)
                } else {
                    let unchanged = first_changed.unwrap_or(previous_len).min(previous_len);
                    let read = preamble + sent_tokens.prefix(unchanged);
                    (read, input_tokens - read)
                };
            let cost = prices.cost(CacheTokens::of(
                cache_read_tokens,
                cache_write_tokens,
                cache_hour,
            ));
            let refs = provenance.references(&conv.messages, mi);
            tally.used(&refs, |id| visible.contains(id));
            let hidden: Vec<HiddenReference> = refs
                .iter()
                .filter(|id| !visible.contains(id))
                .map(|id| HiddenReference {
                    identifier: id.clone(),
                    tool: tally.tool_of(id).unwrap_or_default().to_owned(),
                })
                .collect();
            let seen = refs.len() - hidden.len();
            turns.push(TurnStats {
                message: mi,
                input_tokens,
                uncompacted_tokens,
                cache_read_tokens,
                cache_write_tokens,
                cache_hour,
                cost,
                cache_expired: expired,
                references: refs.len(),
                references_visible: seen,
                hidden,
                unlogged_tokens,
                over_request_budget,
            });
            previous_len = request.messages.len();
            previous_input = Some(input_tokens);
        }
        // the message joins the history
        latest = timing.times.get(mi).copied().flatten().or(latest);
        let tokens = count_message(est.as_ref(), msg);
        tally.join(est.as_ref(), mi, msg);
        source_tokens += tokens;
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
