//! `compact`, `policy`, `changelog` and `file-state`, bad input, and outputs never half-written.

use super::*;

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
        vec!["tokens", "--conversation", "-"],
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
    // an empty list is a conversation not begun: compacted to itself, counted as nothing
    let o = ctxfit(&["compact", "-"], Some(b"[]"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "[]");
    let o = ctxfit(&["stats", "-"], Some(b"[]"));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("messages      0\n"), "{text}");
    // a text to count may be empty
    let o = ctxfit(&["tokens", "-"], Some(b""));
    assert!(o.status.success(), "{}", stderr(&o));

    let o = ctxfit(&["tokens", "--estimator", "gpt2", "-"], Some(b"x"));
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
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
    // a file of one profile and no `default_profile` runs that profile, as `replay` does — not smart
    std::fs::write(
        &policy,
        "[profiles.eager]\nextends = \"smart\"\ncache_write_premium = 0\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let o = ctxfit(&["compact", path, "--policy", policy], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again, out);
    let o = ctxfit(&["policy", "show", "--policy", policy], None);
    assert!(
        stdout(&o).starts_with("# effective profile `eager`"),
        "{}",
        stdout(&o)
    );
    // and the proxy says which profile it runs when a request names none
    for (args, runs) in [
        (vec!["--policy", policy], "profile eager"),
        (vec![], "profile smart"),
        (vec!["--profile", "seed-002"], "profile seed-002"),
    ] {
        let mut proxy = spawn(&[&["proxy", "--listen", "127.0.0.1:0"], &args[..]].concat());
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(proxy.stderr.take().unwrap()),
            &mut line,
        )
        .unwrap();
        proxy.kill().unwrap();
        proxy.wait().unwrap();
        assert!(
            line.starts_with("ctxfit proxy: listening on http://127.0.0.1:") && line.contains(runs),
            "{args:?}: {line}"
        );
    }
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

    // `-o` naming the input itself — however it is spelled — is an in-place rewrite, with the same rule; `convert`
    // and `html` never write over their input
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&jsonl, &link).unwrap();
    let page = dir.join("page.html");
    std::fs::write(&page, "<p>hi</p>").unwrap();
    let spelled = dir.join(".").join("s.jsonl");
    let gz = dir.join("conv.json.gz");
    let [log, link, spelled, page, plain, gz] =
        [&jsonl, &link, &spelled, &page, &file, &gz].map(|p| p.to_str().unwrap());
    let plain_only = "-o naming the input itself only rewrites plain";
    for (args, said) in [
        (&["compact", log, "-o", spelled][..], plain_only),
        (&["compact", link, "-o", log], plain_only),
        (
            &["convert", log, "--to", "openai", "-o", link],
            "-o names the input itself",
        ),
        (&["html", page, "-o", page], "-o names the page itself"),
    ] {
        let o = ctxfit(args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(said), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), super_sample());
    assert_eq!(std::fs::read_to_string(page).unwrap(), "<p>hi</p>");
    // plain JSON written over itself with -o is what --in-place does; a name ending in .gz is written gzipped
    for args in [
        &["compact", plain, "-o", plain][..],
        &["compact", plain, "-o", gz],
    ] {
        let o = ctxfit(args, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let bytes = std::fs::read(gz).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");
    let mut inflated = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut inflated)
        .unwrap();
    assert_eq!(inflated, std::fs::read_to_string(plain).unwrap());
    let o = ctxfit(&["compact", gz, "--in-place"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        &std::fs::read(gz).unwrap()[..2],
        &[0x1f, 0x8b],
        "still gzip"
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
    // a rule the binary does not have, or parameters a rule refuses: refused as `compact` refuses them
    for (rules, says) in [
        (
            "[{ rule = \"nope\", tools = [\"a\"] }]",
            "unknown rule `nope`",
        ),
        (
            "[{ rule = \"excerpt\", tools = [\"*\"], params = { log_head = \"ten\" } }]",
            "excerpt",
        ),
    ] {
        std::fs::write(
            &policy,
            format!("[profiles.x]\nextends = \"smart\"\nrules = {rules}\n"),
        )
        .unwrap();
        let show = ["policy", "show", "--policy", policy.to_str().unwrap()];
        let o = ctxfit(&[&show[..], &["--profile", "x"]].concat(), None);
        assert_eq!(o.status.code(), Some(2), "{rules}: {}", stdout(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        let compact = ["compact", "--sample", "--policy", policy.to_str().unwrap()];
        let c = ctxfit(&[&compact[..], &["--profile", "x"]].concat(), None);
        assert_eq!(
            (c.status.code(), stderr(&c)),
            (o.status.code(), stderr(&o)),
            "{rules}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn changelog_and_file_state_read_codex_patches_and_shell_reads() {
    ctxfit_testkit::skip_without_corpus!();
    // one apply_patch call adds four prompt files; a later one updates a skill with two hunks
    let log = corpus().join("sessions/codex-agentv/019f0675-387a-79c2-9e8d-ceb8a30657c9.jsonl.gz");
    let log = log.to_str().unwrap();
    let o = ctxfit(&["changelog", log, "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v.as_object().unwrap();
    let added: Vec<&String> = (files.iter())
        .filter(|(_, es)| es[0]["message"] == 215)
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        added,
        [
            ".workmux/prompts/verify-close-edge-cases.md",
            ".workmux/prompts/verify-close-experiment-superseded.md",
            ".workmux/prompts/verify-close-implemented.md",
            ".workmux/prompts/verify-close-trace-skill.md",
        ],
        "{v}"
    );
    let edge = &files[".workmux/prompts/verify-close-edge-cases.md"][0];
    assert_eq!(edge["tool"], "apply_patch");
    assert_eq!(edge["summary"], "write 25 line(s)");
    assert_eq!(edge["failed"], false);
    let skill = &files["skills-data/agentv-bench/SKILL.md"][0];
    assert_eq!(
        skill["summary"],
        "replace 16 line(s) with 16; replace 6 line(s) with 6"
    );
    // a file the patch wrote is known from it
    let o = ctxfit(
        &[
            "file-state",
            log,
            "--path",
            ".workmux/prompts/verify-close-edge-cases.md",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("You are a verification-only worker in "),
        "{}",
        stdout(&o)
    );
    assert_eq!(stdout(&o).lines().count(), 25);
    assert!(stderr(&o).contains("written by apply_patch at message 215"));
    // a file Codex read with `sed -n '1,220p'`, which printed fewer lines than it asked for: all of it
    let o = ctxfit(&["file-state", log, "--path", "ROADMAP.md"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("# AgentV Roadmap\n"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("read by exec_command at message "),
        "{}",
        stderr(&o)
    );
    // a patch the tool refused is marked failed
    let other =
        corpus().join("sessions/codex-agentv/019efc87-fa98-7971-91df-0c9512a065da.jsonl.gz");
    let o = ctxfit(&["changelog", other.to_str().unwrap(), "--json"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let failed = (v.as_object().unwrap().values())
        .flat_map(|es| es.as_array().unwrap())
        .filter(|e| e["failed"] == true)
        .count();
    assert_eq!(failed, 3, "{v}");
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

    // a file the session never fully read: exit 2, and the reason on standard error
    let unknown = |args: &[&str]| {
        let mut all = vec!["file-state", traj.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = ctxfit(&all, None);
        assert_eq!(o.status.code(), Some(2));
        stderr(&o)
    };
    let said = unknown(&["--path", "reproduce.py", "--turn", "0"]);
    assert!(
        said.contains(
            "reproduce.py: unknown — no full read or write of reproduce.py in the first 0 turn(s)"
        ),
        "{said}"
    );
    // without --turn, the whole session: its own count of turns, not the largest number there is
    let said = unknown(&["--path", "never/read.py"]);
    assert!(
        said.contains("no full read or write of never/read.py in the session's ")
            && !said.contains(&usize::MAX.to_string()),
        "{said}"
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

    // a Claude Code session whose sub-agents made every edit: the changelog is of them all, each edit named by
    // its sub-agent; one session asked for is that one alone; file-state says there are others
    let cc =
        corpus().join("sessions/claude-code-attio/278a2245-9881-4e57-8176-beb93e3d7fd3.jsonl.gz");
    let cc = cc.to_str().unwrap();
    let o = ctxfit(&["changelog", cc], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = "/Users/kesslerio/GDrive/Projects/attio-mcp-server/PR-389-FIX-SUMMARY.md";
    assert!(
        stdout(&o).contains(&format!(
            "{written}\n  turn  24  message   47  Write              write 102 line(s)  [subagent 1]\n"
        )),
        "{}",
        stdout(&o)
    );
    let o = ctxfit(&["changelog", cc, "--json"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[written][0]["session"], "subagent 1");
    assert_eq!(v[written][0]["tool"], "Write");
    let o = ctxfit(&["changelog", cc, "--session", "0"], None);
    assert_eq!(stdout(&o), format!("{cc}: no edits\n"));
    let o = ctxfit(&["file-state", cc, "--path", written], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "note: {cc} holds 4 sessions: this is the first; --session N for another"
        )),
        "{}",
        stderr(&o)
    );
    let o = ctxfit(
        &["file-state", cc, "--path", written, "--session", "1"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("# PR #389 Fix"), "{}", stdout(&o));
    assert!(!stderr(&o).contains("holds 4 sessions"), "{}", stderr(&o));
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

#[test]
fn a_folder_named_as_the_output_is_the_callers_mistake() {
    let dir = temp_dir("output-folder");
    let out = dir.to_str().unwrap();
    for args in [
        vec!["compact", "--sample", "-o", out],
        vec!["convert", "--sample", "--to", "openai", "-o", out],
    ] {
        let o = ctxfit(&args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("cannot write {out}: it is a folder")),
            "{}",
            stderr(&o)
        );
    }
    // and nothing was written into it
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dash_as_the_output_is_standard_output_never_a_file_named_dash() {
    let dir = temp_dir("dash-output");
    let page = dir.join("page.html");
    std::fs::write(
        &page,
        "<html><body><p>Hello there, reader.</p></body></html>",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ctxfit"))
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // what each command prints without -o, it prints with `-o -`
    for args in [
        vec!["compact", "--sample"],
        vec!["convert", "--sample", "--to", "openai"],
        vec!["html", "page.html"],
    ] {
        let plain = run(&args);
        assert!(plain.status.success(), "{args:?}: {}", stderr(&plain));
        let dashed = run(&[&args[..], &["-o", "-"]].concat());
        assert!(
            dashed.status.success(),
            "{args:?} -o -: {}",
            stderr(&dashed)
        );
        assert_eq!(stdout(&dashed), stdout(&plain), "{args:?} -o -");
        assert!(
            !dir.join("-").exists(),
            "{args:?} -o - wrote a file named -"
        );
    }
    // where standard output cannot take it, the command says so and writes nothing
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        sessions.join("a.json"),
        r#"[{"role":"user","content":"hi"}]"#,
    )
    .unwrap();
    for (args, says) in [
        (
            vec!["convert", "sessions", "--to", "openai", "-o", "-"],
            "-o - (standard output) cannot hold them",
        ),
        (
            vec!["replay", "--sample", "--policy", "none", "--plot", "-"],
            "cannot write a drawing to standard output",
        ),
        (
            vec!["replay", "--sample", "--frontier", "-"],
            "cannot write a drawing to standard output",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        assert!(!dir.join("-").exists(), "{args:?} wrote a file named -");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_compact_writes_for_several_windows_every_command_reads_back() {
    ctxfit_testkit::skip_without_corpus!();
    // a Codex rollout of three context windows: compact writes a list of three Responses documents
    let log = corpus().join("sessions/codex-agentv/019f17a5-6d3f-7470-9097-c70f6cefe936.jsonl.gz");
    let dir = temp_dir("windows");
    let (first, second) = (dir.join("first.json"), dir.join("second.json"));
    let run = |input: &Path, out: &Path| {
        let o = ctxfit(
            &[
                "compact",
                input.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run(&log, &first);
    let o = ctxfit(&["compact", log.to_str().unwrap()], None);
    let notes: Vec<&str> = std::str::from_utf8(&o.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.contains("Note: Compacted"))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes[1].contains("(window 2): Note: Compacted"),
        "each note names its window: {notes:?}"
    );
    let stats = ctxfit(&["stats", first.to_str().unwrap()], None);
    assert!(stats.status.success(), "{}", stderr(&stats));
    assert!(
        stdout(&stats).contains("responses, 3 session(s)"),
        "{}",
        stdout(&stats)
    );
    // compacting the compacted history again changes nothing: its decisions are final
    run(&first, &second);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
    let converted = dir.join("anthropic.json");
    let o = ctxfit(
        &[
            "convert",
            first.to_str().unwrap(),
            "--to",
            "anthropic",
            "-o",
            converted.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let stats = ctxfit(&["stats", converted.to_str().unwrap()], None);
    assert!(
        stdout(&stats).contains("anthropic, 3 session(s)"),
        "{}",
        stdout(&stats)
    );
    // twenty tau-bench sessions converted to OpenAI Chat (a list of lists of messages), then to Responses (of
    // lists of items) and back: each read back as twenty sessions of the same messages
    let tau = corpus().join("trajectories/tau-bench/gpt-4o-airline.fixture-0-19.json");
    let summary = |path: &Path| {
        let o = ctxfit(&["stats", path.to_str().unwrap()], None);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        let lines: Vec<&str> = text.lines().take(2).collect();
        (
            lines[0].split(": ").nth(1).unwrap().to_owned(),
            lines[1].to_owned(),
        )
    };
    let mut from = tau.clone();
    for (to, file) in [
        ("openai", "chat.json.gz"),
        ("responses", "items.json"),
        ("openai", "back.json"),
    ] {
        let out = dir.join(file);
        let o = ctxfit(
            &[
                "convert",
                from.to_str().unwrap(),
                "--to",
                to,
                "-o",
                out.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(summary(&out).0, format!("{to}, 20 session(s)"));
        from = out;
    }
    assert_eq!(summary(&from).1, summary(&tau).1, "the same messages");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_policy_of_several_profiles_and_no_default_is_refused_by_every_command_by_its_name() {
    // which profile was meant cannot be guessed: running smart instead would run what the file does not say
    let dir = temp_dir("several-profiles");
    let policy = dir.join("two.toml");
    std::fs::write(
        &policy,
        "[profiles.eager]\nextends = \"smart\"\n[profiles.lazy]\nextends = \"seed-000\"\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let conv = dir.join("conv.json");
    std::fs::write(
        &conv,
        r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
    )
    .unwrap();
    let conv = conv.to_str().unwrap();
    let written = dir.join("out.json");
    let out = written.to_str().unwrap();
    for args in [
        &["compact", conv, "--policy", policy, "-o", out][..],
        &["policy", "show", "--policy", policy],
        &["proxy", "--policy", policy, "--listen", "127.0.0.1:0"],
        &["replay", conv, "--policy", policy],
    ] {
        let o = within_seconds(20, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("policy {policy}: "))
                && stderr(&o).contains("(eager, lazy) and no `default_profile`"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert!(!written.exists());
    // one named: it runs
    let o = ctxfit(
        &[
            "compact",
            conv,
            "--policy",
            policy,
            "--profile",
            "lazy",
            "-o",
            out,
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = ctxfit(
        &["replay", conv, "--policy", &format!("{policy}:lazy")],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_log_of_messages_one_a_line_is_compacted_and_converted_a_message_a_line() {
    let dir = temp_dir("message-lines");
    let file = dir.join("history.jsonl");
    let long: String = (0..300)
        .map(|i| format!("line {i} of the output\n"))
        .collect();
    let messages = [
        serde_json::json!({"role": "user", "content": "go"}),
        serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "get_orderbook", "input": {}}]}),
        serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": long}]}),
        serde_json::json!({"role": "assistant", "content": "ok"}),
    ];
    let text: String = messages.iter().map(|m| format!("{m}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    let lines = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let o = ctxfit(&["stats", path, "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "anthropic", "{v}");
    // in place: the same file, a message a line, the stale result cut
    let o = ctxfit(
        &["compact", path, "--profile", "seed-002", "--in-place"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&file).unwrap();
    let got = lines(&written);
    assert_eq!(got.len(), 4, "{written}");
    assert_eq!(
        (&got[0], &got[1], &got[3]),
        (&messages[0], &messages[1], &messages[3])
    );
    let cut = got[2]["content"][0]["content"].as_str().unwrap();
    assert!(cut.len() < long.len() / 2, "{cut}");
    // converted: a message a line in the other format
    let o = ctxfit(&["convert", path, "--to", "openai"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = lines(&stdout(&o));
    assert_eq!(got[1]["tool_calls"][0]["id"], "a");
    assert_eq!(got[2]["role"], "tool");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ctxfit ARGS`, killed if it has not ended within `seconds` (a proxy that started where it should have refused
/// to would serve for ever): then a failure, not a hung test.
fn within_seconds(seconds: u64, args: &[&str]) -> Output {
    let mut child = spawn(args);
    drop(child.stdin.take());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            child.kill().unwrap();
            panic!("{args:?} still running after {seconds} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_providers_base_url_as_the_upstream_is_refused_with_the_two_settings_that_replace_it() {
    let o = within_seconds(
        20,
        &[
            "proxy",
            "--listen",
            "127.0.0.1:8799",
            "--upstream-openai",
            "https://openrouter.ai/api/v1/",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "(--upstream-openai https://openrouter.ai, and the client's base URL http://127.0.0.1:8799/api/v1)"
        ),
        "{}",
        stderr(&o)
    );
    // no host, or not HTTP: only said to be no origin
    for url in ["ftp://example.com", "/v1"] {
        let o = within_seconds(20, &["proxy", "--upstream-anthropic", url]);
        assert_eq!(o.status.code(), Some(2), "{url}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("give an origin, http(s)://host[:port], without a path")
                && !stderr(&o).contains("base URL"),
            "{url}: {}",
            stderr(&o)
        );
    }
}
