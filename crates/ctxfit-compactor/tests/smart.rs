//! The smart rules on real sessions from the corpus.
//!
//! The corpus has no Claude Code session that reads one file more than once, and no shell output over
//! 10,000 characters, so the read and shell tests *derive* such histories from real ones: they repeat a real
//! `Read` turn of a real session (its call and its real result) at later points, and join real shell outputs.
//! Everything else is the sessions as recorded.

use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_import::import_file;
use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolCallIndex};
use ctxfit_retention::thousands;
use ctxfit_testkit::corpus_dir;

fn settings(profile: &str, policy: &str) -> Settings {
    PolicyFile::parse(policy, "test.toml")
        .unwrap()
        .resolve(Some(profile), None, &|_| None)
        .unwrap()
}

fn compact(s: Settings, conv: &Conversation) -> (Conversation, ctxfit_compactor::Report) {
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c = Compactor::new(s, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let report = c.compact(conv, None);
    (c.project(conv), report)
}

fn session(rel: &str) -> Conversation {
    let corpus =
        corpus_dir().expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    import_file(&corpus.join("trajectories").join(rel), None)
        .unwrap()
        .remove(0)
        .conversation
}

/// Seed 004's table as a profile of its own: `smart` now puts the `excerpt` rule in front of it, so the table's
/// rules are tested here on their own.
const SEED_004: &str = r#"
[profiles.seed-004]
trigger = "always"
keep_latest_result_message = false
min_reclaim_ratio = 0.5
rules = [
  { rule = "edit-file", tools = ["edit_file"] },
  { rule = "read-file", tools = ["read_file", "bash"] },
  { rule = "bash", tools = ["bash"] },
  { rule = "recent", tools = ["listing"] },
  { rule = "tiered", tools = ["*"] },
]
"#;

const READ_THEN_EDIT: &str =
    "claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl";

/// The text of the result answering `id`.
fn result_text(conv: &Conversation, id: &str) -> String {
    conv.messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == id)
        .map(|r| r.content.joined_text())
        .unwrap()
}

/// The (assistant, results) messages of the turn that called `id`.
fn turn_of(conv: &Conversation, id: &str) -> (Message, Message) {
    let index = ToolCallIndex::build(conv);
    let site = index.get(id).unwrap();
    let (m, _) = site.result.unwrap();
    let mut call = conv.messages[site.message].clone();
    call.content
        .blocks
        .retain(|b| matches!(b, Block::ToolUse(u) if u.id == id));
    let mut result = conv.messages[m].clone();
    result
        .content
        .blocks
        .retain(|b| matches!(b, Block::ToolResult(r) if r.tool_use_id == id));
    (call, result)
}

/// A copy of a turn with a fresh id and, optionally, a different result text.
fn repeat(turn: &(Message, Message), n: usize, text: Option<&str>) -> Vec<Message> {
    let (mut call, mut result) = turn.clone();
    for b in &mut call.content.blocks {
        if let Block::ToolUse(u) = b {
            u.id = format!("{}-again-{n}", u.id);
        }
    }
    for b in &mut result.content.blocks {
        if let Block::ToolResult(r) = b {
            r.tool_use_id = format!("{}-again-{n}", r.tool_use_id);
            if let Some(t) = text {
                r.content = Content::text(t);
            }
        }
    }
    vec![
        call,
        result,
        Message::new(Role::Assistant, Content::text("noted")),
    ]
}

