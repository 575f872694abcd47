//! HTML cleaning throughput on the 50 real pages of the corpus, per strip level, and htmd's in the same run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxfit_html::{HtmlCleaner, StripLevel};
use html5ever::tendril::TendrilSink;
use markup5ever_rcdom::RcDom;

fn benches(c: &mut Criterion) {
    let pages: Vec<String> = ctxfit_benches::pages::corpus_pages()
        .into_iter()
        .map(|p| p.html)
        .collect();
    let bytes: usize = pages.iter().map(String::len).sum();
    let mut group = c.benchmark_group("html_clean_50_pages");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    for level in [
        StripLevel::Minimal,
        StripLevel::Moderate,
        StripLevel::Aggressive,
    ] {
        let cleaner = HtmlCleaner::new(level);
        group.bench_with_input(
            BenchmarkId::from_parameter(level.name()),
            &pages,
            |b, pages| {
                b.iter(|| {
                    pages
                        .iter()
                        .map(|p| cleaner.clean(p).0.len())
                        .sum::<usize>()
                })
            },
        );
    }
    // html5ever's parse alone (tree built and dropped): the floor under every level
    group.bench_with_input(
        BenchmarkId::from_parameter("html5ever-parse-only"),
        &pages,
        |b, pages| {
            b.iter(|| {
                for p in pages {
                    let dom = html5ever::parse_document(RcDom::default(), Default::default())
                        .one(p.as_str());
                    std::hint::black_box(dom);
                }
            })
        },
    );
    group.bench_with_input(BenchmarkId::from_parameter("htmd"), &pages, |b, pages| {
        b.iter(|| {
            pages
                .iter()
                .map(|p| htmd::convert(p).map_or(0, |m| m.len()))
                .sum::<usize>()
        })
    });
    group.finish();
}

/// 100,000 nested elements: divs (the tree builder would take half a minute, so the tokenizer-only writer runs)
/// and spans (no scope checks: the tree path).
fn deep(c: &mut Criterion) {
    let mut group = c.benchmark_group("html_clean_100k_nested");
    group.sample_size(10);
    for tag in ["div", "span"] {
        let html = format!(
            "{}deep{}",
            format!("<{tag}>").repeat(100_000),
            format!("</{tag}>").repeat(100_000)
        );
        group.throughput(Throughput::Bytes(html.len() as u64));
        let cleaner = HtmlCleaner::new(StripLevel::Aggressive);
        group.bench_with_input(BenchmarkId::from_parameter(tag), &html, |b, html| {
            b.iter(|| cleaner.clean(html).0.len())
        });
    }
    group.finish();
}

criterion_group!(html, benches, deep);
criterion_main!(html);
