//! Unit tests of `html_sets.rs`.

use super::*;

#[test]
fn markdown_is_compared_as_plain_text() {
    let md = "# Title\n\nSee **the [docs](https://x.io/a)** and `code`.\n> quoted  text";
    assert_eq!(plain_text(md), "Title See the docs and code. quoted text");
    // the text's own stars, brackets and underscores stay, as the writer escaped them or left them
    let md = "\\[1\\] Liebe\\_r Besucher_in, inter\\* Personen: `DOWNLOAD_DIR`, a \\\\ b";
    assert_eq!(
        plain_text(md),
        "[1] Liebe_r Besucher_in, inter* Personen: DOWNLOAD_DIR, a \\ b"
    );
    let html = "<p>[1] Liebe_r Besucher_in, inter* Personen: <code>DOWNLOAD_DIR</code>, a \\ b</p>";
    let written = HtmlCleaner::new(StripLevel::Minimal).clean(html).0;
    assert_eq!(plain_text(&written), plain_text(md));
}

#[test]
fn snippets_are_counted_over_pages_and_shingles_averaged() {
    let snippets = [PageScore::Snippets(3, 1, 0), PageScore::Snippets(1, 0, 1)];
    let s = combine(&snippets);
    assert_eq!(s.snippets, Some((4, 1, 1)));
    assert!((s.precision - 0.8).abs() < 1e-12 && (s.recall - 0.8).abs() < 1e-12);
    let shingles = [
        PageScore::Shingles(1.0, 0.5, 0.6),
        PageScore::Shingles(0.5, 1.0, 0.8),
    ];
    let s = combine(&shingles);
    assert_eq!(s.snippets, None);
    assert!((s.f1 - 0.7).abs() < 1e-12);
    // a page listed twice counts twice, as a bootstrap resample lists it
    assert!((combine([&shingles[0], &shingles[0], &shingles[1]]).f1 - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn a_pages_lead_is_its_f1_or_its_net_snippets() {
    let (a, b) = (
        PageScore::Shingles(0.9, 0.5, 0.6),
        PageScore::Shingles(0.7, 0.9, 0.8),
    );
    assert!((page_lead(&b, &a) - 0.2).abs() < 1e-12);
    // a snippet wrongly present weighs as much as one found
    let (a, b) = (PageScore::Snippets(3, 0, 2), PageScore::Snippets(2, 1, 0));
    assert_eq!(page_lead(&b, &a), 1.0);
    assert_eq!(page_lead(&a, &b), -1.0);
}

#[test]
fn the_bootstrap_tells_a_clear_lead_from_a_coin_toss() {
    // ahead on every page: ahead in every resample
    let a: Vec<PageScore> = (0..50)
        .map(|_| PageScore::Shingles(0.9, 0.9, 0.9))
        .collect();
    let b: Vec<PageScore> = (0..50)
        .map(|_| PageScore::Shingles(0.8, 0.8, 0.8))
        .collect();
    let (ahead, low, high) = bootstrap_lead(&a, &b);
    assert_eq!(ahead, 1.0);
    assert!((low - 0.1).abs() < 1e-9 && (high - 0.1).abs() < 1e-9);
    // ahead on half the pages and behind by as much on the other half: a toss, the interval around zero
    let c: Vec<PageScore> = (0..200)
        .map(|i| {
            let f = if i % 2 == 0 { 0.9 } else { 0.7 };
            PageScore::Shingles(f, f, f)
        })
        .collect();
    let d: Vec<PageScore> = (0..200)
        .map(|_| PageScore::Shingles(0.8, 0.8, 0.8))
        .collect();
    let (ahead, low, high) = bootstrap_lead(&c, &d);
    assert!((0.3..0.7).contains(&ahead), "{ahead}");
    assert!(low < 0.0 && high > 0.0, "{low} {high}");
    // the same every run
    assert_eq!(bootstrap_lead(&c, &d), (ahead, low, high));
}
