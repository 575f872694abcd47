//! Reading a history back: the edits per file (seed 004 §6.1) and a file's content at a turn (§6.2).

use std::collections::BTreeMap;

use ctxfit_model::{Block, Conversation, ToolCallIndex};
use ctxfit_retention::calls::{edit_calls, read_target, EditOp, ShellReads, SHELL_TOOLS};
use ctxfit_retention::WrappedOutput;

/// One edit of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEntry {
    /// Message holding the call, and the assistant turn it belongs to (1-based).
    pub message: usize,
    pub turn: usize,
    pub tool: String,
    pub tool_use_id: String,
    /// A one-line description (`replace 3 lines with 5`, `write 120 lines`).
    pub summary: String,
    pub intent: Option<String>,
    /// The tool said the edit failed.
    pub failed: bool,
}

fn lines(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.lines().count()
    }
}

fn describe(op: &EditOp) -> String {
    match op {
        EditOp::Replace { old, new, all } => format!(
            "replace {} line(s) with {}{}",
            lines(old),
            lines(new),
            if *all { " (every occurrence)" } else { "" }
        ),
        EditOp::Write { content } => format!("write {} line(s)", lines(content)),
        EditOp::Insert {
            after_line: usize::MAX,
            text,
        } => format!("append {} line(s)", lines(text)),
        EditOp::Insert { after_line, text } => {
            format!("insert {} line(s) after line {after_line}", lines(text))
        }
        EditOp::Opaque { description } => description.clone(),
    }
}

/// Results by tool_use_id: whether each failed.
fn failures(conv: &Conversation) -> BTreeMap<&str, bool> {
    let mut out = BTreeMap::new();
    for m in &conv.messages {
        for r in m.tool_results() {
            let text = r.content.joined_text();
            let failed = r.is_error == Some(true)
                // the Responses API's `apply_patch_call_output` (and `shell_call_output`) say so
                || r.extra.get("status").and_then(|s| s.as_str()) == Some("failed")
                || text.starts_with("<tool_use_error>")
                || text.starts_with("Error:")
                || text.contains("No replacement was performed")
                // Codex CLI's apply_patch, and a shell's exit status as Codex reports it
                || text.starts_with("apply_patch verification failed")
                || text
                    .strip_prefix("Exit code: ")
                    .is_some_and(|rest| !rest.starts_with("0\n") && rest != "0");
            out.insert(r.tool_use_id.as_str(), failed);
        }
    }
    out
}

/// Every edit of the history, per file (in path order), oldest first. SWE-agent's `edit` acts on the file its
/// last `open`/`create` named.
pub fn changelog(conv: &Conversation) -> BTreeMap<String, Vec<ChangeEntry>> {
    let shell = ShellReads::default();
    let failed = failures(conv);
    let mut out: BTreeMap<String, Vec<ChangeEntry>> = BTreeMap::new();
    let mut open_file: Option<String> = None;
    let mut turn = 0;
    for (mi, m) in conv.messages.iter().enumerate() {
        if ctxfit_model::begins_response(&conv.messages, mi) {
            turn += 1;
        }
        for u in m.tool_uses() {
            if u.name == "open" {
                open_file = read_target(&u.name, &u.input, &shell).map(|t| t.path);
            }
            for edit in edit_calls(&u.name, &u.input) {
                let Some(path) = edit.path.clone().or_else(|| open_file.clone()) else {
                    continue;
                };
                if u.name == "create" {
                    open_file = Some(path.clone());
                }
                let summary: Vec<String> = edit.ops.iter().map(describe).collect();
                out.entry(path).or_default().push(ChangeEntry {
                    message: mi,
                    turn,
                    tool: u.name.clone(),
                    tool_use_id: u.id.clone(),
                    summary: summary.join("; "),
                    intent: edit.intent.clone(),
                    failed: failed.get(u.id.as_str()).copied().unwrap_or(false),
                });
            }
        }
    }
    out
}

/// What is known of a file at a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// The whole content, and how it was obtained.
    Known {
        content: String,
        provenance: Vec<String>,
    },
    /// Some lines only (partial reads), by line number.
    Partial {
        lines: BTreeMap<usize, String>,
        provenance: Vec<String>,
    },
    /// Nothing reliable, and why.
    Unknown { reason: String },
}

/// Lines of a read's output, by line number: `     1→text`, `1\ttext` (cat -n) or `1:text` (SWE-agent).
fn numbered_lines(output: &str) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    for line in output.lines() {
        let trimmed = line.trim_start();
        let digits = trimmed.len()
            - trimmed
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        if digits == 0 {
            continue;
        }
        let rest = &trimmed[digits..];
        let text = rest
            .strip_prefix('→')
            .or_else(|| rest.strip_prefix('\t'))
            .or_else(|| rest.strip_prefix(':'));
        if let (Some(text), Ok(n)) = (text, trimmed[..digits].parse::<usize>()) {
            out.insert(n, text.to_owned());
        }
    }
    out
}

