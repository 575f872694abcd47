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
/// The grid: a log's last lines, a listing's first lines (a log's first lines stay at 10).
const LOG_TAILS: [u64; 5] = [20, 30, 40, 50, 60];
const LISTING_KEEPS: [u64; 4] = [40, 60, 80, 100];
const LOG_HEAD: u64 = 10;
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
    let name = |t: u64, l: u64| format!("tail{t}-listing{l}");
    let mut policy = String::new();
    for t in LOG_TAILS {
        for l in LISTING_KEEPS {
            let p = name(t, l);
            policy.push_str(&format!(
                "[profiles.{p}]\nextends = \"smart\"\n[[profiles.{p}.rules]]\nrule = \"edit-file\"\n\
                 tools = [\"edit_file\"]\n[[profiles.{p}.rules]]\nrule = \"excerpt\"\ntools = [\"*\"]\n\
                 params = {{ log_head = {LOG_HEAD}, log_tail = {t}, listing_keep = {l} }}\n\n"
            ));
        }
    }
    let file = crate::workspace_root().join("target/fit-reach.toml");
    std::fs::create_dir_all(file.parent().context("target")?)?;
    std::fs::write(&file, policy)?;
    let mut policies = vec!["none".to_owned()];
    for t in LOG_TAILS {
        for l in LISTING_KEEPS {
            policies.push(format!("{}:{}", file.display(), name(t, l)));
        }
    }
    eprintln!(
        "fit-reach: replaying {FAMILY} under {} pairs",
        policies.len() - 1
    );
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
    for t in LOG_TAILS {
        for l in LISTING_KEEPS {
            let label = name(t, l);
            let rows = per
                .iter()
                .find(|(p, _)| p.ends_with(&format!(":{label}")) || **p == label)
                .map(|(_, r)| r)
                .with_context(|| format!("no sessions of {label} in the replay"))?;
            let recall_of = |pick: &dyn Fn(usize) -> bool| {
                let (mut refs, mut shown) = (0.0, 0.0);
                for (_, f) in files.iter().enumerate().filter(|(i, _)| pick(*i)) {
                    let v = rows.get(*f).copied().unwrap_or_default();
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
                log_tail: t,
                listing_keep: l,
                saved: 1.0 - rows.values().map(|v| v[2]).sum::<f64>() / all_tokens,
                recall: recall_of(&|_| true),
                halves_below: below as f64 / HALVES as f64,
            });
        }
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
    let smart = ctxfit_compactor::built_in("smart").context("no built-in `smart`")?;
    let excerpt = smart
        .rules
        .iter()
        .flatten()
        .find(|r| r.rule == "excerpt")
        .context("`smart` has no excerpt rule")?;
    let committed = (
        excerpt.params["log_tail"].as_u64(),
        excerpt.params["listing_keep"].as_u64(),
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
