//! The real pages of the corpus: no leaks, and the aggressive level against the ground truth.

use super::*;

#[test]
fn real_pages_clean_without_leaks_and_aggressive_finds_the_article() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus = ctxfit_testkit::corpus_dir()
        .expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("html/ground-truth.json")).unwrap(),
    )
    .unwrap();
    let mut scores = [0.0f64; 3];
    let mut n = 0;
    for (id, page) in truth.as_object().unwrap() {
        let mut gz = flate2::read::GzDecoder::new(
            std::fs::File::open(corpus.join(format!("html/pages/{id}.html.gz"))).unwrap(),
        );
        let mut bytes = Vec::new();
        gz.read_to_end(&mut bytes).unwrap();
        let html = String::from_utf8_lossy(&bytes);
        let body = page["articleBody"].as_str().unwrap();
        let url = page["url"].as_str().unwrap();
        let mut sizes = Vec::new();
        for (k, level) in LEVELS.into_iter().enumerate() {
            let (md, stats) = HtmlCleaner::new(level).with_base_url(url).clean(&html);
            assert!(
                !md.contains("<script") && !md.contains("function("),
                "{id} {level:?} leaks script"
            );
            assert_eq!(stats.cleaned_size, md.len());
            sizes.push(md.len());
            scores[k] += shingle_score(&md, body).f1;
        }
        assert!(
            sizes[2] <= sizes[0],
            "{id}: aggressive is not larger than minimal"
        );
        n += 1;
    }
    let mean: Vec<f64> = scores.iter().map(|s| s / n as f64).collect();
    eprintln!(
        "mean F1 over {n} pages: minimal {:.3}, moderate {:.3}, aggressive {:.3}",
        mean[0], mean[1], mean[2]
    );
    assert_eq!(n, 50);
    assert!(
        mean[2] > mean[0],
        "main-content extraction beats keeping the whole page"
    );
    // measured 0.971 (moderate 0.872, minimal 0.669): a floor just under it, so that a loss shows
    assert!(mean[2] >= 0.965, "aggressive F1 {:.3}", mean[2]);
    assert!(mean[1] >= 0.86, "moderate F1 {:.3}", mean[1]);
    assert!(mean[1] > mean[0], "moderate beats minimal");
}

/// The titles pages state, against the Readability test set's reference titles (whitespace and case aside).
#[test]
fn titles_match_the_readability_reference() {
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let dir = corpus.join("html-readability");
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ground-truth.json")).unwrap())
            .unwrap();
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (mut pages, mut matched, mut misses) = (0, 0, Vec::new());
    for (name, entry) in truth.as_object().unwrap() {
        let Some(expected) = entry["title"].as_str().filter(|t| !t.is_empty()) else {
            continue;
        };
        let mut html = Vec::new();
        flate2::read::GzDecoder::new(
            std::fs::File::open(dir.join(format!("pages/{name}.html.gz"))).unwrap(),
        )
        .read_to_end(&mut html)
        .unwrap();
        let (text, _) = ctxfit_html::decode_html(&html, None);
        let found = ctxfit_html::page_metadata(&text, None)
            .title
            .unwrap_or_default();
        pages += 1;
        if norm(&found) == norm(expected) {
            matched += 1;
        } else {
            misses.push(format!("{name}: {found:?} ≠ {expected:?}"));
        }
    }
    assert!(pages >= 60, "{pages}");
    // 62 of 67 when measured: one more miss fails
    assert!(
        matched + 5 >= pages,
        "{matched} of {pages}:\n{}",
        misses.join("\n")
    );
}
