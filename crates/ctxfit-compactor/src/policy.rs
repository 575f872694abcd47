//! Policies: named profiles of compaction settings, per-agent overrides, aliases; from TOML or JSON, the
//! environment, and built-in profiles that reproduce the seeds.

use std::collections::BTreeMap;
use std::fmt;

use ctxfit_tokens::TokenBudget;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// When compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// On every request (seed 002).
    Always,
    /// When the input tokens of the last call (or the estimate) exceed `budget` (seed 000; `budget = 0` disables).
    Budget,
}

/// One rule of a profile: its registered name, the tools it applies to (kinds or names; empty = the rule's own
/// defaults), and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub rule: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

/// A profile as written in a policy file: every field optional, filled from `extends` and then defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_latest_result_message: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_last_tool_uses: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_tools: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_tool_inputs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_reclaim_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_reclaim_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_premium: Option<f64>,
    /// The payback rule's forecast: requests still to come per request so far (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon: Option<f64>,
    /// The payback rule's forecast: requests still to come at least (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_horizon: Option<i64>,
    /// The regret bound: the most the conversation may cost above sending everything, as a share of that (off
    /// when absent; `smart`: 0.03).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_regret: Option<f64>,
    /// Seconds the provider keeps a cached prefix after its last use (default 300; 0: it never expires).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<i64>,
    /// At a request that finds the provider's cache expired, stale file reads this many of the agent's turns old
    /// or older become pointers (0: off; `smart`: 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_read_age: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_result_chars: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_conversation_messages: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_budget: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning_threshold: Option<i64>,
    /// The retrieval handle: the name of a tool the agent offers the model (`retrieval_tool = "ctxfit_retrieve"`;
    /// `""` turns it off). Every result a rule cuts then ends with how to get the original back through it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<RuleSpec>>,
    /// Rules asked before the ones the profile has or inherits: one rule added to `smart` without copying its
    /// list (`extends = "smart"`, `add_rules = [{ rule = "mine", tools = ["my_tool"] }]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_rules: Option<Vec<RuleSpec>>,
}

/// A policy file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// The profile used when none is named ([`PolicyFile::default_name`]: else the file's only profile, else
    /// `smart`; the same in the CLI, the replay, the proxy and the Python package).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_profile: Option<String>,
    /// Named profiles; a name of a built-in profile overrides its fields.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, ProfileSpec>,
    /// Per-agent overrides of the default profile (or of the profile they `extends`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, ProfileSpec>,
    /// Extra tool-name → kind aliases (`my_reader = "read_file"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
}

