//! The `excerpt` rule through the compactor: what it keeps of re-reads, logs, listings and numbered reads, and that
//! on every corpus session what it keeps is the original's own lines, in order.

use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_import::import_file;
use ctxfit_testkit::{corpus_dir, corpus_trajectory_files};
mod common;

use common::{excerpted, session, stale_shell, under, EAGER};
use serde_json::json;

fn numbered(lines: &[String], from: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}→{l}", i + from))
        .collect::<Vec<_>>()
        .join("\n")
}

fn file(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("    let value_{i} = compute_{i}(input, {i});"))
        .collect()
}

#[test]
fn a_re_read_keeps_only_what_changed_and_the_first_read_loses_only_its_numbers() {
    let before = file(60);
    let mut after = before.clone();
    after[30] = "    let value_30 = fixed(input);".into();
    let read = |text: String| ("Read", json!({"file_path": "/src/lib.rs"}), text);
    let conv = session(&[
        read(numbered(&before, 1)),
        read(numbered(&after, 1)),
        ("Bash", json!({"command": "ls"}), "ok".into()),
    ]);
    let out = excerpted(&conv);
    let expect_first = format!(
        "[lines 1–60; numbers dropped, count from 1]\n{}",
        before.join("\n")
    );
    assert_eq!(out[0], expect_first);
    assert_eq!(
        out[1],
        "[lines 1–60; numbers dropped, count from 1]\n\
         [… 30 lines shown elsewhere in this conversation]\n    \
         let value_30 = fixed(input);\n\
         [… 29 lines shown elsewhere in this conversation]\n\
         [excerpt of a stale result — re-read /src/lib.rs for the full text]"
    );
    assert_eq!(out[2], "ok", "the newest result is never touched");
}

