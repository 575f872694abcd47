//! Import and parse of a 1M-token session, and a whole-session replay, on the generated history.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxfit_benches::history::{corpus_turns, generate_history};
use ctxfit_compactor::PolicyFile;
use ctxfit_replay::{replay, Policy, Prices};
use ctxfit_tokens::{FastEstimator, TokenEstimator};

fn benches(c: &mut Criterion) {
    let history = generate_history(&corpus_turns(), 1_000_000, 7);
    let json = serde_json::to_string(&ctxfit_model::to_value(&history)).unwrap();
    let mut import = c.benchmark_group("import_1m");
    import.throughput(Throughput::Bytes(json.len() as u64));
    import.sample_size(10);
    import.bench_function("anthropic_json", |b| {
        b.iter(|| ctxfit_import::import_str(&json, None).unwrap().len())
    });
    import.finish();

    let registry = ctxfit_plugins::registry().unwrap();
    let fast = || -> Box<dyn TokenEstimator> { Box::new(FastEstimator) };
    let mut group = c.benchmark_group("replay_1m");
    group.sample_size(10);
    for name in ["none", "seed-002", "smart"] {
        let policy = if name == "none" {
            Policy::None
        } else {
            Policy::Profile(
                PolicyFile::default()
                    .resolve(Some(name), None, &|_| None)
                    .unwrap(),
            )
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                replay("1m", &history, &policy, &registry, &fast, Prices::default())
                    .unwrap()
                    .turns
                    .len()
            })
        });
    }
    group.finish();
}

criterion_group!(replay_benches, benches);
criterion_main!(replay_benches);