/// Effective settings of one profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub profile: String,
    pub trigger: Trigger,
    /// With `Trigger::Budget`: compact when the input tokens exceed it (0 disables).
    pub budget: usize,
    /// Compact down to this many tokens, oldest results first (0 = as far as the rules go).
    pub target: usize,
    /// Never compact the most recent tool-result message, even when the model has answered it (seed 000).
    pub keep_latest_result_message: bool,
    /// Never compact the last N tool results.
    pub keep_last_tool_uses: usize,
    /// Tools (names or kinds) never compacted.
    pub exclude_tools: Vec<String>,
    /// Also clear the input of a compacted tool call.
    pub clear_tool_inputs: bool,
    /// Change nothing unless a batch reclaims at least this many tokens.
    pub min_reclaim_tokens: usize,
    /// Change nothing unless a batch reclaims at least this fraction of the tokens the provider must write to
    /// its cache again: the part of the previous request (cached) from the first changed message on (0 = off).
    /// Breaking the cache to save little behind a long cached tail costs more than it saves; cutting a result
    /// right after the model answered it rewrites only that result and the answer.
    pub min_reclaim_ratio: f64,
    /// The payback rule: what writing a token to the prompt cache costs beyond reading it, in cache reads
    /// ((1.25 − 0.1) / 0.1 = 11.5 on Anthropic, (1 − 0.1) / 0.1 = 9 on OpenAI; 0 = off, every cut made at once).
    /// Cutting `reclaim` tokens from results after which `tail` tokens were cached writes the rest of the tail
    /// again instead of reading it, and saves `reclaim` cache reads on every request to come (`reclaim` cache
    /// writes on one that finds the cache expired). With `to_come` requests forecast (`horizon`, `min_horizon`),
    /// as many of them finding the cache expired as did of the requests so far, cuts are made when
    /// `reclaim × (to_come × (1 + premium × expired / requests) + premium + 1) ≥ premium × tail`: the latest cuts
    /// of a request that pay back, and the older ones that pay for the stretch of cached tail they add; the others
    /// wait, with the cut their rule chose, and are tested again at the next request (their rule is asked again
    /// as the history grows). Early in a conversation, which may soon end, only large cuts are made; small ones
    /// wait for it to go on.
    pub cache_write_premium: f64,
    /// The payback rule's forecast of the requests still to come, per request so far: `to_come = max(horizon ×
    /// requests, min_horizon)`. Default 2 and 10: in the corpus's 359 recorded sessions and context windows of
    /// eight agents, a long one that has had 5–20 requests has on average 2–13 times as many still to come, one
    /// of 40 about as many again, and a short one about ten more after its first few (docs/benchmarks.md).
    pub horizon: f64,
    /// The least the payback rule forecasts still to come (requests): see `horizon`.
    pub min_horizon: usize,
    /// The regret bound (`None`: off): a cut that makes the provider write its cache again is made only when what
    /// the conversation has saved so far against sending everything, plus this share of what sending everything
    /// would have cost so far (this request included), covers the extra it costs now — under Anthropic's and
    /// OpenAI's prices both (a cache write costs 12.5 and 10 cache reads). So no conversation costs more than
    /// this share above sending everything, by construction: the accounting is the replay's, request by
    /// request (a request after a pause longer than `cache_ttl` is written whole either way). Counted only where
    /// the cache's costs are (`cache_write_premium` above 0). `smart`: 0.03.
    pub max_regret: Option<f64>,
    /// Seconds the provider keeps a cached prefix after its last use: Anthropic's default is five minutes (300;
    /// 3600 for its one-hour cache; OpenAI's in-memory cache lasts 5–10 minutes; 0 = the cache never expires). When the caller says when each request is sent
    /// ([`Compactor::compact_at`](crate::Compactor::compact_at)) and more than this has passed since the one
    /// before, nothing is cached any more: the provider writes the whole request again whatever changes, so
    /// every cut is free of cache cost — the waiting ones are made too.
    pub cache_ttl: u64,
    /// At a request that finds the provider's cache expired (written whole whatever changes), each stale file
    /// read that this many of the agent's turns or more have followed becomes a pointer (0 = off).
    pub cold_read_age: usize,
    /// Cut every tool result, even the newest, to this many characters when it enters the history (0 = off).
    /// A result cut this way is final: no rule compacts it again, so the cached prefix stays valid.
    pub max_tool_result_chars: usize,
    /// Keep at most this many messages, dropping from the front (0 = off).
    pub max_conversation_messages: usize,
    /// The token guard of seed 003 (its `budget`): a request whose compacted estimate is above it is refused
    /// before it is sent (0 = off). Unlike `budget`, which says when to compact, this is a hard limit.
    pub request_budget: usize,
    /// The token guard's `warning_threshold`: a request above it is sent with a warning (0 = off).
    pub warning_threshold: usize,
    /// The retrieval handle (off when `None`): every cut result ends with
    /// `[the full result: call NAME with {"handle":"…"}]`, and the agent answers such a call with
    /// [`retrieve`](crate::retrieve) — the original, byte for byte. Only for agents that
    /// offer the model this tool ([`retrieval_tool_definition`](crate::retrieval_tool_definition)).
    pub retrieval_tool: Option<String>,
    pub rules: Vec<RuleSpec>,
    pub aliases: BTreeMap<String, String>,
}

