//! What a result is — a file's text, a listing, a log, a document, or anything else — by the call that produced
//! it and, for a shell command, by the command and what it printed. Every other part of the rule asks this first:
//! a log keeps its outcomes, a listing its first lines, a read its number column, a document only what is not
//! shown elsewhere.
//!
//! ## What
//! `read_file` tools and shell readers (`cat`, `sed -n`, `head`, `tail`, `nl`, or a policy's `shell_patterns`)
//! are reads; `listing` tools and shell listers (`ls`, `find`, `grep`, `rg`, …) listings; a command whose output
//! is a JSON value, or that prints a manual (`--help`, `man`), a document; any other command a log; every other
//! tool's result (an API's, a web page, an edit's confirmation) is other.
//!
//! ## Why
//! The same lines mean different things: in a log, `error:` is what the agent will need; in a file, every line
//! is; in a JSON document, nothing is an "outcome". Judging by the command and the output, not the tool's name
//! alone, is what lets one rule serve Claude Code's `Bash`, Codex's `exec_command` and a team's own shell tool.
//!
//! ## Example
//! `cargo test 2>&1 | tail -50` is a log; `gh pr list --json number,title` a document; `sed -n 1,80p src/a.rs`
//! a read of `src/a.rs`; `rg -n parse src/` a listing.

use ctxfit_model::Value;
use ctxfit_retention::calls::{
    main_program, main_stage, program_of, read_target, shell_command, stage_words, SHELL_LISTERS,
};

use crate::Excerpt;

/// What kind of content a result is, by the call that produced it (and, for a command, by what it printed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentKind {
    /// A file's text.
    Read,
    /// Search hits or a directory listing.
    Listing,
    /// Output of a command that is none of the others: a build, a test run, a script, an install.
    Log,
    /// Output of a command that is a document to read, not the log of a run: a JSON value (`gh … --json`, `curl`
    /// of an API, `kubectl get -o json`) or a command's manual (`--help`, `man`). It has no outcome to keep and
    /// is read as a whole, like an API result.
    Document,
    /// Anything else (API results, edits' confirmations, web pages).
    Other,
}

const SHELL_READERS: &[&str] = &["cat", "sed", "head", "tail", "nl", "less", "more"];
/// Does a shell command line print a manual: `tool --help`, `tool sub --help`, `tool help sub`, `man tool`?
pub fn prints_manual(command: &str) -> bool {
    let stage = main_stage(command);
    matches!(program_of(stage), "man" | "info")
        || stage_words(stage)
            .skip(1)
            .enumerate()
            .any(|(i, w)| w == "--help" || w == "-help" || (i == 0 && w == "help"))
}

/// Is a command's output a JSON value (an object, an array, or one object per line), after at most a few lines
/// a tool wraps around it (Codex CLI's `Process exited with code 0` … `Output:`)? Only its ends are looked at:
/// an object's first member name or an array's first element, and the closing bracket. An array of numbers
/// must hold nothing else on its first line, so that a log of `[2024-05-01 10:00:00] …` lines is not one.
pub fn is_json_output(text: &str) -> bool {
    const WRAPPER_LINES: usize = 8;
    let mut start = 0;
    for line in text.split_inclusive('\n').take(WRAPPER_LINES) {
        if line.starts_with(['{', '[']) {
            break;
        }
        start += line.len();
    }
    let body = text[start..].trim_end();
    let inner = |b: &str| b[1..].trim_start().chars().next();
    if body.starts_with('{') {
        body.ends_with('}') && matches!(inner(body), Some('"' | '}'))
    } else if body.starts_with('[') {
        let numeric = |c: char| c.is_ascii_digit() || " \t\r,.-+eE[]".contains(c);
        body.ends_with(']')
            && match inner(body) {
                Some('{' | '[' | '"' | ']') => true,
                Some('-' | '0'..='9') => {
                    body.lines().next().is_some_and(|l| l.chars().all(numeric))
                }
                _ => false,
            }
    } else {
        false
    }
}

impl Excerpt {
    /// The kind of content of a call's result, `text`.
    pub fn kind(&self, tool_kind: &str, tool_name: &str, input: &Value, text: &str) -> ContentKind {
        match tool_kind {
            "read_file" => ContentKind::Read,
            "listing" => ContentKind::Listing,
            "bash" => {
                if read_target(tool_name, input, &self.shell).is_some() {
                    return ContentKind::Read;
                }
                let command = shell_command(input).unwrap_or_default();
                let command = command.as_ref();
                let program = main_program(command);
                if SHELL_READERS.contains(&program) {
                    ContentKind::Read
                } else if SHELL_LISTERS.contains(&program) {
                    ContentKind::Listing
                } else if prints_manual(command) || is_json_output(text) {
                    ContentKind::Document
                } else {
                    ContentKind::Log
                }
            }
            _ => ContentKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_json_output, prints_manual};

    #[test]
    fn manuals_by_their_command() {
        for command in [
            "bd update --help",
            "cd repo && cargo build --help | head -50",
            "RUST_LOG=x tool sub -help",
            "git help log",
            "man 5 crontab",
            "/usr/bin/info coreutils",
        ] {
            assert!(prints_manual(command), "{command}");
        }
        for command in [
            "cargo build",
            "ls -h",
            "df -h",
            "grep -- --help README.md && make",
            "",
        ] {
            assert!(!prints_manual(command), "{command}");
        }
    }

    #[test]
    fn json_output_by_its_ends() {
        for text in [
            "{\"id\": 1}",
            "[\n  {\"id\": 1}\n]\n",
            "[1, 2]",
            "[\n  -1.5,\n  2e3\n]",
            "[]",
            "{}",
            "{\"a\": 1}\n{\"a\": 2}",
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n[\"a\"]",
        ] {
            assert!(is_json_output(text), "{text}");
        }
        for text in [
            "[INFO] building\n[done]",
            "[1/3] Compiling a\n[3/3] Linking b",
            "[2024-05-01 10:00:00] started\n[2024-05-01 10:00:05] done [ok]",
            "[3] Killed [ok]",
            "{ build: ok }",
            "ok\n{\"a\": 1}\ntrailing",
            "",
            "plain text",
        ] {
            assert!(!is_json_output(text), "{text}");
        }
    }
}
