//! `ctxfit replay`'s tables: a row per policy, the spread, the tools, the references, the bill, the tail.

use super::*;

/// A signed percentage to one decimal; a change of exactly nothing is `+0.0%` (`none` against itself; a negated
/// zero would print `-0.0%`), a saving that rounds to nothing `-0.0%`.
fn percent(v: Option<f64>) -> String {
    v.map_or_else(
        || "—".into(),
        |v| format!("{:+.1}%", if v == 0.0 { 0.0 } else { 100.0 * v }),
    )
}

pub(super) fn table(rows: &[PolicyRow], models: &[PriceModel]) -> String {
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
    // the last column, said under the table it ends
    let costlier = rows.iter().any(|r| !r.costlier_sessions.is_empty());
    if let (Some(m), true) = (models.first(), costlier) {
        out.push_str(&format!(
            "costlier: sessions that cost more than with no compaction ({} prices), and the worst one's excess\n",
            m.name()
        ));
    }
    // a request budget that the rest of a request did not fit: what the guard refuses live
    for r in rows.iter().filter(|r| r.over_request_budget > 0) {
        out.push_str(&format!(
            "{}: {} of {} requests above its request budget after every cut (what is not stale tool results did \
             not fit): refused live by the token guard, counted here as if sent; the largest sent {}\n",
            r.policy,
            thousands(r.over_request_budget),
            thousands(r.turns),
            thousands(r.peak_sent_tokens)
        ));
    }
    out.push_str(&billed_table(rows, models, width));
    // how far the share and the recall would move on other sessions like these (none's and the oracle's are
    // 0% and 100% on any sessions)
    let spread: Vec<&PolicyRow> = rows
        .iter()
        .filter(|r| !matches!(r.policy.as_str(), "none" | "oracle") && r.recall_spread.is_some())
        .collect();
    if let Some(first) = spread.first() {
        // the share of the oracle's saving of billed input, where the logs record bills
        let billed = spread
            .iter()
            .any(|r| (r.billed.as_ref()).is_some_and(|b| b.share_of_oracle_spread.is_some()));
        out.push_str(&format!(
            "spread over {} bootstrap resamples of the {} sessions (5th to 95th percentile):\n{:<width$}  {:>11}  {:>15}{}\n",
            thousands(ctxfit_replay::spread::RESAMPLES),
            thousands(first.sessions),
            "policy",
            "of oracle",
            "recall",
            if billed {
                format!("  {:>17}", "billed: of oracle")
            } else {
                String::new()
            }
        ));
        let shares = |s: Option<[f64; 2]>| {
            s.map_or_else(
                || "—".to_owned(),
                |[low, high]| format!("{:.0}% – {:.0}%", 100.0 * low, 100.0 * high),
            )
        };
        for r in spread {
            let share = shares(r.share_of_oracle_spread);
            let recall = r.recall_spread.map_or_else(
                || "—".to_owned(),
                |[low, high]| format!("{:.1}% – {:.1}%", 100.0 * low, 100.0 * high),
            );
            out.push_str(&format!("{:<width$}  {share:>11}  {recall:>15}", r.policy));
            if billed {
                let b = shares(r.billed.as_ref().and_then(|b| b.share_of_oracle_spread));
                out.push_str(&format!("  {b:>17}"));
            }
            out.push('\n');
        }
    }
    if costlier {
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
pub(super) fn tools_table(rows: &[PolicyRow], uncompacted: usize, limit: usize) -> String {
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
pub(super) fn references_table(rows: &[PolicyRow], limit: usize) -> String {
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
        "against what the logs say was billed ({} of {} requests record it; what the log leaves out — system prompt, tools, reminders — added to every request):\n{:<width$}  {:>14}  {:>8}  {:>9}",
        thousands(first.requests),
        thousands(total),
        "policy",
        "billed input",
        "vs none",
        "of oracle"
    );
    for m in models {
        out.push_str(&format!(
            "  {:>14}  {:>8}",
            format!("cost {}", m.name()),
            "vs none"
        ));
    }
    let tail = rows.iter().any(|r| {
        r.billed
            .as_ref()
            .is_some_and(|b| !b.costlier_sessions.is_empty())
    });
    if tail {
        for m in models {
            out.push_str(&format!("  {:>18}", format!("costlier {}", m.name())));
        }
    }
    out.push('\n');
    for r in rows {
        let Some(b) = &r.billed else { continue };
        let share = b
            .share_of_oracle
            .map_or_else(|| "—".into(), |s| format!("{:.0}%", 100.0 * s));
        out.push_str(&format!(
            "{:<width$}  {:>14}  {:>8}  {share:>9}",
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
        if tail {
            for m in models {
                let cell = tail_cell(b.costlier_sessions.get(m.name()));
                out.push_str(&format!("  {cell:>18}"));
            }
        }
        out.push('\n');
    }
    if tail {
        out.push_str(
            "costlier: sessions whose bill is above their bill under none (costing more / more than 3% more / the worst)\n",
        );
    }
    out
}

/// Sessions against `none` under one price model: how many cost more, how many more than 3% more, the worst.
fn tail_cell(c: Option<&SessionCosts>) -> String {
    c.map_or_else(
        || "—".to_owned(),
        |c| {
            format!(
                "{} / {} / {}",
                c.costlier,
                c.over_3_percent,
                percent(Some(c.worst))
            )
        },
    )
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
            let cell = tail_cell(r.costlier_sessions.get(m.name()));
            out.push_str(&format!("  {cell:>22}"));
        }
        out.push('\n');
    }
    out
}

/// The references each policy hid, the first `limit` of each in replay order (session by session, request by
/// request): what its recall counts as lost, and where.
pub(super) fn hidden_table(rows: &[PolicyRow], replays: &[SessionReplay], limit: usize) -> String {
    let mut out = format!(
        "what recall counts as lost: identifiers a turn used that only tool results had shown, hidden by each \
         policy (the first {limit}; the JSON has them all)\n"
    );
    for row in rows {
        let (refs, visible) = (row.references, row.references_visible);
        if refs == visible {
            continue;
        }
        out.push_str(&format!(
            "{}: {} of {} references hidden\n",
            row.policy,
            thousands(refs - visible),
            thousands(refs)
        ));
        let hidden = (replays.iter())
            .filter(|r| r.policy == row.policy)
            .flat_map(|r| {
                (r.turns.iter().enumerate()).flat_map(move |(k, t)| {
                    t.hidden.iter().map(move |h| (r.session.as_str(), k + 1, h))
                })
            });
        for (session, request, h) in hidden.take(limit) {
            // a session is named by its file (and its window), not the folders above the file
            let (file, within) = session
                .split_once(" — ")
                .map_or((session, None), |(f, w)| (f, Some(w)));
            let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
            let name = within.map_or_else(|| file.to_owned(), |w| format!("{file} — {w}"));
            out.push_str(&format!(
                "  {name}, request {request}: `{}`, last shown by {}\n",
                h.identifier,
                if h.tool.is_empty() { "?" } else { &h.tool }
            ));
        }
    }
    if rows.iter().all(|r| r.references == r.references_visible) {
        out.push_str(&format!(
            "(no policy hid any of the {} references)\n",
            thousands(rows.first().map_or(0, |r| r.references))
        ));
    }
    out
}
