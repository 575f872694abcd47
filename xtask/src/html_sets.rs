//! `cargo xtask eval-html`: each strip level on the three page sets beside the corpus, with two yardsticks in the
//! same run: Python trafilatura and its Rust port (crate `trafilatura`).
//!
//! Sites are the unit of validation (`html_folds`): the lead over each yardstick is bootstrapped over pages and
//! over sites; a fixed fifth of the sites is sealed — `--pages` never lists their pages, and their figures are
//! printed apart — so a rule written from the pages one looks at is checked where no one looked; `--folds N`
//! prints every figure per fold of sites.
//!
//! * ScrapingHub's article-extraction benchmark (`html/`) and Readability.js's test pages (`html-readability/`):
//!   4-word-shingle precision, recall and F1 against the reference article text, averaged over pages.
//! * trafilatura's own evaluation set (`html-trafilatura/`): per page, each snippet the text must contain that it
//!   does is a true positive, each it lacks a false negative, each snippet it must not contain that it does a
//!   false positive; precision, recall and F1 over all pages — as trafilatura scores itself. Markdown is compared
//!   as plain text (link URLs, emphasis and heading marks removed).
//!
//! Speed is megabytes of (decoded) HTML per second on one core, decoding left out on both sides: ctxfit the best
//! of three rounds, trafilatura (2.x, `trafilatura.extract` with its defaults) one round in its own process. The
//! command installs trafilatura with pip into `target/eval-venv` the first time; `--no-trafilatura` skips it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ctxfit_html::eval::{markdown_text, shingle_score, text_score};
use ctxfit_html::{decode_html, HtmlCleaner, StripLevel};
use ctxfit_replay::spread::{middle_90, resamples, RESAMPLES};
use serde_json::Value;

use crate::html_folds;

/// What a page is scored against.
enum Truth {
    Article(String),
    Snippets {
        with: Vec<String>,
        without: Vec<String>,
    },
}

struct Page {
    id: String,
    url: Option<String>,
    /// The page's site (`html_folds::site`): the unit of folds, of the sealed part and of the bootstrap.
    site: String,
    html: String,
    truth: Truth,
}

impl Page {
    fn new(id: String, url: Option<String>, html: String, truth: Truth) -> Page {
        // a page without a URL in its set is placed by the URL it states for itself, else by its name
        let stated = url
            .clone()
            .or_else(|| ctxfit_html::page_metadata(&html, None).canonical_url);
        Page {
            site: html_folds::site(stated.as_deref(), &id),
            id,
            url,
            html,
            truth,
        }
    }

    fn sealed(&self) -> bool {
        html_folds::sealed(&self.site)
    }
}

struct Set {
    name: &'static str,
    metric: &'static str,
    pages: Vec<Page>,
}

fn gunzip(path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(path).with_context(|| path.display().to_string())?,
    )
    .read_to_end(&mut bytes)
    .with_context(|| path.display().to_string())?;
    // decoded as a browser would, once, before any timing
    Ok(decode_html(&bytes, None).0.into_owned())
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    serde_json::from_str(&text).with_context(|| path.display().to_string())
}

/// A set in the ScrapingHub shape: `ground-truth.json` `{id: {articleBody, url?}}`, pages `pages/<id>.html.gz`.
fn article_set(dir: &Path, name: &'static str) -> Result<Set> {
    let truth = read_json(&dir.join("ground-truth.json"))?;
    let mut pages = Vec::new();
    for (id, entry) in truth.as_object().context("ground truth is an object")? {
        pages.push(Page::new(
            id.clone(),
            entry["url"].as_str().map(str::to_owned),
            gunzip(&dir.join(format!("pages/{id}.html.gz")))?,
            Truth::Article(entry["articleBody"].as_str().unwrap_or_default().to_owned()),
        ));
    }
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Set {
        name,
        metric: "4-word shingles, mean per page",
        pages,
    })
}

