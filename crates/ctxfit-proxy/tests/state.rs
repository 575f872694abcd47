//! The state under `--state`: decisions made on usage the upstream reported survive a restart and an eviction
//! from memory, which replaying the history cannot give back; the store is bounded and has one owner.

use std::sync::Arc;
use std::time::Duration;

use ctxfit_compactor::{PolicyFile, Settings};
use ctxfit_import::import_file;
use ctxfit_model::{begins_response, Conversation, Value, WireFormat};
use ctxfit_proxy::state::{Store, StoreError, StoreLimits};
use ctxfit_proxy::{Api, Gateway};
use ctxfit_testkit::corpus_or_skip;
use ctxfit_testkit::corpus_trajectory_files;

/// Seed 000: compacts only when the previous request's input tokens exceed its budget (40,000).
fn budgeted() -> Settings {
    PolicyFile::default()
        .resolve(Some("seed-000"), None, &|_| None)
        .unwrap()
}

/// What the stand-in upstream reports for every request: over the budget, whatever the estimate says.
const REPORTED: usize = 60_000;

/// The bodies an Anthropic client sends: the history before each model response.
fn requests(conv: &Conversation) -> Vec<Vec<u8>> {
    let messages: Vec<Value> = conv
        .messages
        .iter()
        .map(|m| ctxfit_model::write_message(WireFormat::Anthropic, m))
        .collect();
    (1..=conv.messages.len())
        .filter(|&i| i == conv.messages.len() || begins_response(&conv.messages, i))
        .map(|i| {
            serde_json::to_vec(&serde_json::json!({
                "model": "stand-in", "system": "You are a test agent.", "max_tokens": 1024,
                "messages": messages[..i],
            }))
            .unwrap()
        })
        .collect()
}

/// Send `bodies` through `g`, the upstream reporting [`REPORTED`] input tokens after each; the bodies forwarded.
fn live(g: &mut Gateway, bodies: &[Vec<u8>]) -> Vec<Vec<u8>> {
    bodies
        .iter()
        .map(|b| {
            let out = g.forward(Api::AnthropicMessages, b, None).unwrap();
            g.report_usage(&out.conversation, REPORTED);
            out.body
        })
        .collect()
}

fn open(dir: &std::path::Path) -> Arc<Store> {
    Arc::new(Store::open(dir, StoreLimits::default()).unwrap())
}

fn with_store(store: &Arc<Store>) -> Gateway {
    let mut g = Gateway::new(budgeted()).unwrap();
    g.set_store(Arc::clone(store));
    g
}

/// What a proxy that never saw the conversation sends for its last request: the history replayed on estimates.
fn replay_last(bodies: &[Vec<u8>]) -> Vec<u8> {
    Gateway::new(budgeted())
        .unwrap()
        .forward(Api::AnthropicMessages, bodies.last().unwrap(), None)
        .unwrap()
        .body
}

/// A Claude Code session of the corpus whose estimate stays under the budget: only the reported usage makes
/// seed 000 compact it, so a replay of its history cannot know what was sent. Its bodies, and what a proxy that
/// never stopped forwards for each.
fn session_compacted_on_reported_usage(corpus: &std::path::Path) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut sessions = Vec::new();
    for path in corpus_trajectory_files(corpus) {
        if path.to_string_lossy().contains("claude-code") {
            sessions.extend(import_file(&path, None).unwrap());
        }
    }
    sessions.sort_by_key(|s| std::cmp::Reverse(s.conversation.messages.len()));
    for s in sessions {
        if s.conversation.format != WireFormat::Anthropic {
            continue;
        }
        let bodies = requests(&s.conversation);
        if bodies.len() < 6 {
            continue;
        }
        let sent = live(&mut Gateway::new(budgeted()).unwrap(), &bodies);
        if replay_last(&bodies) != *sent.last().unwrap() {
            return (bodies, sent);
        }
    }
    panic!("no Claude Code session of the corpus is compacted on reported usage only");
}

#[test]
fn a_restart_keeps_the_decisions_made_on_reported_usage() {
    let corpus = corpus_or_skip!();
    let (bodies, sent) = session_compacted_on_reported_usage(&corpus);
    let dir = tempfile::tempdir().unwrap();
    let k = bodies.len() / 2;

    // the first half through a proxy with a state; then it stops
    let store = open(dir.path());
    let mut g = with_store(&store);
    assert_eq!(live(&mut g, &bodies[..k]), sent[..k]);
    drop(g);
    store.flush();
    drop(store);

    // a restarted one takes the conversation back from the state and sends what a proxy that never stopped sent
    let store = open(dir.path());
    assert_eq!(store.conversations(), 1);
    let mut g = with_store(&store);
    let first = g.forward(Api::AnthropicMessages, &bodies[k], None).unwrap();
    assert!(first.continued, "taken back from the state");
    assert_eq!(
        first.body, sent[k],
        "request {k}, the first after the restart"
    );
    g.report_usage(&first.conversation, REPORTED);
    assert_eq!(live(&mut g, &bodies[k + 1..]), sent[k + 1..]);

    // without the state, a restarted proxy could only replay the history, and would send other bytes
    assert_ne!(replay_last(&bodies), *sent.last().unwrap());
}

