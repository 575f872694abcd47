//! `ctxfit replay`: every built-in policy (or the ones named) on recorded sessions, side by side.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ctxfit_import::{Session, SourceFormat};
use ctxfit_replay::{
    default_policies, document, policy_rows, replay_timed, Policy, PolicyRow, PriceModel,
    SessionReplay, Timing, ToolTokens,
};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::input::{check, expand_inputs, load, parse_format, warn};
use crate::output::{emit, thousands, write_atomically};
use crate::tokens::parse_estimator;
use crate::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Session files (any importable format, gzipped or not) or folders to search for them.
    files: Vec<String>,
    /// Replay the embedded sample session.
    #[arg(long, conflicts_with = "files")]
    sample: bool,
    /// Skip (and count as unreadable) files that read but are probably wrong — several calls sharing a
    /// tool_use id, a result answering no earlier call, a role the format does not have — instead of warning.
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
    /// 1.25), `openai` (cached input 0.1, no write premium), `uncached` (every token 1.0), or `all`. The first
    /// is the JSON rows' `cost`.
    #[arg(long, value_delimiter = ',', default_value = "anthropic", value_parser = parse_prices)]
    prices: Vec<Vec<PriceModel>>,
    /// Seconds the provider keeps a cached prefix after its last use (0: forever), for sessions whose log does not
    /// say (Claude Code's does: five minutes or an hour). Where a log records when its messages were written
    /// (Claude Code, Codex CLI, mini-swe-agent), a request sent longer than that after the one before finds the
    /// cache expired: it is written whole, under every policy.
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
    /// Draw each session's cost against the same session under `none` (first price model), sorted, one line per
    /// policy, into this SVG file: the tail the totals hide, beside the +3% of the regret bound (needs `none`
    /// among the policies).
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

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{:+.1}%", 100.0 * v))
}

fn table(rows: &[PolicyRow], models: &[PriceModel]) -> String {
    let width = rows
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "{:<width$}  {:>8}  {:>6}  {:>14}  {:>8}  {:>9}  {:>11}",
        "policy", "sessions", "turns", "input tokens", "vs none", "of oracle", "peak"
    );
    for m in models {
        out.push_str(&format!(
            "  {:>14}  {:>8}",
            format!("cost {}", m.name()),
            "vs none"
        ));
    }
    out.push_str(&format!("  {:>7}  {:>14}\n", "recall", "costlier"));
    for r in rows {
        let share = r
            .share_of_oracle
            .map_or_else(|| "—".into(), |s| format!("{:.0}%", 100.0 * s));
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:>6}  {:>14}  {:>8}  {:>9}  {:>11}",
            r.policy,
            r.sessions,
            r.turns,
            thousands(r.input_tokens),
            percent(r.tokens_saved.map(|s| -s)),
            share,
            thousands(r.peak_tokens),
        ));
        for m in models {
            out.push_str(&format!(
                "  {:>14}  {:>8}",
                thousands(r.costs[m.name()].round() as usize),
                percent(r.cost_vs_none.get(m.name()).copied())
            ));
        }
        let costlier = models
            .first()
            .and_then(|m| r.costlier_sessions.get(m.name()))
            .map_or_else(
                || "—".to_owned(),
                |c| match c.costlier {
                    0 => "0".to_owned(),
                    n => format!("{n} ({})", percent(Some(c.worst))),
                },
            );
        out.push_str(&format!("  {:>6.1}%  {:>14}\n", 100.0 * r.recall, costlier));
    }
    out.push_str(&billed_table(rows, models, width));
    // how far the share and the recall would move on other sessions like these (none's and the oracle's are
    // 0% and 100% on any sessions)
    let spread: Vec<&PolicyRow> = rows
        .iter()
        .filter(|r| !matches!(r.policy.as_str(), "none" | "oracle") && r.recall_spread.is_some())
        .collect();
    if let Some(first) = spread.first() {
        out.push_str(&format!(
            "spread over {} bootstrap resamples of the {} sessions (5th to 95th percentile):\n{:<width$}  {:>11}  {:>15}\n",
            thousands(ctxfit_replay::spread::RESAMPLES),
            thousands(first.sessions),
            "policy",
            "of oracle",
            "recall"
        ));
        for r in spread {
            let share = r.share_of_oracle_spread.map_or_else(
                || "—".to_owned(),
                |[low, high]| format!("{:.0}% – {:.0}%", 100.0 * low, 100.0 * high),
            );
            let recall = r.recall_spread.map_or_else(
                || "—".to_owned(),
                |[low, high]| format!("{:.1}% – {:.1}%", 100.0 * low, 100.0 * high),
            );
            out.push_str(&format!(
                "{:<width$}  {share:>11}  {recall:>15}\n",
                r.policy
            ));
        }
    }
    if let (Some(m), true) = (
        models.first(),
        rows.iter().any(|r| !r.costlier_sessions.is_empty()),
    ) {
        out.push_str(&format!(
            "costlier: sessions that cost more than with no compaction ({} prices), and the worst one's excess\n",
            m.name()
        ));
        out.push_str(&session_tail(rows, models, width));
    }
    if rows.iter().any(|r| r.policy == "oracle") {
        out.push_str(
            "oracle: evaluation only — it reads the session's future (keeps only the lines a later turn uses)\n",
        );
    }
    out
}