/// trafilatura's set: `evaldata.json` `{url: {file, with, without}}`, pages `pages/<file>.gz`.
fn snippet_set(dir: &Path) -> Result<Set> {
    let data = read_json(&dir.join("evaldata.json"))?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut pages = Vec::new();
    for (url, entry) in data.as_object().context("evaldata is an object")? {
        let Some(file) = entry["file"].as_str() else {
            continue;
        };
        let path = dir.join(format!("pages/{file}.gz"));
        if !path.exists() {
            continue;
        }
        pages.push(Page::new(
            file.to_owned(),
            Some(url.clone()),
            gunzip(&path)?,
            Truth::Snippets {
                with: strings(&entry["with"]),
                without: strings(&entry["without"]),
            },
        ));
    }
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Set {
        name: "trafilatura eval set",
        metric: "snippets found / missing / wrongly present, over all pages",
        pages,
    })
}

/// Markdown as plain text for snippet matching ([`markdown_text`]), whitespace collapsed.
fn plain_text(markdown: &str) -> String {
    normalise(&markdown_text(markdown))
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Default, Clone, Copy)]
struct Scores {
    precision: f64,
    recall: f64,
    f1: f64,
    /// Of a snippet set: snippets found, missing, and wrongly present.
    snippets: Option<(usize, usize, usize)>,
}

/// One page's score: its shingle precision, recall and F1, or its snippets found, missing and wrongly present.
#[derive(Clone, Copy)]
enum PageScore {
    Shingles(f64, f64, f64),
    Snippets(usize, usize, usize),
}

/// Score each page of a set (`outputs[i]` for `pages[i]`; `plain` says they are text already).
fn page_scores(set: &Set, outputs: &[String], plain: bool) -> Vec<PageScore> {
    (set.pages.iter().zip(outputs))
        .map(|(page, out)| page_score(page, out, plain))
        .collect()
}

/// Score one page's output (`plain`: it is text already, not Markdown).
fn page_score(page: &Page, out: &str, plain: bool) -> PageScore {
    match &page.truth {
        Truth::Article(article) => {
            let s = if plain {
                text_score(out, article)
            } else {
                shingle_score(out, article)
            };
            PageScore::Shingles(s.precision, s.recall, s.f1)
        }
        Truth::Snippets { with, without } => {
            let text = if plain {
                normalise(out)
            } else {
                plain_text(out)
            };
            let found = with.iter().filter(|s| text.contains(&normalise(s))).count();
            let wrong = without
                .iter()
                .filter(|s| text.contains(&normalise(s)))
                .count();
            PageScore::Snippets(found, with.len() - found, wrong)
        }
    }
}

/// A set's scores over some of its pages (each as often as it is listed): shingle scores are the mean per page,
/// snippet scores are counted over all the pages' snippets.
fn combine<'a>(pages: impl IntoIterator<Item = &'a PageScore>) -> Scores {
    let (mut p, mut r, mut f, mut n) = (0.0, 0.0, 0.0, 0usize);
    let (mut tp, mut fn_, mut fp) = (0usize, 0usize, 0usize);
    for page in pages {
        n += 1;
        match *page {
            PageScore::Shingles(pp, pr, pf) => {
                p += pp;
                r += pr;
                f += pf;
            }
            PageScore::Snippets(found, missing, wrong) => {
                tp += found;
                fn_ += missing;
                fp += wrong;
            }
        }
    }
    if tp + fn_ + fp > 0 {
        let precision = tp as f64 / (tp + fp).max(1) as f64;
        let recall = tp as f64 / (tp + fn_).max(1) as f64;
        let f1 = if tp == 0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        return Scores {
            precision,
            recall,
            f1,
            snippets: Some((tp, fn_, fp)),
        };
    }
    let n = n.max(1) as f64;
    Scores {
        precision: p / n,
        recall: r / n,
        f1: f / n,
        snippets: None,
    }
}

/// How far one converter's lead over another on a set holds on pages like them that were not scored: the paired
/// bootstrap over pages — [`RESAMPLES`] sets as large as this one, drawn from its pages with replacement (a fixed
/// seed, so the same every run), each scored for both. Returns the share of resamples where `a`'s F1 is at least
/// `b`'s, and the 5th and 95th percentiles of the difference.
fn bootstrap_lead(a: &[PageScore], b: &[PageScore]) -> (f64, f64, f64) {
    let n = a.len().min(b.len());
    let mut diffs: Vec<f64> = resamples(n, RESAMPLES)
        .map(|draw| {
            combine(draw.iter().map(|&i| &a[i])).f1 - combine(draw.iter().map(|&i| &b[i])).f1
        })
        .collect();
    let ahead = diffs.iter().filter(|&&d| d >= 0.0).count() as f64 / diffs.len().max(1) as f64;
    let [low, high] = middle_90(&mut diffs);
    (ahead, low, high)
}

