//! The `ctxfit` binary end to end: outputs, exit codes, and that bad input loses nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
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
        // the program may exit before reading its input (bad arguments): a closed pipe is fine
        let _ = child.stdin.take().unwrap().write_all(input);
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
    ctxfit_testkit::corpus_dir()
        .expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)")
}

#[test]
fn stats_of_the_sample() {
    let o = ctxfit(&["stats", "--sample", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["format"], "claude-code");
    assert_eq!(v["messages"], 108);
    assert_eq!(v["tool_calls"], 48);
    assert_eq!(v["tool_results"], 48);
    assert_eq!(v["tools"]["Read"]["results"], 16);
    assert_eq!(v["tools"]["Grep"]["results"], 12);
    assert_eq!(v["tools"]["Bash"]["results"], 9);
    assert_eq!(v["largest_tool_results"].as_array().unwrap().len(), 5);
    let text = ctxfit(&["stats", "--sample"], None);
    assert!(
        stdout(&text).contains("tool results  48\n"),
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
    let responses = dir.join("sample.responses.json");
    let convert = |input: &str, to: &str, out: &Path| {
        let o = ctxfit(
            &["convert", input, "--to", to, "-o", out.to_str().unwrap()],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let notes = convert("--sample", "openai", &openai);
    assert!(notes.contains("11 tool_result is_error flag"), "{notes}");
    convert(openai.to_str().unwrap(), "anthropic", &anthropic);
    // and through the Responses format: every call and result its own item
    convert(anthropic.to_str().unwrap(), "responses", &responses);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&responses).unwrap()).unwrap();
    let items = doc["input"].as_array().unwrap();
    let calls = items
        .iter()
        .filter(|i| i["type"] == "function_call")
        .count();
    assert_eq!(calls, 48);
    for file in [&openai, &anthropic, &responses] {
        let o = ctxfit(&["stats", "--json", file.to_str().unwrap()], None);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(
            (v["tool_calls"].as_u64(), v["tool_results"].as_u64()),
            (Some(48), Some(48)),
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
        stderr(&o).contains("<stdin>:1:3: not UTF-8 text (byte 0xff at offset 2)"),
        "{}",
        stderr(&o)
    );
    // the line and column of a bad byte, counted in characters as for malformed JSON
    let o = ctxfit(
        &["stats", "-"],
        Some(b"[{\"role\": \"user\",\n \"content\": \"caf\xc3\xa9 \xff\"}]"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("<stdin>:2:19: not UTF-8 text (byte 0xff at offset 37)"),
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

    // an empty input (a failed pipe) is refused, and the output file is left as it was
    for args in [
        vec!["compact", "-", "-o", out.to_str().unwrap()],
        vec![
            "convert",
            "-",
            "--to",
            "openai",
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["stats", "-"],
    ] {
        let o = ctxfit(&args, Some(b" \n"));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("<stdin>: empty: no conversation to read"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");
    // a text to count may be empty
    let o = ctxfit(&["tokens", "-"], Some(b""));
    assert!(o.status.success(), "{}", stderr(&o));

    let o = ctxfit(&["tokens", "--estimator", "gpt2", "-"], Some(b"x"));
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_corpus_file_gets_stats_and_converts() {
    ctxfit_testkit::skip_without_corpus!();
    for path in ctxfit_testkit::corpus_trajectory_files(&corpus()) {
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

#[test]
fn compact_the_sample_with_a_report() {
    let o = ctxfit(
        &[
            "compact",
            "--sample",
            "--profile",
            "seed-000",
            "--budget",
            "10000",
            "--report",
            "json",
            "--compact",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let note = err.lines().next().unwrap();
    assert!(
        note.starts_with("Note: Compacted 37 old tool result(s) — input tokens ("),
        "{err}"
    );
    assert!(note.ends_with(") exceeded budget (10,000)"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&err[note.len()..]).unwrap();
    let r = &report[0]["report"];
    // as a live agent would have: each request over the budget compacted what was stale then
    assert_eq!(r["new_blocks"].as_array().unwrap().len(), 37);
    assert_eq!(r["first_changed_message"], 4);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    // the output is the compacted conversation in the session's wire format (Anthropic)
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = out["messages"][4]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        text.ends_with("\n[truncated for context management]"),
        "{text}"
    );
    assert_eq!(
        text.chars().count(),
        500 + "\n[truncated for context management]".chars().count()
    );
}

#[test]
fn compact_says_which_cuts_wait_for_the_payback_rule_and_how_to_make_them_now() {
    let dir = temp_dir("payback");
    let file = dir.join("conv.json");
    let read: Vec<String> = (1..=300)
        .map(|i| format!("{i:>6}\u{2192}    let value_{i} = compute(input, {i});"))
        .collect();
    let conv = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "src/lib.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": read.join("\n")}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "git status"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "clean"}]},
        {"role": "assistant", "content": "Done."}
    ]});
    std::fs::write(&file, conv.to_string()).unwrap();
    let path = file.to_str().unwrap();
    // smart: dropping the read's number column is a small cut, which three requests do not pay back
    let o = ctxfit(
        &["compact", path, "--profile", "smart", "--report", "text"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("held back: 1 cut(s) reclaiming")
            && err.contains("would not pay back the cache write yet: they wait (cache_write_premium = 0 in a policy file makes every cut at once)"),
        "{err}"
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap(),
        conv
    );
    // smart is the profile when none is named, as in the proxy and the Python package
    let o = ctxfit(&["compact", path, "--report", "text"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("held back: 1 cut(s)"), "{}", stderr(&o));
    let o = ctxfit(&["policy", "show"], None);
    assert!(
        stdout(&o).starts_with("# effective profile `smart`"),
        "{}",
        stdout(&o)
    );
    // as the message says
    let policy = dir.join("eager.toml");
    std::fs::write(
        &policy,
        "default_profile = \"eager\"\n[profiles.eager]\nextends = \"smart\"\ncache_write_premium = 0\n",
    )
    .unwrap();
    let o = ctxfit(
        &["compact", path, "--policy", policy.to_str().unwrap()],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = out["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("[lines 1–300; numbers dropped, count from 1]\n"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compact_in_place_rewrites_only_plain_json() {
    let dir = temp_dir("inplace");
    let file = dir.join("conv.json");
    let long = "x".repeat(2000);
    let conv = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "get_orderbook", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": long, "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "ok"}
    ]});
    std::fs::write(&file, serde_json::to_string(&conv).unwrap()).unwrap();
    let o = ctxfit(
        &[
            "compact",
            file.to_str().unwrap(),
            "--profile",
            "seed-002",
            "--in-place",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let result = &after["messages"][2]["content"][0];
    assert_eq!(
        result["content"].as_str().unwrap().chars().count(),
        400 + "\n...[truncated, already processed]".len()
    );
    assert_eq!(
        result["cache_control"]["type"], "ephemeral",
        "unknown fields survive"
    );
    assert_eq!(after["model"], "m");

    // a byte-order mark is read past, and numbers keep every digit (also beyond 64 bits) and their spelling
    let text = format!(
        "\u{feff}{{\"model\": \"m\", \"seed\": 18446744073709551616, \"trace\": 123456789012345678901234567890, \"t\": [1E+2, 2e3], \"messages\": {}}}",
        conv["messages"]
    );
    std::fs::write(&file, text).unwrap();
    let o = ctxfit(&["compact", file.to_str().unwrap(), "--in-place"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains("18446744073709551616"), "{after}");
    assert!(after.contains("123456789012345678901234567890"), "{after}");
    assert!(after.contains("1E+2") && after.contains("2e3"), "{after}");

    let o = ctxfit(&["compact", "--sample", "--in-place"], None);
    assert_eq!(o.status.code(), Some(2));
    let jsonl = dir.join("s.jsonl");
    std::fs::write(&jsonl, super_sample()).unwrap();
    let o = ctxfit(&["compact", jsonl.to_str().unwrap(), "--in-place"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "--in-place only rewrites plain Anthropic, OpenAI Chat or OpenAI Responses JSON (this is claude-code)"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&jsonl).unwrap(),
        super_sample(),
        "the file is untouched"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn super_sample() -> String {
    "{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n"
        .to_owned()
}

#[test]
fn policy_show_and_policy_errors() {
    let o = ctxfit(&["policy", "show", "--profile", "seed-002"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("[profiles.seed-002]") && out.contains("trigger = \"always\""),
        "{out}"
    );
    assert!(out.contains("#   tiered "), "{out}");
    let dir = temp_dir("policy");
    let policy = dir.join("p.toml");
    std::fs::write(
        &policy,
        "[profiles.x]\nextends = \"seed-000\"\nbudget = -1\n",
    )
    .unwrap();
    let o = ctxfit(
        &[
            "policy",
            "show",
            "--policy",
            policy.to_str().unwrap(),
            "--profile",
            "x",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("profiles.x.budget: must be 0 or more, got -1"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        &policy,
        "[profiles.x]\nextends = \"seed-000\"\nbudget = 5\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ctxfit"))
        .args([
            "policy",
            "show",
            "--policy",
            policy.to_str().unwrap(),
            "--profile",
            "x",
        ])
        .env("CTXFIT_BUDGET", "777")
        .output()
        .unwrap();
    assert!(stdout(&o).contains("budget = 777"), "{}", stdout(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn changelog_and_file_state_of_real_sessions() {
    ctxfit_testkit::skip_without_corpus!();
    let traj = corpus().join("trajectories/swe-agent/marshmallow-1867.traj");
    let o = ctxfit(&["changelog", traj.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("reproduce.py\n"), "{out}");
    assert!(out.contains("src/marshmallow/fields.py\n"), "{out}");
    assert!(out.contains("append 9 line(s)"), "{out}");

    let o = ctxfit(
        &[
            "file-state",
            traj.to_str().unwrap(),
            "--path",
            "reproduce.py",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("from marshmallow.fields import TimeDelta\n"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o)
        .contains("written by create at message 2; insert at message 4: append 9 line(s)"));

    let o = ctxfit(
        &[
            "file-state",
            traj.to_str().unwrap(),
            "--path",
            "reproduce.py",
            "--turn",
            "0",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("reproduce.py: unknown — no full read or write"),
        "{}",
        stderr(&o)
    );

    let o = ctxfit(
        &[
            "file-state",
            traj.to_str().unwrap(),
            "--path",
            "src/marshmallow/fields.py",
            "--json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["state"], "unknown");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("only part of the file was read"),
        "{v}"
    );

    let cc = corpus().join("trajectories/claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl");
    let o = ctxfit(&["changelog", "--json", cc.to_str().unwrap()], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (_, entries) = v.as_object().unwrap().iter().next().unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 5);
}

#[test]
fn replay_the_sample_under_every_policy() {
    let dir = temp_dir("replay");
    let svg = dir.join("tokens.svg");
    let frontier = dir.join("frontier.svg");
    let o = ctxfit(
        &[
            "replay",
            "--sample",
            "--plot",
            svg.to_str().unwrap(),
            "--frontier",
            frontier.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let policies: Vec<&str> = out
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("against what") && !l.starts_with("sessions against none"))
        .map(|l| l.split_whitespace().next().unwrap())
        .filter(|p| !p.ends_with(':'))
        .collect();
    assert_eq!(
        policies,
        [
            "none",
            "oracle",
            "anthropic-clear",
            "keep-last-30",
            "mask-last-10",
            "seed-000",
            "seed-002",
            "seed-004",
            "smart"
        ]
    );
    assert!(
        out.lines().nth(1).unwrap().contains("+0.0%   100.0%")
            && out.lines().nth(2).unwrap().contains("100%")
            && out.contains("oracle: evaluation only"),
        "{out}"
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg")
            && plot.contains("each session&apos;s cost against none (anthropic prices), sorted")
            && plot.contains("smart")
            && plot.contains("+3%"),
        "{plot}"
    );
    // the frontier: tokens and cost saved against recall, up to 100%
    let frontier = std::fs::read_to_string(&frontier).unwrap();
    assert!(
        frontier.contains("tokens (circles), cost (triangles)") && frontier.contains("smart"),
        "{frontier}"
    );
    // it compares with none: without it, a clear error and no file
    let other = dir.join("other.svg");
    let o = ctxfit(
        &[
            "replay",
            "--sample",
            "--policy",
            "smart",
            "--plot",
            other.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("add --policy none"), "{}", stderr(&o));
    assert!(!other.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_many_files_in_parallel_gives_the_serial_result() {
    ctxfit_testkit::skip_without_corpus!();
    let files: Vec<String> = ctxfit_testkit::corpus_trajectory_files(&corpus())
        .into_iter()
        .filter(|p| {
            p.to_string_lossy().contains("swe-agent") || p.to_string_lossy().contains("openhands")
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut args = vec![
        "replay", "--json", "--policy", "none", "--policy", "smart", "--policy", "seed-002",
    ];
    args.extend(files.iter().map(String::as_str));
    let parallel = ctxfit(&args, None);
    assert!(parallel.status.success(), "{}", stderr(&parallel));
    let serial = Command::new(env!("CARGO_BIN_EXE_ctxfit"))
        .args(&args)
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert_eq!(parallel.stdout, serial.stdout);
    let v: serde_json::Value = serde_json::from_slice(&parallel.stdout).unwrap();
    assert_eq!(v["policies"].as_array().unwrap().len(), 3);
    assert_eq!(
        v["sessions"].as_array().unwrap().len(),
        3 * 10,
        "10 sessions × 3 policies"
    );
    let o = ctxfit(&["replay", "--sample", "--policy", "nope"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--policy nope: profile `nope`: no such profile"),
        "{}",
        stderr(&o)
    );
    for missing in ["policies/mine.toml", "mine.json"] {
        let o = ctxfit(&["replay", "--sample", "--policy", missing], None);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains(&format!("--policy {missing}: no such policy file")),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn replay_rows_say_which_profile_of_a_file_ran() {
    let dir = temp_dir("replay-policy-files");
    let only = dir.join("only.toml");
    std::fs::write(
        &only,
        "[profiles.smart-150k]\nextends = \"smart\"\nbudget = 150000\n",
    )
    .unwrap();
    let two = dir.join("two.toml");
    std::fs::write(
        &two,
        "[profiles.smart]\ncache_write_premium = 0\n[profiles.lean]\nextends = \"seed-002\"\n",
    )
    .unwrap();
    let (only, two) = (only.to_str().unwrap(), two.to_str().unwrap());
    let rows = |args: &[&str]| -> Vec<(String, u64)> {
        let mut all = vec!["replay", "--sample", "--json"];
        all.extend_from_slice(args);
        let o = ctxfit(&all, None);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["policy"].as_str().unwrap().to_owned(),
                    r["sessions"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // a file's only profile runs, under its own name; a file's change to a built-in profile is labelled by both
    let got = rows(&[
        "--policy",
        "smart",
        "--policy",
        only,
        "--policy",
        &format!("{two}:smart"),
        "--policy",
        &format!("{two}:lean"),
    ]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["smart", "smart-150k", &format!("{two}:smart"), "lean"]
    );
    assert!(got.iter().all(|(_, n)| *n == got[0].1), "{got:?}");
    // a file of several profiles and no default must say which; the same policy twice is refused
    for (args, says) in [
        (
            vec!["--policy", two],
            "it defines the profiles lean, smart and no `default_profile`",
        ),
        (
            vec!["--policy", "smart", "--policy", "smart"],
            "both run as `smart`",
        ),
        (
            vec!["--policy", only, "--policy", &format!("{only}:smart-150k")],
            "both run as `smart-150k`",
        ),
    ] {
        let mut all = vec!["replay", "--sample"];
        all.extend_from_slice(&args);
        let o = ctxfit(&all, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn replay_measures_savings_against_what_the_log_says_was_billed() {
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--policy", "none", "--policy", "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["policies"].as_array().unwrap();
    let (none, smart) = (&rows[0], &rows[1]);
    // the sample's log records every request's usage: the bill is larger than the messages it shows
    let (billed, logged) = (
        none["billed"]["input_tokens"].as_f64().unwrap(),
        none["input_tokens"].as_f64().unwrap(),
    );
    assert_eq!(none["billed"]["requests"], none["turns"]);
    assert!(billed > 1.5 * logged, "{billed} billed, {logged} logged");
    // the tokens smart saves, counted as Anthropic bills tool results (each request's cut rounded); against the
    // bill they are a smaller share
    let saved = |r: &serde_json::Value| r["input_tokens"].as_f64().unwrap();
    let billed_saved = none["billed"]["input_tokens"].as_f64().unwrap()
        - smart["billed"]["input_tokens"].as_f64().unwrap();
    let scaled = ctxfit_replay::ANTHROPIC_TOOL_RESULT_SCALE * (saved(none) - saved(smart));
    let turns = none["turns"].as_f64().unwrap();
    assert!(
        (billed_saved - scaled).abs() <= turns,
        "{billed_saved} billed saved, {scaled} scaled"
    );
    let (share, billed_share) = (
        smart["tokens_saved"].as_f64().unwrap(),
        smart["billed"]["tokens_saved"].as_f64().unwrap(),
    );
    assert!(
        0.0 < billed_share && billed_share < share,
        "{billed_share} {share}"
    );
    assert!(
        smart["billed"]["cost_vs_none"]["anthropic"]
            .as_f64()
            .unwrap()
            < 0.0
    );
    // and the table says so
    let table = stdout(&ctxfit(
        &[
            "replay", "--sample", "--policy", "none", "--policy", "smart",
        ],
        None,
    ));
    assert!(
        table.contains("against what the logs say was billed (53 of 53 requests"),
        "{table}"
    );
}

/// A real page of the corpus, decompressed into a temporary file.
fn corpus_html_page(dir: &std::path::Path) -> (PathBuf, Vec<u8>) {
    use std::io::Read;
    let pages = corpus().join("html/pages");
    let mut names: Vec<_> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut html = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&names[0]).unwrap())
        .read_to_end(&mut html)
        .unwrap();
    let path = dir.join("page.html");
    std::fs::write(&path, &html).unwrap();
    (path, html)
}

#[test]
fn html_cleans_a_file_or_stdin_and_reports_like_the_page_tool() {
    ctxfit_testkit::skip_without_corpus!();
    let dir = temp_dir("html");
    let (path, html) = corpus_html_page(&dir);
    let path = path.to_str().unwrap();
    let minimal = ctxfit(&["html", path, "--level", "minimal"], None);
    assert!(minimal.status.success(), "{}", stderr(&minimal));
    let aggressive = ctxfit(&["html", path, "--level", "aggressive"], None);
    assert!(stdout(&aggressive).len() < stdout(&minimal).len());
    assert!(
        stderr(&aggressive).contains("bytes of page"),
        "{}",
        stderr(&aggressive)
    );
    let from_stdin = ctxfit(&["html", "-", "--level", "minimal"], Some(&html));
    assert_eq!(stdout(&from_stdin), stdout(&minimal));

    let json = ctxfit(&["html", path, "--max-chars", "500", "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["was_truncated"], true);
    assert_eq!(v["original_size"], html.len());
    assert!(v["data"].as_str().unwrap().chars().count() <= 500);
    let total = v["total_chunks"].as_u64().unwrap();
    assert!(total > 1);
    let last = ctxfit(
        &[
            "html",
            path,
            "--max-chars",
            "500",
            "--chunk",
            &total.to_string(),
            "--json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&last)).unwrap();
    assert_eq!(
        (v["is_chunked"].clone(), v["chunk_number"].clone()),
        (true.into(), total.into())
    );

    let past = ctxfit(&["html", path, "--chunk", "999"], None);
    assert_eq!(past.status.code(), Some(2));
    assert!(
        stderr(&past).contains("there is no chunk 999"),
        "{}",
        stderr(&past)
    );
    let out = dir.join("page.md");
    let written = ctxfit(&["html", path, "-o", out.to_str().unwrap()], None);
    assert!(written.status.success());
    assert!(!std::fs::read_to_string(&out).unwrap().is_empty());
}

#[test]
fn html_explain_names_what_the_aggressive_level_chose() {
    let dir = temp_dir("html-explain");
    let paragraphs: String = (0..5)
        .map(|i| {
            format!(
                "<p>Paragraph {i}: the river rose, the dykes held, and the town, which had prepared for a week, \
                 counted the damage on Monday morning.</p>"
            )
        })
        .collect();
    let page = format!(
        "<html><body><div class='page'><div id='story' class='body'>{paragraphs}<p>Share this:</p></div>\
         </div></body></html>"
    );
    let path = dir.join("story.html");
    std::fs::write(&path, &page).unwrap();
    let path = path.to_str().unwrap();
    let out = ctxfit(&["html", path, "--explain"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "article (1):\n  div#story.body (535 characters): \"Paragraph 0: the river rose, the dykes held, and the town,…\"\n\
         lead, written before it: none\n\
         left out of it (1):\n  p (10 characters): \"Share this:\"\n"
    );
    // the same from standard input
    let piped = ctxfit(&["html", "-", "--explain"], Some(page.as_bytes()));
    assert_eq!(stdout(&piped), stdout(&out));
    // a page of short blocks has no article, and says so
    let short = ctxfit(
        &["html", "-", "--explain"],
        Some(b"<html><body><div>Flour, 200 g</div><div>Sugar</div></body></html>"),
    );
    assert!(
        stdout(&short).starts_with("no article:"),
        "{}",
        stdout(&short)
    );
    // a URL is refused with the way round it; with --json it is a usage error
    let url = ctxfit(&["html", "http://127.0.0.1:9/page", "--explain"], None);
    assert_eq!(url.status.code(), Some(2));
    assert!(
        stderr(&url).contains("save the page first"),
        "{}",
        stderr(&url)
    );
    let both = ctxfit(&["html", path, "--explain", "--json"], None);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}

#[test]
fn html_fetches_urls_only_from_allowed_addresses() {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/page",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = "<html><body><nav>menu</nav><h1>Served</h1><p>Hello from a server.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let refused = ctxfit(&["html", &url], None);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("a loopback address"),
        "{}",
        stderr(&refused)
    );
    let refused_json = ctxfit(&["html", &url, "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&refused_json)).unwrap();
    assert_eq!(v["success"], false);

    let fetched = ctxfit(&["html", &url, "--allow-address", "127.0.0.1"], None);
    assert!(fetched.status.success(), "{}", stderr(&fetched));
    assert_eq!(stdout(&fetched), "# Served\n\nHello from a server.\n");
}

#[test]
fn compact_refuses_a_request_over_the_token_guard_and_writes_nothing() {
    let dir = temp_dir("guard");
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "[agents.small]\nrequest_budget = 5000\n\n[agents.large]\nrequest_budget = 1000000\nwarning_threshold = 10000\n",
    )
    .unwrap();
    let out = dir.join("request.json");
    let run = |agent: &str| {
        ctxfit(
            &[
                "compact",
                "--sample",
                "--policy",
                policy.to_str().unwrap(),
                "--agent",
                agent,
                "-o",
                out.to_str().unwrap(),
            ],
            None,
        )
    };
    let refused = run("small");
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("Prompt too large:")
            && stderr(&refused).contains("exceeds budget of 5000"),
        "{}",
        stderr(&refused)
    );
    assert!(!out.exists(), "nothing is written");
    let warned = run("large");
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert!(
        stderr(&warned).contains("above the warning threshold of 10,000"),
        "{}",
        stderr(&warned)
    );
    assert!(out.exists());
}

#[test]
fn gzipped_sessions_are_read_as_they_are() {
    ctxfit_testkit::skip_without_corpus!();
    let gz = corpus()
        .join("sessions/mini-swe-agent/deepseek_chat_dev__pvlib__pvlib-python-1072.traj.json.gz");
    let o = ctxfit(&["stats", "--json", gz.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["tool_results"].as_u64()),
        (Some("mini-swe-agent"), Some(73))
    );
    let rollout =
        corpus().join("sessions/codex-agentv/019ed917-1cf7-72a3-92f5-c0aa98fb134e.jsonl.gz");
    let o = ctxfit(&["stats", "--json", rollout.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["tool_calls"].as_u64()),
        (Some("codex"), Some(98))
    );

    let dir = temp_dir("gz");
    let broken = dir.join("broken.json.gz");
    std::fs::write(&broken, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let o = ctxfit(&["stats", broken.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a readable gzip file"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_walks_a_folder_reports_what_it_cannot_read_and_goes_on() {
    ctxfit_testkit::skip_without_corpus!();
    let dir = temp_dir("folder");
    let nested = dir.join("project").join("sessions");
    std::fs::create_dir_all(&nested).unwrap();
    let swe = corpus().join("trajectories/swe-agent/marshmallow-1867.traj");
    std::fs::copy(&swe, nested.join("marshmallow-1867.traj")).unwrap();
    std::fs::write(nested.join("broken.json"), "{\"messages\": [").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a session").unwrap();
    let o = ctxfit(
        &[
            "replay",
            dir.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "smart",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        out.lines().nth(1).unwrap().starts_with("none           1"),
        "{out}"
    );
    assert!(out.contains("smart"), "{out}");
    assert!(err.contains("1 file(s) passed over"), "{err}");
    assert!(
        err.contains("skipped: ") && err.contains("broken.json:1:"),
        "{err}"
    );
    assert!(err.contains("1 of 2 files could not be read"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_claude_code_project_folder_with_subagents_is_read_whole() {
    ctxfit_testkit::skip_without_corpus!();
    // Claude Code keeps `subagents/agent-ID.meta.json` beside each subagent's transcript
    let o = ctxfit(
        &[
            "stats",
            "--json",
            corpus().join("trajectories/claude-code").to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("6 metadata file(s) passed over"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["files"].as_u64(), v["files_skipped"].as_u64()),
        (Some(13), Some(0))
    );
}

#[test]
fn replay_by_tool_shows_where_the_tokens_go() {
    let args = [
        "replay", "--sample", "--policy", "none", "--policy", "smart",
    ];
    let o = ctxfit(&[&args[..], &["--by-tool", "2"]].concat(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("where the tokens go"))
        .take_while(|l| !l.starts_with("what the agent used again"))
        .collect();
    assert_eq!(
        table.len(),
        6,
        "a header, the two costliest tools, the others, the rest:\n{out}"
    );
    assert!(
        table[1].starts_with("tool ") && table[1].ends_with("smart"),
        "{out}"
    );
    // the sample's reads cost most, then its searches; `smart` cuts both
    assert!(
        table[2].starts_with("Read ") && table[2].ends_with('%'),
        "{out}"
    );
    assert!(table[3].starts_with("Grep "), "{out}");
    assert!(table[4].starts_with("(4 other tools)"), "{out}");
    assert!(
        table[5].starts_with("(not results: system, messages, calls)")
            && table[5].ends_with("+0.0%")
    );
    // the shares of the input add up to the whole
    let share = |l: &str| -> f64 {
        l.split_whitespace()
            .rev()
            .nth(1)
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    let total: f64 = table[2..].iter().map(|l| share(l)).sum();
    assert!((total - 100.0).abs() < 0.3, "{total}: {out}");
    // without the flag no such table; the JSON has every tool of every policy
    assert!(!stdout(&ctxfit(&args, None)).contains("where the tokens go"));
    let o = ctxfit(&[&args[..], &["--json"]].concat(), None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["policies"].as_array().unwrap();
    let tools = |i: usize| rows[i]["tools"].as_array().unwrap().clone();
    assert_eq!(tools(0).len(), 6);
    let read = |i: usize| tools(i).into_iter().find(|t| t["tool"] == "Read").unwrap();
    assert_eq!(read(0)["input_tokens"], read(0)["uncompacted_tokens"]);
    assert!(read(1)["input_tokens"].as_u64() < read(1)["uncompacted_tokens"].as_u64());
    // every reference is counted under one tool: per tool they add up to the policy's own, kept and all
    for (i, row) in rows.iter().enumerate() {
        let sum =
            |field: &str| -> u64 { tools(i).iter().map(|t| t[field].as_u64().unwrap()).sum() };
        assert_eq!(sum("references"), row["references"].as_u64().unwrap());
        assert_eq!(
            sum("references_visible"),
            row["references_visible"].as_u64().unwrap()
        );
    }
    assert!(rows[1]["references_visible"].as_u64() < rows[1]["references"].as_u64());
    // and the table of them: most used first, `smart`'s share of each; none keeps every one
    let used: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("what the agent used again"))
        .collect();
    assert_eq!(used.len(), 5, "a header, two tools, the others:\n{out}");
    assert!(
        used[1].starts_with("tool ") && used[1].ends_with("smart"),
        "{out}"
    );
    assert!(
        used[2].starts_with("Read ") && used[3].starts_with("Grep "),
        "{out}"
    );
    assert!(used[2..].iter().all(|l| l.ends_with('%')), "{out}");
}

#[test]
fn replay_json_carries_tokens_peak_costs_recall_and_the_oracle_share() {
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--prices", "all", "--policy", "none", "--policy",
            "oracle", "--policy", "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["prices"]["openai"],
        serde_json::json!({"base": 1.0, "cache_read": 0.1, "cache_write": 1.0})
    );
    let rows = v["policies"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["policy"] == name).unwrap();
    let (none, oracle, smart) = (row("none"), row("oracle"), row("smart"));
    for r in [none, oracle, smart] {
        for key in ["input_tokens", "peak_tokens", "cost", "recall"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
        // every token costs 1.0 uncached: the cost is the input tokens
        assert_eq!(r["costs"]["uncached"].as_f64(), r["input_tokens"].as_f64());
        assert_eq!(
            r["cost"], r["costs"]["anthropic"],
            "the first price model is `cost`"
        );
    }
    assert_eq!(
        oracle["recall"], 1.0,
        "the oracle keeps every later reference"
    );
    assert_eq!(oracle["share_of_oracle"], 1.0);
    assert!(oracle["input_tokens"].as_u64() < smart["input_tokens"].as_u64());
    assert!(smart["input_tokens"].as_u64() < none["input_tokens"].as_u64());
    assert!(smart["peak_tokens"].as_u64() < none["peak_tokens"].as_u64());
    // session by session against no compaction, under each price model
    for model in ["anthropic", "openai", "uncached"] {
        assert_eq!(
            smart["costlier_sessions"][model],
            serde_json::json!({"costlier": 0, "over_3_percent": 0, "worst": 0.0}),
            "{model}"
        );
    }
    let table = stdout(&ctxfit(
        &[
            "replay",
            "--sample",
            "--policy",
            "none",
            "--policy",
            "keep-last-30",
        ],
        None,
    ));
    let row = table
        .lines()
        .find(|l| l.starts_with("keep-last-30"))
        .unwrap();
    assert!(row.ends_with("1 (+193.1%)"), "{table}");
    assert!(table
        .contains("costlier: sessions that cost more than with no compaction (anthropic prices)"));
    let o = ctxfit(&["replay", "--sample", "--prices", "azure"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown price model `azure`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn problems_are_warned_about_and_refused_under_strict() {
    let dir = temp_dir("strict");
    let file = dir.join("reused.json");
    let conv = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "one"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "two"}]},
        {"role": "assistant", "content": "done"}
    ]});
    std::fs::write(&file, conv.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let o = ctxfit(&["stats", "--json", path], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1);
    // each result is credited to its own call
    assert_eq!(v["tools"]["read_file"]["results"], 1);
    assert_eq!(v["tools"]["bash"]["results"], 1);
    let o = ctxfit(&["convert", path, "--to", "openai"], None);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("warning: ") && stderr(&o).contains("used by 2 calls"),
        "{}",
        stderr(&o)
    );
    for args in [
        &["stats", "--strict", path][..],
        &["compact", "--strict", path],
        &["replay", "--strict", path],
    ] {
        let o = ctxfit(args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("refused under --strict: tool_use id `a` is used by 2 calls"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stats_and_convert_walk_a_folder() {
    let dir = temp_dir("walk");
    let input = dir.join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    let conv = |text: &str| {
        serde_json::json!({"model": "m", "messages": [
            {"role": "user", "content": text},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.rs"}]},
            {"role": "assistant", "content": "done"}
        ]})
        .to_string()
    };
    std::fs::write(input.join("a.json"), conv("one")).unwrap();
    std::fs::write(input.join("sub/b.json"), conv("two")).unwrap();
    std::fs::write(input.join("broken.json"), "{\"messages\": [").unwrap();
    std::fs::write(input.join("notes.txt"), "not a session").unwrap();
    let folder = input.to_str().unwrap();

    let o = ctxfit(&["stats", "--json", folder], None);
    assert_eq!(o.status.code(), Some(2), "one file is broken");
    assert!(stderr(&o).contains("skipped: ") && stderr(&o).contains("broken.json"));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["files"].as_u64(), v["files_skipped"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (v["sessions"].as_u64(), v["tool_results"].as_u64()),
        (Some(2), Some(2))
    );

    let o = ctxfit(&["convert", folder, "--to", "openai"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give it with -o"), "{}", stderr(&o));
    let out = dir.join("out");
    let o = ctxfit(
        &[
            "convert",
            folder,
            "--to",
            "openai",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    for file in ["a.openai.json", "sub/b.openai.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(file)).unwrap()).unwrap();
        assert_eq!(v["messages"][2]["role"], "tool", "{file}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_readmes_figures_are_what_the_sample_replays_to() {
    // README, "What works today": `smart` on the embedded sample, against the bill and of the messages alone
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--policy", "none", "--policy", "oracle", "--policy",
            "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let smart = &v["policies"][2];
    assert_eq!(smart["policy"], "smart");
    let pct = |x: &serde_json::Value| format!("{:.1}", 100.0 * x.as_f64().unwrap());
    assert_eq!(
        [
            pct(&smart["billed"]["tokens_saved"]),
            pct(&smart["recall"]),
            pct(&smart["billed"]["cost_vs_none"]["anthropic"]),
            pct(&smart["tokens_saved"]),
            pct(&smart["cost_vs_none"]["anthropic"]),
        ],
        ["11.2", "98.5", "-7.4", "20.0", "-12.8"]
    );
    assert_eq!(
        format!("{:.0}", 100.0 * smart["share_of_oracle"].as_f64().unwrap()),
        "42"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    for figure in [
        "11.2% fewer",
        "98.5% recall",
        "7.4% less",
        "20.0% and 12.8%",
    ] {
        assert!(
            readme.contains(figure),
            "the README no longer says {figure:?}"
        );
    }
}

#[test]
fn a_gzip_bomb_is_refused_at_the_limit_and_the_limit_can_be_raised() {
    use std::io::Write;
    let dir = temp_dir("bomb");
    let path = dir.join("bomb.jsonl.gz");
    // 8 MiB of one byte: a few kilobytes gzipped
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b' '; 8 << 20]).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let o = ctxfit(
        &["stats", path.to_str().unwrap(), "--max-inflated", "1M"],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("inflates to more than 1048576 bytes, the limit"),
        "{}",
        stderr(&o)
    );
    // raised past it, the file is read (and is empty of sessions: blank lines)
    let o = ctxfit(
        &["stats", path.to_str().unwrap(), "--max-inflated", "16M"],
        None,
    );
    assert!(!stderr(&o).contains("the limit"), "{}", stderr(&o));
    let o = ctxfit(
        &["stats", path.to_str().unwrap(), "--max-inflated", "lots"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a size"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_walk_passes_over_links_to_folders_and_fifos_by_name() {
    let dir = temp_dir("walk");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let sample = ctxfit(&["convert", "--sample", "--to", "anthropic"], None);
    assert!(sample.status.success(), "{}", stderr(&sample));
    std::fs::write(dir.join("good.json"), &sample.stdout).unwrap();
    std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.jsonl"))
        .status()
        .is_ok_and(|s| s.success());
    let o = ctxfit(&["stats", "--json", dir.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"], 1, "the one file, once");
    assert!(
        stderr(&o).contains("sub/up: passed over: a link to a folder"),
        "{}",
        stderr(&o)
    );
    if fifo {
        assert!(
            stderr(&o).contains("pipe.jsonl: passed over: not a regular file"),
            "{}",
            stderr(&o)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_temporary_left_by_a_killed_writer_is_removed_by_the_next_write() {
    let dir = temp_dir("stale");
    let out = dir.join("out.json");
    // a writer that was killed (no process has this id) and one still running (this test)
    let stale = dir.join(".out.json.4194303999.aB3dE.ctxfit-tmp");
    let live = dir.join(format!(".out.json.{}.zZ9yX.ctxfit-tmp", std::process::id()));
    let other = dir.join(".other.json.4194303999.aB3dE.ctxfit-tmp");
    for f in [&stale, &live, &other] {
        std::fs::write(f, "half written").unwrap();
    }
    let o = ctxfit(
        &[
            "convert",
            "--sample",
            "--to",
            "anthropic",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.is_file());
    assert!(!stale.exists(), "the dead writer's temporary is gone");
    assert!(
        live.exists() && other.exists(),
        "a live writer's, and another output's, stay"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Killed (SIGKILL: no handler runs) while it writes its output, the CLI leaves no file beside it: on Linux the
/// output is written unnamed (`O_TMPFILE`) and named only once whole. The kill comes when the process holds a
/// file of the output's folder open (seen in `/proc/PID/fd`), that is, in the middle of writing it.
#[cfg(target_os = "linux")]
#[test]
fn a_writer_killed_while_writing_leaves_nothing_beside_its_output() {
    let dir = temp_dir("killed");
    let input = dir.join("in.json");
    let mut messages = vec![serde_json::json!({"role": "user", "content": "go"})];
    for i in 0..600 {
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "bash", "input": {"command": "cat x"}}]}));
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "a line of output\n".repeat(2000)}]}));
    }
    std::fs::write(
        &input,
        serde_json::json!({ "messages": messages }).to_string(),
    )
    .unwrap();
    let out = dir.join("out.json");
    let writing = |pid: u32| -> bool {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|target| target.starts_with(&dir) && target != input && target != dir)
    };
    let mut caught = 0;
    for _ in 0..3 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxfit"))
            .args(["convert", input.to_str().unwrap(), "--to", "openai", "-o"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 120 {
            if writing(child.id()) {
                let _ = child.kill();
                caught += 1;
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "in.json" && n != "out.json")
            .collect();
        assert!(left.is_empty(), "killed while writing: {left:?}");
        let _ = std::fs::remove_file(&out);
    }
    assert!(caught >= 1, "never caught writing");
    std::fs::remove_dir_all(&dir).unwrap();
}
