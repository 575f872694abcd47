//! The long sessions of the corpus (`sessions/`, gzipped): Claude Code (and three Gemini CLI sessions beside
//! them), Codex CLI (and seven GitHub Copilot CLI logs beside them) and mini-swe-agent. Every file imports; the
//! totals per folder are pinned, and the Codex rollouts are checked item for item against the wire format.

use std::io::Read;
use std::path::{Path, PathBuf};

use ctxfit_import::{import_str, Session, SourceFormat};
use ctxfit_model::{begins_response, responses, ToolCallIndex, Value};

fn gz_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gz"))
        .collect();
    files.sort();
    files
}

fn gunzip(path: &Path) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// (family folder, files read, sessions, messages, tool calls, tool results)
const EXPECTED: &[(&str, usize, usize, usize, usize, usize)] = &[
    ("claude-code-entire", 158, 196, 19654, 10214, 10204),
    ("codex-agentv", 19, 26, 6941, 2319, 2315),
    // without the final `exit` entry of each trajectory (the submission, never sent to the model)
    ("mini-swe-agent", 92, 92, 12823, 6362, 6276),
];

fn family(corpus: &Path, name: &str) -> Vec<(PathBuf, Result<Vec<Session>, String>)> {
    gz_files(&corpus.join("sessions").join(name))
        .into_iter()
        .map(|p| {
            let r = import_str(&gunzip(&p), None).map_err(|e| e.to_string());
            (p, r)
        })
        .collect()
}

#[test]
fn every_long_session_imports_with_the_expected_totals() {
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let mut actual = Vec::new();
    let mut unread = Vec::new();
    for name in ["claude-code-entire", "codex-agentv", "mini-swe-agent"] {
        let (mut files, mut sessions, mut messages, mut calls, mut results) = (0, 0, 0, 0, 0);
        for (path, r) in family(&corpus, name) {
            match r {
                Ok(ss) => {
                    files += 1;
                    for s in ss {
                        sessions += 1;
                        messages += s.conversation.messages.len();
                        calls += s.conversation.tool_use_count();
                        results += s.conversation.tool_result_count();
                    }
                }
                Err(e) => unread.push(format!(
                    "{}: {e}",
                    path.file_name().unwrap().to_string_lossy()
                )),
            }
        }
        actual.push(format!(
            "(\"{name}\", {files}, {sessions}, {messages}, {calls}, {results})"
        ));
    }
    let expected: Vec<String> = EXPECTED
        .iter()
        .map(|(n, f, s, m, c, r)| format!("(\"{n}\", {f}, {s}, {m}, {c}, {r})"))
        .collect();
    assert_eq!(actual, expected);
    assert!(unread.is_empty(), "{unread:#?}");
}

/// Every `response_item` of every Codex rollout is an OpenAI Responses item: read and written back, it is the same
/// JSON value.
#[test]
fn codex_items_round_trip_losslessly() {
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let mut checked = 0;
    for path in gz_files(&corpus.join("sessions/codex-agentv")) {
        for line in gunzip(&path).lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let Some(item) = v.get("payload").filter(|_| v["type"] == "response_item") else {
                continue;
            };
            let msg = responses::read_item(item.clone(), "payload").unwrap();
            assert_eq!(&responses::write_item(&msg), item, "{}", path.display());
            checked += 1;
        }
    }
    assert!(checked > 6000, "{checked}");
}

/// A Codex session is linked like any other: each output answers a call made before it, and the recorded usage
/// is one entry per request but for the five the user interrupted (`turn_aborted`) before the usage came.
#[test]
fn codex_sessions_link_calls_and_keep_the_recorded_usage() {
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let (mut requests, mut recorded) = (0, 0);
    for (path, r) in family(&corpus, "codex-agentv") {
        for s in r.unwrap() {
            if s.source != SourceFormat::Codex {
                assert_eq!(s.source, SourceFormat::CopilotCli, "{}", path.display());
                continue;
            }
            let conv = &s.conversation;
            let index = ToolCallIndex::build(conv);
            assert_eq!(index.orphan_results().count(), 0, "{}", path.display());
            assert!(
                conv.system.is_some(),
                "{}: the instructions",
                path.display()
            );
            requests += (0..conv.messages.len())
                .filter(|&i| begins_response(&conv.messages, i))
                .count();
            recorded += s.usage.len();
            assert!(s
                .usage
                .iter()
                .all(|u| u.cached_input_tokens <= u.input_tokens));
        }
    }
    assert_eq!((requests, recorded), (1239, 1234));
}

#[test]
fn claude_code_records_written_as_one_json_array_import_as_their_lines_do() {
    // the attio sessions were one JSON array each (a hooks template's `logs/chat.json`), split into lines for
    // the corpus: joined back, they import to the same sessions, gzipped or not, by detection
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let files = gz_files(&corpus.join("sessions").join("claude-code-attio"));
    assert_eq!(files.len(), 6);
    for path in files {
        let lines = gunzip(&path);
        let records: Vec<Value> = lines
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let array = serde_json::to_string_pretty(&records).unwrap();
        assert_eq!(
            ctxfit_import::detect(&array),
            Some(SourceFormat::ClaudeCode)
        );
        let (a, b) = (
            import_str(&lines, None).unwrap(),
            import_str(&array, None).unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{}", path.display());
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(a.conversation, b.conversation, "{}", path.display());
            assert_eq!(
                (&a.name, &a.times, &a.billed),
                (&b.name, &b.times, &b.billed)
            );
        }
    }
}