/// Where the tokens go: the `limit` tools whose results cost most with no compaction, the others together, and
/// what is not a result (the system prompt, messages, calls); per policy, the change in what it sends of each.
/// `uncompacted`: the sessions' input tokens with no compaction.
fn tools_table(rows: &[PolicyRow], uncompacted: usize, limit: usize) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let policies: Vec<&PolicyRow> = rows.iter().filter(|r| r.policy != "none").collect();
    // per line: its name, results, tokens uncompacted, and tokens each policy sent (in `policies`' order)
    let sent = |row: &PolicyRow, tool: &str| {
        (row.tools.iter())
            .find(|t| t.tool == tool)
            .map_or(0, |t| t.input_tokens)
    };
    let mut lines: Vec<(String, String, usize, Vec<usize>)> = Vec::new();
    let mut rest = (0, 0, vec![0; policies.len()]);
    for (i, tool) in first.tools.iter().enumerate() {
        let per: Vec<usize> = policies.iter().map(|r| sent(r, &tool.tool)).collect();
        if i < limit {
            lines.push((
                tool.tool.clone(),
                thousands(tool.results),
                tool.uncompacted_tokens,
                per,
            ));
        } else {
            rest.0 += tool.results;
            rest.1 += tool.uncompacted_tokens;
            rest.2.iter_mut().zip(per).for_each(|(a, b)| *a += b);
        }
    }
    let others = first.tools.len().saturating_sub(limit);
    if others > 0 {
        let name = format!(
            "({others} other tool{})",
            if others == 1 { "" } else { "s" }
        );
        lines.push((name, thousands(rest.0), rest.1, rest.2));
    }
    let results: usize = first.tools.iter().map(|t| t.uncompacted_tokens).sum();
    let not_results: Vec<usize> = (policies.iter())
        .map(|r| {
            r.input_tokens
                .saturating_sub(r.tools.iter().map(|t| t.input_tokens).sum())
        })
        .collect();
    lines.push((
        "(not results: system, messages, calls)".to_owned(),
        String::new(),
        uncompacted.saturating_sub(results),
        not_results,
    ));
    let width = lines
        .iter()
        .map(|l| l.0.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "where the tokens go: each tool's results summed over the requests that sent them, uncompacted, and what each policy sent of them\n{:<width$}  {:>8}  {:>14}  {:>8}",
        "tool", "results", "uncompacted", "of input"
    );
    for r in &policies {
        out.push_str(&format!("  {:>w$}", r.policy, w = r.policy.len().max(8)));
    }
    out.push('\n');
    for (name, results, tokens, per) in lines {
        let share = if uncompacted > 0 {
            format!("{:.1}%", 100.0 * tokens as f64 / uncompacted as f64)
        } else {
            "—".to_owned()
        };
        out.push_str(&format!(
            "{name:<width$}  {results:>8}  {:>14}  {share:>8}",
            thousands(tokens)
        ));
        for (r, sent) in policies.iter().zip(per) {
            let change = (tokens > 0).then(|| sent as f64 / tokens as f64 - 1.0);
            out.push_str(&format!(
                "  {:>w$}",
                percent(change),
                w = r.policy.len().max(8)
            ));
        }
        out.push('\n');
    }
    out
}