/// A shell read's range as [`read_target`] names it (`lines 10-20`): its first and last line.
fn line_range(range: &str) -> Option<(usize, usize)> {
    let (a, b) = range.strip_prefix("lines ")?.split_once('-')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (1 <= a && a <= b).then_some((a, b))
}

/// What a shell command printed, without what its tool wrapped around it — Codex CLI's JSON envelope
/// (`{"output", "metadata"}`) or its header (`Exit code: 0` … `Output:`, at most eight lines) — or `None` when the
/// tool says the command failed or that it cut the output short.
fn own_output<'a>(
    content: &ctxfit_model::Content,
    text: &'a str,
) -> Option<std::borrow::Cow<'a, str>> {
    if let Some(wrapped) = WrappedOutput::of_content(content) {
        let exit = wrapped.field("metadata").and_then(|m| m.get("exit_code"));
        if exit.is_some_and(|c| c.as_i64() != Some(0)) {
            return None;
        }
        return own_output_text(wrapped.output()).map(|o| o.to_owned().into());
    }
    own_output_text(text).map(Into::into)
}

fn own_output_text(text: &str) -> Option<&str> {
    // mini-swe-agent: `<returncode>0</returncode>\n<output>\n…</output>` (a long one as its head and tail)
    if let Some(rest) = text.strip_prefix("<returncode>") {
        let (code, rest) = rest.split_once("</returncode>")?;
        let output = rest.trim_start().strip_prefix("<output>")?;
        let output = output.strip_prefix('\n').unwrap_or(output);
        let output = output.trim_end().strip_suffix("</output>")?;
        return (code.trim() == "0").then_some(output);
    }
    // Codex CLI cuts a long output in its middle (`…1234 tokens truncated…`)
    if text.contains(" tokens truncated…") {
        return None;
    }
    // Codex CLI's header, when the text starts with one: its lines up to `Output:`
    if !["Exit code: ", "Chunk ID: ", "Process exited with code "]
        .iter()
        .any(|h| text.starts_with(h))
    {
        return Some(text);
    }
    let mut start = 0;
    for line in text.split_inclusive('\n').take(8) {
        let bare = line.trim_end();
        start += line.len();
        let exit = bare
            .strip_prefix("Exit code: ")
            .or_else(|| bare.strip_prefix("Process exited with code "));
        if exit.is_some_and(|code| code != "0") || bare.starts_with("Warning: truncated output") {
            return None;
        }
        if bare == "Output:" {
            let output = &text[start..];
            return (!output.starts_with("Warning: truncated output")).then_some(output);
        }
    }
    None
}

fn apply(content: &str, op: &EditOp) -> Result<String, String> {
    match op {
        EditOp::Replace { old, new, all } => {
            if !content.contains(old.as_str()) {
                return Err("its old text is not in the content known at that point".into());
            }
            Ok(if *all {
                content.replace(old.as_str(), new)
            } else {
                content.replacen(old.as_str(), new, 1)
            })
        }
        EditOp::Write { content } => Ok(content.clone()),
        EditOp::Insert { after_line, text } => {
            if content.is_empty() {
                return Ok(text.clone());
            }
            let mut lines: Vec<&str> = content.split('\n').collect();
            let at = (*after_line).min(lines.len());
            lines.insert(at, text.trim_end_matches('\n'));
            Ok(lines.join("\n"))
        }
        EditOp::Opaque { description } => Err(format!("`{description}` cannot be replayed")),
    }
}