#[test]
fn a_long_log_keeps_head_tail_and_outcomes() {
    let mut log: Vec<String> = (0..200)
        .map(|i| format!("test_module::case_{i:03} ... ok"))
        .collect();
    log[120] = "test_module::case_120 ... FAILED".into();
    log[121] = "thread 'case_120' panicked at src/lib.rs:40:9".into();
    let conv = stale_shell("cargo test", &log);
    let out = excerpted(&conv);
    let lines: Vec<&str> = out[0].lines().collect();
    assert_eq!(
        &lines[..2],
        &log[..2].iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    assert!(lines.contains(&"test_module::case_120 ... FAILED"));
    assert!(lines.contains(&"thread 'case_120' panicked at src/lib.rs:40:9"));
    assert_eq!(lines[2], "[… 118 lines omitted]", "{lines:?}");
    assert_eq!(lines[5], "[… 74 lines omitted]", "{lines:?}");
    assert_eq!(lines.len(), 2 + 1 + 2 + 1 + 4 + 1);
    assert_eq!(lines[lines.len() - 2], "test_module::case_199 ... ok");
    assert_eq!(
        lines[lines.len() - 1],
        "[excerpt of a stale result — re-run the command for its full output]"
    );
}

#[test]
fn a_commands_json_or_manual_is_a_document_kept_whole_where_a_log_is_cut() {
    // the same 120 lines of 60-odd characters: as a script's log, as JSON, as a manual
    let entries: Vec<String> = (0..120)
        .map(|i| {
            format!("  {{\"id\": \"issue-{i:03}\", \"title\": \"Task number {i} of the plan\"}},")
        })
        .collect();
    let log = stale_shell("./sync.sh", &entries);
    let cut = excerpted(&log);
    assert!(
        cut[0].lines().count() < 12,
        "a log keeps its head, tail and outcomes: {}",
        cut[0]
    );

    let mut json = vec!["[".to_owned()];
    json.extend(entries.iter().cloned());
    json.push("]".to_owned());
    for command in ["bd list --json", "curl -s https://api.example.com/issues"] {
        let out = excerpted(&stale_shell(command, &json));
        assert_eq!(out[0], json.join("\n"), "{command}");
    }
    // Codex CLI wraps a command's output in a few lines of its own
    let mut wrapped = vec![
        "Chunk ID: 19dc0a".to_owned(),
        "Process exited with code 0".to_owned(),
        "Output:".to_owned(),
    ];
    wrapped.extend(json.iter().cloned());
    assert_eq!(
        excerpted(&stale_shell("gh issue list --json id,title", &wrapped))[0],
        wrapped.join("\n")
    );

    let manual: Vec<String> = (0..120)
        .map(|i| format!("  --option-{i:03} <VALUE>    Set the value of option {i} for this run"))
        .collect();
    for command in [
        "bd update --help | sed -n '1,220p'",
        "git help log",
        "man rsync",
    ] {
        assert_eq!(
            excerpted(&stale_shell(command, &manual))[0],
            manual.join("\n"),
            "{command}"
        );
    }
    assert!(
        excerpted(&stale_shell("./configure", &manual))[0].contains("lines omitted]"),
        "the same text printed by a run is its log"
    );
}

#[test]
fn a_stale_traceback_keeps_the_agents_own_frames_and_the_error() {
    let mut log = vec![
        "Running the reproduction script".to_owned(),
        "step 1 ok".to_owned(),
    ];
    log.extend((0..30).map(|i| format!("progress line {i}")));
    log.push("Traceback (most recent call last):".into());
    log.push("  File \"/testbed/repro.py\", line 12, in <module>".into());
    log.push("    main()".into());
    for i in 0..6 {
        log.push(format!(
            "  File \"/usr/lib/python3.11/site-packages/lib/mod_{i}.py\", line {i}, in call_{i}"
        ));
        log.push(format!("    return call_{}(x)", i + 1));
        log.push("           ^^^^^^^^^".into());
    }
    log.push("  File \"<frozen importlib._bootstrap>\", line 1204, in _gcd_import".into());
    log.push("  File \"/testbed/pkg/core.py\", line 40, in parse".into());
    log.push("    raise ValueError(value)".into());
    log.push("ValueError: bad value".into());
    log.extend((0..4).map(|i| format!("cleanup {i}")));
    let conv = stale_shell("python repro.py", &log);
    let out = excerpted(&conv);
    let lines: Vec<&str> = out[0].lines().collect();
    // the agent's own frames and the error
    assert!(
        lines.contains(&"  File \"/testbed/repro.py\", line 12, in <module>"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"  File \"/testbed/pkg/core.py\", line 40, in parse"),
        "{lines:?}"
    );
    assert!(lines.contains(&"ValueError: bad value"), "{lines:?}");
    assert!(
        lines.contains(&"Traceback (most recent call last):"),
        "{lines:?}"
    );
    // not the installed package's frames, nor the interpreter's: one gap for all of them
    assert!(
        !out[0].contains("site-packages") && !out[0].contains("<frozen"),
        "{lines:?}"
    );
    assert!(lines.contains(&"[… 20 lines omitted]"), "{lines:?}");
}

/// A Python traceback through `depth` modules of the agent's own code (an import chain), with the code line and
/// the carets under each frame.
fn import_chain(depth: usize, error: &str) -> Vec<String> {
    let mut log = vec!["Traceback (most recent call last):".to_owned()];
    for i in 0..depth {
        log.push(format!(
            "  File \"/testbed/pkg/mod_{i}.py\", line {}, in <module>",
            i + 3
        ));
        log.push(format!("    from .mod_{} import name_{i}", i + 1));
        log.push("    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^".into());
    }
    log.push(error.to_owned());
    log
}

#[test]
fn a_deep_traceback_keeps_where_it_started_and_where_it_failed() {
    let mut log = vec![
        "Running the tests".to_owned(),
        "collected 1 item".to_owned(),
    ];
    log.extend(import_chain(
        12,
        "ImportError: cannot import name 'name_11'",
    ));
    log.push(String::new());
    log.push("During handling of the above exception, another exception occurred:".into());
    log.push(String::new());
    log.extend(import_chain(5, "RuntimeError: setup failed"));
    log.push("1 error in 0.31s".into());
    let conv = stale_shell("python -m pytest tests", &log);
    let frame = |i: usize| {
        format!(
            "  File \"/testbed/pkg/mod_{i}.py\", line {}, in <module>",
            i + 3
        )
    };

    let out = excerpted(&conv);
    let lines: Vec<&str> = out[0].lines().collect();
    let frames = |part: &[&str]| -> Vec<String> {
        part.iter()
            .filter(|l| l.contains("File \""))
            .map(|l| (*l).to_owned())
            .collect()
    };
    let second = lines
        .iter()
        .position(|l| l.starts_with("During handling"))
        .unwrap();
    // the first traceback: its first frame and its last three, then the error
    assert_eq!(
        frames(&lines[..second]),
        [frame(0), frame(9), frame(10), frame(11)],
        "{lines:?}"
    );
    assert!(
        lines[..second].contains(&"[… 26 lines omitted]"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"ImportError: cannot import name 'name_11'"),
        "{lines:?}"
    );
    // the chained one is a traceback of its own: five frames, of which the second stands between its first and
    // its last three
    assert_eq!(
        frames(&lines[second..]),
        [frame(0), frame(2), frame(3), frame(4)],
        "{lines:?}"
    );
    assert!(lines.contains(&"RuntimeError: setup failed"), "{lines:?}");
    assert!(lines.contains(&"1 error in 0.31s"), "{lines:?}");

    // the window is the profile's to set: with frames_last = 100 every frame of the agent's code stays
    let wide = PolicyFile::parse(
        "[profiles.wide]\nextends = \"smart\"\ncache_write_premium = 0\n[[profiles.wide.rules]]\nrule = \"excerpt\"\nparams = { frames_first = 0, frames_last = 100 }\n",
        "test.toml",
    )
    .unwrap();
    let out = under(&conv, &wide, "wide");
    let frames = out[0].lines().filter(|l| l.contains("File \"")).count();
    assert_eq!(frames, 12 + 5, "{out:?}");
}

#[test]
fn a_gap_of_one_short_line_keeps_the_line() {
    let mut log = vec!["build 1".to_owned(), "build 2".to_owned()];
    log.extend((0..30).map(|i| format!("compiling module_{i} of the workspace")));
    log.extend(
        [
            "error: first failure in module alpha",
            "  ok",
            "error: second failure in module beta",
            "a line that says nothing of the outcome and is longer than a marker",
            "error: third failure in module gamma",
        ]
        .map(str::to_owned),
    );
    log.extend((0..4).map(|i| format!("summary line {i}")));
    let conv = stale_shell("make", &log);
    let out = excerpted(&conv);
    let lines: Vec<&str> = out[0].lines().collect();
    assert_eq!(
        lines[2..9],
        [
            "[… 30 lines omitted]",
            "error: first failure in module alpha",
            "  ok",
            "error: second failure in module beta",
            "[… 1 line omitted]",
            "error: third failure in module gamma",
            "summary line 0",
        ],
        "{lines:?}"
    );
}

#[test]
fn a_long_listing_keeps_each_entrys_mode_and_name() {
    let mut out = vec!["/testbed".to_owned(), "total 172".to_owned()];
    let entries = [
        ("drwxrwxrwx", "."),
        ("drwxr-xr-x", ".."),
        ("-rw-r--r--", ".editorconfig"),
        ("drwxrwxrwx", ".git"),
        ("-rw-r--r--", "AUTHORS"),
        ("lrwxrwxrwx", "latest -> build/2025"),
        ("-rwxr-xr-x", "run tests.sh"),
    ];
    for (i, (mode, name)) in entries.iter().enumerate() {
        out.push(format!(
            "{mode} {} root root {:>5} Sep 10  2025 {name}",
            i % 3 + 1,
            100 * i + 86
        ));
    }
    let short: Vec<&String> = out[2..6].iter().collect();
    let short = short
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let conv = session(&[
        ("Bash", json!({"command": "pwd && ls -la"}), out.join("\n")),
        ("Bash", json!({"command": "ls -la src"}), short.clone()),
        ("Bash", json!({"command": "git status"}), "clean".into()),
    ]);
    let got = excerpted(&conv);
    let mut want = vec![
        "/testbed".to_owned(),
        "total 172".to_owned(),
        "[mode and name only: the links, owner, group, size and date of 7 long-listing lines left out]".to_owned(),
    ];
    want.extend(entries.iter().map(|(mode, name)| format!("{mode} {name}")));
    want.push("[excerpt of a stale result — re-run the command for its full output]".into());
    assert_eq!(got[0].lines().collect::<Vec<_>>(), want);
    // four lines are too few to be worth a cut
    assert_eq!(got[1], short);
}

#[test]
fn a_long_listing_keeps_its_first_lines_and_a_short_one_stays() {
    let hits: Vec<String> = (0..300)
        .map(|i| format!("src/module_{i}/mod.rs:{}:fn handler_{i}()", i + 10))
        .collect();
    let conv = session(&[
        ("Grep", json!({"pattern": "fn handler"}), hits.join("\n")),
        (
            "Grep",
            json!({"pattern": "fn main"}),
            "src/main.rs:1:fn main()".into(),
        ),
        ("Bash", json!({"command": "true"}), "".into()),
    ]);
    let out = excerpted(&conv);
    let lines: Vec<&str> = out[0].lines().collect();
    assert_eq!(lines.len(), 22);
    assert_eq!(lines[19], hits[19]);
    assert_eq!(lines[20], "[… 280 lines omitted]");
    assert_eq!(out[1], "src/main.rs:1:fn main()");
}

#[test]
fn smart_keeps_ten_first_forty_last_lines_of_a_log_and_sixty_of_a_listing() {
    // the reach `cargo xtask fit-reach` chooses (and checks in CI)
    let smart = PolicyFile::parse(EAGER, "eager.toml").unwrap();
    let mut log: Vec<String> = (0..300)
        .map(|i| format!("step {i:03}: processed batch {i} of the import"))
        .collect();
    log[150] = "error: batch 150 could not be read".into();
    let out = under(&stale_shell("./import.sh", &log), &smart, "eager");
    let lines: Vec<&str> = out[0].lines().collect();
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    assert_eq!(&lines[..10], &log[..10]);
    assert_eq!(lines[10], "[… 140 lines omitted]", "{lines:?}");
    assert_eq!(lines[11], log[150]);
    assert_eq!(lines[12], "[… 109 lines omitted]", "{lines:?}");
    assert_eq!(&lines[13..53], &log[260..]);
    assert_eq!(lines.len(), 54);

    let hits: Vec<String> = (0..300)
        .map(|i| format!("src/module_{i}/mod.rs:{}:fn handler_{i}()", i + 10))
        .collect();
    let conv = session(&[
        ("Grep", json!({"pattern": "fn handler"}), hits.join("\n")),
        ("Bash", json!({"command": "true"}), "".into()),
    ]);
    let out = under(&conv, &smart, "eager");
    let lines: Vec<&str> = out[0].lines().collect();
    assert_eq!(lines.len(), 62);
    assert_eq!(lines[59], hits[59]);
    assert_eq!(lines[60], "[… 240 lines omitted]");
}

#[test]
fn small_results_and_results_without_lines_to_spare_are_kept() {
    let conv = session(&[
        ("Bash", json!({"command": "echo hi"}), "hi".into()),
        (
            "Read",
            json!({"file_path": "/a"}),
            "short file\nwithout numbers".into(),
        ),
        ("Bash", json!({"command": "true"}), "".into()),
    ]);
    assert_eq!(excerpted(&conv), ["hi", "short file\nwithout numbers", ""]);
}

/// The marker lines the rule writes.
fn is_marker(line: &str) -> bool {
    (line.starts_with("[… ") && line.ends_with(']'))
        || line.starts_with("[lines ")
        || line.starts_with("[excerpt of a stale result — ")
}

#[test]
fn on_every_corpus_session_an_excerpt_is_the_originals_lines_in_order() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus =
        corpus_dir().expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    let (mut excerpts, mut json_excerpts, mut fields_excerpts) = (0, 0, 0);
    let eager = PolicyFile::parse(EAGER, "eager.toml").unwrap();
    for path in corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            let conv = &s.conversation;
            // the text blocks of each result, one per line (the rule reads blocks as lines)
            let before: Vec<String> = conv
                .messages
                .iter()
                .flat_map(|m| {
                    m.tool_results().map(|r| {
                        let texts: Vec<&str> = r
                            .content
                            .blocks
                            .iter()
                            .filter_map(|b| b.as_text())
                            .collect();
                        texts.join("\n")
                    })
                })
                .collect();
            // under `smart` itself, every cut made at once
            let after = under(conv, &eager, "eager");
            assert_eq!(before.len(), after.len());
            for (b, a) in before.iter().zip(&after) {
                if a.replace('\n', "") == b.replace('\n', "") || !a.lines().any(is_marker) {
                    continue;
                }
                if let Some(kept) = ctxfit_retain_excerpt::keeps_records_of(b, a) {
                    // a list of records: the original's text, in order, with ` …` where fields were left out
                    json_excerpts += 1;
                    assert!(
                        kept,
                        "{}: {a:?} is not the original's text, in order",
                        path.display()
                    );
                    continue;
                }
                if let Some(kept) = ctxfit_retain_excerpt::keeps_fields_of(b, a) {
                    // a record fetched again: the original's text, in order, with markers where fields were left
                    // out
                    fields_excerpts += 1;
                    assert!(
                        kept,
                        "{}: {a:?} is not the original's text, in order",
                        path.display()
                    );
                    continue;
                }
                excerpts += 1;
                // every kept line is a line of the original (less a line number, or a long listing line's mode and name), in
                // order
                let mut original = b.split('\n');
                for line in a.split('\n').filter(|l| !is_marker(l)) {
                    assert!(
                        original.any(|o| ctxfit_retain_excerpt::keeps_of(o, line)),
                        "{}: {line:?} is not a line of the original, in order",
                        path.display()
                    );
                }
            }
        }
    }
    assert!(excerpts > 20, "{excerpts}");
    assert!(json_excerpts > 5, "{json_excerpts}");
    assert!(fields_excerpts > 2, "{fields_excerpts}");
}

