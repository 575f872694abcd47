//! The `ctxfit` binary end to end: outputs, exit codes, and that bad input loses nothing.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn ctxfit(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxfit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxfit-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn corpus() -> PathBuf {
    ctxfit_import::corpus_dir()
        .expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)")
}

#[test]
fn stats_of_the_sample() {
    let o = ctxfit(&["stats", "--sample", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["format"], "claude-code");
    assert_eq!(v["messages"], 20);
    assert_eq!(v["tool_calls"], 24);
    assert_eq!(v["tool_results"], 24);
    assert_eq!(v["tools"]["Read"]["results"], 12);
    assert_eq!(v["tools"]["Bash"]["results"], 12);
    assert_eq!(v["largest_tool_results"].as_array().unwrap().len(), 5);
    let text = ctxfit(&["stats", "--sample"], None);
    assert!(
        stdout(&text).contains("tool results  24\n"),
        "{}",
        stdout(&text)
    );
}

#[test]
fn tokens_of_text() {
    let check = |args: &[&str], input: &str, expected: &str| {
        let o = ctxfit(args, Some(input.as_bytes()));
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), expected, "{args:?}");
    };
    check(&["tokens", "--estimator", "chars4", "-"], "abcdefgh", "2\n");
    check(
        &["tokens", "--estimator", "chars4", "-"],
        "日本語のテキスト",
        "2\n",
    );
    check(
        &["tokens", "--estimator", "o200k", "-"],
        "hello world",
        "2\n",
    );
    check(
        &["tokens", "--estimator", "cl100k", "-"],
        "hello world",
        "2\n",
    );
    let o = ctxfit(&["tokens", "--json", "-"], Some(b"hello world"));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["estimator"].as_str(), v["characters"].as_u64()),
        (Some("fast"), Some(11))
    );
}

#[test]
fn tokens_of_a_conversation() {
    let o = ctxfit(
        &["tokens", "--conversation", "--json", "-"],
        Some(br#"[{"role":"user","content":"hello world"}]"#),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sessions"][0]["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn convert_there_and_back_keeps_every_tool_call() {
    let dir = temp_dir("convert");
    let openai = dir.join("sample.openai.json");
    let anthropic = dir.join("sample.anthropic.json");
    let o = ctxfit(
        &[
            "convert",
            "--sample",
            "--to",
            "openai",
            "-o",
            openai.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("12 tool_result is_error flag"),
        "{}",
        stderr(&o)
    );
    let o = ctxfit(
        &[
            "convert",
            openai.to_str().unwrap(),
            "--to",
            "anthropic",
            "-o",
            anthropic.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for file in [&openai, &anthropic] {
        let o = ctxfit(&["stats", "--json", file.to_str().unwrap()], None);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(
            (v["tool_calls"].as_u64(), v["tool_results"].as_u64()),
            (Some(24), Some(24)),
            "{}",
            file.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_names_the_place_exits_2_and_overwrites_nothing() {
    let dir = temp_dir("bad");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "[{\"role\":\"user\",\n \"content\": \"x\",,}]").unwrap();
    let out = dir.join("out.json");
    std::fs::write(&out, "precious").unwrap();
    let o = ctxfit(
        &[
            "convert",
            bad.to_str().unwrap(),
            "--to",
            "openai",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.json:2:17: malformed JSON: key must be a string"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");

    let o = ctxfit(&["stats", dir.join("missing.json").to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing.json: cannot read"),
        "{}",
        stderr(&o)
    );

    let o = ctxfit(&["tokens", "-"], Some(b"ok\xff"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not UTF-8 text (invalid byte at offset 2)"),
        "{}",
        stderr(&o)
    );

    let o = ctxfit(&["stats", "-"], Some(br#"{"hello": "world"}"#));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a recognised session format"),
        "{}",
        stderr(&o)
    );

    let o = ctxfit(&["tokens", "--estimator", "gpt2", "-"], Some(b"x"));
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_corpus_file_gets_stats_and_converts() {
    for path in ctxfit_import::corpus_trajectory_files(&corpus()) {
        let p = path.to_str().unwrap();
        let o = ctxfit(&["stats", p], None);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let o = ctxfit(&["convert", p, "--to", "anthropic", "--compact"], None);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        assert!(
            serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok(),
            "{p}"
        );
    }
}