/// The content of `path` after the first `turn` assistant turns (and the results answering them), rebuilt
/// from the last full read or write before then and the edits after it; partial reads give partial content.
pub fn file_state(conv: &Conversation, path: &str, turn: usize) -> FileState {
    let shell = ShellReads::default();
    let index = ToolCallIndex::build(conv);
    let failed = failures(conv);
    let wanted = path.trim_start_matches("./");
    // messages up to the (turn+1)-th assistant message
    let mut end = conv.messages.len();
    let mut seen = 0;
    for (i, _) in conv.messages.iter().enumerate() {
        if ctxfit_model::begins_response(&conv.messages, i) {
            seen += 1;
            if seen > turn {
                end = i;
                break;
            }
        }
    }
    let within = if seen > turn {
        format!("in the first {turn} turn(s)")
    } else {
        // (the whole session: no turn asked for, or one past its end)
        format!("in the session's {seen} turn(s)")
    };
    let mut state = FileState::Unknown {
        reason: format!("no full read or write of {wanted} {within}"),
    };
    let mut open_file: Option<String> = None;
    for (mi, m) in conv.messages[..end].iter().enumerate() {
        for (bi, block) in m.content.blocks.iter().enumerate() {
            match block {
                Block::ToolUse(u) => {
                    if u.name == "open" {
                        open_file = read_target(&u.name, &u.input, &shell).map(|t| t.path);
                    }
                    for edit in edit_calls(&u.name, &u.input) {
                        let target = edit.path.clone().or_else(|| open_file.clone());
                        if u.name == "create" {
                            open_file = target.clone();
                        }
                        if target.as_deref() != Some(wanted)
                            || failed.get(u.id.as_str()) == Some(&true)
                        {
                            continue;
                        }
                        for op in &edit.ops {
                            state = match (state, op) {
                            (_, EditOp::Write { content }) => FileState::Known {
                                content: content.clone(),
                                provenance: vec![format!("written by {} at message {mi}", u.name)],
                            },
                            (FileState::Known { content, mut provenance }, op) => match apply(&content, op) {
                                Ok(content) => {
                                    provenance.push(format!("{} at message {mi}: {}", u.name, describe(op)));
                                    FileState::Known { content, provenance }
                                }
                                Err(why) => FileState::Unknown {
                                    reason: format!("the edit by {} at message {mi} could not be applied: {why}", u.name),
                                },
                            },
                            (FileState::Partial { .. }, op) => FileState::Unknown {
                                reason: format!(
                                    "only part of the file was read before the edit by {} at message {mi} ({})",
                                    u.name,
                                    describe(op)
                                ),
                            },
                            (unknown, _) => unknown,
                        };
                        }
                    }
                }
                Block::ToolResult(r) => {
                    let Some(site) = index.call_before(&r.tool_use_id, (mi, bi)) else {
                        continue;
                    };
                    let Some(Block::ToolUse(call)) = conv.block(site.message, site.block) else {
                        continue;
                    };
                    let Some(target) = read_target(&call.name, &call.input, &shell) else {
                        continue;
                    };
                    if target.path != wanted || r.is_error == Some(true) {
                        continue;
                    }
                    let text = r.content.joined_text();
                    let mut lines = numbered_lines(&text);
                    let mut whole = target.range.is_none() && lines.keys().next() == Some(&1);
                    if lines.is_empty() && SHELL_TOOLS.contains(&call.name.as_str()) {
                        // a shell read prints the file's own lines: `cat FILE` all of them, `sed -n 'A,Bp' FILE`
                        // those from A on — all there are when it prints fewer than it asked for
                        let Some(output) = own_output(&r.content, &text) else {
                            continue;
                        };
                        let (from, asked) = match target.range.as_deref().and_then(line_range) {
                            Some((a, b)) => (a, b + 1 - a),
                            None => (1, usize::MAX),
                        };
                        let printed: Vec<&str> = output.lines().collect();
                        whole = from == 1 && printed.len() < asked;
                        lines = (from..)
                            .zip(printed)
                            .map(|(n, l)| (n, l.to_owned()))
                            .collect();
                    }
                    if lines.is_empty() {
                        continue;
                    }
                    state = if whole {
                        let content: Vec<&str> = lines.values().map(String::as_str).collect();
                        FileState::Known {
                            content: content.join("\n"),
                            provenance: vec![format!("read by {} at message {mi}", call.name)],
                        }
                    } else {
                        match state {
                            FileState::Partial {
                                lines: mut known,
                                mut provenance,
                            } => {
                                known.extend(lines);
                                provenance
                                    .push(format!("partial read by {} at message {mi}", call.name));
                                FileState::Partial {
                                    lines: known,
                                    provenance,
                                }
                            }
                            FileState::Known {
                                content,
                                provenance,
                            } => FileState::Known {
                                content,
                                provenance,
                            },
                            FileState::Unknown { .. } => FileState::Partial {
                                lines,
                                provenance: vec![format!(
                                    "partial read by {} at message {mi}",
                                    call.name
                                )],
                            },
                        }
                    };
                }
                _ => {}
            }
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_read_is_what_the_command_printed() {
        // bare, under Codex CLI's header of either era, inside mini-swe-agent's tags
        assert_eq!(own_output_text("a\nb\n"), Some("a\nb\n"));
        assert_eq!(
            own_output_text("Exit code: 0\nWall time: 0 seconds\nOutput:\na\nb\n"),
            Some("a\nb\n")
        );
        assert_eq!(
            own_output_text("Chunk ID: 1f\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\na\n"),
            Some("a\n")
        );
        assert_eq!(
            own_output_text("<returncode>0</returncode>\n<output>\na\nb\n</output>"),
            Some("a\nb\n")
        );
        // a failed command, and an output the tool cut short, say nothing of the file
        assert_eq!(
            own_output_text("Exit code: 1\nWall time: 0 seconds\nOutput:\ncat: x: No such file\n"),
            None
        );
        assert_eq!(
            own_output_text("Process exited with code 2\nOutput:\n"),
            None
        );
        assert_eq!(
            own_output_text("Chunk ID: 1\nOutput:\nWarning: truncated output (original token count: 9000)\nTotal output lines: 900\n\na"),
            None
        );
        assert_eq!(
            own_output_text("<returncode>1</returncode>\n<output>\n</output>"),
            None
        );
        assert_eq!(
            own_output_text("Exit code: 0\nOutput:\nab…120 tokens truncated…yz\n"),
            None
        );
        // a file whose own early lines look like a header is its lines
        assert_eq!(
            own_output_text("# Notes\nOutput:\nx\n"),
            Some("# Notes\nOutput:\nx\n")
        );
        assert_eq!(
            own_output_text("<returncode>0</returncode>\n<warning>too long</warning><output_head>\na\n</output_head>"),
            None
        );
        assert_eq!(line_range("lines 10-20"), Some((10, 20)));
        assert_eq!(line_range("lines 20-10"), None);
        assert_eq!(line_range("offset=5,limit=2"), None);
    }

    /// The Responses API's `apply_patch` tool: each `apply_patch_call` one file's edit, a `failed` output a
    /// refused one; what a `shell_call` printed is a read.
    #[test]
    fn apply_patch_calls_are_edits_and_shell_calls_reads() {
        let c = ctxfit_model::from_value(json!({"model": "gpt-5.1", "input": [
            {"role": "user", "content": "fix"},
            {"type": "apply_patch_call", "call_id": "c1", "status": "completed",
             "operation": {"type": "create_file", "path": "a.py", "diff": "+x = 1\n+y = 2\n"}},
            {"type": "apply_patch_call_output", "call_id": "c1", "status": "completed", "output": "Created a.py"},
            {"type": "apply_patch_call", "call_id": "c2", "status": "completed",
             "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-x = 1\n+x = 3\n"}},
            {"type": "apply_patch_call_output", "call_id": "c2", "status": "failed", "output": "patch did not apply"},
            {"type": "shell_call", "call_id": "c3", "status": "completed", "action": {"commands": ["cat b.py"]}},
            {"type": "shell_call_output", "call_id": "c3", "output": [
                {"stdout": "z = 0\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
        ]}))
        .unwrap();
        let log = changelog(&c);
        let entries: Vec<(&str, &str, bool)> = log["a.py"]
            .iter()
            .map(|e| (e.tool.as_str(), e.summary.as_str(), e.failed))
            .collect();
        assert_eq!(
            entries,
            [
                ("apply_patch", "write 2 line(s)", false),
                ("apply_patch", "replace 1 line(s) with 1", true)
            ]
        );
        assert!(matches!(
            file_state(&c, "b.py", usize::MAX),
            FileState::Known { content, .. } if content == "z = 0"
        ));
    }

    #[test]
    fn shell_reads_make_a_file_known_or_partly_known() {
        let call = |id: &str, cmd: &str| json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd}}]});
        let result = |id: &str, text: &str| json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]});
        let conv = |messages: Vec<serde_json::Value>| {
            ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap()
        };
        // `cat` prints the whole file; a range that asked for more lines than it printed, too
        let c = conv(vec![
            json!({"role": "user", "content": "go"}),
            call("t1", "cat src/a.py"),
            result("t1", "import os\nprint(os.sep)\n"),
            call("t2", "sed -n '1,200p' src/b.py"),
            result("t2", "x = 1\ny = 2"),
            call("t3", "sed -n '10,11p' src/c.py"),
            result("t3", "ten\neleven"),
            call("t4", "cat src/d.py"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t4", "content": "cat: src/d.py: No such file", "is_error": true}]}),
            json!({"role": "assistant", "content": "done"}),
        ]);
        let known = |path: &str| match file_state(&c, path, usize::MAX) {
            FileState::Known { content, .. } => content,
            other => panic!("{path}: {other:?}"),
        };
        assert_eq!(known("src/a.py"), "import os\nprint(os.sep)");
        assert_eq!(known("src/b.py"), "x = 1\ny = 2");
        match file_state(&c, "src/c.py", usize::MAX) {
            FileState::Partial { lines, .. } => {
                assert_eq!(
                    lines.into_iter().collect::<Vec<_>>(),
                    [(10, "ten".to_owned()), (11, "eleven".to_owned())]
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            file_state(&c, "src/d.py", usize::MAX),
            FileState::Unknown { .. }
        ));
    }
}