/// What the agent used again, by tool: the references (as recall counts them) whose latest showing was a result
/// of each tool, most first, and the share of them each policy still showed when they were used.
fn references_table(rows: &[PolicyRow], limit: usize) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let policies: Vec<&PolicyRow> = rows.iter().filter(|r| r.policy != "none").collect();
    let mut tools: Vec<&ToolTokens> = first.tools.iter().filter(|t| t.references > 0).collect();
    tools.sort_by(|a, b| b.references.cmp(&a.references).then(a.tool.cmp(&b.tool)));
    let kept = |row: &PolicyRow, names: &[&str]| {
        (row.tools.iter())
            .filter(|t| names.contains(&t.tool.as_str()))
            .map(|t| t.references_visible)
            .sum::<usize>()
    };
    let mut lines: Vec<(String, Vec<&str>)> = (tools.iter().take(limit))
        .map(|t| (t.tool.clone(), vec![t.tool.as_str()]))
        .collect();
    if tools.len() > limit {
        let others = tools.len() - limit;
        lines.push((
            format!(
                "({others} other tool{})",
                if others == 1 { "" } else { "s" }
            ),
            tools[limit..].iter().map(|t| t.tool.as_str()).collect(),
        ));
    }
    let width = (lines.iter().map(|l| l.0.chars().count()))
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "what the agent used again: references whose latest showing was a result of each tool, and the share each policy still showed\n{:<width$}  {:>10}",
        "tool", "references"
    );
    for r in &policies {
        out.push_str(&format!("  {:>w$}", r.policy, w = r.policy.len().max(8)));
    }
    out.push('\n');
    for (name, names) in lines {
        let refs: usize = (first.tools.iter())
            .filter(|t| names.contains(&t.tool.as_str()))
            .map(|t| t.references)
            .sum();
        out.push_str(&format!("{name:<width$}  {:>10}", thousands(refs)));
        for r in &policies {
            let share = format!("{:.1}%", 100.0 * kept(r, &names) as f64 / refs as f64);
            out.push_str(&format!("  {share:>w$}", w = r.policy.len().max(8)));
        }
        out.push('\n');
    }
    out
}

/// The policies against what the logs say was billed, where they record it (Claude Code): the part of each bill
/// the log does not show is added to every policy's request.
fn billed_table(rows: &[PolicyRow], models: &[PriceModel], width: usize) -> String {
    let (Some(first), total) = (
        rows.iter().find_map(|r| r.billed.as_ref()),
        rows.first().map_or(0, |r| r.turns),
    ) else {
        return String::new();
    };
    let mut out = format!(
        "against what the logs say was billed ({} of {} requests record it; what the log leaves out — system prompt, tools, reminders — added to every request):\n{:<width$}  {:>14}  {:>8}",
        thousands(first.requests),
        thousands(total),
        "policy",
        "billed input",
        "vs none"
    );
    for m in models {
        out.push_str(&format!(
            "  {:>14}  {:>8}",
            format!("cost {}", m.name()),
            "vs none"
        ));
    }
    out.push('\n');
    for r in rows {
        let Some(b) = &r.billed else { continue };
        out.push_str(&format!(
            "{:<width$}  {:>14}  {:>8}",
            r.policy,
            thousands(b.input_tokens),
            percent(b.tokens_saved.map(|s| -s))
        ));
        for m in models {
            out.push_str(&format!(
                "  {:>14}  {:>8}",
                thousands(b.costs.get(m.name()).copied().unwrap_or(0.0).round() as usize),
                percent(b.cost_vs_none.get(m.name()).copied())
            ));
        }
        out.push('\n');
    }
    out
}