struct Row {
    name: String,
    scores: Scores,
    /// Each page's score, for the bootstrap.
    pages: Vec<PageScore>,
    chars: f64,
    mb_per_s: f64,
}

fn ctxfit_row(set: &Set, level: StripLevel) -> Row {
    let clean = |p: &Page| {
        let mut cleaner = HtmlCleaner::new(level);
        if let Some(url) = &p.url {
            cleaner = cleaner.with_base_url(url.clone());
        }
        cleaner.clean(&p.html).0
    };
    timed_row(set, format!("ctxfit {}", level.name()), false, clean)
}

/// A converter's row: its output for every page, scored (`plain`: the output is text, not Markdown), and its
/// speed, the best of three rounds over the set on one core.
fn timed_row(set: &Set, name: String, plain: bool, convert: impl Fn(&Page) -> String) -> Row {
    let outputs: Vec<String> = set.pages.iter().map(&convert).collect();
    let bytes: usize = set.pages.iter().map(|p| p.html.len()).sum();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for p in &set.pages {
            std::hint::black_box(convert(p));
        }
        best = best.min(start.elapsed());
    }
    let pages = page_scores(set, &outputs, plain);
    Row {
        name,
        scores: combine(&pages),
        pages,
        chars: outputs.iter().map(|o| o.chars().count()).sum::<usize>() as f64
            / set.pages.len().max(1) as f64,
        mb_per_s: bytes as f64 / 1e6 / best.as_secs_f64(),
    }
}

/// The Rust port of trafilatura (crate `trafilatura`, a port of go-trafilatura) with the Python original's
/// defaults (its fallback extractors on), text output; a page it fails or panics on scores as empty. Speed is
/// the best of three rounds, as for ctxfit.
fn rust_trafilatura_row(set: &Set) -> Row {
    let options = trafilatura::Options::default().with_fallback(true);
    let extract = |p: &Page| {
        std::panic::catch_unwind(|| trafilatura::extract(&p.html, &options))
            .ok()
            .and_then(Result::ok)
            .map(|r| r.content_text)
            .unwrap_or_default()
    };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let row = timed_row(set, "trafilatura-rs 0.6".to_owned(), true, extract);
    std::panic::set_hook(previous);
    row
}

const TRAFILATURA_RUNNER: &str = r#"
import json, sys, time
import trafilatura
pages = json.load(open(sys.argv[1], encoding="utf-8"))
texts, seconds = [], 0.0
for html in pages:
    start = time.perf_counter()
    text = trafilatura.extract(html) or ""
    seconds += time.perf_counter() - start
    texts.append(text)
json.dump({"seconds": seconds, "texts": texts, "version": trafilatura.__version__},
          open(sys.argv[2], "w", encoding="utf-8"))
"#;

/// The Python of `target/eval-venv`, with trafilatura installed (created the first time).
fn trafilatura_python(root: &Path) -> Result<PathBuf> {
    let venv = root.join("target/eval-venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        eprintln!("installing trafilatura into {} (once)", venv.display());
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("python3 -m venv")?
            .success();
        if !ok {
            bail!("could not create {}", venv.display());
        }
    }
    let has = Command::new(&python)
        .args(["-c", "import trafilatura"])
        .stderr(std::process::Stdio::null())
        .status()?
        .success();
    if !has {
        let ok = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "trafilatura>=2,<3",
                // trafilatura imports lxml.html.clean, a package of its own since lxml 5.2
                "lxml_html_clean",
            ])
            .status()
            .context("pip install trafilatura")?
            .success();
        if !ok {
            bail!("pip could not install trafilatura");
        }
    }
    Ok(python)
}

