//! Compaction on a generated 1M-token history: per-turn incremental cost and full compaction per profile, with
//! the seeds' passes in Python on the same history in the same run (`benches/python/seed_passes.py`); and per
//! turn at the end of long sessions of reads of distinct files (what waits on the history).

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;

use criterion::{BatchSize, Criterion, Throughput};
use ctxfit_benches::history::{corpus_turns, generate_history};
use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_model::{Block, Conversation};

const TOKENS: usize = 1_000_000;
const SEED: u64 = 7;
const LAST_TURNS: usize = 100;

fn settings(profile: &str) -> Settings {
    PolicyFile::default()
        .resolve(Some(profile), None, &|_| None)
        .unwrap()
}

fn compactor(profile: &str) -> Compactor {
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(
        settings(profile),
        &registry,
        Box::new(ctxfit_tokens::FastEstimator),
    )
    .unwrap()
}

/// Bytes of text in the history (what compaction reads).
fn text_bytes(conv: &Conversation) -> usize {
    conv.messages
        .iter()
        .flat_map(|m| &m.content.blocks)
        .map(|b| match b {
            Block::Text(t) => t.text.len(),
            Block::ToolResult(r) => r.content.joined_text().len(),
            Block::ToolUse(u) => u.input.to_string().len(),
            Block::Thinking(t) => t.thinking.len(),
            _ => 0,
        })
        .sum()
}

fn python_seeds(history: &Conversation) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/ctxfit-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history-1m.json");
    let messages = serde_json::Value::Array(
        history
            .messages
            .iter()
            .map(ctxfit_model::anthropic::write_message)
            .collect(),
    );
    std::fs::write(&path, serde_json::to_vec(&messages).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/seed_passes.py");
    match Command::new("python3").arg(&script).arg(&path).output() {
        Ok(o) if o.status.success() => {
            eprintln!(
                "python seeds: {}",
                String::from_utf8_lossy(&o.stdout).trim()
            )
        }
        Ok(o) => eprintln!(
            "python seeds failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("python seeds not run (no python3: {e})"),
    }
}

/// The last `LAST_TURNS` turns of `history` appended one at a time to a `profile` compactor that has seen the
/// rest: each turn compacted and its projection set up.
fn last_turns(b: &mut criterion::Bencher<'_>, history: &Conversation, profile: &str) {
    let split = history.messages.len() - 2 * LAST_TURNS;
    b.iter_batched(
        || {
            let mut conv = history.clone();
            let tail = conv.messages.split_off(split);
            let mut c = compactor(profile);
            c.compact(&conv, None);
            (c, conv, tail)
        },
        |(mut c, mut conv, tail)| {
            let mut n = 0;
            for pair in tail.chunks(2) {
                conv.messages.extend_from_slice(pair);
                let report = c.compact(&conv, None);
                let projection = c.projection(&conv);
                n += report.new_blocks.len()
                    + std::hint::black_box(&projection)
                        .message(0)
                        .content
                        .blocks
                        .len();
            }
            (n, c, conv)
        },
        BatchSize::PerIteration,
    )
}

fn benches(c: &mut Criterion, history: &Conversation) {
    // throughput is measured on the history's size as JSON on the wire
    let bytes = serde_json::to_vec(&ctxfit_model::to_value(history))
        .unwrap()
        .len() as u64;
    let mut full = c.benchmark_group("compaction/full_1m");
    full.throughput(Throughput::Bytes(bytes));
    full.sample_size(10);
    for &profile in ctxfit_compactor::BUILT_IN_PROFILES {
        full.bench_function(profile, |b| {
            b.iter_batched(
                || compactor(profile),
                |mut c| c.compact(history, None).new_blocks.len(),
                BatchSize::PerIteration,
            )
        });
    }
    full.finish();

    // the last LAST_TURNS turns appended one by one to a compactor that has seen the rest
    let mut per_turn = c.benchmark_group("compaction/last_100_turns_of_1m");
    per_turn.throughput(Throughput::Elements(LAST_TURNS as u64));
    per_turn.sample_size(10);
    for profile in ["seed-000", "seed-002", "smart"] {
        per_turn.bench_function(profile, |b| last_turns(b, history, profile));
    }
    per_turn.finish();
}

/// A conversation of `n` reads of distinct files (`Read`, twenty lines each), each answered.
fn distinct_reads(n: usize) -> Conversation {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "read the tree"})];
    for i in 0..n {
        let id = format!("r{i}");
        let text: String = (1..=20)
            .map(|l| format!("{l:>6}\tfn item_{i}_{l}() -> usize {{ {l} }}\n"))
            .collect();
        messages.push(
            serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": id,
            "name": "Read", "input": {"file_path": format!("/src/mod_{i}/lib.rs")}}]}),
        );
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text}]}));
    }
    ctxfit_model::from_value(serde_json::json!({"model": "m", "messages": messages})).unwrap()
}

/// Per turn at the end of long sessions of reads of distinct files, which seed 004's rule keeps until the file is
/// read again: a turn costs what it appends, not the reads kept before it (2,000 and 20,000 reads alike).
fn waiting_reads(c: &mut Criterion) {
    let mut group = c.benchmark_group("compaction/last_100_turns_of_distinct_reads");
    group.throughput(Throughput::Elements(LAST_TURNS as u64));
    group.sample_size(10);
    for reads in [2_000, 20_000] {
        let history = distinct_reads(reads);
        for profile in ["seed-004", "smart"] {
            group.bench_function(format!("{profile}/{reads}"), |b| {
                last_turns(b, &history, profile)
            });
        }
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    waiting_reads(&mut criterion);
    let turns = corpus_turns();
    let history = generate_history(&turns, TOKENS, SEED);
    eprintln!(
        "history: {} messages, {} tokens (fast estimate), {:.1} MB of text",
        history.messages.len(),
        ctxfit_tokens::count_conversation(&ctxfit_tokens::FastEstimator, &history),
        text_bytes(&history) as f64 / 1e6
    );
    python_seeds(&history);
    benches(&mut criterion, &history);
    criterion.final_summary();
}