/// Each policy's sessions against the same sessions under `none`, per price model: how many cost more, how many
/// more than 3% more, and the worst one's excess — the tail the totals hide.
fn session_tail(rows: &[PolicyRow], models: &[PriceModel], width: usize) -> String {
    let mut out = format!(
        "sessions against none (costing more / more than 3% more / the worst):\n{:<width$}",
        "policy"
    );
    for m in models {
        out.push_str(&format!("  {:>22}", m.name()));
    }
    out.push('\n');
    for r in rows.iter().filter(|r| r.policy != "none") {
        out.push_str(&format!("{:<width$}", r.policy));
        for m in models {
            let cell = r.costlier_sessions.get(m.name()).map_or_else(
                || "—".to_owned(),
                |c| {
                    format!(
                        "{} / {} / {}",
                        c.costlier,
                        c.over_3_percent,
                        percent(Some(c.worst))
                    )
                },
            );
            out.push_str(&format!("  {cell:>22}"));
        }
        out.push('\n');
    }
    out
}

/// Tokens saved (against `none`) over recall, one labelled point per policy.
fn frontier(path: &Path, rows: &[PolicyRow]) -> Result<()> {
    use plotters::prelude::*;
    // policies at the same point share one label
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    for r in rows {
        let Some(saved) = r.tokens_saved else {
            continue;
        };
        let (recall, saved) = (100.0 * r.recall, 100.0 * saved);
        match points
            .iter_mut()
            .find(|p| (p.1 - recall).abs() < 0.05 && (p.2 - saved).abs() < 0.05)
        {
            Some(p) => p.0 = format!("{}, {}", p.0, r.policy),
            None => points.push((r.policy.clone(), recall, saved)),
        }
    }
    // and the cost saved under the first price model, a triangle beside each policy's circle
    let costs: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            let vs = r.cost_vs_none.values().next().copied()?;
            r.tokens_saved.map(|_| (100.0 * r.recall, -100.0 * vs))
        })
        .collect();
    let low_recall = points.iter().map(|p| p.1).fold(100.0, f64::min);
    let x_from = (low_recall / 10.0).floor() * 10.0;
    let top = (points.iter().map(|p| p.2))
        .chain(costs.iter().map(|c| c.1))
        .fold(10.0, f64::max);
    let bottom = costs.iter().map(|c| c.1).fold(-1.0, f64::min).floor();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 560)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the frontier: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "saved vs reference recall: tokens (circles), cost (triangles); oracle reads the future",
                ("sans-serif", 18),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_from..100.0, bottom..(top * 1.1).ceil())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("reference recall (%)")
            .y_desc("saved vs none (%)")
            .draw()
            .map_err(|e| err(&e))?;
        for (recall, saved) in &costs {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(
                    (*recall, *saved),
                    6,
                    BLACK.mix(0.6).filled(),
                )))
                .map_err(|e| err(&e))?;
        }
        for (i, (name, recall, saved)) in points.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(std::iter::once(Circle::new(
                    (*recall, *saved),
                    5,
                    color.filled(),
                )))
                .map_err(|e| err(&e))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (*recall, *saved),
                    ("sans-serif", 14).into_font(),
                )))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    write_atomically(path, svg.as_bytes())
}