/// Found by the idempotence property: a later result of one batch must see an earlier result's excerpt as
/// shown, as a second pass over the compacted history does — or the second pass cuts what the first kept.
#[test]
fn a_batch_sees_its_own_excerpts_so_compacting_twice_changes_nothing() {
    let lorem = "lorem ipsum ".repeat(24);
    let conv = ctxfit_model::from_value(json!({"model": "m", "messages": [
        {"role": "user", "content": "do the task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"path": "f1.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "\n[truncated for context management]"},
            {"type": "text", "text": format!("{lorem}fn main() {{}}\n\nlorem ipsum 日本語のテキストlorem ipsum \t\t\t\nfn main() {{}}\nlorem ipsum lorem ipsum lorem ipsum lorem ipsum \n[truncated for context management]")}]}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "f2.rs"}},
            {"type": "tool_use", "id": "t3", "name": "Read", "input": {"path": "f0.rs"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [
                {"type": "text", "text": "\n...[truncated, already processed]"},
                {"type": "text", "text": "😀fn main() {}\n\n[truncated for context management]"}]},
            {"type": "tool_result", "tool_use_id": "t3", "content": "😀fn main() {}\n  \t😀fn main() {}\nlorem ipsum 日本語のテキストlorem ipsum \nfn main() {}\n\n[truncated for context management]"}]},
        {"role": "assistant", "content": "done"}
    ]}))
    .unwrap();
    let settings = PolicyFile::parse(EAGER, "eager.toml")
        .unwrap()
        .resolve(Some("eager"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let once = {
        let mut c = Compactor::new(
            settings.clone(),
            &registry,
            Box::new(ctxfit_tokens::FastEstimator),
        )
        .unwrap();
        c.compact(&conv, None);
        c.project(&conv)
    };
    let mut c =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let again = c.compact(&once, None);
    assert!(again.new_blocks.is_empty(), "{:?}", again.new_blocks);
    assert_eq!(c.project(&once), once);
}
