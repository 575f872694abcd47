//! `cargo xtask fit-billed`: how Anthropic counts a conversation's content against the fast estimator, fitted on
//! the Claude Code logs' own bills and checked project by project.
//!
//! A Claude Code log records, for each response, the input its request was billed (uncached, cache writes and
//! cache reads together). Within one context window the request grows by what was appended, and its bill is the
//! part the log does not show (system prompt, tool definitions: the same for every request of the window) plus
//! the content as Anthropic counts it. With `R` the fast estimator's tokens of the tool results sent, `O` those of
//! everything else (the user's text with its injected reminders, the assistant's text, thinking and tool calls)
//! and `B` the bill: `B ≈ P_window + k_r · R + k_o · O`. The slopes are fitted within windows (each its own `P`)
//! by least squares. What a policy cuts is tool results, so `k_r` is the one that scales its savings; the replay
//! already carries everything else in each request's unlogged part (`TurnStats::unlogged_tokens`).
//!
//! Each project (corpus family) is held out in turn: the slopes are fitted on the others and the error of
//! predicting its bills' growth is compared with the estimator taken as it is (`k = 1`). The spread is the
//! bootstrap over windows. `--write` writes the pooled fit to `crates/ctxfit-replay/src/billed_scale.rs`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use ctxfit_import::files::session_files;
use ctxfit_import::import_file;
use ctxfit_model::{Block, Message};
use ctxfit_replay::spread::{middle_90, resamples, RESAMPLES};
use ctxfit_testkit::corpus_dir;
use ctxfit_tokens::{count_message, FastEstimator};

/// The Claude Code families of the corpus: each a project, the unit of validation.
pub const FAMILIES: [&str; 3] = [
    "sessions/claude-code-entire",
    "sessions/claude-code-attio",
    "trajectories/claude-code",
];

/// A request with a bill: the estimated tokens of the tool results and of the rest of what it sent, and the bill.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub results: f64,
    pub rest: f64,
    pub billed: f64,
}

/// One context window's billed requests.
pub type Window = Vec<Point>;

/// A message's estimated tokens: of its tool results, and of the rest.
fn split(msg: &Message) -> (usize, usize) {
    let all = count_message(&FastEstimator, msg);
    let mut results = msg.clone();
    results
        .content
        .blocks
        .retain(|b| matches!(b, Block::ToolResult(_)));
    let r = if results.content.blocks.is_empty() {
        0
    } else {
        count_message(&FastEstimator, &results).min(all)
    };
    (r, all - r)
}

/// The windows of a family with at least three billed requests. A bill of 0 (the log's stand-in for a request
/// that failed) is no bill.
pub fn windows(dir: &Path) -> Result<Vec<Window>> {
    let mut out = Vec::new();
    let files = session_files(dir).with_context(|| dir.display().to_string())?;
    for path in &files.files {
        for session in import_file(path, None).with_context(|| path.display().to_string())? {
            let (mut results, mut rest) = (0usize, 0usize);
            let mut points = Vec::new();
            for (i, msg) in session.conversation.messages.iter().enumerate() {
                if let Some(&Some(b)) = session.billed.get(i) {
                    if b > 0 {
                        points.push(Point {
                            results: results as f64,
                            rest: rest as f64,
                            billed: b as f64,
                        });
                    }
                }
                let (r, o) = split(msg);
                results += r;
                rest += o;
            }
            if points.len() >= 3 {
                out.push(points);
            }
        }
    }
    Ok(out)
}

/// The within-window least-squares slopes `(k_r, k_o)` over some windows (each as often as listed).
pub fn slopes<'a>(windows: impl IntoIterator<Item = &'a Window>) -> (f64, f64) {
    let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for w in windows {
        let n = w.len() as f64;
        let mean = |f: fn(&Point) -> f64| w.iter().map(f).sum::<f64>() / n;
        let (mr, mo, mb) = (mean(|p| p.results), mean(|p| p.rest), mean(|p| p.billed));
        for p in w {
            let (x1, x2, y) = (p.results - mr, p.rest - mo, p.billed - mb);
            a11 += x1 * x1;
            a12 += x1 * x2;
            a22 += x2 * x2;
            b1 += x1 * y;
            b2 += x2 * y;
        }
    }
    let det = a11 * a22 - a12 * a12;
    if det.abs() < f64::EPSILON {
        return (1.0, 1.0);
    }
    ((b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det)
}

/// The mean relative error of predicting each request's bill from its window's first: `B_i ≈ B_0 + k_r · ΔR +
/// k_o · ΔO`, over the requests after the first.
pub fn prediction_error<'a>(windows: impl IntoIterator<Item = &'a Window>, k: (f64, f64)) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for w in windows {
        let first = w[0];
        for p in &w[1..] {
            let predicted =
                first.billed + k.0 * (p.results - first.results) + k.1 * (p.rest - first.rest);
            sum += (predicted - p.billed).abs() / p.billed.max(1.0);
            n += 1;
        }
    }
    sum / n.max(1) as f64
}

