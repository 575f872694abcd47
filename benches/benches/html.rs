//! HTML cleaning throughput on the 50 real pages of the corpus, per strip level.

use std::io::Read;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxfit_html::{HtmlCleaner, StripLevel};

fn pages() -> Vec<String> {
    let corpus = ctxfit_import::corpus_dir()
        .expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    let mut paths: Vec<_> = std::fs::read_dir(corpus.join("html/pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
                .read_to_end(&mut bytes)
                .unwrap();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let pages = pages();
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
    group.finish();
}

criterion_group!(html, benches);
criterion_main!(html);
