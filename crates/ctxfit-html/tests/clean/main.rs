//! Cleaning hand-written pages (exact output) and the 50 real pages of the corpus (no leaks, F1 against ground truth).

#![allow(clippy::print_stderr)] // the F1 figures are printed with --nocapture

use std::io::Read;

use ctxfit_html::eval::shingle_score;
use ctxfit_html::{chunk_markdown, resolve_url, HtmlCleaner, StripLevel};

/// Every strip level, lightest first.
const LEVELS: [StripLevel; 3] = [
    StripLevel::Minimal,
    StripLevel::Moderate,
    StripLevel::Aggressive,
];

fn clean(level: StripLevel, html: &str) -> String {
    HtmlCleaner::new(level)
        .with_base_url("https://example.com/blog/post.html")
        .clean(html)
        .0
}

fn clean_bytes(bytes: &[u8], content_type: Option<&str>) -> String {
    HtmlCleaner::new(StripLevel::Minimal)
        .clean_bytes(bytes, content_type)
        .0
}

/// Every one of `kept` is in the Markdown (the Markdown is shown when one is not).
fn assert_holds(md: &str, kept: &[&str]) {
    for text in kept {
        assert!(md.contains(text), "{text}: {md}");
    }
}

/// Paragraphs of prose enough for the aggressive level to be sure of the article.
fn body_paragraphs(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the report says that the river rose, the dykes held, and the town, \
                 which had prepared for a week, counted the damage on Monday morning.</p>"
            )
        })
        .collect()
}

mod around;
mod article;
mod corpus;
mod markdown;
