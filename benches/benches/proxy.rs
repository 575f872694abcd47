//! The proxy's per-request work before compaction, on a request as Claude Code sends it (~200k tokens, every
//! message's content a list of blocks, the `cache_control` breakpoint on the newest): parsing the body into its
//! messages (in full, and split by its structure alone as the gateway takes it), and the conversation's identity
//! (a SHA-256 chain over every message with the markers left out; alone, and with the conversation's previous
//! request known, as the gateway keeps it) — beside one SHA-256 pass over the whole body, and the inflating of
//! the body compressed with zstd (as Codex CLI signed in with ChatGPT sends it), in the same run.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxfit_benches::history::{corpus_turns, generate_history};
use std::sync::Arc;

use ctxfit_proxy::identity::{Chain, Known};
use ctxfit_proxy::{Api, RequestBody};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The body of a request of `history` (Anthropic messages) in Claude Code's form.
fn claude_code_body(history: &Value) -> Vec<u8> {
    let mut messages: Vec<Value> = history
        .as_array()
        .expect("a message list")
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(text) = m["content"].as_str() {
                m["content"] = json!([{"type": "text", "text": text}]);
            }
            m
        })
        .collect();
    if let Some(last) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    serde_json::to_vec(&json!({"model": "m", "max_tokens": 16, "stream": true,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": messages}))
    .expect("JSON")
}

fn benches(c: &mut Criterion) {
    let history = generate_history(&corpus_turns(), 200_000, 7);
    let body = claude_code_body(&ctxfit_model::to_value(&history)["messages"]);
    let mut group = c.benchmark_group("proxy_request_200k");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("parse", |b| {
        b.iter(|| {
            RequestBody::parse(Api::AnthropicMessages, &body)
                .unwrap()
                .messages
                .len()
        })
    });
    // what telling a Responses body's kind once cost: the whole body parsed into values
    group.bench_function("parse_to_values", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&body).unwrap().is_object())
    });
    group.bench_function("split", |b| {
        b.iter(|| {
            RequestBody::split(Api::AnthropicMessages, &body)
                .unwrap()
                .messages
                .len()
        })
    });
    let parsed = RequestBody::parse(Api::AnthropicMessages, &body).unwrap();
    group.bench_function("identity_chain", |b| {
        b.iter(|| Chain::of(Api::AnthropicMessages, &parsed).hashes.len())
    });
    // the conversation's previous request known (two messages fewer, the breakpoint one message earlier), as
    // the gateway keeps it: what the request repeats byte for byte is compared, not hashed
    let previous = claude_code_body(&Value::Array(
        ctxfit_model::to_value(&history)["messages"]
            .as_array()
            .expect("a message list")
            .iter()
            .take(parsed.messages.len() - 2)
            .cloned()
            .collect(),
    ));
    let previous = ctxfit_proxy::Bytes::from(previous);
    let earlier = RequestBody::split(Api::AnthropicMessages, &previous).unwrap();
    let chain = Chain::of(Api::AnthropicMessages, &earlier);
    let known = Arc::new(Known::of(
        &previous,
        &earlier,
        chain.start,
        &chain.hashes,
        &chain.marked,
    ));
    group.bench_function("identity_chain_known", |b| {
        b.iter(|| {
            Chain::of_known(Api::AnthropicMessages, &parsed, |_| {
                Some(Arc::clone(&known))
            })
            .hashes
            .len()
        })
    });
    // a body the client compressed (Codex CLI signed in with ChatGPT: zstd) is inflated before it is split
    let packed =
        ruzstd::encoding::compress_to_vec(&body[..], ruzstd::encoding::CompressionLevel::Fastest);
    group.bench_function("inflate_zstd", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(body.len());
            let mut frame = ruzstd::decoding::StreamingDecoder::new(&packed[..]).unwrap();
            std::io::Read::read_to_end(&mut frame, &mut out).unwrap();
            out.len()
        })
    });
    group.bench_function("sha256_of_the_body", |b| {
        b.iter(|| Sha256::digest(&body)[0])
    });
    group.finish();
}

criterion_group!(proxy, benches);
criterion_main!(proxy);
