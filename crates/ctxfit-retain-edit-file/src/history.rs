//! Reading a history back: the edits per file (seed 004 §6.1) and a file's content at a turn (§6.2).

use std::collections::BTreeMap;

use ctxfit_model::{Block, Conversation, ToolCallIndex};
use ctxfit_retention::calls::{edit_calls, read_target, EditOp, ShellReads};

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
                    let lines = numbered_lines(&r.content.joined_text());
                    if lines.is_empty() {
                        continue;
                    }
                    let whole = target.range.is_none() && lines.keys().next() == Some(&1);
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
