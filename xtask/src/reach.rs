//! `cargo xtask fit-reach`: the excerpt's reach in `smart` — how many last lines of a stale log and first lines of a
//! stale listing it keeps — chosen from the corpus, so that it can be regenerated and checked.
//!
//! The reach is chosen on the sessions of a shell-only agent (`sessions/codex-agentv`: Codex CLI reads files with
//! `sed`, searches with `rg`, works through tools of its own), the one family whose recall it decides. Every pair
//! of the grid is replayed by the CLI (`ctxfit replay DIR --policy FILE:PROFILE --json`); each pair's recall is
//! then measured on random halves of the session files that hold references ([`halves`]), as a held-out part of
//! the same source would see it. The pair kept saves the most tokens among those whose recall stays at or above
//! 95% on all but 5% of the halves — the 5th percentile at 95%, as the replay's spreads are read. `--check`
//! fails when `smart`'s committed reach is not the pair chosen (CI runs it).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use ctxfit_replay::spread::halves;

use crate::figures::{num, replay};

/// The family the reach is chosen on.
const FAMILY: &str = "sessions/codex-agentv";
/// The grid: a log's last lines, a listing's first lines (everything else as `smart` has it).
const LOG_TAILS: [u64; 5] = [20, 30, 40, 50, 60];
const LISTING_KEEPS: [u64; 4] = [40, 60, 80, 100];
/// Recall a half must keep, and the share of halves allowed below it.
const MIN_RECALL: f64 = 0.95;
const MAX_HALVES_BELOW: f64 = 0.05;
const HALVES: usize = 2_000;

/// One pair of the grid as replayed: tokens saved against `none`, recall on the whole family and the share of
/// halves below [`MIN_RECALL`].
struct Pair {
    log_tail: u64,
    listing_keep: u64,
    saved: f64,
    recall: f64,
    halves_below: f64,
}

