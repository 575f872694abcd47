//! Fuzz target: any bytes, as a page in any encoding, at every strip level, with and without a base URL, must
//! clean without a panic, and the result must be consistent: stats that add up, chunks that lose no word.

#![no_main]

use ctxfit_html::{chunk_markdown, HtmlCleaner, StripLevel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // the first byte picks the level and whether a base URL and a header charset are given
    let Some((&mode, page)) = data.split_first() else {
        return;
    };
    let level = match mode % 3 {
        0 => StripLevel::Minimal,
        1 => StripLevel::Moderate,
        _ => StripLevel::Aggressive,
    };
    let mut cleaner = HtmlCleaner::new(level);
    if mode & 4 != 0 {
        cleaner = cleaner.with_base_url("https://example.com/a/b.html?q#f");
    }
    let content_type = (mode & 8 != 0).then_some("text/html; charset=iso-8859-1");
    let (markdown, stats) = cleaner.clean_bytes(page, content_type);
    assert_eq!(stats.original_size, page.len());
    assert_eq!(stats.cleaned_size, markdown.len());
    assert!((0.0..=100.0).contains(&stats.reduction_percent));
    // chunks never lose text
    let chunks = chunk_markdown(&markdown, 1 + (mode as usize % 64), &|s: &str| s.len() / 4);
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(words(&chunks.join("\n\n")), words(&markdown));
});