fn first_read_of(conv: &Conversation, suffix: &str) -> String {
    conv.messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .find(|u| {
            u.name == "Read"
                && u.input["file_path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(suffix))
        })
        .map(|u| u.id.clone())
        .unwrap()
}

#[test]
fn repeated_reads_keep_first_last_and_samples_with_pointers_for_the_rest() {
    ctxfit_testkit::skip_without_corpus!();
    let real = session(READ_THEN_EDIT);
    let read_id = first_read_of(&real, "research-plan-mode.md");
    let edit_at = real
        .messages
        .iter()
        .position(|m| m.tool_uses().any(|u| u.name == "Edit"))
        .unwrap();
    let turn = turn_of(&real, &read_id);
    let original = result_text(&real, &read_id);
    let edited = format!("{original}\n(after the edit)");
    // two identical re-reads before the edit, three re-reads of the edited file after the session's end
    let mut conv = real.clone();
    let before: Vec<Message> = (1..=2).flat_map(|n| repeat(&turn, n, None)).collect();
    conv.messages.splice(edit_at..edit_at, before);
    for n in 3..=5 {
        conv.messages.extend(repeat(&turn, n, Some(&edited)));
    }
    let (out, _) = compact(settings("seed-004", SEED_004), &conv);
    let path = turn.0.tool_uses().next().unwrap().input["file_path"]
        .as_str()
        .unwrap()
        .to_owned();
    let text_of = |id: &str| result_text(&out, id);
    // 6 reads: positions 0..5; the table keeps 0, 1, 3, 4, 5 (first, last, three samples)
    assert_eq!(
        text_of(&read_id),
        original,
        "the first read is the file's initial state"
    );
    assert_eq!(
        text_of(&format!("{read_id}-again-1")),
        format!("[Re-read of {path} - identical to an earlier read, see it for content]")
    );
    assert_eq!(
        text_of(&format!("{read_id}-again-2")),
        format!("[Re-read of {path} - see earlier read for content; the file was edited after this read]")
    );
    assert_eq!(
        text_of(&format!("{read_id}-again-3")),
        edited,
        "the first read after the edit"
    );
    for n in [4, 5] {
        assert_eq!(
            text_of(&format!("{read_id}-again-{n}")),
            format!("[Re-read of {path} - identical to an earlier read, see it for content]")
        );
    }
    // the other files' single reads are kept whole
    for other in ["research-teammates.md", "research-beads.md"] {
        let id = first_read_of(&real, other);
        assert_eq!(text_of(&id), result_text(&real, &id));
    }
}

#[test]
fn edits_are_kept_whole_and_read_back_as_changelog_and_file_state() {
    ctxfit_testkit::skip_without_corpus!();
    let writer = session("claude-code/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl");
    let (out, _) = compact(
        settings("smart", "[profiles.tight]\nextends = \"smart\"\n"),
        &writer,
    );
    let edit_blocks = |c: &Conversation| -> Vec<Block> {
        c.messages
            .iter()
            .flat_map(|m| m.content.blocks.iter())
            .filter(|b| match b {
                Block::ToolUse(u) => matches!(u.name.as_str(), "Edit" | "Write"),
                Block::ToolResult(r) => {
                    writer.messages.iter().flat_map(|m| m.tool_uses()).any(|u| {
                        u.id == r.tool_use_id && matches!(u.name.as_str(), "Edit" | "Write")
                    })
                }
                _ => false,
            })
            .cloned()
            .collect()
    };
    assert_eq!(edit_blocks(&out), edit_blocks(&writer));
    assert_eq!(
        edit_blocks(&writer).len(),
        10,
        "1 Write + 4 Edits, calls and results"
    );

    let log = ctxfit_retain_edit_file::changelog(&writer);
    let (path, entries) = log.iter().next().unwrap();
    assert!(path.ends_with("work/research-plan-mode.md"), "{path}");
    let tools: Vec<&str> = entries.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(tools, ["Write", "Edit", "Edit", "Edit", "Edit"]);
    assert!(
        entries[0].summary.starts_with("write "),
        "{}",
        entries[0].summary
    );
    assert!(
        entries[1].summary.starts_with("replace "),
        "{}",
        entries[1].summary
    );

    // read, then edited: the state after the edit is the read content with the edit applied
    let real = session(READ_THEN_EDIT);
    let edit = real
        .messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .find(|u| u.name == "Edit")
        .unwrap()
        .clone();
    let path = edit.input["file_path"].as_str().unwrap();
    let old = edit.input["old_string"].as_str().unwrap();
    let new = edit.input["new_string"].as_str().unwrap();
    let turns = real
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    match ctxfit_retain_edit_file::file_state(&real, path, turns) {
        ctxfit_retain_edit_file::FileState::Known {
            content,
            provenance,
        } => {
            assert!(
                content.contains(new),
                "the edit is applied: {provenance:?}\n{content}"
            );
            assert!(
                !content.contains(old) || new.contains(old),
                "the old text is gone"
            );
            assert_eq!(provenance.len(), 2, "{provenance:?}");
        }
        other => panic!("expected the content, got {other:?}"),
    }
    assert!(matches!(
        ctxfit_retain_edit_file::file_state(&real, path, 0),
        ctxfit_retain_edit_file::FileState::Unknown { .. }
    ));
    // only partial reads before edits: what is unknown is said
    let partial = session("claude-code/-Users-dain-workspace-danieldemmel-me-next/f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl");
    let js = partial
        .messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .find_map(|u| {
            u.input["file_path"]
                .as_str()
                .filter(|p| p.ends_with("tokenizer.js"))
        })
        .unwrap()
        .to_owned();
    let all = partial
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    match ctxfit_retain_edit_file::file_state(&partial, &js, all) {
        ctxfit_retain_edit_file::FileState::Unknown { reason } => {
            assert!(reason.contains("part of the file"), "{reason}")
        }
        other => panic!("expected unknown, got {other:?}"),
    }
}

#[test]
fn long_shell_output_keeps_head_and_tail() {
    ctxfit_testkit::skip_without_corpus!();
    let real =
        session("claude-code/-src-experiments-claude_p/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl");
    let index = ToolCallIndex::build(&real);
    let outputs: Vec<(String, String)> = real
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .filter(|r| index.tool_name(&r.tool_use_id) == Some("Bash"))
        .map(|r| (r.tool_use_id.clone(), r.content.joined_text()))
        .collect();
    let (big_id, big) = outputs
        .iter()
        .max_by_key(|(_, t)| t.chars().count())
        .unwrap();
    assert!((1_000..10_000).contains(&big.chars().count()));
    // 1k–10k is kept by default ...
    let (out, _) = compact(settings("seed-004", SEED_004), &real);
    assert_eq!(&result_text(&out, big_id), big);
    // ... and cut to head + tail when the profile asks for it under pressure
    let policy = "[profiles.pressed]\nextends = \"smart\"\n[[profiles.pressed.rules]]\nrule = \"bash\"\nparams = { cut_medium = true }\n";
    let (out, _) = compact(settings("pressed", policy), &real);
    let cut = result_text(&out, big_id);
    assert!(
        cut.contains(&format!(
            "... [truncated: {} chars total",
            thousands(big.chars().count())
        )),
        "{cut}"
    );
    assert!(big.starts_with(cut.split("\n... [truncated").next().unwrap()));
    // over 10k: every real shell output of the session joined into one
    let joined: String = std::iter::repeat_n(
        outputs
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        2,
    )
    .collect::<Vec<_>>()
    .join("\n");
    assert!(joined.chars().count() > 10_000);
    let mut long = real.clone();
    for m in &mut long.messages {
        for b in &mut m.content.blocks {
            if let Block::ToolResult(r) = b {
                if &r.tool_use_id == big_id {
                    r.content = Content::text(joined.clone());
                }
            }
        }
    }
    let (out, report) = compact(settings("seed-004", SEED_004), &long);
    let cut = result_text(&out, big_id);
    assert!(cut.chars().count() < 4_200, "{}", cut.chars().count());
    assert!(report
        .new_blocks
        .iter()
        .any(|b| b.rule == "bash" && b.tool_use_id == *big_id));
}

#[test]
fn listings_keep_only_the_most_recent() {
    ctxfit_testkit::skip_without_corpus!();
    let real = session("swe-agent/ctf-web-i_got_id.traj");
    // every shell call of this session is a `curl` or similar: make them listings to exercise the rule
    let policy = "[profiles.nav]\nextends = \"smart\"\nrules = [{ rule = \"recent\", tools = [\"listing\"] }]\n[aliases]\nbash = \"listing\"\n";
    let (out, _) = compact(settings("nav", policy), &real);
    let results: Vec<String> = out
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.content.joined_text())
        .collect();
    let pointers = results
        .iter()
        .filter(|t| t.starts_with("[Old bash result omitted — input: "))
        .count();
    let index = ToolCallIndex::build(&real);
    let bash_results = real
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .filter(|r| index.tool_name(&r.tool_use_id) == Some("bash"))
        .count();
    assert_eq!(bash_results, 18);
    // the 3 most recent bash results are kept
    assert_eq!(pointers, bash_results - 3, "{results:#?}");
}

#[test]
fn smart_keeps_the_invariants_on_every_corpus_session() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus = corpus_dir().unwrap();
    let (mut sessions, mut cut) = (0, 0);
    for path in ctxfit_testkit::corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            let (once, report) = compact(settings("smart", ""), &s.conversation);
            sessions += 1;
            cut += usize::from(report.compacted_total > 0);
            assert!(report.tokens_after <= report.tokens_before);
            assert_eq!(once.tool_result_count(), s.conversation.tool_result_count());
            let (twice, again) = compact(settings("smart", ""), &once);
            assert!(
                again.new_blocks.is_empty(),
                "{}: idempotent",
                path.display()
            );
            assert_eq!(twice, once);
        }
    }
    // the corpus was read, and the property held where something was cut
    assert!(sessions >= 40, "{sessions} sessions");
    assert!(cut * 4 >= sessions, "{cut} of {sessions} sessions cut");
}