/// A policy that cannot be used, with what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// The file could not be read as a policy: missing, a folder, unreadable, too large, not UTF-8.
    #[error("{path}: cannot read: {message}")]
    Read {
        path: String,
        message: String,
        /// The kind of the I/O error, when it was one (`NotFound`, `PermissionDenied`, …).
        kind: Option<std::io::ErrorKind>,
    },
}

/// The most bytes a policy file may hold. A policy is a few kilobytes: a device or a stream without end given as
/// one is refused once it has sent this much, before it fills memory.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

fn invalid(path: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// Of a stale log, `smart` keeps this many first lines (with the last [`SMART_LOG_TAIL`] and every outcome).
const SMART_LOG_HEAD: usize = 10;
/// Of a stale log, `smart` keeps this many last lines; chosen with [`SMART_LISTING_KEEP`] by `cargo xtask fit-reach`.
const SMART_LOG_TAIL: usize = 40;
/// Of a stale listing or search, `smart` keeps this many first lines.
const SMART_LISTING_KEEP: usize = 60;
/// At a request that finds the cache expired, `smart` leaves out the file reads this many of the agent's turns
/// old or older; chosen on cc-entire (docs/benchmarks.md, "Old reads when the cache has expired").
const SMART_COLD_READ_AGE: i64 = 10;

/// Names of the built-in profiles.
pub const BUILT_IN_PROFILES: &[&str] = &[
    "anthropic-clear",
    "keep-last-30",
    "mask-last-10",
    "seed-000",
    "seed-002",
    "seed-004",
    "smart",
];

/// The built-in profile `name`.
pub fn built_in(name: &str) -> Option<ProfileSpec> {
    let rule = |rule: &str, params: Value| RuleSpec {
        rule: rule.to_owned(),
        tools: Vec::new(),
        params,
    };
    let rule_for = |rule: &str, tools: &[&str], params: Value| RuleSpec {
        rule: rule.to_owned(),
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        params,
    };
    match name {
        "smart" => Some(ProfileSpec {
            trigger: Some(Trigger::Always),
            keep_latest_result_message: Some(false),
            // a cut is made when it would pay back its cache write at Anthropic's prices over the requests forecast
            // to come (`horizon`, `min_horizon`: twice as many as so far, at least ten), and waits until then: a
            // cut is expected to save what it costs
            cache_write_premium: Some(11.5),
            // and whatever the forecast, no conversation costs more than 3% above sending everything: a cut that
            // would take it past that waits until the savings so far cover it
            max_regret: Some(0.03),
            // a request that finds the provider's cache expired is written whole whatever changes: there, and only
            // there, the file reads the agent made 10 or more turns before are left out for free
            cold_read_age: Some(SMART_COLD_READ_AGE),
            // each stale result is decided as soon as the model has answered it: the cache breaks only over that
            // result and the answer, and the excerpt rule cuts only where it saves a tenth or more. Of a log it
            // keeps the first 10 and last 40 lines and the outcomes, of a listing the first 60 lines: what it
            // takes for 95% of the references to shell output to stay on all but 5% of random halves of a
            // shell-only agent's sessions (Codex CLI; `cargo xtask fit-reach`, docs/benchmarks.md, "Recall and
            // the excerpt's reach"). Of the results that hold images (screenshots), the newest three keep them, as
            // Anthropic's computer-use loop does; an older one's images are each written as a line, its text kept
            rules: Some(vec![
                rule_for("edit-file", &["edit_file"], Value::Null),
                rule_for("images", &["*"], serde_json::json!({"keep": 3})),
                rule_for(
                    "excerpt",
                    &["*"],
                    serde_json::json!({"log_head": SMART_LOG_HEAD, "log_tail": SMART_LOG_TAIL, "listing_keep": SMART_LISTING_KEEP}),
                ),
            ]),
            ..ProfileSpec::default()
        }),
        // observation masking (SWE-agent, "The Complexity Trap"): results older than the last 10 are masked
        "mask-last-10" => Some(ProfileSpec {
            trigger: Some(Trigger::Always),
            keep_latest_result_message: Some(false),
            rules: Some(vec![rule_for(
                "recent",
                &["*"],
                serde_json::json!({"keep": 10, "scope": "all", "pointer": "Old tool output: ({lines} lines omitted)"}),
            )]),
            ..ProfileSpec::default()
        }),
        // Anthropic's clear_tool_uses: above 100,000 input tokens, clear results older than the last 3 tool uses
        "anthropic-clear" => Some(ProfileSpec {
            trigger: Some(Trigger::Budget),
            budget: Some(100_000),
            keep_last_tool_uses: Some(3),
            keep_latest_result_message: Some(false),
            rules: Some(vec![rule_for(
                "recent",
                &["*"],
                serde_json::json!({"keep": 0, "scope": "all", "pointer": "[cleared to save context]"}),
            )]),
            ..ProfileSpec::default()
        }),
        "keep-last-30" => Some(ProfileSpec {
            trigger: Some(Trigger::Always),
            keep_latest_result_message: Some(false),
            rules: Some(vec![rule_for(
                "recent",
                &["*"],
                serde_json::json!({"keep": 30, "scope": "all", "pointer": "[Old tool result dropped]"}),
            )]),
            ..ProfileSpec::default()
        }),
        "seed-000" => Some(ProfileSpec {
            trigger: Some(Trigger::Budget),
            budget: Some(40_000),
            keep_latest_result_message: Some(true),
            rules: Some(vec![rule(
                "truncate",
                serde_json::json!({"chars": 500, "marker": "\n[truncated for context management]"}),
            )]),
            ..ProfileSpec::default()
        }),
        // seed 004's table exactly: of a file's reads the first, the last and up to three sampled between
        // (pointers for the rest), edits kept, shell output over 10,000 characters to its first and last 2,000
        // and a summary line, listings recent-only (the last three of each tool); the rest kept
        "seed-004" => Some(ProfileSpec {
            trigger: Some(Trigger::Always),
            keep_latest_result_message: Some(false),
            rules: Some(vec![
                rule_for("edit-file", &["edit_file"], Value::Null),
                rule_for(
                    "read-file",
                    &["read_file", "bash"],
                    serde_json::json!({"mark_identical": false, "mark_edited": false}),
                ),
                rule_for("bash", &["bash"], Value::Null),
                rule_for("recent", &["listing"], Value::Null),
            ]),
            ..ProfileSpec::default()
        }),
        "seed-002" => Some(ProfileSpec {
            trigger: Some(Trigger::Always),
            keep_latest_result_message: Some(false),
            rules: Some(vec![rule("tiered", Value::Null)]),
            ..ProfileSpec::default()
        }),
        _ => None,
    }
}

impl PolicyFile {
    /// Read and parse the policy file at `path` ([`PolicyFile::parse`]), past a byte-order mark. A folder, more
    /// than [`MAX_POLICY_BYTES`] (`/dev/zero`), text that is not UTF-8, or a file that cannot be opened is a
    /// [`PolicyError::Read`] naming the path; a pipe (`--policy <(…)`) is read as a file is.
    pub fn read(path: &std::path::Path) -> Result<PolicyFile, PolicyError> {
        use std::io::Read;
        let name = path.display().to_string();
        let fail = |message: String, kind: Option<std::io::ErrorKind>| PolicyError::Read {
            path: name.clone(),
            message,
            kind,
        };
        if path.is_dir() {
            return Err(fail(
                "a folder, not a policy file".into(),
                Some(std::io::ErrorKind::IsADirectory),
            ));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_POLICY_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(e.to_string(), Some(e.kind())))?;
        if bytes.len() as u64 > MAX_POLICY_BYTES {
            return Err(fail(
                format!(
                    "more than {MAX_POLICY_BYTES} bytes: no policy is this large (a device or a stream without end?)"
                ),
                Some(std::io::ErrorKind::FileTooLarge),
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            fail(
                format!(
                    "not UTF-8 text (byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
                Some(std::io::ErrorKind::InvalidData),
            )
        })?;
        PolicyFile::parse(text.strip_prefix('\u{feff}').unwrap_or(&text), &name)
    }

    /// Parse TOML (or JSON when the text starts with `{`); `origin` names the source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<PolicyFile, PolicyError> {
        let parsed = if text.trim_start().starts_with('{') {
            // (placed and worded as every other JSON error: `ModelError::from_json`)
            serde_json::from_str(text).map_err(|e| {
                match ctxfit_model::ModelError::from_json(&e) {
                    ctxfit_model::ModelError::Json {
                        line,
                        column,
                        message,
                    } => PolicyError::Parse {
                        origin: format!("{origin}:{line}:{column}"),
                        message: expected_in_words(&message),
                    },
                    other => PolicyError::Parse {
                        origin: origin.to_owned(),
                        message: other.to_string(),
                    },
                }
            })?
        } else {
            toml::from_str(text).map_err(|e| PolicyError::Parse {
                // (an error without a place — the parser's recursion limit — names the file alone, not 0:0)
                origin: match e.span().map(|s| line_column(text, s.start)) {
                    Some((line, column)) => format!("{origin}:{line}:{column}"),
                    None => origin.to_owned(),
                },
                message: expected_in_words(e.message()),
            })?
        };
        Ok(parsed)
    }

    fn spec(&self, name: &str) -> Option<ProfileSpec> {
        match (built_in(name), self.profiles.get(name)) {
            (Some(base), Some(over)) => Some(merge(base, over.clone())),
            (Some(base), None) => Some(base),
            (None, Some(own)) => Some(own.clone()),
            (None, None) => None,
        }
    }

    /// Every profile name known: built-in and from the file.
    pub fn profile_names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILT_IN_PROFILES.iter().map(|s| (*s).to_owned()).collect();
        names.extend(self.profiles.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// The profile used when none is named: `default_profile`, else the file's only profile, else `smart` when
    /// it defines none. A file defining several and no `default_profile` is an error that lists them: which one
    /// was meant cannot be guessed, and running `smart` instead would run what the file does not say.
    pub fn default_name(&self) -> Result<String, PolicyError> {
        if let Some(name) = &self.default_profile {
            return Ok(name.clone());
        }
        let mut names = self.profiles.keys();
        match (names.next(), names.next()) {
            (None, _) => Ok("smart".to_owned()),
            (Some(only), None) => Ok(only.clone()),
            _ => Err(invalid(
                "profiles",
                format!(
                    "several ({}) and no `default_profile`: set it, or name the one to use",
                    self.profiles
                        .keys()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// The effective settings for `profile` (else `$CTXFIT_PROFILE`, else the agent's `extends`, else
    /// [`PolicyFile::default_name`]), with the agent's overrides and the environment (`env("CTXFIT_BUDGET")`,
    /// ...) applied on top.
    pub fn resolve(
        &self,
        profile: Option<&str>,
        agent: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, PolicyError> {
        let env_profile = env("CTXFIT_PROFILE");
        let agent_spec =
            match agent {
                Some(a) => Some(self.agents.get(a).cloned().ok_or_else(|| {
                    invalid(format!("agents.{a}"), "no such agent in the policy")
                })?),
                None => None,
            };
        let name = profile
            .map(str::to_owned)
            .or(env_profile)
            .or_else(|| agent_spec.as_ref().and_then(|s| s.extends.clone()));
        let name = match name {
            Some(name) => name,
            None => self.default_name()?,
        };
        let mut spec = self.chain(&name, &mut Vec::new())?;
        if let Some(over) = agent_spec {
            spec = merge(
                spec,
                ProfileSpec {
                    extends: None,
                    ..over
                },
            );
        }
        let mut settings = finish(&name, spec, &self.aliases)?;
        apply_env(&mut settings, env)?;
        Ok(settings)
    }

    fn chain(&self, name: &str, seen: &mut Vec<String>) -> Result<ProfileSpec, PolicyError> {
        if seen.iter().any(|s| s == name) {
            seen.push(name.to_owned());
            return Err(invalid(
                format!("profiles.{}", seen[0]),
                format!("`extends` loops: {}", seen.join(" → ")),
            ));
        }
        seen.push(name.to_owned());
        let spec = self.spec(name).ok_or_else(|| {
            invalid(
                format!("profile `{name}`"),
                format!(
                    "no such profile (known: {})",
                    self.profile_names().join(", ")
                ),
            )
        })?;
        match spec.extends.clone() {
            Some(parent) => Ok(merge(self.chain(&parent, seen)?, spec)),
            // `add_rules` folded into `rules`
            None => Ok(merge(ProfileSpec::default(), spec)),
        }
    }
}

fn line_column(text: &str, byte: usize) -> (usize, usize) {
    let before = &text[..byte.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `over`'s fields where set, `base`'s otherwise.
fn merge(base: ProfileSpec, over: ProfileSpec) -> ProfileSpec {
    ProfileSpec {
        extends: over.extends.or(base.extends),
        trigger: over.trigger.or(base.trigger),
        budget: over.budget.or(base.budget),
        target: over.target.or(base.target),
        keep_latest_result_message: over
            .keep_latest_result_message
            .or(base.keep_latest_result_message),
        keep_last_tool_uses: over.keep_last_tool_uses.or(base.keep_last_tool_uses),
        exclude_tools: over.exclude_tools.or(base.exclude_tools),
        clear_tool_inputs: over.clear_tool_inputs.or(base.clear_tool_inputs),
        min_reclaim_tokens: over.min_reclaim_tokens.or(base.min_reclaim_tokens),
        min_reclaim_ratio: over.min_reclaim_ratio.or(base.min_reclaim_ratio),
        cache_write_premium: over.cache_write_premium.or(base.cache_write_premium),
        horizon: over.horizon.or(base.horizon),
        min_horizon: over.min_horizon.or(base.min_horizon),
        max_regret: over.max_regret.or(base.max_regret),
        cache_ttl: over.cache_ttl.or(base.cache_ttl),
        cold_read_age: over.cold_read_age.or(base.cold_read_age),
        max_tool_result_chars: over.max_tool_result_chars.or(base.max_tool_result_chars),
        max_conversation_messages: over
            .max_conversation_messages
            .or(base.max_conversation_messages),
        request_budget: over.request_budget.or(base.request_budget),
        warning_threshold: over.warning_threshold.or(base.warning_threshold),
        retrieval_tool: over.retrieval_tool.or(base.retrieval_tool),
        rules: match (over.add_rules, over.rules.or(base.rules)) {
            (Some(mut added), inherited) => {
                added.extend(inherited.unwrap_or_default());
                Some(added)
            }
            (None, inherited) => inherited,
        },
        // folded into `rules` above
        add_rules: None,
    }
}

fn non_negative(profile: &str, field: &str, v: Option<i64>) -> Result<usize, PolicyError> {
    match v {
        None => Ok(0),
        Some(n) if n >= 0 => Ok(n as usize),
        Some(n) => Err(invalid(
            format!("profiles.{profile}.{field}"),
            format!("must be 0 or more, got {n}"),
        )),
    }
}

fn non_negative_number(profile: &str, field: &str, v: Option<f64>) -> Result<f64, PolicyError> {
    match v {
        None => Ok(0.0),
        Some(r) if r >= 0.0 && r.is_finite() => Ok(r),
        Some(r) => Err(invalid(
            format!("profiles.{profile}.{field}"),
            format!("must be a finite number of 0 or more, got {r}"),
        )),
    }
}

/// A tool name both Anthropic and OpenAI accept (`[A-Za-z0-9_-]{1,64}`), or none (absent or `""`).
fn tool_name(profile: &str, name: Option<String>) -> Result<Option<String>, PolicyError> {
    match name {
        None => Ok(None),
        Some(n) if n.is_empty() => Ok(None),
        Some(n)
            if n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Ok(Some(n))
        }
        Some(n) => Err(invalid(
            format!("profiles.{profile}.retrieval_tool"),
            format!("must be a tool name of 1 to 64 letters, digits, `_` or `-`, got {n:?}"),
        )),
    }
}

fn finish(
    name: &str,
    spec: ProfileSpec,
    aliases: &BTreeMap<String, String>,
) -> Result<Settings, PolicyError> {
    let rules = spec.rules.unwrap_or_default();
    if rules.is_empty() {
        return Err(invalid(
            format!("profiles.{name}.rules"),
            "a profile needs at least one rule",
        ));
    }
    let settings = Settings {
        profile: name.to_owned(),
        trigger: spec.trigger.unwrap_or(Trigger::Budget),
        budget: non_negative(name, "budget", spec.budget)?,
        target: non_negative(name, "target", spec.target)?,
        keep_latest_result_message: spec.keep_latest_result_message.unwrap_or(true),
        keep_last_tool_uses: non_negative(name, "keep_last_tool_uses", spec.keep_last_tool_uses)?,
        exclude_tools: spec.exclude_tools.unwrap_or_default(),
        clear_tool_inputs: spec.clear_tool_inputs.unwrap_or(false),
        min_reclaim_tokens: non_negative(name, "min_reclaim_tokens", spec.min_reclaim_tokens)?,
        min_reclaim_ratio: non_negative_number(name, "min_reclaim_ratio", spec.min_reclaim_ratio)?,
        cache_write_premium: non_negative_number(
            name,
            "cache_write_premium",
            spec.cache_write_premium,
        )?,
        horizon: match spec.horizon {
            None => DEFAULT_HORIZON,
            h => non_negative_number(name, "horizon", h)?,
        },
        min_horizon: match spec.min_horizon {
            None => DEFAULT_MIN_HORIZON,
            h => non_negative(name, "min_horizon", h)?,
        },
        max_regret: match spec.max_regret {
            None => None,
            r => Some(non_negative_number(name, "max_regret", r)?),
        },
        cache_ttl: match spec.cache_ttl {
            None => DEFAULT_CACHE_TTL,
            ttl => non_negative(name, "cache_ttl", ttl)? as u64,
        },
        cold_read_age: non_negative(name, "cold_read_age", spec.cold_read_age)?,
        max_tool_result_chars: non_negative(
            name,
            "max_tool_result_chars",
            spec.max_tool_result_chars,
        )?,
        max_conversation_messages: non_negative(
            name,
            "max_conversation_messages",
            spec.max_conversation_messages,
        )?,
        request_budget: non_negative(name, "request_budget", spec.request_budget)?,
        warning_threshold: non_negative(name, "warning_threshold", spec.warning_threshold)?,
        retrieval_tool: tool_name(name, spec.retrieval_tool)?,
        rules,
        aliases: aliases.clone(),
    };
    if settings.target > 0 && settings.budget > 0 && settings.target > settings.budget {
        return Err(invalid(
            format!("profiles.{name}.target"),
            format!(
                "must not exceed the budget ({} > {})",
                settings.target, settings.budget
            ),
        ));
    }
    Ok(settings)
}

/// The payback rule's forecast when a profile does not say (`horizon`, `min_horizon`): twice the requests so far
/// still to come, and at least ten.
pub const DEFAULT_HORIZON: f64 = 2.0;
pub const DEFAULT_MIN_HORIZON: usize = 10;

/// The provider's cache lifetime when a profile does not say (`cache_ttl`): five minutes, Anthropic's default
/// (`"ttl": "5m"`) and the least OpenAI keeps an unused prefix.
pub const DEFAULT_CACHE_TTL: u64 = 300;

/// Environment variables that override a setting, and the setting they override.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("CTXFIT_BUDGET", "budget"),
    ("CTXFIT_TARGET", "target"),
    ("CTXFIT_KEEP_LAST_TOOL_USES", "keep_last_tool_uses"),
    ("CTXFIT_MIN_RECLAIM_TOKENS", "min_reclaim_tokens"),
    ("CTXFIT_MAX_TOOL_RESULT_CHARS", "max_tool_result_chars"),
    (
        "CTXFIT_MAX_CONVERSATION_MESSAGES",
        "max_conversation_messages",
    ),
    ("CTXFIT_REQUEST_BUDGET", "request_budget"),
    ("CTXFIT_WARNING_THRESHOLD", "warning_threshold"),
    ("CTXFIT_CACHE_TTL", "cache_ttl"),
];

fn apply_env(s: &mut Settings, env: &dyn Fn(&str) -> Option<String>) -> Result<(), PolicyError> {
    for (var, field) in ENV_OVERRIDES {
        let Some(raw) = env(var) else { continue };
        let n: usize = raw.trim().parse().map_err(|_| {
            invalid(
                *var,
                format!("expected a whole number of 0 or more, got `{raw}`"),
            )
        })?;
        match *field {
            "budget" => s.budget = n,
            "target" => s.target = n,
            "keep_last_tool_uses" => s.keep_last_tool_uses = n,
            "min_reclaim_tokens" => s.min_reclaim_tokens = n,
            "max_tool_result_chars" => s.max_tool_result_chars = n,
            "request_budget" => s.request_budget = n,
            "warning_threshold" => s.warning_threshold = n,
            "cache_ttl" => s.cache_ttl = n as u64,
            _ => s.max_conversation_messages = n,
        }
    }
    Ok(())
}

impl Settings {
    /// The token guard these settings ask for.
    pub fn token_guard(&self) -> TokenBudget {
        TokenBudget {
            budget: self.request_budget,
            warning_threshold: self.warning_threshold,
        }
    }
}

/// A JSON value as TOML: numbers as integers where they are whole (as written), nulls left out (TOML has none).
/// The settings go through JSON first because a rule's parameters are JSON numbers of arbitrary precision, which
/// the TOML serializer would write as serde_json's private wrapper table instead of as numbers.
fn toml_of(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => toml::Value::Array(items.iter().filter_map(toml_of).collect()),
        Value::Object(map) => toml::Value::Table(
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), toml_of(v)?)))
                .collect(),
        ),
    })
}

impl fmt::Display for Settings {
    /// The settings as a TOML profile (what `ctxfit policy show` prints).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_value(self).map_err(|_| fmt::Error)?;
        let Some(toml::Value::Table(mut me)) = toml_of(&json) else {
            return Err(fmt::Error);
        };
        me.remove("profile");
        let aliases = me.remove("aliases");
        let mut profiles = toml::Table::new();
        profiles.insert(self.profile.clone(), toml::Value::Table(me));
        let mut doc = toml::Table::new();
        doc.insert("profiles".into(), toml::Value::Table(profiles));
        if let Some(aliases) = aliases.filter(|_| !self.aliases.is_empty()) {
            doc.insert("aliases".into(), aliases);
        }
        write!(
            f,
            "{}",
            toml::to_string_pretty(&doc).map_err(|_| fmt::Error)?
        )
    }
}

/// A parser's "invalid type: floating point `1e30`, expected i64" with what it expected in a policy author's
/// words ("… expected an integer").
fn expected_in_words(message: &str) -> String {
    match message.rsplit_once(", expected ") {
        Some((head, expected)) => format!(
            "{head}, expected {}",
            ctxfit_retention::type_in_words(expected)
        ),
        None => message.to_owned(),
    }
}
