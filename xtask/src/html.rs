//! `cargo xtask eval-html`: extraction quality and speed of each strip level on the 50 corpus pages, side by
//! side with htmd (the common Rust HTML-to-Markdown converter) in the same run.

use std::time::{Duration, Instant};

use anyhow::Result;
use ctxfit_benches::pages::{corpus_pages, CorpusPage};
use ctxfit_html::eval::{shingle_score, Score};
use ctxfit_html::{HtmlCleaner, StripLevel};

struct Row {
    name: &'static str,
    score: Score,
    /// Mean characters of output per page.
    chars: f64,
    /// HTML bytes per second over all pages, best of the runs.
    mb_per_s: f64,
    /// Pages the converter failed on (scored as empty output).
    failures: usize,
}

/// Score a converter on every page, and time it over all pages (one core, best of `runs`).
fn evaluate(
    name: &'static str,
    pages: &[CorpusPage],
    runs: usize,
    convert: &dyn Fn(&CorpusPage) -> Option<String>,
) -> Row {
    let mut total = Score::default();
    let mut chars = 0usize;
    let mut failures = 0;
    for page in pages {
        let out = convert(page).unwrap_or_else(|| {
            failures += 1;
            String::new()
        });
        let s = shingle_score(&out, &page.article);
        total.precision += s.precision;
        total.recall += s.recall;
        total.f1 += s.f1;
        chars += out.chars().count();
    }
    let n = pages.len() as f64;
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        for page in pages {
            std::hint::black_box(convert(page));
        }
        best = best.min(start.elapsed());
    }
    Row {
        name,
        score: Score {
            precision: total.precision / n,
            recall: total.recall / n,
            f1: total.f1 / n,
        },
        chars: chars as f64 / n,
        mb_per_s: bytes as f64 / 1e6 / best.as_secs_f64(),
        failures,
    }
}

/// `--pages`: also print each page's scores at each level, worst aggressive F1 first.
pub fn eval(args: &[String]) -> Result<()> {
    let pages = corpus_pages();
    if args.iter().any(|a| a == "--pages") {
        per_page(&pages);
    }
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let runs = 5;
    println!(
        "{} pages, {:.1} MB of HTML; speed is the best of {runs} runs over all pages on one core",
        pages.len(),
        bytes as f64 / 1e6
    );
    let mut rows = Vec::new();
    for level in [
        StripLevel::Minimal,
        StripLevel::Moderate,
        StripLevel::Aggressive,
    ] {
        let name = match level {
            StripLevel::Minimal => "ctxfit minimal",
            StripLevel::Moderate => "ctxfit moderate",
            StripLevel::Aggressive => "ctxfit aggressive",
        };
        rows.push(evaluate(name, &pages, runs, &|p| {
            Some(
                HtmlCleaner::new(level)
                    .with_base_url(p.url.clone())
                    .clean(&p.html)
                    .0,
            )
        }));
    }
    rows.push(evaluate("htmd (defaults)", &pages, runs, &|p| {
        htmd::convert(&p.html).ok()
    }));
    let skipping = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style"])
        .build();
    rows.push(evaluate(
        "htmd (script, style skipped)",
        &pages,
        runs,
        &|p| skipping.convert(&p.html).ok(),
    ));
    println!();
    println!("| converter | precision | recall | F1 | output chars/page | MB/s |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:.3} | **{:.3}** | {:.0} | {:.0} |{}",
            r.name,
            r.score.precision,
            r.score.recall,
            r.score.f1,
            r.chars,
            r.mb_per_s,
            if r.failures > 0 {
                format!(" ({} pages failed)", r.failures)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

fn per_page(pages: &[CorpusPage]) {
    let mut rows: Vec<(f64, String)> = pages
        .iter()
        .map(|p| {
            let mut line = format!("{:<28}", p.id);
            let mut last = 0.0;
            for level in [
                StripLevel::Minimal,
                StripLevel::Moderate,
                StripLevel::Aggressive,
            ] {
                let out = HtmlCleaner::new(level).clean(&p.html).0;
                let s = shingle_score(&out, &p.article);
                line.push_str(&format!(
                    "  {} P {:.2} R {:.2} F1 {:.3} ({} chars)",
                    &level.name()[..3],
                    s.precision,
                    s.recall,
                    s.f1,
                    out.chars().count()
                ));
                last = s.f1;
            }
            (last, line)
        })
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, line) in rows {
        println!("{line}");
    }
    println!();
}
