//! `cargo xtask fit-html [--check]`: the weights of main-content extraction ([`ctxfit_html::Weights`]) chosen
//! from data, out of fold, by site.
//!
//! The open sites of the three page sets (the sealed fifth is never used to choose) are split into five folds by
//! a hash of the site. For each fold, the weights are fitted on the other four — coordinate ascent from the
//! hand-written values, each weight tried at [`FACTORS`] times its hand-written value, the mean of the three
//! sets' F1 the objective, a move kept only when it raises it by [`MIN_GAIN`] and costs no set anything (a set
//! is a source of pages: a weight that gains on two by losing on the third is fitted to those two) — and scored
//! on the fold: pooled, the **out-of-fold** figure of fitting, beside the hand-written values on the same pages.
//! Then the weights are fitted on every open site and scored on the sealed ones. They are written to
//! `crates/ctxfit-html/src/extract/fitted.rs` only when fitting helps where it did not choose: out of fold on
//! the open sites and on the sealed sites, each by the mean of the three sets' F1; otherwise the hand-written
//! values are written. `--check` fits again and fails if the file differs.
//!
//! Each page is parsed once and kept by the worker thread that parsed it (one per core); only the extraction,
//! the Markdown and the score are redone for each set of weights, and each set of weights is scored once for all
//! folds.

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use ctxfit_html::{HtmlCleaner, ParsedPage, StripLevel, Weights};

use super::{combine, page_score, PageScore, Set};
use crate::html_folds;

/// How many weights there are.
const COUNT: usize = Weights::COUNT;

/// The values each weight is tried at, as multiples of its hand-written value.
const FACTORS: [f64; 7] = [0.5, 0.7, 0.85, 1.0, 1.2, 1.4, 2.0];

/// The least gain of the objective (the mean of three F1s) a move must bring: about one snippet of
/// trafilatura's set, so that no weight moves for a page's noise.
const MIN_GAIN: f64 = 2e-4;

/// Sweeps over all the weights at most.
const SWEEPS: usize = 3;

/// Folds of the open sites.
const FOLDS: usize = 5;

const FITTED_RS: &str = "crates/ctxfit-html/src/extract/fitted.rs";

type Key = [u64; COUNT];

/// Each set's F1 and their mean: what a fit maximises.
type Objective = (Vec<f64>, f64);

fn key(v: &[f64; COUNT]) -> Key {
    v.map(f64::to_bits)
}

/// Scores every page of every set for a set of weights, on worker threads that keep their pages parsed.
struct Scorer<'a> {
    sets: &'a [Set],
    /// Every page as (set, page in the set).
    pages: Vec<(usize, usize)>,
    to_workers: Vec<mpsc::Sender<Weights>>,
    from_workers: mpsc::Receiver<Vec<(usize, PageScore)>>,
    cache: HashMap<Key, Rc<Vec<PageScore>>>,
}

