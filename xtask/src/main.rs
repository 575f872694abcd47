//! `cargo xtask`: project automation.
//!
//! * `tidy` — repository checks (also run as a test): every `.rs` file opens with a `//!` doc.
//! * `fit-tokens` — refit the fast token estimator against exact o200k counts on the corpus and rewrite
//!   `crates/ctxfit-tokens/src/weights.rs`; prints the accuracy report.
//! * `fit-billed` — how Anthropic bills the content of the corpus's Claude Code logs against the fast estimator,
//!   fitted within context windows and held out by project; `--write` regenerates
//!   `crates/ctxfit-replay/src/billed_scale.rs`.
//! * `eval-tokens` — print the accuracy report of chars/4 and the fast estimator without refitting.
//! * `eval-html` — precision, recall, F1, output size and speed of each strip level on the three page sets beside
//!   the corpus (ScrapingHub, Readability.js, trafilatura's own), with two yardsticks in the same run: Python
//!   trafilatura (installed into `target/eval-venv`; `--no-trafilatura` skips it) and the Rust port (crate
//!   `trafilatura`); the bootstrap over pages and over sites; the sealed sites' figures apart; `--folds N` each
//!   fold of sites; `--pages` (`--pages=N`) lists each set's 15 (N) worst pages and the 15 (N) whose article the
//!   moderate level loses most of, sealed sites left out. `eval-html --htmd` is the older table: the ScrapingHub
//!   pages with htmd beside the levels (`--pages` adds each page's scores, `--deep` the cost of 100,000 nested
//!   elements).
//! * `compare-profiles` — tokens of the final request of every corpus session under each built-in profile.
//! * `figures` — replay every corpus family under every policy and rewrite the replay tables of
//!   `docs/benchmarks.md`; `--check` fails when they differ instead, or when `smart` breaks a promise on a family
//!   (regret over 3%, recall under 95%, dominated, a budget not held) (CI runs it).
//! * `gen-history --tokens N --seed S [-o FILE]` — a long realistic session (Anthropic JSON) made of real turns
//!   sampled from the corpus, reproducible from its seed.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod billed;
mod figures;
mod html;
mod html_folds;
mod html_sets;
mod profiles;
mod reach;
mod samples;
mod tidy;
mod tokens;

use std::path::PathBuf;

use anyhow::{bail, Result};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_owned()
}

/// `cargo xtask gen-history --tokens N --seed S [-o FILE]`.
fn gen_history(args: &[String]) -> Result<()> {
    let mut tokens = 1_000_000usize;
    let mut seed = 1u64;
    let mut out: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?;
        match flag.as_str() {
            "--tokens" => {
                tokens = value
                    .parse()
                    .map_err(|_| anyhow::anyhow!("--tokens: not a number: {value}"))?
            }
            "--seed" => {
                seed = value
                    .parse()
                    .map_err(|_| anyhow::anyhow!("--seed: not a number: {value}"))?
            }
            "-o" | "--output" => out = Some(PathBuf::from(value)),
            other => bail!("unknown option {other}"),
        }
    }
    let history = ctxfit_benches::history::generate_history(
        &ctxfit_benches::history::corpus_turns(),
        tokens,
        seed,
    );
    let json = serde_json::to_string(&ctxfit_model::to_value(&history))?;
    match out {
        Some(path) => {
            std::fs::write(&path, json)?;
            eprintln!(
                "{}: {} messages, {} tokens (fast estimate)",
                path.display(),
                history.messages.len(),
                ctxfit_tokens::count_conversation(&ctxfit_tokens::FastEstimator, &history)
            );
        }
        None => println!("{json}"),
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("tidy") => {
            let problems = tidy::check(&workspace_root())?;
            if problems.is_empty() {
                println!("tidy: ok");
                Ok(())
            } else {
                for p in &problems {
                    eprintln!("{p}");
                }
                bail!("tidy: {} problem(s)", problems.len())
            }
        }
        Some("fit-tokens") => tokens::fit_and_write(&workspace_root()),
        Some("fit-billed") => billed::fit(&args[1..]),
        Some("eval-tokens") => tokens::eval(),
        Some("eval-html") if args.iter().any(|a| a == "--htmd") => html::eval(&args[1..]),
        Some("eval-html") => html_sets::eval(&args[1..]),
        Some("compare-profiles") => profiles::compare(),
        Some("figures") => figures::run(&args[1..]),
        Some("fit-reach") => reach::run(&args[1..]),
        Some("fit-html") => html_sets::fit::run(&args[1..]),
        Some("gen-history") => gen_history(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <tidy | fit-tokens | fit-billed [--write] | eval-tokens | eval-html [--folds N] [--pages[=N]] | compare-profiles | figures [--check] | fit-reach [--check] | fit-html [--check] | gen-history --tokens N --seed S [-o FILE]>");
            bail!("unknown or missing command")
        }
    }
}