#[test]
fn a_conversation_forgotten_in_memory_comes_back_from_the_state() {
    let corpus = corpus_or_skip!();
    let (bodies, sent) = session_compacted_on_reported_usage(&corpus);
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut g = with_store(&store);
    g.max_conversations = 1;
    let k = bodies.len() / 2;
    let first = g.forward(Api::AnthropicMessages, &bodies[0], None).unwrap();
    g.report_usage(&first.conversation, REPORTED);
    live(&mut g, &bodies[1..k]);
    // another conversation pushes it out of memory
    let other = br#"{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"another"}]}"#;
    g.forward(Api::AnthropicMessages, other, None).unwrap();
    assert_eq!(g.conversations(), 1);
    let back = g.forward(Api::AnthropicMessages, &bodies[k], None).unwrap();
    assert!(back.continued);
    assert_eq!(back.conversation, first.conversation, "under its own id");
    assert_eq!(back.body, sent[k]);
}

#[test]
fn a_named_session_comes_back_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let body = |more: &str| {
        format!(r#"{{"model":"m","messages":[{{"role":"user","content":"hello"}}{more}]}}"#)
            .into_bytes()
    };
    let store = open(dir.path());
    let g = with_store(&store);
    let a = g
        .forward(Api::OpenAiChat, &body(""), Some("my-session"))
        .unwrap();
    assert_eq!(a.conversation, "my-session");
    drop(g);
    drop(store);
    let store = open(dir.path());
    let g = with_store(&store);
    let more = r#",{"role":"assistant","content":"ok"},{"role":"user","content":"next"}"#;
    let b = g
        .forward(Api::OpenAiChat, &body(more), Some("my-session"))
        .unwrap();
    assert!(b.continued);
    assert_eq!(b.conversation, "my-session");
    // a history that is not the stored one's continuation starts over under the name
    let other = br#"{"model":"m","messages":[{"role":"user","content":"rewritten"}]}"#;
    drop(g);
    let g = with_store(&store);
    assert!(
        !g.forward(Api::OpenAiChat, other, Some("my-session"))
            .unwrap()
            .continued
    );
}

fn conversations(g: &mut Gateway, n: usize) {
    for i in 0..n {
        let body =
            format!(r#"{{"model":"m","messages":[{{"role":"user","content":"question {i}"}}]}}"#);
        g.forward(Api::OpenAiChat, body.as_bytes(), None).unwrap();
    }
}

#[test]
fn the_state_keeps_the_most_recently_used_conversations_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    conversations(&mut with_store(&store), 5);
    store.flush();
    assert_eq!(store.conversations(), 5);
    drop(store);
    let limits = StoreLimits {
        max_conversations: 3,
        ttl: None,
    };
    let store = Arc::new(Store::open(dir.path(), limits).unwrap());
    assert_eq!(store.conversations(), 3);
    // the two oldest are gone, the newest are there
    let g = with_store(&store);
    let body = |i: usize| {
        format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"question {i}"}},{{"role":"assistant","content":"ok"}},{{"role":"user","content":"more"}}]}}"#
        )
    };
    assert!(
        !g.forward(Api::OpenAiChat, body(0).as_bytes(), None)
            .unwrap()
            .continued
    );
    assert!(
        g.forward(Api::OpenAiChat, body(4).as_bytes(), None)
            .unwrap()
            .continued
    );
}

#[test]
fn conversations_unused_longer_than_the_time_to_live_leave_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    conversations(&mut with_store(&store), 2);
    store.flush();
    assert_eq!(store.conversations(), 2, "both were saved");
    drop(store);
    std::thread::sleep(Duration::from_millis(30));
    // younger than a time to live of an hour: kept
    let limits = |ttl| StoreLimits {
        max_conversations: 100,
        ttl: Some(ttl),
    };
    let kept = Store::open(dir.path(), limits(Duration::from_secs(3600))).unwrap();
    assert_eq!(kept.conversations(), 2);
    drop(kept);
    // older than one of 10 ms: gone
    assert_eq!(
        Store::open(dir.path(), limits(Duration::from_millis(10)))
            .unwrap()
            .conversations(),
        0
    );
}

#[test]
fn one_state_directory_has_one_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path());
    let second = Store::open(dir.path(), StoreLimits::default());
    assert!(
        matches!(second, Err(StoreError::InUse { .. })),
        "{:?}",
        second.err()
    );
    let message = Store::open(dir.path(), StoreLimits::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        message.contains("one proxy per state directory"),
        "{message}"
    );
}