fn trafilatura_row(python: &Path, set: &Set, work: &Path) -> Result<(Row, String)> {
    let input = work.join("pages.json");
    let output = work.join("texts.json");
    let script = work.join("run.py");
    std::fs::write(&script, TRAFILATURA_RUNNER)?;
    let htmls: Vec<&str> = set.pages.iter().map(|p| p.html.as_str()).collect();
    std::fs::write(&input, serde_json::to_string(&htmls)?)?;
    let ok = Command::new(python)
        .arg(&script)
        .arg(&input)
        .arg(&output)
        .status()?
        .success();
    if !ok {
        bail!("trafilatura failed on {}", set.name);
    }
    let result = read_json(&output)?;
    let texts: Vec<String> = result["texts"]
        .as_array()
        .context("texts")?
        .iter()
        .map(|t| t.as_str().unwrap_or_default().to_owned())
        .collect();
    let seconds = result["seconds"].as_f64().unwrap_or(f64::NAN);
    let bytes: usize = set.pages.iter().map(|p| p.html.len()).sum();
    let version = result["version"].as_str().unwrap_or("?").to_owned();
    let pages = page_scores(set, &texts, true);
    Ok((
        Row {
            name: format!("trafilatura {version}"),
            scores: combine(&pages),
            pages,
            chars: texts.iter().map(|o| o.chars().count()).sum::<usize>() as f64
                / set.pages.len().max(1) as f64,
            mb_per_s: bytes as f64 / 1e6 / seconds,
        },
        version,
    ))
}

/// The snippets of `snippets` that `text` holds (`held`) or does not.
fn snippets_held<'a>(text: &str, snippets: &'a [String], held: bool) -> Vec<&'a String> {
    snippets
        .iter()
        .filter(|s| text.contains(&normalise(s)) == held)
        .collect()
}

/// `--pages`: the open pages of a set cleaned at `level`, each scored by `row` (worst first; `None`: not listed),
/// the first `count` printed under `heading`.
fn list_pages(
    set: &Set,
    level: StripLevel,
    count: usize,
    heading: impl FnOnce(usize) -> String,
    row: impl Fn(&Page, &str) -> Option<(f64, String)>,
) {
    let mut rows: Vec<(f64, String)> = set
        .pages
        .iter()
        .filter(|p| !p.sealed())
        .filter_map(|p| row(p, &HtmlCleaner::new(level).clean(&p.html).0))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("{}", heading(rows.len()));
    for (_, line) in rows.iter().take(count) {
        println!("  {line}");
    }
    println!();
}

/// `--pages`: the worst pages of each set at the aggressive level (mean shingle F1, or snippets missed plus
/// wrongly present).
fn worst_pages(set: &Set, count: usize) {
    let sealed = set.pages.iter().filter(|p| p.sealed()).count();
    let heading = |_| {
        format!(
            "worst pages of {} (aggressive; the {sealed} pages of its sealed sites are never listed):",
            set.name
        )
    };
    list_pages(set, StripLevel::Aggressive, count, heading, |p, out| {
        Some(match &p.truth {
            Truth::Article(a) => {
                let s = shingle_score(out, a);
                (
                    s.f1,
                    format!(
                        "{:<40} F1 {:.3} P {:.2} R {:.2}",
                        p.id, s.f1, s.precision, s.recall
                    ),
                )
            }
            Truth::Snippets { with, without } => {
                let text = plain_text(out);
                let missed = snippets_held(&text, with, false);
                let present = snippets_held(&text, without, true);
                let bad = missed.len() + present.len();
                (
                    -(bad as f64),
                    format!("{:<40} missed {missed:?} present {present:?}", p.id),
                )
            }
        })
    });
}

/// `--pages`: the open pages whose article the moderate level loses part of (its recall below 0.99, or a snippet
/// missed), most first — text lost in the stripping, before any extraction.
fn stripping_losses(set: &Set, count: usize) {
    let heading = |listed: usize| {
        format!(
            "pages of {} whose article the moderate level loses most of ({} of {listed} open pages with a loss):",
            set.name,
            listed.min(count)
        )
    };
    list_pages(
        set,
        StripLevel::Moderate,
        count,
        heading,
        |p, out| match &p.truth {
            Truth::Article(a) => {
                let r = shingle_score(out, a).recall;
                (r < 0.99).then(|| (r, format!("{:<40} R {r:.3}", p.id)))
            }
            Truth::Snippets { with, .. } => {
                let missed = snippets_held(&plain_text(out), with, false);
                (!missed.is_empty()).then(|| {
                    (
                        -(missed.len() as f64),
                        format!("{:<40} missed {missed:?}", p.id),
                    )
                })
            }
        },
    );
}

