//! Old file reads left out at a request that finds the provider's cache expired (`cold_read_age`, 10 in
//! `smart`): only there, only reads, only old ones, as a pointer that says how to get the file back — and final.

mod common;

use common::{live_at, sent_text, session};
use ctxfit_compactor::{Action, Compactor, PolicyFile, Report, Settings};
use ctxfit_model::{Conversation, Value};
use serde_json::json;

/// A file read the excerpt rule keeps whole: distinct lines, no line numbers.
fn read(path: &str) -> (&'static str, Value, String) {
    let text = (0..120)
        .map(|i| format!("fn handler_{i}(request: &Request) -> Response {{ route_{i}(request) }}"))
        .collect::<Vec<_>>()
        .join("\n");
    ("Read", json!({ "file_path": path }), text)
}

fn edit(path: &str) -> (&'static str, Value, String) {
    (
        "Edit",
        json!({"file_path": path, "old_string": "route_1(request)", "new_string": "route_one(request)"}),
        (0..60)
            .map(|i| format!("The file {path} has been updated: line {i} of the snippet"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn status() -> (&'static str, Value, String) {
    ("Bash", json!({"command": "git status"}), "clean".to_owned())
}

/// A read, an edit, then `n` short calls: the read is message 2, the edit message 4.
fn conversation(n: usize) -> Conversation {
    let mut calls = vec![read("src/routes.rs"), edit("src/routes.rs")];
    calls.extend((0..n).map(|_| status()));
    session(&calls)
}

fn smart() -> Settings {
    PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap()
}

/// A live agent's requests, request `k` sent at `sent_at(k)` (milliseconds), and the compactor after them.
fn live(
    conv: &Conversation,
    settings: Settings,
    sent_at: impl Fn(usize) -> u64,
) -> (Vec<Report>, Compactor) {
    live_at(conv, settings, |k| Some(sent_at(k)))
}

/// Requests a second apart, with a pause of ten minutes (past the default five-minute cache) before request
/// `pause`, if any.
fn clock(pause: Option<usize>) -> impl Fn(usize) -> u64 {
    move |k| {
        let start = 1_700_000_000_000u64;
        start
            + k as u64 * 1_000
            + if pause.is_some_and(|p| k >= p) {
                600_000
            } else {
                0
            }
    }
}

#[test]
fn an_old_read_becomes_a_pointer_at_the_request_that_finds_the_cache_expired() {
    let conv = conversation(40);
    let (reports, c) = live(&conv, smart(), clock(Some(30)));
    // the read (message 2), 28 turns old at request 30, is cut there and nowhere before
    let cut: Vec<usize> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.new_blocks.iter().any(|b| b.message == 2))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(cut, vec![30], "{cut:?}");
    let block = reports[30]
        .new_blocks
        .iter()
        .find(|b| b.message == 2)
        .unwrap();
    assert_eq!(
        (block.rule.as_str(), block.action),
        ("cold-read", Action::Pointer)
    );
    assert!(reports[30].cache_expired);
    let text = sent_text(&c, &conv, 2);
    assert!(
        text.starts_with("[an old file read of 120 lines (~")
            && text.contains("left out when the provider's prompt cache had expired")
            && text.ends_with("read the file again to see it]"),
        "{text}"
    );
    // the edit is never touched
    assert_eq!(sent_text(&c, &conv, 4), edit("src/routes.rs").2);
}

#[test]
fn a_read_stays_while_the_cache_lives_or_while_it_is_young() {
    let conv = conversation(40);
    let whole = read("src/routes.rs").2;
    // no pause: the cache never expires, the read is never left out
    let (reports, c) = live(&conv, smart(), clock(None));
    assert!(reports
        .iter()
        .all(|r| r.new_blocks.iter().all(|b| b.rule != "cold-read")));
    assert_eq!(sent_text(&c, &conv, 2), whole);
    // a pause at request 6: the read is 4 turns old, under `smart`'s 10
    let (reports, c) = live(&conv, smart(), clock(Some(6)));
    assert!(reports[6].cache_expired);
    assert!(reports
        .iter()
        .all(|r| r.new_blocks.iter().all(|b| b.rule != "cold-read")));
    assert_eq!(sent_text(&c, &conv, 2), whole);
    // what the profile keeps whatever its rules say stays: the last results (`keep_last_tool_uses`)
    let mut kept = smart();
    kept.keep_last_tool_uses = 100;
    let (_, c) = live(&conv, kept, clock(Some(30)));
    assert_eq!(sent_text(&c, &conv, 2), whole);
    // `cold_read_age = 0` turns it off
    let mut off = smart();
    off.cold_read_age = 0;
    let (_, c) = live(&conv, off, clock(Some(30)));
    assert_eq!(sent_text(&c, &conv, 2), whole);
}

#[test]
fn a_history_compacted_already_is_not_cut_again() {
    let conv = conversation(40);
    let (_, c) = live(&conv, smart(), clock(Some(30)));
    let projected = c.project(&conv);
    let (reports, again) = live(&projected, smart(), clock(Some(30)));
    assert!(reports
        .iter()
        .all(|r| r.new_blocks.iter().all(|b| b.message != 2)));
    assert_eq!(sent_text(&again, &projected, 2), sent_text(&c, &conv, 2));
}

#[test]
fn the_setting_is_read_from_a_policy_file_and_refuses_a_negative_age() {
    let file = PolicyFile::parse(
        "[profiles.mine]\nextends = \"smart\"\ncold_read_age = 5\n",
        "test.toml",
    )
    .unwrap();
    let s = file.resolve(Some("mine"), None, &|_| None).unwrap();
    assert_eq!(s.cold_read_age, 5);
    assert_eq!(smart().cold_read_age, 10);
    let bad = PolicyFile::parse(
        "[profiles.mine]\nextends = \"smart\"\ncold_read_age = -1\n",
        "test.toml",
    )
    .unwrap();
    let err = bad.resolve(Some("mine"), None, &|_| None).unwrap_err();
    assert!(
        err.to_string()
            .contains("profiles.mine.cold_read_age: must be 0 or more"),
        "{err}"
    );
}

#[test]
fn a_read_that_alone_shows_lines_another_cut_left_out_as_shown_elsewhere_stays() {
    // the same text read from a second path: the second read's excerpt leaves its lines out as shown in the first
    let mut calls = vec![read("src/routes.rs"), read("src/routes_copy.rs")];
    calls.extend((0..40).map(|_| status()));
    let conv = session(&calls);
    let (reports, c) = live(&conv, smart(), clock(Some(30)));
    let second = sent_text(&c, &conv, 4);
    assert!(
        second.contains("shown elsewhere in this conversation")
            || second.contains("an old file read"),
        "{second}"
    );
    // the first read, old at the pause, is the only place those lines are shown: it stays whole
    assert_eq!(sent_text(&c, &conv, 2), read("src/routes.rs").2);
    assert!(reports.iter().all(|r| r
        .new_blocks
        .iter()
        .all(|b| !(b.message == 2 && b.rule == "cold-read"))));
}