/// `k_r`'s 5th and 95th percentiles over [`RESAMPLES`] bootstrap draws of the windows.
pub fn spread(windows: &[Window]) -> [f64; 2] {
    let mut ks: Vec<f64> = resamples(windows.len(), RESAMPLES)
        .map(|draw| slopes(draw.iter().map(|&i| &windows[i])).0)
        .collect();
    middle_90(&mut ks)
}

pub fn fit(args: &[String]) -> Result<()> {
    let corpus = corpus_dir().context("the shared corpus is missing")?;
    let families: Vec<(&str, Vec<Window>)> = FAMILIES
        .iter()
        .map(|f| Ok((*f, windows(&corpus.join(f))?)))
        .collect::<Result<_>>()?;
    println!("| family | windows | billed requests | k_r, k_o fitted on it (k_r's spread) | fitted on the others | error of the bills' growth: k = 1 / others' k |");
    println!("|---|---|---|---|---|---|");
    for (name, ws) in &families {
        let others = families
            .iter()
            .filter(|(n, _)| n != name)
            .flat_map(|(_, w)| w.iter());
        let (own, other) = (slopes(ws), slopes(others));
        let [low, high] = spread(ws);
        println!(
            "| {name} | {} | {} | {:.3}, {:.3} ({low:.3}–{high:.3}) | {:.3}, {:.3} | {:.1}% / {:.1}% |",
            ws.len(),
            ws.iter().map(Vec::len).sum::<usize>(),
            own.0,
            own.1,
            other.0,
            other.1,
            100.0 * prediction_error(ws, (1.0, 1.0)),
            100.0 * prediction_error(ws, other),
        );
    }
    let all: Vec<Window> = families.into_iter().flat_map(|(_, w)| w).collect();
    let (kr, ko) = slopes(&all);
    let [low, high] = spread(&all);
    println!(
        "\nall families: k_r = {kr:.3} ({low:.3}–{high:.3}), k_o = {ko:.3}; {} windows",
        all.len()
    );
    if args.iter().any(|a| a == "--write") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let path = root.join("crates/ctxfit-replay/src/billed_scale.rs");
        let mut text = String::new();
        writeln!(text, "//! How many of Anthropic's billed tokens one token of the fast estimator is, in the tool results a")?;
        writeln!(
            text,
            "//! policy cuts — generated by `cargo xtask fit-billed --write`, do not edit."
        )?;
        writeln!(text, "//!")?;
        writeln!(
            text,
            "//! Fitted within the {} context windows of the corpus's Claude Code logs:",
            all.len()
        )?;
        writeln!(text, "//! {}.", FAMILIES.join(", "))?;
        writeln!(text, "//! 5th–95th percentile over a bootstrap of the windows: {low:.3}–{high:.3}. Everything else a request")?;
        writeln!(
            text,
            "//! holds is counted as its bill says (`TurnStats::unlogged_tokens`)."
        )?;
        writeln!(text)?;
        writeln!(
            text,
            "pub const ANTHROPIC_TOOL_RESULT_SCALE: f64 = {kr:.3};"
        )?;
        std::fs::write(&path, text)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(results: f64, rest: f64, billed: f64) -> Point {
        Point {
            results,
            rest,
            billed,
        }
    }

    #[test]
    fn the_slopes_are_found_whatever_each_windows_prefix() {
        // two windows with their own unlogged prefix (1,000 and 30,000), bills growing by 0.9 per token of
        // results and 1.4 per token of the rest
        let window = |prefix: f64| -> Window {
            [(0.0, 0.0), (100.0, 10.0), (150.0, 70.0), (400.0, 80.0)]
                .iter()
                .map(|&(r, o)| point(r, o, prefix + 0.9 * r + 1.4 * o))
                .collect()
        };
        let ws = [window(1_000.0), window(30_000.0)];
        let (kr, ko) = slopes(&ws);
        assert!(
            (kr - 0.9).abs() < 1e-9 && (ko - 1.4).abs() < 1e-9,
            "{kr} {ko}"
        );
        assert!(prediction_error(&ws, (kr, ko)) < 1e-12);
        assert!(prediction_error(&ws, (1.0, 1.0)) > 0.0);
    }

    #[test]
    fn the_committed_scale_is_what_the_logs_fit() {
        let Some(corpus) = corpus_dir() else {
            assert!(
                std::env::var("CTXFIT_REQUIRE_CORPUS").as_deref() != Ok("1"),
                "the shared corpus is missing"
            );
            return;
        };
        let all: Vec<Window> = FAMILIES
            .iter()
            .flat_map(|f| windows(&corpus.join(f)).unwrap())
            .collect();
        let (kr, _) = slopes(&all);
        assert!(
            (kr - ctxfit_replay::ANTHROPIC_TOOL_RESULT_SCALE).abs() < 0.0005,
            "the logs fit {kr:.3}: run `cargo xtask fit-billed --write`"
        );
    }
}
