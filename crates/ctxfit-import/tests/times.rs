//! The times logs record for their messages: what tells the replay when the provider's prompt cache expired.

use ctxfit_import::{import_str, parse_timestamp};

#[test]
fn rfc_3339_times_as_logs_write_them() {
    assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_timestamp("2026-02-11T15:47:57.771Z"),
        Some(1_770_824_877_771)
    );
    // more digits of the fraction than milliseconds, and an offset
    assert_eq!(
        parse_timestamp("2026-02-11T16:47:57.771999+01:00"),
        Some(1_770_824_877_771)
    );
    assert_eq!(
        parse_timestamp("2026-02-11T10:17:57.7-05:30"),
        Some(1_770_824_877_700)
    );
    // a leap day, and the end of a century's non-leap year
    assert_eq!(
        parse_timestamp("2024-02-29T00:00:00Z"),
        Some(1_709_164_800_000)
    );
    assert_eq!(
        parse_timestamp("2100-03-01T00:00:00Z"),
        Some(4_107_542_400_000)
    );
    for bad in [
        "",
        "2026-02-11",
        "2026-02-11T15:47:57",
        "2026-13-11T15:47:57Z",
        "2026-02-11T25:47:57Z",
        "2026-02-11T15:47:57.Z",
        "2026-02-11T15:47:57+0100",
        "1969-12-31T23:59:59Z",
        "२०२६-02-11T15:47:57Z",
        "yesterday at noon",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad:?}");
    }
}

#[test]
fn a_claude_code_message_has_the_time_of_its_last_line() {
    // one response streamed as two lines (text, then a tool call), its result, the next response
    let log = [
        r#"{"type":"user","timestamp":"2026-02-11T15:00:00.000Z","message":{"role":"user","content":"fix it"}}"#,
        r#"{"type":"assistant","timestamp":"2026-02-11T15:00:02.000Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Looking."}]}}"#,
        r#"{"type":"assistant","timestamp":"2026-02-11T15:00:03.000Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#,
        r#"{"type":"user","timestamp":"2026-02-11T15:00:04.500Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.rs"}]}}"#,
        r#"{"type":"system","subtype":"turn_duration","timestamp":"2026-02-11T15:00:05.000Z"}"#,
        r#"{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Done."}]}}"#,
    ]
    .join("\n");
    let sessions = import_str(&log, None).unwrap();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(s.conversation.messages.len(), 4);
    let t = |text| parse_timestamp(text);
    assert_eq!(
        s.times,
        vec![
            t("2026-02-11T15:00:00.000Z"),
            t("2026-02-11T15:00:03.000Z"),
            t("2026-02-11T15:00:04.500Z"),
            None,
        ]
    );
}

#[test]
fn a_codex_item_has_its_line_time_and_a_log_without_times_has_none() {
    let log = [
        r#"{"timestamp":"2025-10-01T08:00:00.000Z","type":"session_meta","payload":{"id":"s","instructions":"be brief"}}"#,
        r#"{"timestamp":"2025-10-01T08:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
        r#"{"timestamp":"2025-10-01T08:10:01.250Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}"#,
    ]
    .join("\n");
    let s = &import_str(&log, None).unwrap()[0];
    assert_eq!(
        s.times,
        vec![Some(1_759_305_601_000), Some(1_759_306_201_250)]
    );
    let plain = r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    assert!(import_str(plain, None).unwrap()[0].times.is_empty());
}

#[test]
fn a_mini_swe_agent_message_has_the_time_in_its_extra() {
    let doc = serde_json::json!({
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug.", "extra": {}},
            {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls\n```",
             "extra": {"timestamp": 1775877016.2104566}},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>",
             "extra": {"timestamp": 1775877021.008}},
            {"role": "exit", "content": "", "extra": {"timestamp": 1775877022.0}}
        ]
    });
    let s = &import_str(&doc.to_string(), None).unwrap()[0];
    assert_eq!(s.conversation.messages.len(), 4);
    assert_eq!(
        s.times,
        vec![None, None, Some(1_775_877_016_210), Some(1_775_877_021_008)]
    );
}

#[test]
fn a_claude_code_session_says_which_cache_it_asked_for() {
    let line = |id: &str, ttl_field: &str| {
        format!(
            r#"{{"type":"assistant","timestamp":"2026-02-11T15:00:02.000Z","message":{{"id":"{id}","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":3,"cache_read_input_tokens":0,"cache_creation_input_tokens":900,"cache_creation":{{"{ttl_field}":900}}}}}}}}"#
        )
    };
    let user = r#"{"type":"user","timestamp":"2026-02-11T15:00:00.000Z","message":{"role":"user","content":"hi"}}"#;
    let ttl = |log: String| import_str(&log, None).unwrap()[0].cache_ttl;
    assert_eq!(
        ttl(format!(
            "{user}\n{}",
            line("m1", "ephemeral_1h_input_tokens")
        )),
        Some(3600)
    );
    assert_eq!(
        ttl(format!(
            "{user}\n{}",
            line("m1", "ephemeral_5m_input_tokens")
        )),
        Some(300)
    );
    // a one-hour write anywhere in the window makes it a one-hour session
    assert_eq!(
        ttl(format!(
            "{user}\n{}\n{user}\n{}",
            line("m1", "ephemeral_5m_input_tokens"),
            line("m2", "ephemeral_1h_input_tokens")
        )),
        Some(3600)
    );
    let no_usage = r#"{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}"#;
    assert_eq!(ttl(format!("{user}\n{no_usage}")), None);
}

#[test]
fn a_claude_code_session_says_what_each_request_was_billed() {
    // one response streamed as two lines sharing its id: the usage of the last line is the request's bill
    let assistant = |id: &str, text: &str, read: u64, write: u64| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":3,"cache_read_input_tokens":{read},"cache_creation_input_tokens":{write}}}}}}}"#
        )
    };
    let user = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
    let log = [
        user.to_owned(),
        assistant("m1", "a", 0, 20_000),
        user.to_owned(),
        assistant("m2", "b", 20_000, 50),
        assistant("m2", "c", 20_000, 60),
    ]
    .join("\n");
    let s = &import_str(&log, None).unwrap()[0];
    assert_eq!(s.conversation.messages.len(), 4);
    assert_eq!(s.billed, vec![None, Some(20_003), None, Some(20_063)]);
    // a log without usage bills nothing
    let bare = format!(
        "{user}\n{}",
        r#"{"type":"assistant","message":{"id":"m1","role":"assistant","content":"ok"}}"#
    );
    assert!(import_str(&bare, None).unwrap()[0].billed.is_empty());
    // nor does the stand-in message Claude Code writes for a request that failed (a usage of zeros)
    let failed = format!(
        "{user}\n{}\n{user}\n{}",
        r#"{"type":"assistant","message":{"id":"e1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error"}],"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}"#,
        assistant("m3", "d", 100, 0)
    );
    assert_eq!(
        import_str(&failed, None).unwrap()[0].billed,
        vec![None, None, None, Some(103)]
    );
}
