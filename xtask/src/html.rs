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
    /// Megabytes (10⁶ bytes) of HTML per second over all pages, best of the rounds.
    mb_per_s: f64,
    /// Pages the converter failed on (scored as empty output).
    failures: usize,
}

/// A converter under test: its name and how it turns a page into text (`None` when it fails).
type Converter<'a> = (
    &'static str,
    Box<dyn Fn(&CorpusPage) -> Option<String> + 'a>,
);

/// Score a converter on every page.
fn score(
    name: &'static str,
    pages: &[CorpusPage],
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
    Row {
        name,
        score: Score {
            precision: total.precision / n,
            recall: total.recall / n,
            f1: total.f1 / n,
        },
        chars: chars as f64 / n,
        mb_per_s: 0.0,
        failures,
    }
}

/// MB/s of each converter over all pages on one core: the best of `rounds`, the converters taking turns within
/// a round so that a slow spell of a noisy machine hits them alike.
fn time(converters: &[Converter<'_>], pages: &[CorpusPage], rounds: usize) -> Vec<f64> {
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let mut best = vec![Duration::MAX; converters.len()];
    for _ in 0..rounds {
        for (b, (_, convert)) in best.iter_mut().zip(converters) {
            let start = Instant::now();
            for page in pages {
                std::hint::black_box(convert(page));
            }
            *b = (*b).min(start.elapsed());
        }
    }
    best.iter()
        .map(|d| bytes as f64 / 1e6 / d.as_secs_f64())
        .collect()
}

/// `--pages`: also print each page's scores at each level, worst aggressive F1 first. `--deep`: also time
/// html5ever's tree construction and the cleaner on 100,000 nested `<div>`s (the tree alone takes tens of
/// seconds: that is why the cleaner does not build it for such pages).
pub fn eval(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--deep") {
        deep();
    }
    let pages = corpus_pages();
    if args.iter().any(|a| a == "--pages") {
        per_page(&pages);
    }
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let rounds = 7;
    println!(
        "{} pages, {:.1} MB of HTML; speed is the best of {rounds} rounds over all pages on one core, the \
         converters taking turns in each round",
        pages.len(),
        bytes as f64 / 1e6
    );
    let skipping = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style"])
        .build();
    let mut converters: Vec<Converter<'_>> = Vec::new();
    for (name, level) in [
        ("ctxfit minimal", StripLevel::Minimal),
        ("ctxfit moderate", StripLevel::Moderate),
        ("ctxfit aggressive", StripLevel::Aggressive),
    ] {
        converters.push((
            name,
            Box::new(move |p: &CorpusPage| {
                Some(
                    HtmlCleaner::new(level)
                        .with_base_url(p.url.clone())
                        .clean(&p.html)
                        .0,
                )
            }),
        ));
    }
    converters.push((
        "htmd (defaults)",
        Box::new(|p: &CorpusPage| htmd::convert(&p.html).ok()),
    ));
    converters.push((
        "htmd (script, style skipped)",
        Box::new(|p: &CorpusPage| skipping.convert(&p.html).ok()),
    ));
    let mut rows: Vec<Row> = converters
        .iter()
        .map(|(name, convert)| score(name, &pages, convert))
        .collect();
    for (row, mb_per_s) in rows.iter_mut().zip(time(&converters, &pages, rounds)) {
        row.mb_per_s = mb_per_s;
    }
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

fn deep() {
    use html5ever::tendril::TendrilSink;
    let html = format!(
        "{}deep{}",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    let start = Instant::now();
    let dom = html5ever::parse_document(markup5ever_rcdom::RcDom::default(), Default::default())
        .one(html.as_str());
    let tree = start.elapsed();
    drop(dom);
    let start = Instant::now();
    let (out, _) = HtmlCleaner::new(StripLevel::Aggressive).clean(&html);
    let cleaner = start.elapsed();
    println!(
        "100,000 nested <div>s: html5ever tree construction {:.1} s; ctxfit aggressive {:.0} ms ({} chars out)",
        tree.as_secs_f64(),
        cleaner.as_secs_f64() * 1e3,
        out.len()
    );
    println!();
}
