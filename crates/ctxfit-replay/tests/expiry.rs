//! The prompt cache expires: a request sent more than its lifetime after the one before is written whole, under
//! every policy, and the compactor — told the same times — makes its waiting cuts there.

use ctxfit_replay::{replay_timed, Policy, Prices, SessionReplay, Timing};
use ctxfit_tokens::{FastEstimator, TokenEstimator};
use serde_json::json;

fn fast() -> Box<dyn TokenEstimator> {
    Box::new(FastEstimator)
}

/// A numbered read (a small cut under `smart`: its number column), then `n` short shell calls; and the time of
/// each message: one second apart, but six minutes of silence before the request after the fifth result.
fn session(n: usize) -> (ctxfit_model::Conversation, Vec<Option<u64>>) {
    let read = (1..=400)
        .map(|i| format!("{i:>6}→    let value_{i} = compute(input, {i});"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    for i in 0..=n {
        let id = format!("toolu_{i:02}");
        let (name, input, result) = if i == 0 {
            ("Read", json!({"file_path": "src/lib.rs"}), read.clone())
        } else {
            ("Bash", json!({"command": "git status"}), "clean".to_owned())
        };
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result}]}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    let conv = ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap();
    let mut now = 1_700_000_000_000u64;
    let times = (0..conv.messages.len())
        .map(|mi| {
            now += if mi == 10 { 6 * 60_000 } else { 1_000 };
            Some(now)
        })
        .collect();
    (conv, times)
}

fn run(policy: &str, ttl: u64) -> SessionReplay {
    run_stated(policy, ttl, None)
}

fn run_stated(policy: &str, ttl: u64, stated_ttl: Option<u64>) -> SessionReplay {
    let (conv, times) = session(8);
    let registry = ctxfit_plugins::registry().unwrap();
    let policy = Policy::named(policy).unwrap();
    let timing = Timing {
        times: &times,
        cache_ttl: ttl,
        stated_ttl,
        billed: &[],
    };
    replay_timed(
        "s",
        &conv,
        timing,
        &policy,
        &registry,
        &fast,
        Prices::default(),
    )
    .unwrap()
}

#[test]
fn a_request_after_the_cache_expired_is_written_whole_under_every_policy() {
    for policy in ["none", "smart", "seed-002"] {
        let r = run(policy, 300);
        // the request for the response at message 11 follows the six-minute silence (after message 10)
        let expired: Vec<usize> = r
            .turns
            .iter()
            .filter(|t| t.cache_expired)
            .map(|t| t.message)
            .collect();
        assert_eq!(expired, vec![11], "{policy}");
        let t = r.turns.iter().find(|t| t.message == 11).unwrap();
        assert_eq!(
            (t.cache_read_tokens, t.cache_write_tokens),
            (0, t.input_tokens),
            "{policy}"
        );
        // an hour's cache (or one that never expires) is still warm after six minutes
        for ttl in [3600, 0] {
            assert!(
                run(policy, ttl).turns.iter().all(|t| !t.cache_expired),
                "{policy}"
            );
        }
    }
}

#[test]
fn the_compactor_makes_its_waiting_cut_where_the_cache_expired() {
    let none = run("none", 300);
    let smart = run("smart", 300);
    // the read's number column goes at the first request on a cold cache, and not before
    for (s, n) in smart.turns.iter().zip(&none.turns) {
        if s.message < 11 {
            assert_eq!(s.input_tokens, n.input_tokens, "message {}", s.message);
        } else {
            assert!(s.input_tokens < n.input_tokens, "message {}", s.message);
        }
    }
    assert!(smart.cost() < none.cost());
}

#[test]
fn a_session_that_asked_for_an_hour_of_cache_keeps_it_through_the_pause() {
    // Claude Code's usage shows one-hour cache writes: the provider kept the cache through six minutes, and the
    // compactor, which knows the cache its agent asks for, keeps the cut waiting
    for policy in ["none", "smart"] {
        let r = run_stated(policy, 300, Some(3600));
        assert!(r.turns.iter().all(|t| !t.cache_expired), "{policy}");
    }
    let none = run_stated("none", 300, Some(3600));
    let smart = run_stated("smart", 300, Some(3600));
    assert_eq!(smart.input_tokens(), none.input_tokens());
    // and a session that says five minutes expires after six, whatever the default
    let r = run_stated("none", 3600, Some(300));
    assert_eq!(r.turns.iter().filter(|t| t.cache_expired).count(), 1);
}
