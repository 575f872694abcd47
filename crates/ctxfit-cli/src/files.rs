//! `ctxfit changelog` and `ctxfit file-state`: what a session did to its files (seed 004 §6).

use std::collections::BTreeMap;

use anyhow::Result;
use ctxfit_import::Session;
use ctxfit_retain_edit_file::{
    changelog as edits_per_file, file_state as state_at, ChangeEntry, FileState,
};
use serde_json::json;

use crate::input::{select, InputArgs};
use crate::output::emit;
use crate::BadInput;

#[derive(clap::Args)]
pub struct ChangelogArgs {
    #[command(flatten)]
    input: InputArgs,
    /// For files holding several sessions (a Claude Code session and its sub-agents): session N only (0-based;
    /// default: every session, a sub-agent's edits named by it).
    #[arg(long)]
    session: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct FileStateArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The file, as the session names it.
    #[arg(long, allow_hyphen_values = true)]
    path: String,
    /// After this many assistant turns (default: the whole session).
    #[arg(long)]
    turn: Option<usize>,
    /// For files holding several sessions (a Claude Code session and its sub-agents): session N (0-based;
    /// default: the first, the main one, with a note that there are others).
    #[arg(long)]
    session: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn pick(name: &str, sessions: Vec<Session>, n: Option<usize>) -> Result<Session> {
    if n.is_none() && sessions.len() > 1 {
        crate::shown::say(&format!(
            "note: {name} holds {} sessions: this is the first; --session N for another",
            sessions.len()
        ));
    }
    Ok(select(name, sessions, Some(n.unwrap_or(0)))?.swap_remove(0))
}

pub fn changelog(args: ChangelogArgs) -> Result<()> {
    let (name, sessions) = args.input.load()?;
    let sessions = select(&name, sessions, args.session)?;
    // every session's edits, per file: the main session's first, then each sub-agent's, each oldest first
    let mut log: BTreeMap<String, Vec<(&str, ChangeEntry)>> = BTreeMap::new();
    for s in &sessions {
        for (path, entries) in edits_per_file(&s.conversation) {
            let list = log.entry(path).or_default();
            list.extend(entries.into_iter().map(|e| (s.name.as_str(), e)));
        }
    }
    if args.json {
        let doc: serde_json::Map<String, serde_json::Value> = log
            .iter()
            .map(|(path, entries)| {
                let list = entries
                    .iter()
                    .map(|(session, e)| {
                        let mut entry = json!({"message": e.message, "turn": e.turn, "tool": e.tool, "tool_use_id": e.tool_use_id,
                                               "summary": e.summary, "intent": e.intent, "failed": e.failed});
                        if !session.is_empty() {
                            entry["session"] = json!(session);
                        }
                        entry
                    })
                    .collect();
                (path.clone(), serde_json::Value::Array(list))
            })
            .collect();
        return emit(None, &format!("{}\n", serde_json::to_string_pretty(&doc)?));
    }
    if log.is_empty() {
        let of = match sessions.len() {
            1 => String::new(),
            n => format!(" in its {n} sessions"),
        };
        return crate::output::emit_table(&format!("{name}: no edits{of}\n"));
    }
    let mut out = String::new();
    for (path, entries) in &log {
        out.push_str(&format!("{path}\n"));
        for (session, e) in entries {
            out.push_str(&format!(
                "  turn {:>3}  message {:>4}  {:<18} {}{}{}\n",
                e.turn,
                e.message,
                e.tool,
                e.summary,
                if e.failed { "  (failed)" } else { "" },
                if session.is_empty() {
                    String::new()
                } else {
                    format!("  [{session}]")
                }
            ));
            if let Some(intent) = &e.intent {
                out.push_str(&format!("{:>38}intent: {intent}\n", ""));
            }
        }
    }
    crate::output::emit_table(&out)
}

pub fn file_state(args: FileStateArgs) -> Result<()> {
    let (name, sessions) = args.input.load()?;
    let session = pick(&name, sessions, args.session)?;
    let turn = args.turn.unwrap_or(usize::MAX);
    let state = state_at(&session.conversation, &args.path, turn);
    let out = match (&state, args.json) {
        (FileState::Known { content, provenance }, true) => {
            json!({"path": args.path, "state": "known", "content": content, "provenance": provenance}).to_string() + "\n"
        }
        (FileState::Partial { lines, provenance }, true) => {
            json!({"path": args.path, "state": "partial", "lines": lines, "provenance": provenance}).to_string() + "\n"
        }
        (FileState::Unknown { reason }, true) => json!({"path": args.path, "state": "unknown", "reason": reason}).to_string() + "\n",
        (FileState::Known { content, provenance }, false) => {
            crate::shown::say(&format!("# {}: {}", args.path, provenance.join("; ")));
            let mut c = content.clone();
            if !c.ends_with('\n') {
                c.push('\n');
            }
            c
        }
        (FileState::Partial { lines, provenance }, false) => {
            crate::shown::say(&format!("# {}: only some lines are known ({})", args.path, provenance.join("; ")));
            lines.iter().map(|(n, l)| format!("{n:>6}  {l}\n")).collect()
        }
        (FileState::Unknown { reason }, false) => {
            return Err(BadInput(format!("{}: unknown — {reason}", args.path)).into());
        }
    };
    emit(None, &out)
}
