//! `cargo xtask compare-profiles`: how much each built-in profile shrinks the last request of every corpus
//! session, and what it keeps of the edits and first/last reads.

use anyhow::{Context, Result};
use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_import::import_file;
use ctxfit_model::Conversation;
use ctxfit_testkit::{corpus_dir, corpus_trajectory_files};
use ctxfit_tokens::{count_conversation, FastEstimator};

const PROFILES: &[&str] = &["keep-last-30", "seed-000", "seed-002", "smart"];

fn compacted_tokens(profile: &str, conv: &Conversation) -> Result<usize> {
    let settings = PolicyFile::default()
        .resolve(Some(profile), None, &|_| None)
        .map_err(anyhow::Error::msg)?;
    let registry = ctxfit_plugins::registry()?;
    let mut c =
        Compactor::new(settings, &registry, Box::new(FastEstimator)).map_err(anyhow::Error::msg)?;
    // as a live agent running the profile would have sent it at its last request
    c.compact_history(conv, None);
    Ok(count_conversation(&FastEstimator, &c.project(conv)))
}

fn percent(after: usize, before: usize) -> String {
    if before == 0 {
        "—".into()
    } else {
        format!(
            "{:+.0}%",
            100.0 * (after as f64 - before as f64) / before as f64
        )
    }
}

pub fn compare() -> Result<()> {
    let corpus =
        corpus_dir().context("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)")?;
    let root = corpus.join("trajectories");
    let mut totals = vec![0usize; PROFILES.len() + 1];
    println!("| session | none | {} |", PROFILES.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(PROFILES.len()));
    for path in corpus_trajectory_files(&corpus) {
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for session in import_file(&path, None).with_context(|| rel.clone())? {
            let conv = &session.conversation;
            if conv.tool_result_count() == 0 {
                continue;
            }
            let none = count_conversation(&FastEstimator, conv);
            let mut cells = vec![none.to_string()];
            totals[0] += none;
            for (i, p) in PROFILES.iter().enumerate() {
                let t = compacted_tokens(p, conv)?;
                totals[i + 1] += t;
                cells.push(format!("{t} ({})", percent(t, none)));
            }
            let name = if session.name.is_empty() {
                rel.clone()
            } else {
                format!("{rel} — {}", session.name)
            };
            println!("| {name} | {} |", cells.join(" | "));
        }
    }
    let mut cells = vec![totals[0].to_string()];
    for t in &totals[1..] {
        cells.push(format!("{t} ({})", percent(*t, totals[0])));
    }
    println!("| **all sessions** | {} |", cells.join(" | "));
    Ok(())
}
