//! `ctxfit replay`: every built-in policy (or the ones named) on recorded sessions, side by side.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ctxfit_compactor::{PolicyFile, BUILT_IN_PROFILES};
use ctxfit_import::{Session, SourceFormat};
use ctxfit_replay::{replay, totals, Policy, PolicyTotals, Prices, SessionReplay};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::input::{load, parse_format, read_text};
use crate::output::{emit, thousands, write_atomically};
use crate::tokens::parse_estimator;
use crate::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Session files (any importable format).
    files: Vec<String>,
    /// Replay the embedded sample session.
    #[arg(long, conflicts_with = "files")]
    sample: bool,
    /// A policy to compare: `none`, a built-in profile, or a policy file (its default profile). Repeat for
    /// several; default: `none` and every built-in profile.
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Read the inputs as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<SourceFormat>,
    /// Token estimator: chars4, fast, o200k, cl100k.
    #[arg(long, default_value = "fast", value_parser = parse_estimator)]
    estimator: String,
    /// Price per cache-read token.
    #[arg(long, default_value_t = 0.1)]
    cache_read_price: f64,
    /// Price per cache-write token.
    #[arg(long, default_value_t = 1.25)]
    cache_write_price: f64,
    /// Print JSON (totals per policy and every turn) instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw input tokens per turn for each policy into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn policies(names: &[String]) -> Result<Vec<Policy>> {
    let names: Vec<String> = if names.is_empty() {
        std::iter::once("none".to_owned())
            .chain(BUILT_IN_PROFILES.iter().map(|p| (*p).to_owned()))
            .collect()
    } else {
        names.to_vec()
    };
    let env = |k: &str| std::env::var(k).ok();
    names
        .iter()
        .map(|name| {
            if name == "none" {
                return Ok(Policy::None);
            }
            let settings = if Path::new(name).is_file() {
                PolicyFile::parse(&read_text(name)?, name)
                    .and_then(|f| f.resolve(None, None, &env))
                    .map_err(|e| BadInput(e.to_string()))?
            } else {
                PolicyFile::default()
                    .resolve(Some(name), None, &env)
                    .map_err(|e| BadInput(format!("--policy {name}: {e}")))?
            };
            Ok(Policy::Profile(settings))
        })
        .collect()
}

fn table(rows: &[PolicyTotals]) -> String {
    let none_cost = rows.iter().find(|r| r.policy == "none").map(|r| r.cost);
    let width = rows
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "{:<width$}  {:>8}  {:>6}  {:>14}  {:>12}  {:>8}  {:>7}\n",
        "policy", "sessions", "turns", "input tokens", "cost", "vs none", "recall"
    );
    for r in rows {
        let vs = match none_cost {
            Some(n) if n > 0.0 => format!("{:+.1}%", 100.0 * (r.cost - n) / n),
            _ => "—".into(),
        };
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:>6}  {:>14}  {:>12}  {:>8}  {:>6.1}%\n",
            r.policy,
            r.sessions,
            r.turns,
            thousands(r.input_tokens),
            thousands(r.cost.round() as usize),
            vs,
            100.0 * r.recall()
        ));
    }
    out
}

fn plot(path: &Path, replays: &[SessionReplay], policies: &[Policy]) -> Result<()> {
    use plotters::prelude::*;
    let series: Vec<(String, Vec<usize>)> = policies
        .iter()
        .map(|p| {
            let tokens = replays
                .iter()
                .filter(|r| r.policy == p.name())
                .flat_map(|r| r.turns.iter().map(|t| t.input_tokens))
                .collect();
            (p.name().to_owned(), tokens)
        })
        .collect();
    let turns = series
        .iter()
        .map(|(_, t)| t.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let top = series
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 560)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing the plot: {e}");
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("input tokens per request", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0..turns, 0..top + top / 20)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("request (sessions end to end)")
            .y_desc("input tokens")
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, tokens)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    tokens.iter().enumerate().map(|(x, y)| (x, *y)),
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
    let mut sessions: Vec<(String, Session)> = Vec::new();
    if args.sample {
        let (name, s) = load(None, true, args.format)?;
        sessions.extend(s.into_iter().map(|s| (name.clone(), s)));
    } else if args.files.is_empty() {
        return Err(BadInput("no input: give session FILEs or --sample".into()).into());
    }
    for file in &args.files {
        let (name, s) = load(Some(file), false, args.format)?;
        sessions.extend(s.into_iter().map(|s| {
            let label = if s.name.is_empty() {
                name.clone()
            } else {
                format!("{name} — {}", s.name)
            };
            (label, s)
        }));
    }
    let registry = ctxfit_plugins::registry()?;
    let prices = Prices {
        cache_read: args.cache_read_price,
        cache_write: args.cache_write_price,
        ..Prices::default()
    };
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
            let r = replay(
                label,
                &session.conversation,
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
    let rows = totals(&replays);
    if let Some(path) = &args.plot {
        plot(path, &replays, &policies)?;
    }
    if args.json {
        let doc = serde_json::json!({"prices": prices, "policies": rows, "sessions": replays});
        return emit(None, &format!("{}\n", serde_json::to_string_pretty(&doc)?));
    }
    emit(None, &table(&rows))
}