/// How much better a page scored for `a` than for `b`: the F1 difference, or snippets found less those wrongly
/// present.
fn page_lead(a: &PageScore, b: &PageScore) -> f64 {
    let net = |s: &PageScore| match *s {
        PageScore::Shingles(_, _, f1) => f1,
        PageScore::Snippets(found, _, wrong) => found as f64 - wrong as f64,
    };
    net(a) - net(b)
}

/// `--pages` with the yardstick: the pages where it leads the aggressive level most, each with both scores.
fn yardstick_leads(set: &Set, aggressive: &[PageScore], yardstick: &Row, count: usize) {
    let show = |s: &PageScore| match *s {
        PageScore::Shingles(p, r, f1) => format!("F1 {f1:.3} P {p:.2} R {r:.2}"),
        PageScore::Snippets(found, missing, wrong) => {
            format!("{found} found, {missing} missing, {wrong} wrongly present")
        }
    };
    let mut leads: Vec<(f64, usize)> = aggressive
        .iter()
        .zip(&yardstick.pages)
        .enumerate()
        .filter(|&(i, _)| !set.pages[i].sealed())
        .map(|(i, (a, y))| (page_lead(y, a), i))
        .filter(|&(lead, _)| lead > 0.0)
        .collect();
    leads.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    println!(
        "pages where {} leads ctxfit aggressive most ({} of {} pages it leads on, sealed sites left out):",
        yardstick.name,
        leads.len().min(count),
        leads.len()
    );
    for &(_, i) in leads.iter().take(count) {
        println!(
            "  {:<40} aggressive: {}; {}: {}",
            set.pages[i].id,
            show(&aggressive[i]),
            yardstick.name,
            show(&yardstick.pages[i])
        );
    }
    println!();
}

/// The three page sets of the corpus.
fn load_sets() -> Result<Vec<Set>> {
    let corpus = ctxfit_testkit::corpus_dir().context(
        "the shared corpus is missing: put it at ../shared/corpus beside the workspace or set CTXFIT_CORPUS",
    )?;
    Ok(vec![
        article_set(&corpus.join("html"), "ScrapingHub article benchmark")?,
        article_set(
            &corpus.join("html-readability"),
            "Readability.js test pages",
        )?,
        snippet_set(&corpus.join("html-trafilatura"))?,
    ])
}