/// Each session's cost against the same session under `none` (under `model`'s prices), sorted, one line per
/// policy: the tail that totals hide, beside the 3% the regret bound allows.
fn plot(
    path: &Path,
    replays: &[SessionReplay],
    policies: &[Policy],
    model: PriceModel,
) -> Result<()> {
    use plotters::prelude::*;
    let prices = model.prices();
    let cost = |r: &SessionReplay| {
        let (read, write) = r.cache_tokens();
        prices.cost(read, write)
    };
    // replays come in session order under every policy: the n-th of a policy is the n-th under none
    let none: Vec<f64> = replays
        .iter()
        .filter(|r| r.policy == "none")
        .map(cost)
        .collect();
    let series: Vec<(String, Vec<f64>)> = policies
        .iter()
        .filter(|p| p.name() != "none")
        .map(|p| {
            let mut ratios: Vec<f64> = replays
                .iter()
                .filter(|r| r.policy == p.name())
                .zip(&none)
                .filter(|(_, base)| **base > 0.0)
                .map(|(r, base)| 100.0 * (cost(r) / base - 1.0))
                .collect();
            ratios.sort_by(f64::total_cmp);
            (p.name().to_owned(), ratios)
        })
        .collect();
    let values = || series.iter().flat_map(|(_, v)| v.iter().copied());
    let low = values().fold(-10.0, f64::min).floor();
    let high = values().fold(10.0, f64::max).ceil();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 560)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the plot: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "each session's cost against none ({} prices), sorted",
                    model.name()
                ),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..100.0, low..high + 1.0)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("sessions, cheapest first (%)")
            .y_desc("cost vs none (%)")
            .draw()
            .map_err(|e| err(&e))?;
        // the regret bound's 3%
        chart
            .draw_series(LineSeries::new(
                [(0.0, 3.0), (100.0, 3.0)],
                BLACK.mix(0.4).stroke_width(1),
            ))
            .map_err(|e| err(&e))?
            .label("+3%")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        for (i, (name, ratios)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let n = ratios.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    ratios
                        .iter()
                        .enumerate()
                        .map(|(k, y)| (100.0 * (k as f64 + 0.5) / n, *y)),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    write_atomically(path, svg.as_bytes())
}

pub fn run(args: Args) -> Result<()> {
    let policies = policies(&args.policies)?;
    if args.plot.is_some() && !policies.iter().any(|p| p.name() == "none") {
        return Err(BadInput(
            "--plot draws each session's cost against none: add --policy none".into(),
        )
        .into());
    }
    let mut sessions: Vec<(String, Session)> = Vec::new();
    if args.sample {
        let (name, s) = load(None, true, args.format)?;
        sessions.extend(s.into_iter().map(|s| (name.clone(), s)));
    } else if args.files.is_empty() {
        return Err(BadInput("no input: give session FILEs or --sample".into()).into());
    }
    // a file that cannot be read is reported and skipped; the rest are replayed, and the exit code says so
    let files = expand_inputs(&args.files)?;
    let mut unreadable = 0;
    for file in &files {
        let loaded = load(Some(file), false, args.format).and_then(|(name, s)| {
            warn(&name, &check(&name, &s, args.strict)?);
            Ok((name, s))
        });
        match loaded {
            Ok((name, s)) => sessions.extend(s.into_iter().map(|s| {
                let label = if s.name.is_empty() {
                    name.clone()
                } else {
                    format!("{name} — {}", s.name)
                };
                (label, s)
            })),
            Err(e) if files.len() > 1 => {
                eprintln!("skipped: {e:#}");
                unreadable += 1;
            }
            Err(e) => return Err(e),
        }
    }
    if !args.sample && sessions.is_empty() {
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
    let jobs: Vec<(usize, usize)> = (0..sessions.len())
        .flat_map(|s| (0..policies.len()).map(move |p| (s, p)))
        .collect();
    let bar = if args.files.len() > 1 {
        let bar = ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} replays {elapsed}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    // in parallel, collected in job order: the same result as a serial run
    let results: Vec<Result<SessionReplay, String>> = jobs
        .par_iter()
        .map(|&(s, p)| {
            let (label, session) = &sessions[s];
            let timing = Timing {
                times: &session.times,
                cache_ttl: args.cache_ttl,
                stated_ttl: session.cache_ttl,
                billed: &session.billed,
            };
            let r = replay_timed(
                label,
                &session.conversation,
                timing,
                &policies[p],
                &registry,
                &estimator,
                prices,
            )
            .map_err(|e| e.to_string());
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let replays: Vec<SessionReplay> = results
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(BadInput)?;
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
        emit(None, &out)?;
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
