//! The aggressive level and the yardsticks on parts of a set: by site (each fold of sites, the sealed sites
//! apart from the open ones) and by kind of page (what the page's own markup says of where its article is), so
//! the tables say where ctxfit wins and where it still loses.

use std::rc::Rc;

use html5ever::tendril::TendrilSink;
use markup5ever_rcdom::{Handle, NodeData, RcDom};

use super::{combine, Row, Set};
use crate::html_folds;

/// With `--folds N`, each fold of sites (every figure of a fitted part would be chosen on the other folds and
/// scored on this one; no part of the extractor is fitted yet, so the folds' pooled figures are the whole set's);
/// always, the sealed sites apart from the rest.
pub(super) fn by_site(set: &Set, rows: &[Row], folds: Option<usize>) {
    let mut parts: Vec<(String, Vec<usize>)> = Vec::new();
    if let Some(n) = folds {
        for k in 0..n {
            let pages = (0..set.pages.len())
                .filter(|&i| html_folds::fold(&set.pages[i].site, n) == k)
                .collect();
            parts.push((format!("fold {}", k + 1), pages));
        }
    }
    let (sealed, open): (Vec<usize>, Vec<usize>) =
        (0..set.pages.len()).partition(|&i| set.pages[i].sealed());
    parts.push(("sites opened page by page".to_owned(), open));
    parts.push((
        "**sealed sites** (never listed by --pages)".to_owned(),
        sealed,
    ));
    table(set, rows, "part", parts);
}

/// The kinds of page, by what its markup says of where the article is: the first that applies.
const KINDS: [&str; 4] = [
    "one `<article>`",
    "several `<article>`s",
    "`<main>`, no `<article>`",
    "neither `<article>` nor `<main>`",
];

/// Every page of the set by its kind, and the sealed sites' pages by their kind (the tables name no page), with
/// precision and recall beside F1: whether a kind loses for what the level keeps or for what it leaves out.
pub(super) fn by_kind(set: &Set, rows: &[Row]) {
    let kinds: Vec<usize> = set.pages.iter().map(|p| kind(&p.html)).collect();
    let parts = |sealed_only: bool| {
        KINDS
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let pages = (0..set.pages.len())
                    .filter(|&i| kinds[i] == k && (!sealed_only || set.pages[i].sealed()))
                    .collect();
                ((*name).to_owned(), pages)
            })
            .collect()
    };
    table(set, rows, "kind of page", parts(false));
    table(
        set,
        rows,
        "kind of page, **sealed sites only**,",
        parts(true),
    );
}

/// A page's kind (an index into [`KINDS`]): how many `<article>` elements it has, else whether it has a
/// `<main>` (or an element of role `main`).
fn kind(html: &str) -> usize {
    let dom = html5ever::parse_document(RcDom::default(), Default::default()).one(html);
    let (mut articles, mut main) = (0usize, false);
    let mut stack: Vec<Handle> = vec![Rc::clone(&dom.document)];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { name, attrs, .. } = &node.data {
            match &*name.local {
                "article" => articles += 1,
                "main" => main = true,
                _ => {}
            }
            main |= attrs
                .borrow()
                .iter()
                .any(|a| &*a.name.local == "role" && a.value.eq_ignore_ascii_case("main"));
        }
        stack.extend(node.children.borrow().iter().map(Rc::clone));
    }
    match (articles, main) {
        (1, _) => 0,
        (2.., _) => 1,
        (0, true) => 2,
        (0, false) => 3,
    }
}

/// One line per part: its sites, its pages, and each row's F1 over them, its precision and recall in brackets (a
/// part without pages is left out).
fn table(set: &Set, rows: &[Row], what: &str, parts: Vec<(String, Vec<usize>)>) {
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    println!();
    println!(
        "| {what} of {} | sites | pages | {} |",
        set.name,
        names.join(" F1 (P, R) | ") + " F1 (P, R)"
    );
    println!("|---|---|---|{}", "---|".repeat(rows.len()));
    for (name, pages) in parts.into_iter().filter(|(_, p)| !p.is_empty()) {
        let mut sites: Vec<&str> = pages.iter().map(|&i| set.pages[i].site.as_str()).collect();
        sites.sort_unstable();
        sites.dedup();
        let f1s: Vec<String> = rows
            .iter()
            .map(|r| {
                let s = combine(pages.iter().map(|&i| &r.pages[i]));
                format!("{:.4} ({:.3}, {:.3})", s.f1, s.precision, s.recall)
            })
            .collect();
        println!(
            "| {name} | {} | {} | {} |",
            sites.len(),
            pages.len(),
            f1s.join(" | ")
        );
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::{kind, KINDS};

    #[test]
    fn a_page_s_kind_is_what_its_markup_says_of_its_article() {
        let cases = [
            ("<body><article><p>x</p></article></body>", 0),
            (
                "<body><main><article>a</article><article>b</article></main></body>",
                1,
            ),
            ("<body><main><p>x</p></main></body>", 2),
            ("<body><div role=\"MAIN\"><p>x</p></div></body>", 2),
            (
                "<body><div><p>x</p></div><script>'<article>'</script></body>",
                3,
            ),
        ];
        for (html, want) in cases {
            assert_eq!(KINDS[kind(html)], KINDS[want], "{html}");
        }
    }
}