pub fn eval(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sets = load_sets()?;
    // `--pages` lists each set's 15 worst pages, `--pages=N` its N worst
    let pages = args.iter().find_map(|a| match a.strip_prefix("--pages") {
        Some("") => Some(Ok(15)),
        Some(n) => Some(
            n.strip_prefix('=')
                .and_then(|n| n.parse::<usize>().ok())
                .with_context(|| format!("{a}: expected --pages or --pages=N")),
        ),
        None => None,
    });
    let pages = pages.transpose()?;
    // `--folds N`: every figure per fold of sites as well
    let folds = match args.iter().position(|a| a == "--folds") {
        Some(i) => Some(
            args.get(i + 1)
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n >= 2)
                .context("--folds N: N is a number of folds, 2 or more")?,
        ),
        None => None,
    };
    if let Some(count) = pages {
        for set in &sets {
            worst_pages(set, count);
            stripping_losses(set, count);
        }
    }
    let python = if args.iter().any(|a| a == "--no-trafilatura") {
        None
    } else {
        Some(trafilatura_python(&root)?)
    };
    let work = root.join("target/eval-html");
    std::fs::create_dir_all(&work)?;
    let mut summary: BTreeMap<&str, Vec<Row>> = BTreeMap::new();
    for set in &sets {
        let bytes: usize = set.pages.iter().map(|p| p.html.len()).sum();
        println!(
            "## {} — {} pages, {:.1} MB of HTML; {}",
            set.name,
            set.pages.len(),
            bytes as f64 / 1e6,
            set.metric
        );
        println!("| converter | precision | recall | F1 | output chars/page | MB/s (one core) |");
        println!("|---|---|---|---|---|---|");
        let mut rows: Vec<Row> = [
            StripLevel::Minimal,
            StripLevel::Moderate,
            StripLevel::Aggressive,
        ]
        .into_iter()
        .map(|level| ctxfit_row(set, level))
        .collect();
        if let Some(python) = &python {
            rows.push(trafilatura_row(python, set, &work)?.0);
        }
        rows.push(rust_trafilatura_row(set));
        for r in &rows {
            println!(
                "| {} | {:.3} | {:.3} | **{:.4}** | {:.0} | {:.1} |",
                r.name, r.scores.precision, r.scores.recall, r.scores.f1, r.chars, r.mb_per_s
            );
        }
        // the counts behind a snippet set's scores, which close F1s tell apart
        for r in &rows {
            if let Some((found, missing, wrong)) = r.scores.snippets {
                println!(
                    "{}: {found} snippets found, {missing} missing, {wrong} wrongly present",
                    r.name
                );
            }
        }
        let (aggressive, anchors) = (&rows[2], &rows[3..]);
        // how far aggressive's lead (or lag) over each yardstick holds on pages like these that were not scored:
        // drawn by page, and drawn by site (a site's pages are alike: the site is the unit of validation)
        let sites: Vec<String> = set.pages.iter().map(|p| p.site.clone()).collect();
        for yardstick in anchors {
            let (ahead, low, high) = bootstrap_lead(&aggressive.pages, &yardstick.pages);
            let (by_site, site_low, site_high) = html_folds::bootstrap_over_sites(&sites, |draw| {
                combine(draw.iter().map(|&i| &aggressive.pages[i])).f1
                    - combine(draw.iter().map(|&i| &yardstick.pages[i])).f1
            });
            // the same over the sealed sites alone: how far their figure says anything of sites not seen
            let sealed: Vec<usize> = (0..set.pages.len())
                .filter(|&i| set.pages[i].sealed())
                .collect();
            let sealed_sites: Vec<String> = sealed.iter().map(|&i| sites[i].clone()).collect();
            let (by_sealed, sealed_low, sealed_high) =
                html_folds::bootstrap_over_sites(&sealed_sites, |draw| {
                    combine(draw.iter().map(|&k| &aggressive.pages[sealed[k]])).f1
                        - combine(draw.iter().map(|&k| &yardstick.pages[sealed[k]])).f1
                });
            println!(
                "ctxfit aggressive against {}: at or above it in {:.1}% of {RESAMPLES} bootstrap resamples of the \
                 pages (F1 difference {low:+.4} to {high:+.4}, 5th to 95th percentile), {:.1}% of resamples of the \
                 sites ({site_low:+.4} to {site_high:+.4}), {:.1}% of resamples of the sealed sites alone \
                 ({sealed_low:+.4} to {sealed_high:+.4})",
                yardstick.name,
                100.0 * ahead,
                100.0 * by_site,
                100.0 * by_sealed
            );
        }
        // (the rows: minimal, moderate, aggressive, then the yardsticks; by kind, moderate beside aggressive says
        // whether a page loses in the stripping or in the extraction)
        parts::by_site(set, &rows[2..], folds);
        parts::by_kind(set, &rows[1..]);
        if let (Some(count), Some(yardstick)) = (pages, anchors.first()) {
            yardstick_leads(set, &aggressive.pages, yardstick, count);
        }
        // the moderate level's size goal (at most half of minimal's) beside the size of the reference itself
        let share = |chars: f64| 100.0 * chars / rows[0].chars.max(1.0);
        print!("moderate: {:.0}% of minimal's size", share(rows[1].chars));
        let articles: Vec<usize> = set
            .pages
            .iter()
            .filter_map(|p| match &p.truth {
                Truth::Article(a) => Some(a.chars().count()),
                Truth::Snippets { .. } => None,
            })
            .collect();
        if !articles.is_empty() {
            let mean = articles.iter().sum::<usize>() as f64 / articles.len() as f64;
            print!(
                "; the reference articles alone, as plain text: {mean:.0} chars/page, {:.0}% of minimal's size",
                share(mean)
            );
        }
        println!("\n");
        summary.insert(set.name, rows);
    }
    Ok(())
}

pub mod fit;
mod parts;
#[cfg(test)]
mod tests;