pub fn run(args: &[String]) -> Result<()> {
    let check = args.iter().any(|a| a == "--check");
    let corpus = ctxfit_testkit::corpus_dir().context(
        "the shared corpus is missing: put it at ../shared/corpus beside the workspace or set CTXFIT_CORPUS",
    )?;
    // each pair of the grid is `smart` with its excerpt rule's reach changed, every other rule and parameter as
    // `smart` has them; written as a JSON policy file the CLI reads
    let smart = ctxfit_compactor::built_in("smart").context("no built-in `smart`")?;
    let smart_rules = smart.rules.clone().unwrap_or_default();
    let excerpt = smart_rules
        .iter()
        .find(|r| r.rule == "excerpt")
        .context("`smart` has no excerpt rule")?;
    let committed = (
        excerpt.params["log_tail"].as_u64(),
        excerpt.params["listing_keep"].as_u64(),
    );
    let grid: Vec<(u64, u64)> = LOG_TAILS
        .iter()
        .flat_map(|&t| LISTING_KEEPS.iter().map(move |&l| (t, l)))
        .collect();
    let name = |(t, l): (u64, u64)| format!("tail{t}-listing{l}");
    let mut profiles = serde_json::Map::new();
    for &pair in &grid {
        let mut rules = smart_rules.clone();
        for r in rules.iter_mut().filter(|r| r.rule == "excerpt") {
            r.params["log_tail"] = pair.0.into();
            r.params["listing_keep"] = pair.1.into();
        }
        profiles.insert(
            name(pair),
            serde_json::json!({"extends": "smart", "rules": rules}),
        );
    }
    let file = crate::workspace_root().join("target/fit-reach.json");
    std::fs::create_dir_all(file.parent().context("target")?)?;
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&serde_json::json!({ "profiles": profiles }))?,
    )?;
    let mut policies = vec!["none".to_owned()];
    policies.extend(
        grid.iter()
            .map(|&pair| format!("{}:{}", file.display(), name(pair))),
    );
    eprintln!("fit-reach: replaying {FAMILY} under {} pairs", grid.len());
    let (_, sessions) = replay(&corpus.join(FAMILY), &policies)?;

    // per policy and session file (a file's context windows together): references, those shown, input tokens
    let mut per: BTreeMap<String, BTreeMap<String, [f64; 3]>> = BTreeMap::new();
    for s in &sessions {
        let file = s["session"].as_str().unwrap_or_default();
        let file = file.split(" — ").next().unwrap_or(file).to_owned();
        let entry = per
            .entry(s["policy"].as_str().unwrap_or_default().to_owned())
            .or_default()
            .entry(file)
            .or_default();
        for t in s["turns"].as_array().into_iter().flatten() {
            entry[0] += num(&t["references"]);
            entry[1] += num(&t["references_visible"]);
            entry[2] += num(&t["input_tokens"]);
        }
    }
    let none = per
        .get("none")
        .context("no `none` sessions in the replay")?;
    let files: Vec<&String> = none
        .iter()
        .filter(|(_, v)| v[0] > 0.0)
        .map(|(f, _)| f)
        .collect();
    let masks: Vec<Vec<bool>> = halves(files.len(), HALVES).collect();
    let all_tokens: f64 = none.values().map(|v| v[2]).sum();
    let mut pairs = Vec::new();
    for &pair in &grid {
        let label = name(pair);
        let rows = per
            .iter()
            .find(|(p, _)| p.ends_with(&format!(":{label}")) || **p == label)
            .map(|(_, r)| r)
            .with_context(|| format!("no sessions of {label} in the replay"))?;
        let recall_of = |pick: &dyn Fn(usize) -> bool| {
            let (mut refs, mut shown) = (0.0, 0.0);
            let picked = files.iter().enumerate().filter(|(i, _)| pick(*i));
            for v in picked.map(|(_, f)| rows.get(*f).copied().unwrap_or_default()) {
                refs += v[0];
                shown += v[1];
            }
            shown / refs.max(1.0)
        };
        let below = masks
            .iter()
            .filter(|m| recall_of(&|i| m[i]) < MIN_RECALL)
            .count();
        pairs.push(Pair {
            log_tail: pair.0,
            listing_keep: pair.1,
            saved: 1.0 - rows.values().map(|v| v[2]).sum::<f64>() / all_tokens,
            recall: recall_of(&|_| true),
            halves_below: below as f64 / HALVES as f64,
        });
    }
    pairs.sort_by(|a, b| b.saved.total_cmp(&a.saved));
    println!(
        "| log tail, listing lines | tokens | recall | halves of the {} files below 95% |",
        files.len()
    );
    println!("|---|---|---|---|");
    for p in &pairs {
        println!(
            "| {}, {} | −{:.1}% | {:.1}% | {:.1}% |",
            p.log_tail,
            p.listing_keep,
            100.0 * p.saved,
            100.0 * p.recall,
            100.0 * p.halves_below
        );
    }
    let chosen = pairs
        .iter()
        .find(|p| p.halves_below <= MAX_HALVES_BELOW)
        .context("no pair of the grid holds recall on 95% of the halves")?;
    println!(
        "chosen: log tail {}, listing lines {} (the most tokens saved with recall ≥ 95% on all but 5% of the halves)",
        chosen.log_tail, chosen.listing_keep
    );
    if committed != (Some(chosen.log_tail), Some(chosen.listing_keep)) {
        let message = format!(
            "`smart` keeps a log tail of {} and {} listing lines; the corpus chooses {} and {} \
             (SMART_LOG_TAIL, SMART_LISTING_KEEP in crates/ctxfit-compactor/src/policy.rs)",
            committed.0.map_or("none".into(), |v| v.to_string()),
            committed.1.map_or("none".into(), |v| v.to_string()),
            chosen.log_tail,
            chosen.listing_keep
        );
        if check {
            bail!("fit-reach: {message}");
        }
        eprintln!("fit-reach: {message}");
    }
    Ok(())
}
