//! Reading sessions as users have them: `stats`, `tokens`, `convert`, folders, gzip, problems.

use super::*;

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
    // what the log's usage says was billed: every request, with what the messages leave out (the replay's bill
    // under `none` is the same sum)
    assert_eq!(
        v["billed"],
        serde_json::json!({"requests": 53, "input_tokens": 3_796_266, "largest_request": 105_923})
    );
    let text = ctxfit(&["stats", "--sample"], None);
    assert!(
        stdout(&text).contains("tool results  48\n")
            && stdout(&text).contains(
                "billed        3,796,266 input tokens over 53 requests, the largest 105,923"
            ),
        "{}",
        stdout(&text)
    );
    // a log without usage has no bill to show
    let plain = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]"#;
    let o = ctxfit(&["stats", "--json", "-"], Some(plain.as_bytes()));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["billed"].is_null(), "{v}");
    assert!(!stdout(&ctxfit(&["stats", "-"], Some(plain.as_bytes()))).contains("billed"));
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
fn an_openhands_conversation_kept_one_event_a_file_is_one_session() {
    // OpenHands 0.x: `sessions/ID/events/N.json`, a cache of the same events in pages beside them, and its
    // metadata; 1.x: `conversations/ID/events/event-NNNNN-ID.json` and `base_state.json`
    let dir = temp_dir("openhands-folders");
    let old = dir.join("sessions/abc");
    std::fs::create_dir_all(old.join("events")).unwrap();
    std::fs::create_dir_all(old.join("event_cache")).unwrap();
    let events = [
        r#"{"id":0,"source":"user","action":"message","args":{"content":"Fix it"}}"#,
        r#"{"id":1,"source":"agent","action":"run","args":{"command":"ls","thought":"Look."}}"#,
        r#"{"id":2,"source":"agent","cause":1,"observation":"run","content":"a.py"}"#,
    ];
    // more than ten events, so that `10.json` comes after `9.json`, not after `1.json`
    for i in 0..12 {
        let event = events.get(i).map_or_else(
            || format!(r#"{{"id":{i},"source":"agent","action":"message","args":{{"content":"note {i}"}}}}"#),
            |e| (*e).to_owned(),
        );
        std::fs::write(old.join(format!("events/{i}.json")), event).unwrap();
    }
    std::fs::write(
        old.join("event_cache/0-25.json"),
        format!("[{}]", events.join(",")),
    )
    .unwrap();
    std::fs::write(old.join("metadata.json"), r#"{"id":"abc"}"#).unwrap();
    let new = dir.join("conversations/c1");
    std::fs::create_dir_all(new.join("events")).unwrap();
    let v1 = [
        r#"{"kind":"MessageEvent","id":"u1","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"Fix it"}]}}"#,
        r#"{"kind":"ActionEvent","id":"a1","source":"agent","tool_name":"terminal","tool_call_id":"c1","tool_call":{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}},"llm_response_id":"r1"}"#,
        r#"{"kind":"ObservationEvent","id":"o1","source":"environment","tool_name":"terminal","tool_call_id":"c1","observation":{"content":[{"type":"text","text":"a.py"}]}}"#,
    ];
    for (i, event) in v1.iter().enumerate() {
        std::fs::write(new.join(format!("events/event-{i:05}-x{i}.json")), event).unwrap();
    }
    std::fs::write(new.join("base_state.json"), r#"{"id":"c1"}"#).unwrap();

    let o = ctxfit(&["stats", "--json", dir.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("event_cache: passed over: OpenHands' cache"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("2 metadata file(s) passed over"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (
            v["files"].as_u64(),
            v["sessions"].as_u64(),
            v["tool_calls"].as_u64(),
            v["tool_results"].as_u64()
        ),
        (Some(2), Some(2), Some(2), Some(2))
    );
    // one conversation's folder given by itself, its events in their order
    let o = ctxfit(
        &[
            "convert",
            old.join("events").to_str().unwrap(),
            "--to",
            "openai",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let messages: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let last: Vec<&str> = messages.as_array().unwrap()[9..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(last, ["note 9", "note 10", "note 11"]);
    // together the events hold at most what one file may
    let events_dir = old.join("events");
    let o = ctxfit(
        &[
            "--max-inflated",
            "300",
            "stats",
            events_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("more than 300 bytes"), "{}", stderr(&o));
    // an event that is no file is refused before it is opened (a FIFO would block the read for ever)
    let fifo = old.join("events/12.json");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let o = ctxfit(&["stats", events_dir.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains("12.json: cannot read: not a regular file"),
            "{}",
            stderr(&o)
        );
        std::fs::remove_file(&fifo).unwrap();
    }
    // a broken event is named
    std::fs::write(old.join("events/5.json"), "{\"id\": 5,").unwrap();
    let o = ctxfit(&["stats", old.join("events").to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("events: 5.json: malformed JSON at line 1, column 9"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
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
fn a_key_written_twice_in_a_record_is_warned_about_and_refused_under_strict() {
    // a real Claude Code session with one record's `sessionId` written twice (the first value is lost on reading)
    let dir = temp_dir("repeated-key");
    let src =
        corpus().join("sessions/claude-code-attio/8664c04e-75fa-497d-ac11-57d69997e3ec.jsonl.gz");
    let whole =
        ctxfit_import::files::decode_text(ctxfit_import::files::read_file(&src).unwrap()).unwrap();
    let mut lines: Vec<String> = whole.lines().map(str::to_owned).collect();
    let at = (lines.len() / 2..lines.len())
        .find(|&i| lines[i].contains("\"sessionId\":"))
        .unwrap();
    let byte = lines[at].find("\"sessionId\":").unwrap();
    let column = lines[at][..byte].chars().count() + 1;
    lines[at] = lines[at].replacen("\"sessionId\":", "\"sessionId\":\"lost\",\"sessionId\":", 1);
    let file = dir.join("twice.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let path = file.to_str().unwrap();
    let o = ctxfit(&["stats", "--json", path], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let said = format!(
        "line {}, column {}: the key \"sessionId\" is written twice in one object; read with its last value, the \
         earlier one left out",
        at + 1,
        column + "\"sessionId\":\"lost\",".chars().count()
    );
    assert_eq!(v["warnings"], serde_json::json!([said]));
    // the session reads as the original does
    let original = ctxfit(&["stats", "--json", src.to_str().unwrap()], None);
    let w: serde_json::Value = serde_json::from_str(&stdout(&original)).unwrap();
    assert_eq!(
        (&v["messages"], &v["tokens"]),
        (&w["messages"], &w["tokens"])
    );
    let out = dir.join("out.jsonl");
    let o = ctxfit(
        &["compact", "--strict", path, "-o", out.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("refused under --strict: {said}")),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_live_log_cut_short_in_its_last_line_is_read_without_it_and_warned_about() {
    // a real Claude Code session as it is while still being written: cut inside its last record
    let dir = temp_dir("cut-short");
    let src =
        corpus().join("sessions/claude-code-attio/8664c04e-75fa-497d-ac11-57d69997e3ec.jsonl.gz");
    let whole =
        ctxfit_import::files::decode_text(ctxfit_import::files::read_file(&src).unwrap()).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let kept = lines.len() / 2;
    let cut_line = lines[kept];
    let text = format!(
        "{}\n{}",
        lines[..kept].join("\n"),
        &cut_line[..cut_line.floor_char_boundary(cut_line.len() / 2)]
    );
    let file = dir.join("live.jsonl");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    let o = ctxfit(&["stats", "--json", path], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let said = format!(
        "line {} is cut short (a log still being written?): read without it",
        kept + 1
    );
    assert_eq!(v["warnings"][0], said.as_str());
    // the same messages as the lines before the cut, written whole
    std::fs::write(dir.join("head.jsonl"), lines[..kept].join("\n")).unwrap();
    let head = ctxfit(
        &["stats", "--json", dir.join("head.jsonl").to_str().unwrap()],
        None,
    );
    let h: serde_json::Value = serde_json::from_str(&stdout(&head)).unwrap();
    assert!(v["messages"].as_u64().unwrap() > 10);
    assert_eq!(v["messages"], h["messages"]);
    assert_eq!(v["tokens"], h["tokens"]);
    let o = ctxfit(&["replay", "--policy", "smart", path], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("live.jsonl: {said}")),
        "{}",
        stderr(&o)
    );
    // counting its tokens says so too, on standard error and in the JSON
    let o = ctxfit(&["tokens", "--conversation", "--json", path], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("live.jsonl: {said}")),
        "{}",
        stderr(&o)
    );
    let t: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(t["warnings"][0], said.as_str());
    let o = ctxfit(&["compact", "--strict", path], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("refused under --strict: {said}")),
        "{}",
        stderr(&o)
    );
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
    // the largest results of the whole folder, read one file at a time: a tie keeps the order of one pass
    let largest = |top: &str| {
        let o = ctxfit(&["stats", "--json", "--top", top, folder], None);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (v["largest_tool_results"].as_array().unwrap().iter())
            .map(|l| l["session"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let both = largest("5");
    assert_eq!(both.len(), 2);
    assert_eq!(largest("1"), both[..1]);

    let o = ctxfit(&["convert", folder, "--to", "openai"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give it with -o"), "{}", stderr(&o));
    let convert = |to: &str, out: &Path| {
        ctxfit(
            &["convert", folder, "--to", to, "-o", out.to_str().unwrap()],
            None,
        )
    };
    let out = dir.join("out");
    let o = convert("openai", &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    for file in ["a.openai.json", "sub/b.openai.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(file)).unwrap()).unwrap();
        assert_eq!(v["messages"][2]["role"], "tool", "{file}");
    }
    // an output folder inside the input folder is not read as input: run twice, the same two files, not the
    // first run's converted again into a folder below it
    let inside = input.join("converted");
    for _ in 0..2 {
        let o = convert("responses", &inside);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("converted 2 file(s) into"),
            "{}",
            stderr(&o)
        );
    }
    let mut written: Vec<String> = Vec::new();
    let mut folders = vec![inside.clone()];
    while let Some(d) = folders.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                folders.push(e.path());
            } else {
                written.push(
                    e.path()
                        .strip_prefix(&inside)
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    written.sort();
    assert_eq!(written, ["a.responses.json", "sub/b.responses.json"]);
    // the input folder itself as the output is refused, nothing written
    let before = std::fs::read_dir(&input).unwrap().count();
    let o = convert("openai", &input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the output folder is the input folder"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&input).unwrap().count(), before);
    std::fs::remove_dir_all(&dir).unwrap();
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
fn an_input_without_end_is_refused_at_the_limit_in_bounded_memory() {
    let limit = "it holds more than 1048576 bytes, the limit";
    // a device that never ends
    let o = ctxfit(&["stats", "/dev/zero", "--max-inflated", "1M"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("/dev/zero: {limit}")),
        "{}",
        stderr(&o)
    );
    // standard input past the limit
    let o = ctxfit(
        &["stats", "-", "--max-inflated", "1M"],
        Some(&vec![b' '; (1 << 20) + 1]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("<stdin>: {limit}")),
        "{}",
        stderr(&o)
    );
    // a regular file past it, refused before it is read; at the limit, read
    let dir = temp_dir("large");
    let path = dir.join("large.jsonl");
    std::fs::write(&path, vec![b'\n'; (1 << 20) + 1]).unwrap();
    let o = ctxfit(
        &["stats", path.to_str().unwrap(), "--max-inflated", "1M"],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(limit), "{}", stderr(&o));
    std::fs::write(&path, vec![b'\n'; 1 << 20]).unwrap();
    let o = ctxfit(
        &["stats", path.to_str().unwrap(), "--max-inflated", "1M"],
        None,
    );
    assert!(!stderr(&o).contains("the limit"), "{}", stderr(&o));
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
#[cfg(unix)]
fn file_names_that_are_not_utf8_are_read_and_written_by_their_own_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("names");
    let sample = ctxfit(&["convert", "--sample", "--to", "anthropic"], None);
    assert!(sample.status.success(), "{}", stderr(&sample));
    // a Latin-1 name, as an old archive has them
    let file = dir.join(OsStr::from_bytes(b"caf\xe9.json"));
    if std::fs::write(&file, &sample.stdout).is_err() {
        // (a file system that refuses such names: nothing to test)
        return;
    }
    let run = |args: &[&OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_ctxfit"))
            .args(args)
            .output()
            .unwrap()
    };
    let s = |t: &'static str| OsStr::new(t);
    // the folder walk reads it (it said "No such file or directory" of a name it had made text)
    let o = run(&[s("stats"), s("--json"), dir.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"], 1, "{}", stderr(&o));
    // so does naming it (refused as an argument before), and -o writes such a name
    let out = dir.join(OsStr::from_bytes(b"out\xff.json"));
    let o = run(&[s("compact"), file.as_os_str(), s("-o"), out.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.is_file());
    let o = run(&[s("replay"), dir.as_os_str(), s("--policy"), s("smart")]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a folder converted keeps each name's bytes
    let converted = temp_dir("names-out");
    let o = run(&[
        s("convert"),
        dir.as_os_str(),
        s("--to"),
        s("openai"),
        s("-o"),
        converted.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(converted
        .join(OsStr::from_bytes(b"caf\xe9.openai.json"))
        .is_file());
    let o = run(&[s("tokens"), file.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&converted).unwrap();
}

/// A shared folder of sessions is someone else's: a file name, a tool's name or a path it names that holds a
/// terminal's control sequences (set the title, clear the screen, recolour) is shown with them escaped, in
/// messages and tables alike — what a command writes as data is not touched.
#[test]
#[cfg(unix)]
fn control_characters_in_names_are_shown_escaped() {
    let dir = temp_dir("controls");
    let bad = dir.join("b\u{1b}]0;pwned\u{7}.json");
    std::fs::write(&bad, "not json").unwrap();
    let session = serde_json::json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x\u{1b}[2Jwipe",
         "input": {"file_path": "a\u{9b}31m.py", "old_string": "a", "new_string": "b"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok \u{1b}[31mred"}]},
        {"role": "assistant", "content": "done"}
    ]});
    let good = dir.join("good.json");
    std::fs::write(&good, session.to_string()).unwrap();
    let o = ctxfit(&["stats", dir.to_str().unwrap()], None);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "{out}{err}"
    );
    assert!(
        err.contains(r"b\u{1b}]0;pwned\u{7}.json:1:2: malformed JSON"),
        "{err}"
    );
    assert!(out.contains(r"x\u{1b}[2Jwipe"), "{out}");
    let o = ctxfit(&["stats", bad.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains('\u{1b}'), "{}", stderr(&o));
    // the changelog's paths (an edit tool named so is no edit tool: a Claude Code `Edit` is)
    let edit = session.to_string().replace(r"x\u001b[2Jwipe", "Edit");
    std::fs::write(&good, edit).unwrap();
    let o = ctxfit(&["changelog", good.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(r"a\u{9b}31m.py"), "{}", stdout(&o));
    // data is written as it is: the conversation converted keeps the result's own bytes
    let o = ctxfit(
        &["convert", good.to_str().unwrap(), "--to", "anthropic"],
        None,
    );
    assert!(stdout(&o).contains("ok \\u001b[31mred"), "{}", stdout(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_input_of_tiny_values_is_refused_before_it_is_read() {
    // 2,000,000 empty objects, 6 MB: read, they would take about 160 MB (30 MB of them took 817 MB)
    let dir = temp_dir("values");
    let file = dir.join("tiny.jsonl");
    std::fs::write(&file, "{}\n".repeat(2_000_000)).unwrap();
    let o = ctxfit(&["stats", file.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("refused before it is read"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
