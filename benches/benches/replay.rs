//! Import and parse of a 1M-token session, a whole-session replay on the generated history, and how replay time
//! grows with the history (1M and 4M tokens) and with the number of requests (10,000 and 40,000 small tool calls).

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
            Policy::Profile(Box::new(
                PolicyFile::default()
                    .resolve(Some(name), None, &|_| None)
                    .unwrap(),
            ))
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

    // linear in the history: 4× the history, about 4× the time, for every built-in profile (a sliding window
    // once asked about every kept result on every request: 61 s instead of 1.1 s at 8M tokens)
    let long = generate_history(&corpus_turns(), 4_000_000, 7);
    let mut scaling = c.benchmark_group("replay_scaling");
    scaling.sample_size(10);
    for name in ["mask-last-10", "smart"] {
        let policy = Policy::Profile(Box::new(
            PolicyFile::default()
                .resolve(Some(name), None, &|_| None)
                .unwrap(),
        ));
        for (size, history) in [("1m", &history), ("4m", &long)] {
            scaling.bench_function(format!("{name}/{size}"), |b| {
                b.iter(|| {
                    replay(size, history, &policy, &registry, &fast, Prices::default())
                        .unwrap()
                        .turns
                        .len()
                })
            });
        }
    }
    scaling.finish();

    // linear in the number of requests too: a history of many small tool calls (each request once summed every
    // message before it: 100,000 calls took 8 s to compact, half of it that sum)
    let mut many = c.benchmark_group("replay_many_calls");
    many.sample_size(10);
    let smart = Policy::Profile(Box::new(
        PolicyFile::default()
            .resolve(Some("smart"), None, &|_| None)
            .unwrap(),
    ));
    for calls in [10_000, 40_000] {
        let history = small_calls(calls);
        many.bench_function(format!("smart/{calls}"), |b| {
            b.iter(|| {
                replay(
                    "calls",
                    &history,
                    &smart,
                    &registry,
                    &fast,
                    Prices::default(),
                )
                .unwrap()
                .turns
                .len()
            })
        });
    }
    many.finish();
}

/// A session of `calls` tool calls, each answered by three short lines.
fn small_calls(calls: usize) -> ctxfit_model::Conversation {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "go"})];
    for i in 0..calls {
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("ls d{i}")}}]}));
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("a{i}\nb\nc")}]}));
    }
    let json = serde_json::json!({"messages": messages}).to_string();
    ctxfit_import::import_str(&json, None)
        .unwrap()
        .remove(0)
        .conversation
}

criterion_group!(replay_benches, benches);
criterion_main!(replay_benches);
