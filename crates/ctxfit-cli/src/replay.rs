//! `ctxfit replay`: every built-in policy (or the ones named) on recorded sessions, side by side.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ctxfit_import::{Session, SourceFormat};
use ctxfit_replay::{
    default_policies, document, policy_rows, replay_batch, Policy, PolicyRow, PriceModel,
    SessionCosts, SessionInput, SessionReplay, Timing, ToolTokens, REPLAY_BATCH,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::input::{check, expand_inputs, load, parse_format, warn};
use crate::output::{emit, thousands, write_atomically};
use crate::tokens::parse_estimator;
use crate::BadInput;

mod plots;
mod tables;
use plots::{frontier, plot};
use tables::{hidden_table, references_table, table, tools_table};

#[derive(clap::Args)]
pub struct Args {
    /// Session files (any importable format, gzipped or not) or folders to search for them.
    files: Vec<PathBuf>,
    /// Replay the embedded sample session.
    #[arg(long, conflicts_with = "files")]
    sample: bool,
    /// Skip (and count as unreadable) files that read but are probably wrong — several calls sharing a
    /// tool_use id, a result answering no earlier call, a role the format does not have, an OpenAI `tool`
    /// message without its `tool_call_id`, a tool call or result not of its format's shape — instead of warning.
    #[arg(long)]
    strict: bool,
    /// A policy to compare: `none`, `oracle` (evaluation only: it reads the session's future), a built-in
    /// profile, a policy file (its `default_profile`, else its only profile), or `FILE:PROFILE`. Rows are
    /// labelled by what ran (`FILE:smart` for a file's change to a built-in profile); two that would run alike
    /// are refused. Repeat for several; default: `none`, `oracle` and every built-in profile.
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Read the inputs as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<SourceFormat>,
    /// Token estimator: chars4, fast, o200k, cl100k.
    #[arg(long, default_value = "fast", value_parser = parse_estimator)]
    estimator: String,
    /// Price models for the cost columns, comma-separated or repeated: `anthropic` (cache read 0.1, write
    /// 1.25, or 2.0 to the one-hour cache), `openai` (cached input 0.1, no write premium), `uncached` (every token 1.0), or `all`. The first
    /// is the JSON rows' `cost`.
    #[arg(long, value_delimiter = ',', default_value = "anthropic", value_parser = parse_prices)]
    prices: Vec<Vec<PriceModel>>,
    /// Seconds the provider keeps a cached prefix after its last use (0: forever), for sessions whose log does not
    /// say (Claude Code's does: five minutes or an hour). Where a log records when its messages were written
    /// (Claude Code, Codex CLI, mini-swe-agent), a request sent longer than that after the one before finds the
    /// cache expired: it is written whole, under every policy. A cache that lives an hour or more is written at
    /// Anthropic's one-hour price (2.0 a token, not 1.25).
    #[arg(long, default_value_t = ctxfit_compactor::DEFAULT_CACHE_TTL, value_name = "SECONDS")]
    cache_ttl: u64,
    /// Print JSON (totals per policy and every turn) instead of the table.
    #[arg(long)]
    json: bool,
    /// After the table, where the tokens go: the N tools whose results cost most (summed over the requests that
    /// sent them; a shell tool per program its command line starts with, `bash: grep`), and what each policy
    /// sent of them.
    /// The JSON always has every tool (`tools`).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "15")]
    by_tool: Option<usize>,
    /// After the table, what recall counts as lost: the first N references each policy hid — identifiers a
    /// turn used that, before it, only tool results had shown, and that the compacted request no longer showed —
    /// with the session, the request and the tool whose result showed each last. The JSON always has them all
    /// (`hidden`, per turn).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
    misses: Option<usize>,
    /// Draw each session's cost against the same session under `none` (first price model; against what the logs
    /// say was billed where they record it, over those sessions), sorted, one line per policy, into this SVG file: the tail the
    /// totals hide, beside the +3% of the regret bound (needs `none` among the policies).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Draw the frontier into this SVG file: tokens saved against recall, one point per policy, the oracle as
    /// the corner.
    #[arg(long)]
    frontier: Option<PathBuf>,
}

fn parse_prices(name: &str) -> Result<Vec<PriceModel>, String> {
    if name == "all" {
        return Ok(PriceModel::ALL.to_vec());
    }
    PriceModel::parse(name)
        .map(|m| vec![m])
        .ok_or_else(|| format!("unknown price model `{name}` (anthropic, openai, uncached, all)"))
}

fn policies(names: &[String]) -> Result<Vec<Policy>> {
    let names: Vec<String> = if names.is_empty() {
        default_policies()
    } else {
        names.to_vec()
    };
    let env = |k: &str| std::env::var(k).ok();
    Policy::resolve_all(&names, &env).map_err(|e| BadInput(e).into())
}

pub fn run(args: Args) -> Result<()> {
    let policies = policies(&args.policies)?;
    if args.plot.is_some() && !policies.iter().any(|p| p.name() == "none") {
        return Err(BadInput(
            "--plot draws each session's cost against none: add --policy none".into(),
        )
        .into());
    }
    // where the drawings go is checked before the replay, not after it
    for path in [&args.plot, &args.frontier].into_iter().flatten() {
        crate::output::check_writable(path)?;
    }
    if !args.sample && args.files.is_empty() {
        return Err(BadInput("no input: give session FILEs or --sample".into()).into());
    }
    let registry = ctxfit_plugins::registry()?;
    let mut models: Vec<PriceModel> = Vec::new();
    for m in args.prices.iter().flatten() {
        if !models.contains(m) {
            models.push(*m);
        }
    }
    let prices = models[0].prices();
    let estimator_name = args.estimator.clone();
    let estimator = move || {
        ctxfit_tokens::estimator(&estimator_name)
            .unwrap_or_else(|| Box::new(ctxfit_tokens::FastEstimator))
    };
    let replay_all = |batch: &[(String, Session)]| -> Result<Vec<SessionReplay>> {
        let inputs: Vec<SessionInput<'_>> = batch
            .iter()
            .map(|(label, session)| SessionInput {
                label,
                conversation: &session.conversation,
                timing: Timing {
                    times: &session.times,
                    cache_ttl: args.cache_ttl,
                    stated_ttl: session.cache_ttl,
                    billed: &session.billed,
                },
            })
            .collect();
        replay_batch(&inputs, &policies, &registry, &estimator, prices)
            .map_err(|e| BadInput(e.to_string()).into())
    };
    let mut replays: Vec<SessionReplay> = Vec::new();
    let files = if args.sample {
        let (name, s) = load(None, true, args.format)?;
        let batch: Vec<(String, Session)> = s.into_iter().map(|s| (name.clone(), s)).collect();
        replays = replay_all(&batch)?;
        Vec::new()
    } else {
        expand_inputs(&args.files)?
    };
    let bar = if args.files.len() > 1 {
        let bar = ProgressBar::new(files.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    // the files' sessions replayed a batch at a time, so that a folder of any size is never all in memory; a
    // file that cannot be read is reported and skipped, the rest are replayed, and the exit code says so
    let (mut unreadable, mut read) = (0, 0);
    let mut batch: Vec<(String, Session)> = Vec::new();
    let mut batch_files = 0;
    for (k, file) in files.iter().enumerate() {
        let loaded = load(Some(file), false, args.format).and_then(|(name, s)| {
            warn(&name, &check(&name, &s, args.strict)?);
            Ok((name, s))
        });
        match loaded {
            Ok((name, s)) => batch.extend(s.into_iter().map(|s| {
                let label = if s.name.is_empty() {
                    name.clone()
                } else {
                    format!("{name} — {}", s.name)
                };
                (label, s)
            })),
            Err(e) if files.len() > 1 => {
                crate::shown::say(&format!("skipped: {e:#}"));
                unreadable += 1;
            }
            Err(e) => return Err(e),
        }
        batch_files += 1;
        if batch.len() >= REPLAY_BATCH || k + 1 == files.len() {
            read += batch.len();
            replays.extend(replay_all(&batch)?);
            batch.clear();
            bar.inc(batch_files);
            batch_files = 0;
        }
    }
    bar.finish_and_clear();
    if !args.sample && read == 0 {
        return Err(BadInput(format!(
            "no session to replay in {} file(s){}",
            files.len(),
            if unreadable > 0 {
                " (unreadable ones named above)"
            } else {
                ""
            }
        ))
        .into());
    }
    let rows = policy_rows(&replays, &models);
    if let Some(path) = &args.plot {
        plot(path, &replays, &policies, models[0])?;
    }
    if let Some(path) = &args.frontier {
        frontier(path, &rows)?;
    }
    if args.json {
        let doc = document(&rows, &replays, &models);
        emit(None, &format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        let mut out = table(&rows, &models);
        if let Some(limit) = args.by_tool {
            let uncompacted: usize = (replays.iter())
                .filter(|r| r.policy == rows[0].policy)
                .flat_map(|r| &r.turns)
                .map(|t| t.uncompacted_tokens)
                .sum();
            out.push_str(&tools_table(&rows, uncompacted, limit));
            out.push_str(&references_table(&rows, limit));
        }
        if let Some(limit) = args.misses {
            out.push_str(&hidden_table(&rows, &replays, limit));
        }
        crate::output::emit_table(&out)?;
    }
    if unreadable > 0 {
        return Err(BadInput(format!(
            "{unreadable} of {} files could not be read (named above); the figures are of the rest",
            files.len()
        ))
        .into());
    }
    Ok(())
}
