//! From the sessions' replays to what `ctxfit replay` prints: totals per policy, the rows with their spread
//! over bootstrap resamples, what was billed, the per-session tail, and the JSON document.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::*;

/// Totals of many sessions under one policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PolicyTotals {
    pub policy: String,
    pub sessions: usize,
    pub turns: usize,
    pub input_tokens: usize,
    /// The largest single request of any session.
    pub peak_tokens: usize,
    /// Requests above the profile's `request_budget` after every cut: refused live ([`TurnStats`]).
    pub over_request_budget: usize,
    /// The largest request sent ([`SessionReplay::peak_sent_tokens`]).
    pub peak_sent_tokens: usize,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
    /// Of the writes, those to the one-hour cache.
    pub cache_write_1h_tokens: usize,
    /// Cost under the prices the sessions were replayed with.
    pub cost: f64,
    pub references: usize,
    pub references_visible: usize,
}

impl PolicyTotals {
    /// The cost of these requests under other prices.
    pub fn cost_under(&self, prices: Prices) -> f64 {
        prices.cost(CacheTokens {
            read: self.cache_read_tokens,
            write: self.cache_write_tokens,
            hour: self.cache_write_1h_tokens,
        })
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
        let cache = r.cache_tokens();
        t.sessions += 1;
        t.turns += r.turns.len();
        t.input_tokens += r.input_tokens();
        t.peak_tokens = t.peak_tokens.max(r.peak_tokens());
        t.over_request_budget += r.over_request_budget();
        t.peak_sent_tokens = t.peak_sent_tokens.max(r.peak_sent_tokens());
        t.cache_read_tokens += cache.read;
        t.cache_write_tokens += cache.write;
        t.cache_write_1h_tokens += cache.hour;
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
    /// Requests above the profile's `request_budget` after every cut, which the token guard refuses live
    /// (counted in the figures as if sent); 0 without a request budget.
    pub over_request_budget: usize,
    /// The largest request sent, not counting those the guard refuses, as the request budget counts it (with the
    /// part of the bill the log does not show, where it records one).
    pub peak_sent_tokens: usize,
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
    /// Of the writes, those to the one-hour cache (Anthropic: 2.0 a token, not 1.25).
    pub cache_write_1h_tokens: usize,
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
    /// This policy's saving of billed input as a share of the oracle's.
    pub share_of_oracle: Option<f64>,
    /// Its 5th and 95th percentiles over the same bootstrap resamples as [`PolicyRow::share_of_oracle_spread`].
    pub share_of_oracle_spread: Option<[f64; 2]>,
    pub costs: BTreeMap<&'static str, f64>,
    pub cost_vs_none: BTreeMap<&'static str, f64>,
    /// Session by session against `none`'s bill for the same requests, under each price model: the tail a user
    /// pays (empty when `none` was not replayed).
    pub costlier_sessions: BTreeMap<&'static str, SessionCosts>,
}

/// Requests with a bill, and their billed input, cache reads and writes, of one policy's replays.
fn billed_sums<'a>(
    replays: impl Iterator<Item = &'a SessionReplay>,
) -> (usize, usize, CacheTokens) {
    replays
        .flat_map(|r| r.turns.iter().filter_map(TurnStats::billed))
        .fold((0, 0, CacheTokens::default()), |(n, i, c), (bi, bc)| {
            (n + 1, i + bi, c + bc)
        })
}

