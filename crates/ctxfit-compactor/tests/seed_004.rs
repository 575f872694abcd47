//! The `seed-004` profile is seed 004's strategy as its text states it, checked against expectations written from
//! that text: of a file's reads the first, the last and up to three sampled middle reads, the others
//! `[Re-read of PATH - see earlier read for content]`; edits always kept; shell output over 10,000 characters cut
//! to its first 2,000 and last 2,000 characters with a summary line; listings recent-only.

mod common;

use common::session;
use ctxfit_compactor::{Compactor, PolicyFile};
use serde_json::json;

fn seed_004() -> Compactor {
    let settings = PolicyFile::default()
        .resolve(Some("seed-004"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap()
}

fn read(path: &str, text: String) -> (&'static str, serde_json::Value, String) {
    ("Read", json!({ "file_path": path }), text)
}

fn shell_output(chars: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < chars {
        out.push_str(&format!("step {i:05}: compiled module_{i} in 12ms\n"));
        i += 1;
    }
    out.truncate(chars);
    out
}

#[test]
fn seed_004_keeps_what_its_text_says() {
    let mut calls = Vec::new();
    // seven reads of one file, each of its own text
    for k in 0..7 {
        calls.push(read("/src/a.rs", format!("fn a() {{ {k} }}\n").repeat(20)));
    }
    // two reads of one file with the same text: both kept (the seed does not compare texts)
    calls.push(read("/src/b.rs", "fn b() {}\n".repeat(20)));
    calls.push(read("/src/b.rs", "fn b() {}\n".repeat(20)));
    // three reads of a file edited between the second and third: the middle one is the seed's plain pointer
    calls.push(read("/src/c.rs", "fn c() { 1 }\n".repeat(20)));
    calls.push(read("/src/c.rs", "fn c() { 2 }\n".repeat(20)));
    calls.push((
        "Edit",
        json!({"file_path": "/src/c.rs", "old_string": "1", "new_string": "2"}),
        "The file /src/c.rs has been updated.\n".repeat(40),
    ));
    calls.push(read("/src/c.rs", "fn c() { 3 }\n".repeat(20)));
    // shell output over and under 10,000 characters
    calls.push((
        "Bash",
        json!({"command": "cargo build"}),
        shell_output(12_000),
    ));
    calls.push((
        "Bash",
        json!({"command": "cargo test"}),
        shell_output(9_000),
    ));
    // four listings of one tool: the last three stay
    for k in 0..4 {
        calls.push((
            "Glob",
            json!({ "pattern": format!("src/**/*{k}.rs") }),
            format!("src/x{k}.rs\n").repeat(30),
        ));
    }
    calls.push(("Bash", json!({"command": "git status"}), "clean".into()));
    let conv = session(&calls);
    // one pass over the whole history, as the seed's text describes it (a live agent's requests are decided one
    // by one: a middle read made a pointer when it was one of three stays one)
    let mut c = seed_004();
    c.compact(&conv, None);
    let sent: Vec<String> = c
        .project(&conv)
        .messages
        .iter()
        .flat_map(|m| m.tool_results().map(|r| r.content.joined_text()))
        .collect();
    let original: Vec<&String> = calls.iter().map(|(_, _, t)| t).collect();
    assert_eq!(sent.len(), original.len());
    let pointer = |path: &str| format!("[Re-read of {path} - see earlier read for content]");
    // /src/a.rs: first, last and three between kept; the other two are pointers
    let a: Vec<bool> = (0..7).map(|i| sent[i] == *original[i]).collect();
    assert!(a[0] && a[6], "{a:?}");
    assert_eq!(a.iter().filter(|k| **k).count(), 5, "{a:?}");
    for i in (0..7).filter(|&i| !a[i]) {
        assert_eq!(sent[i], pointer("/src/a.rs"));
    }
    // /src/b.rs: both whole
    assert_eq!((&sent[7], &sent[8]), (original[7], original[8]));
    // /src/c.rs: first and last whole, the middle a plain pointer; the edit whole
    assert_eq!(&sent[9], original[9]);
    assert_eq!(sent[10], pointer("/src/c.rs"));
    assert_eq!(&sent[11], original[11]);
    assert_eq!(&sent[12], original[12]);
    // the long shell output: its first and last 2,000 characters (to a line boundary nearby) and a summary line
    let long = &sent[13];
    assert!(long.len() < 4_500, "{}", long.len());
    assert!(original[13].starts_with(long.lines().next().unwrap()));
    assert!(long.contains("[truncated: 12,000 chars total"), "{long}");
    assert!(original[13].ends_with(long.lines().last().unwrap()));
    let head = long.split("... [truncated").next().unwrap();
    assert!((1_600..=2_000).contains(&head.len()), "{}", head.len());
    // the shorter one whole
    assert_eq!(&sent[14], original[14]);
    // listings: the oldest of four is a pointer, the last three whole
    assert!(
        sent[15].starts_with("[Old Glob result omitted"),
        "{}",
        sent[15]
    );
    assert_eq!(
        &sent[16..19],
        &original[16..19]
            .iter()
            .map(|s| (*s).clone())
            .collect::<Vec<_>>()[..]
    );
    // the newest result
    assert_eq!(&sent[19], original[19]);
}