impl Scorer<'_> {
    fn scores(&mut self, v: &[f64; COUNT]) -> Rc<Vec<PageScore>> {
        if let Some(s) = self.cache.get(&key(v)) {
            return Rc::clone(s);
        }
        for worker in &self.to_workers {
            worker
                .send(Weights::from_values(*v))
                .expect("a worker of fit-html stopped");
        }
        let mut scores = vec![PageScore::Snippets(0, 0, 0); self.pages.len()];
        for _ in &self.to_workers {
            let part = self
                .from_workers
                .recv()
                .expect("a worker of fit-html stopped");
            for (i, s) in part {
                scores[i] = s;
            }
        }
        let scores = Rc::new(scores);
        self.cache.insert(key(v), Rc::clone(&scores));
        scores
    }

    /// Each set's F1 over the pages `keep` selects (`None` for a set without any).
    fn f1s(&self, scores: &[PageScore], keep: &dyn Fn(usize) -> bool) -> Vec<Option<f64>> {
        (0..self.sets.len())
            .map(|s| {
                let chosen: Vec<&PageScore> = (0..self.pages.len())
                    .filter(|&i| self.pages[i].0 == s && keep(i))
                    .map(|i| &scores[i])
                    .collect();
                (!chosen.is_empty()).then(|| combine(chosen).f1)
            })
            .collect()
    }

    /// Each set's F1 over the pages `keep` selects, and their mean.
    fn objective(&self, scores: &[PageScore], keep: &dyn Fn(usize) -> bool) -> Objective {
        let f1s: Vec<f64> = self.f1s(scores, keep).into_iter().flatten().collect();
        let mean = f1s.iter().sum::<f64>() / f1s.len().max(1) as f64;
        (f1s, mean)
    }

    /// Coordinate ascent from the hand-written weights on the pages `keep` selects.
    fn fit(&mut self, keep: &dyn Fn(usize) -> bool) -> [f64; COUNT] {
        let hand = Weights::HAND.values();
        let mut v = hand;
        let mut best = {
            let s = self.scores(&v);
            self.objective(&s, keep)
        };
        for _ in 0..SWEEPS {
            let mut moved = false;
            for k in 0..v.len() {
                let mut pick: Option<([f64; COUNT], Objective)> = None;
                for f in FACTORS {
                    let mut t = v;
                    t[k] = (hand[k] * f * 1e6).round() / 1e6;
                    if t[k] == v[k] {
                        continue;
                    }
                    let s = self.scores(&t);
                    let o = self.objective(&s, keep);
                    // a move helps on the whole and costs no set anything: a set is a source of pages, and a
                    // weight that gains on two by losing on the third is fitted to those two
                    let no_loss = o.0.iter().zip(&best.0).all(|(new, old)| new >= old);
                    if no_loss
                        && o.1 >= best.1 + MIN_GAIN
                        && pick.as_ref().is_none_or(|(_, p)| o.1 > p.1)
                    {
                        pick = Some((t, o));
                    }
                }
                if let Some((t, o)) = pick {
                    v = t;
                    best = o;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        v
    }
}

/// One worker: parses its pages (`mine`, indices into `pages`), then scores them for each set of weights it is
/// sent, until the sender is dropped.
fn worker(
    sets: &[Set],
    pages: &[(usize, usize)],
    mine: Vec<usize>,
    weights: mpsc::Receiver<Weights>,
    out: mpsc::Sender<Vec<(usize, PageScore)>>,
) {
    let parsed: Vec<ParsedPage> = mine
        .iter()
        .map(|&i| ParsedPage::parse(&sets[pages[i].0].pages[pages[i].1].html))
        .collect();
    for w in weights {
        let part = mine
            .iter()
            .zip(&parsed)
            .map(|(&i, doc)| {
                let page = &sets[pages[i].0].pages[pages[i].1];
                let mut cleaner = HtmlCleaner::new(StripLevel::Aggressive).with_weights(w);
                if let Some(url) = &page.url {
                    cleaner = cleaner.with_base_url(url.clone());
                }
                (i, page_score(page, &cleaner.clean_parsed(doc), false))
            })
            .collect();
        if out.send(part).is_err() {
            return;
        }
    }
}

/// The file that holds the weights in use.
fn fitted_rs(v: &[f64; COUNT], chosen: bool) -> String {
    let how = if chosen {
        "fitted on the open sites of the three page sets\n/// (out of fold and on the sealed sites, they beat the \
         hand-written values)"
    } else {
        "the hand-written values\n/// (fitted ones did not beat them out of fold and on the sealed sites)"
    };
    let mut out = String::from(
        "//! Written by `cargo xtask fit-html`; checked by `cargo xtask fit-html --check`. Do not edit by hand.\n\n\
         use super::weights::Weights;\n\n",
    );
    if v == &Weights::HAND.values() {
        out += &format!(
            "/// The weights in use: {how}.\npub(crate) const FITTED: Weights = Weights::HAND;\n"
        );
        return out;
    }
    out +=
        &format!("/// The weights in use: {how}.\npub(crate) const FITTED: Weights = Weights {{\n");
    for (name, value) in Weights::NAMES.iter().zip(v) {
        out += &format!("    {name}: {value:?},\n");
    }
    out += "};\n";
    out
}

pub fn run(args: &[String]) -> Result<()> {
    let check = args.iter().any(|a| a == "--check");
    let sets = super::load_sets()?;
    let pages: Vec<(usize, usize)> = (0..sets.len())
        .flat_map(|s| (0..sets[s].pages.len()).map(move |p| (s, p)))
        .collect();
    let site = |i: usize| &sets[pages[i].0].pages[pages[i].1].site;
    let sealed = |i: usize| html_folds::sealed(site(i));
    let fold = |i: usize| html_folds::fold(site(i), FOLDS);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let hand = Weights::HAND.values();
    let result = std::thread::scope(|scope| {
        let (to_main, from_workers) = mpsc::channel();
        let mut to_workers = Vec::new();
        for t in 0..threads {
            let (tx, rx) = mpsc::channel();
            to_workers.push(tx);
            let mine: Vec<usize> = (t..pages.len()).step_by(threads).collect();
            let (sets, pages, out) = (&sets, &pages, to_main.clone());
            scope.spawn(move || worker(sets, pages, mine, rx, out));
        }
        drop(to_main);
        let mut scorer = Scorer {
            sets: &sets,
            pages: pages.clone(),
            to_workers,
            from_workers,
            cache: HashMap::new(),
        };
        // out of fold: each fold of the open sites scored with the weights fitted on the other folds
        let mut out_of_fold = vec![PageScore::Snippets(0, 0, 0); pages.len()];
        for k in 0..FOLDS {
            let v = scorer.fit(&|i| !sealed(i) && fold(i) != k);
            let s = scorer.scores(&v);
            for i in (0..pages.len()).filter(|&i| !sealed(i) && fold(i) == k) {
                out_of_fold[i] = s[i];
            }
            println!("fold {}: {}", k + 1, changes(&v));
        }
        let fitted = scorer.fit(&|i| !sealed(i));
        let (hand_scores, fitted_scores) = (scorer.scores(&hand), scorer.scores(&fitted));
        let rows = [
            (
                "open sites, hand-written",
                scorer.f1s(&hand_scores, &|i| !sealed(i)),
            ),
            (
                "open sites, fitted out of fold",
                scorer.f1s(&out_of_fold, &|i| !sealed(i)),
            ),
            (
                "sealed sites, hand-written",
                scorer.f1s(&hand_scores, &sealed),
            ),
            (
                "sealed sites, fitted on the open ones",
                scorer.f1s(&fitted_scores, &sealed),
            ),
        ];
        let mean = |f: &[Option<f64>]| {
            let known: Vec<f64> = f.iter().flatten().copied().collect();
            known.iter().sum::<f64>() / known.len().max(1) as f64
        };
        println!();
        println!(
            "| aggressive F1 | {} | mean |",
            sets.iter().map(|s| s.name).collect::<Vec<_>>().join(" | ")
        );
        println!("|---|{}---|", "---|".repeat(sets.len()));
        for (name, f1s) in &rows {
            let cells: Vec<String> = f1s
                .iter()
                .map(|f| f.map_or("—".to_owned(), |f| format!("{f:.4}")))
                .collect();
            println!("| {name} | {} | {:.4} |", cells.join(" | "), mean(f1s));
        }
        println!("\nfitted on every open site: {}", changes(&fitted));
        let chosen = mean(&rows[1].1) > mean(&rows[0].1) && mean(&rows[3].1) > mean(&rows[2].1);
        println!(
            "{}",
            if chosen {
                "fitting helps out of fold and on the sealed sites: the fitted weights are used"
            } else {
                "fitting does not help both out of fold and on the sealed sites: the hand-written weights are used"
            }
        );
        println!("({} sets of weights scored)", scorer.cache.len());
        drop(scorer);
        Ok::<_, anyhow::Error>(fitted_rs(if chosen { &fitted } else { &hand }, chosen))
    })?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(FITTED_RS);
    if check {
        let committed =
            std::fs::read_to_string(&path).with_context(|| format!("reading {FITTED_RS}"))?;
        if committed != result {
            bail!("{FITTED_RS} is not what `cargo xtask fit-html` writes: run it and commit the result");
        }
        println!("{FITTED_RS} is up to date");
    } else {
        std::fs::write(&path, result).with_context(|| format!("writing {FITTED_RS}"))?;
        println!("wrote {FITTED_RS}");
    }
    Ok(())
}

/// The weights that differ from the hand-written ones, as `name hand → value`.
fn changes(v: &[f64; COUNT]) -> String {
    let hand = Weights::HAND.values();
    let moved: Vec<String> = (0..v.len())
        .filter(|&k| v[k] != hand[k])
        .map(|k| format!("{} {} → {}", Weights::NAMES[k], hand[k], v[k]))
        .collect();
    if moved.is_empty() {
        "the hand-written weights".to_owned()
    } else {
        moved.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_the_weights_in_use_and_why() {
        let hand = fitted_rs(&Weights::HAND.values(), false);
        assert!(hand.contains("pub(crate) const FITTED: Weights = Weights::HAND;"));
        assert!(hand.contains("did not beat them"));
        let mut v = Weights::HAND.values();
        v[1] = 85.0;
        let fitted = fitted_rs(&v, true);
        assert!(
            fitted.contains("    bare_text: 85.0,\n") && fitted.contains("    paragraph: 25.0,\n")
        );
        assert!(fitted.contains("they beat the hand-written values"));
        assert!(fitted.lines().all(|l| l.chars().count() <= 120), "{fitted}");
        assert_eq!(changes(&v), "bare_text 100 → 85");
        assert_eq!(changes(&Weights::HAND.values()), "the hand-written weights");
    }

    #[test]
    fn the_committed_file_is_one_the_fit_writes() {
        let committed = include_str!("../../../crates/ctxfit-html/src/extract/fitted.rs");
        let hand = Weights::HAND.values();
        assert!(
            committed == fitted_rs(&hand, false)
                || committed.contains("they beat the hand-written values"),
            "{committed}"
        );
    }
}
