//! Token estimation throughput on the corpus' tool results: chars/4, the fast estimator, exact o200k.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxfit_benches::corpus_tool_results;
use ctxfit_tokens::{Chars4, ExactEstimator, FastEstimator, TokenEstimator};

fn estimators(c: &mut Criterion) {
    let texts = corpus_tool_results();
    let bytes: usize = texts.iter().map(String::len).sum();
    let joined = texts.concat();
    let mut group = c.benchmark_group("tokens");
    group.throughput(Throughput::Bytes(bytes as u64));
    let all: [(&str, &dyn TokenEstimator); 3] = [
        ("chars4", &Chars4),
        ("fast", &FastEstimator),
        ("o200k", &ExactEstimator::o200k()),
    ];
    for (name, est) in all {
        group.bench_with_input(
            BenchmarkId::new("per_tool_result", name),
            &texts,
            |b, texts| b.iter(|| texts.iter().map(|t| est.count_text(t)).sum::<usize>()),
        );
    }
    for (name, est) in [
        ("chars4", &Chars4 as &dyn TokenEstimator),
        ("fast", &FastEstimator),
    ] {
        group.bench_with_input(BenchmarkId::new("one_text", name), &joined, |b, text| {
            b.iter(|| est.count_text(text))
        });
    }
    group.finish();

    // one pathological piece: a 1 MB run without whitespace (a base64 blob), exact o200k counted in pieces
    // of MAX_RUN bytes against the tokenizer's own single-piece count
    let blob: String = "QmFzZTY0IGRhdGEgaGVyZQ".repeat((1 << 20) / 22);
    let mut group = c.benchmark_group("tokens_one_long_run");
    group.throughput(Throughput::Bytes(blob.len() as u64));
    group.sample_size(10);
    let o200k = ExactEstimator::o200k();
    group.bench_function("o200k_in_pieces", |b| b.iter(|| o200k.count_text(&blob)));
    let bpe = tiktoken_rs::o200k_base_singleton();
    group.bench_function("o200k_one_piece", |b| b.iter(|| bpe.count_ordinary(&blob)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = estimators
}
criterion_main!(benches);