#[test]
fn a_state_path_that_is_a_file_is_named_as_not_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state");
    std::fs::write(&file, "not a folder").unwrap();
    let err = Store::open(&file, StoreLimits::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("not a folder"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

#[test]
fn a_damaged_state_file_is_refused_with_a_clear_error_not_a_crash() {
    for damage in ["cut in half", "grown with zeros", "garbage"] {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let g = with_store(&store);
            let body = serde_json::to_vec(&serde_json::json!({"model": "m", "max_tokens": 8,
                "messages": [{"role": "user", "content": "hello ".repeat(2000)}]}))
            .unwrap();
            g.forward(Api::AnthropicMessages, &body, None).unwrap();
            store.flush();
        }
        let path = dir.path().join(ctxfit_proxy::state::FILE_NAME);
        let bytes = std::fs::read(&path).unwrap();
        let damaged = match damage {
            "cut in half" => bytes[..bytes.len() / 2].to_vec(),
            "grown with zeros" => [bytes.clone(), vec![0; 20_000_000]].concat(),
            _ => bytes.iter().map(|b| b ^ 0x5a).collect(),
        };
        std::fs::write(&path, damaged).unwrap();
        let opened = std::panic::catch_unwind(|| Store::open(dir.path(), StoreLimits::default()));
        let Ok(result) = opened else {
            panic!("{damage}: opening a damaged state file panicked");
        };
        let message = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains(&path.display().to_string()) && message.contains("damaged")
                || message.contains("I/O error"),
            "{damage}: {message}"
        );
    }
}

#[cfg(unix)]
#[test]
fn the_state_is_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _store = open(&state);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join(ctxfit_proxy::state::FILE_NAME)), 0o600);
}

/// The window a provider's refusal taught a conversation holds its later requests, and is kept in the state: a
/// restarted proxy holds it too, and sends the bytes one that never stopped sends.
#[test]
fn a_restart_keeps_the_window_a_refusal_taught() {
    let corpus = corpus_or_skip!();
    // a Claude Code session long enough to have stale results to cut: the smallest file of a project's over
    // 100 kB, its longest session
    let mut files: Vec<(u64, std::path::PathBuf)> =
        std::fs::read_dir(corpus.join("sessions/claude-code-attio"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl.gz"))
            .map(|e| (e.metadata().unwrap().len(), e.path()))
            .filter(|(size, _)| *size > 100_000)
            .collect();
    files.sort();
    let s = (import_file(&files[0].1, None).unwrap().into_iter())
        .max_by_key(|s| s.conversation.messages.len())
        .unwrap();
    let bodies = requests(&s.conversation);
    let smart = || {
        PolicyFile::default()
            .resolve(None, None, &|_| None)
            .unwrap()
    };
    let k = bodies.len() / 2;
    // the provider refuses request k as a fifth over its window
    let refusal = ctxfit_proxy::window::Overflow {
        counted: Some((120_000, 100_000)),
    };
    let forward = |g: &Gateway, b: &[u8]| g.forward(Api::AnthropicMessages, b, None).unwrap();

    // a proxy that never stops
    let never = Gateway::new(smart()).unwrap();
    let mut refused = None;
    for b in &bodies[..=k] {
        refused = Some(forward(&never, b));
    }
    let refused = refused.unwrap();
    let budget = never
        .learn_window(
            &refused.conversation,
            &refusal,
            Api::AnthropicMessages,
            &bodies[k],
        )
        .unwrap();
    assert_eq!(budget, refused.report.tokens_after * 5 / 6);
    // what it teaches, it teaches once: the same refusal again says nothing new
    let sent: Vec<_> = bodies[k..].iter().map(|b| forward(&never, b)).collect();
    assert!(never
        .learn_window(
            &refused.conversation,
            &refusal,
            Api::AnthropicMessages,
            &bodies[k]
        )
        .is_none_or(|b| b < budget));
    // every later request within the window (the session's edits and newest results fit in it)
    for (i, f) in sent.iter().enumerate() {
        assert!(
            f.report.tokens_after <= budget,
            "request {}: {} > {budget}",
            k + i,
            f.report.tokens_after
        );
    }
    assert!(sent[0].report.tokens_after < refused.report.tokens_after);

    // one that stops after the request sent again, and is restarted with its state
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut g = Gateway::new(smart()).unwrap();
    g.set_store(Arc::clone(&store));
    let mut first = None;
    for b in &bodies[..=k] {
        first = Some(forward(&g, b));
    }
    let id = first.unwrap().conversation;
    assert_eq!(
        g.learn_window(&id, &refusal, Api::AnthropicMessages, &bodies[k]),
        Some(budget)
    );
    assert_eq!(forward(&g, &bodies[k]).body, sent[0].body);
    drop(g);
    store.flush();
    drop(store);
    let store = open(dir.path());
    let mut g = Gateway::new(smart()).unwrap();
    g.set_store(Arc::clone(&store));
    for (i, b) in bodies[k + 1..].iter().enumerate() {
        let f = forward(&g, b);
        assert!(f.continued);
        assert_eq!(
            f.body,
            sent[i + 1].body,
            "request {} after the restart",
            k + 1 + i
        );
    }
}