fn billed_rows(
    replays: &[SessionReplay],
    policies: &[&str],
    models: &[PriceModel],
    spreads: &mut BTreeMap<String, Spreads>,
) -> BTreeMap<String, BilledRow> {
    let mut by_session = session_costs(
        replays,
        policies.iter().copied(),
        models,
        |r: &SessionReplay| r.billed().map(|(_, cache)| cache),
    );
    let sums = |p: &str| billed_sums(replays.iter().filter(|r| r.policy == p));
    let none = sums("none");
    let oracle = sums("oracle");
    let cost = |(_, _, c): (usize, usize, CacheTokens), m: &PriceModel| m.prices().cost(c);
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
                    share_of_oracle: (none.0 > 0 && oracle.0 > 0 && none.1 > oracle.1)
                        .then(|| (none.1 as f64 - s.1 as f64) / (none.1 - oracle.1) as f64),
                    share_of_oracle_spread: spreads.get_mut(p).and_then(|s| s.2.take()),
                    costs,
                    cost_vs_none,
                    costlier_sessions: by_session.remove(p).unwrap_or_default(),
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
    let by_session = session_costs(
        replays,
        totals.iter().map(|t| t.policy.as_str()),
        models,
        |r: &SessionReplay| Some(r.cache_tokens()),
    );
    let mut spreads = spreads(replays, totals.iter().map(|t| t.policy.as_str()));
    let names: Vec<&str> = totals.iter().map(|t| t.policy.as_str()).collect();
    let mut billed = billed_rows(replays, &names, models, &mut spreads);
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
                over_request_budget: t.over_request_budget,
                peak_sent_tokens: t.peak_sent_tokens,
                cost: models.first().map_or(t.cost, |m| costs[m.name()]),
                costs,
                cost_vs_none,
                costlier_sessions: by_session.get(&t.policy).cloned().unwrap_or_default(),
                recall: t.recall(),
                references: t.references,
                references_visible: t.references_visible,
                cache_read_tokens: t.cache_read_tokens,
                cache_write_tokens: t.cache_write_tokens,
                cache_write_1h_tokens: t.cache_write_1h_tokens,
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

/// A policy's 5th and 95th percentiles over resamples: of its share of the oracle's saving, of its recall, and
/// of its share of the oracle's saving of billed input.
type Spreads = (Option<[f64; 2]>, Option<[f64; 2]>, Option<[f64; 2]>);

/// Per policy, the 5th and 95th percentiles of its share of the oracle's saving, of its recall and of its share of
/// the oracle's saving of billed input (over the sessions whose logs record bills) over bootstrap
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
    // each policy's (input tokens, references, references visible, billed input) per session, in the order of
    // `keys` (a session without a bill counts 0 billed under every policy)
    type Counts = (usize, usize, usize, Option<usize>);
    let per_session = |policy: &str| -> Option<Vec<Counts>> {
        let by: FxHashMap<(&str, usize), &SessionReplay> =
            paired(replays, policy).into_iter().collect();
        keys.iter()
            .map(|k| {
                by.get(k).map(|r| {
                    let (refs, visible) = r.references();
                    (
                        r.input_tokens(),
                        refs,
                        visible,
                        r.billed().map(|(input, ..)| input),
                    )
                })
            })
            .collect()
    };
    let sessions: BTreeMap<&str, Vec<Counts>> = policies
        .iter()
        .filter_map(|&p| per_session(p).map(|s| (p, s)))
        .collect();
    let tokens = |policy: &str, draw: &[usize]| -> Option<usize> {
        sessions
            .get(policy)
            .map(|s| draw.iter().map(|&i| s[i].0).sum())
    };
    // the billed input of the drawn sessions, when any of them has a bill
    let billed = |policy: &str, draw: &[usize]| -> Option<usize> {
        let s = sessions.get(policy)?;
        draw.iter()
            .filter_map(|&i| s[i].3)
            .fold(None, |sum, b| Some(sum.unwrap_or(0) + b))
    };
    let share = |none: Option<usize>, oracle: Option<usize>, mine: Option<usize>| match (
        none, oracle, mine,
    ) {
        (Some(n), Some(o), Some(m)) if n > o => Some((n as f64 - m as f64) / (n - o) as f64),
        _ => None,
    };
    let mut shares: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut billed_shares: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut recalls: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for draw in spread::resamples(keys.len(), spread::RESAMPLES) {
        let none = tokens("none", &draw);
        let oracle = tokens("oracle", &draw);
        let (none_billed, oracle_billed) = (billed("none", &draw), billed("oracle", &draw));
        for (&policy, s) in &sessions {
            let mine: usize = draw.iter().map(|&i| s[i].0).sum();
            if let Some(x) = share(none, oracle, Some(mine)) {
                shares.entry(policy).or_default().push(x);
            }
            if let Some(x) = share(none_billed, oracle_billed, billed(policy, &draw)) {
                billed_shares.entry(policy).or_default().push(x);
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
            let billed = billed_shares.get_mut(p).map(|v| spread::middle_90(v));
            (p.to_owned(), (share, recall, billed))
        })
        .collect()
}

/// Per policy (each of `policies` once) and price model, its sessions against the same sessions under `none`
/// (a session's replays are paired by label and by their order among that label's replays), each costed by its
/// cache reads and writes as `cache_tokens` counts them (a session it gives none for is left out). Empty when
/// `none` was not replayed.
fn session_costs<'a>(
    replays: &[SessionReplay],
    policies: impl Iterator<Item = &'a str>,
    models: &[PriceModel],
    cache_tokens: impl Fn(&SessionReplay) -> Option<CacheTokens>,
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
            let (Some(cache), Some(base_cache)) = (cache_tokens(r), cache_tokens(base)) else {
                continue;
            };
            for m in models {
                let prices = m.prices();
                let (cost, base) = (prices.cost(cache), prices.cost(base_cache));
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
