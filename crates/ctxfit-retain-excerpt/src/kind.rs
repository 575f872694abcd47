//! What a result is — a file's text, a listing, a log, a document, or anything else — by the call that produced
//! it and, for a shell command, by the command and what it printed. Every other part of the rule asks this first:
//! a log keeps its outcomes, a listing its first lines, a read its number column, a document only what is not
//! shown elsewhere.
//!
//! ## What
//! `read_file` tools and shell readers (`cat`, `sed -n`, `head`, `tail`, `nl`, or a policy's `shell_patterns`)
//! are reads; `listing` tools and shell listers (`ls`, `find`, `grep`, `rg`, …) listings; a command whose output
//! is a JSON value or a record of changes (a diff, `git show`, `git log -p`), or that prints a manual (`--help`,
//! `man`), a document; any other command a log; every other tool's result (an API's, a web page, an edit's
//! confirmation) is other.
//!
//! ## Why
//! The same lines mean different things: in a log, `error:` is what the agent will need; in a file, every line
//! is; in a JSON document, nothing is an "outcome". Judging by the command and the output, not the tool's name
//! alone, is what lets one rule serve Claude Code's `Bash`, Codex's `exec_command` and a team's own shell tool.
//!
//! ## Example
//! `cargo test 2>&1 | tail -50` is a log; `gh pr list --json number,title` and `git diff` documents; `sed -n
//! 1,80p src/a.rs` a read of `src/a.rs`; `rg -n parse src/` a listing.

use std::cell::OnceCell;

use ctxfit_model::Value;
use ctxfit_retention::calls::{
    main_stage, program_of, read_target, shell_command, stage_program, stage_words, ReadTarget,
    SHELL_LISTERS,
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
    /// of an API, `kubectl get -o json`), a record of changes (`git diff`, `git show`) or a command's manual
    /// (`--help`, `man`). It has no outcome to keep and is read as a whole, like an API result.
    Document,
    /// Anything else (API results, edits' confirmations, web pages).
    Other,
}

/// The most lines a tool prints before a command's own output (Codex CLI's `Exit code: 0` … `Output:`).
const WRAPPER_LINES: usize = 8;

const SHELL_READERS: &[&str] = &["cat", "sed", "head", "tail", "nl", "less", "more"];
/// Does a shell command line print a manual: `tool --help`, `tool sub --help`, `tool help sub`, `man tool`?
pub fn prints_manual(command: &str) -> bool {
    stage_prints_manual(main_stage(command))
}

/// [`prints_manual`] of the stage that mainly runs ([`main_stage`]).
fn stage_prints_manual(stage: &str) -> bool {
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

/// Is a command's output a record of changes — a diff (`git diff`, `diff -u`) or commits with their diffs or
/// messages (`git show`, `git log`) — after at most a few lines a tool wraps around it? Its first line says so:
/// `diff --git a/…`, `diff -u …`, `--- a/…`, `Index: …`, or `commit` and a hash. Such text is what the code
/// became, read as a whole like a file, not the record of a run whose outcome is what counts.
pub fn is_change_record(text: &str) -> bool {
    let hash = |w: &str| w.len() >= 7 && w.bytes().all(|b| b.is_ascii_hexdigit());
    text.lines().take(WRAPPER_LINES).any(|line| {
        line.starts_with("diff --git ")
            || line.starts_with("diff -")
            || (line.starts_with("--- ") && text.contains("\n+++ "))
            || line.starts_with("Index: ")
            || line
                .strip_prefix("commit ")
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(hash)
    })
}

impl Excerpt {
    /// The kind of content of a call's result, `text`.
    pub fn kind(&self, tool_kind: &str, tool_name: &str, input: &Value, text: &str) -> ContentKind {
        let target = OnceCell::new();
        self.kind_of(tool_kind, tool_name, input, text, &target)
    }

    /// [`Excerpt::kind`], with the call's read target kept in `target` once it is looked for (the trailer asks
    /// for it again).
    pub(crate) fn kind_of(
        &self,
        tool_kind: &str,
        tool_name: &str,
        input: &Value,
        text: &str,
        target: &OnceCell<Option<ReadTarget>>,
    ) -> ContentKind {
        match tool_kind {
            "read_file" => ContentKind::Read,
            "listing" => ContentKind::Listing,
            "bash" => {
                let target = target.get_or_init(|| read_target(tool_name, input, &self.shell));
                if target.is_some() {
                    return ContentKind::Read;
                }
                let command = shell_command(input).unwrap_or_default();
                let stage = main_stage(command.as_ref());
                let program = stage_program(stage);
                if SHELL_READERS.contains(&program) {
                    ContentKind::Read
                } else if SHELL_LISTERS.contains(&program) {
                    ContentKind::Listing
                } else if stage_prints_manual(stage)
                    || is_json_output(text)
                    || is_change_record(text)
                {
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
    use super::{is_change_record, is_json_output, prints_manual};

    #[test]
    fn diffs_and_commits_by_their_first_line() {
        for text in [
            "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@",
            "--- a/x.py\n+++ b/x.py\n@@ -3,4 +3,4 @@",
            "diff -u old.txt new.txt\n--- old.txt",
            "commit 3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f\nAuthor: A <a@b.c>\n\n    fix the parser",
            "commit 3f2a9c1 (HEAD -> main)\nAuthor: A",
            "Exit code: 0\nWall time: 0.1 seconds\nOutput:\ndiff --git a/b b/b",
            "Index: trunk/a.c\n===================================================================",
        ] {
            assert!(is_change_record(text), "{text}");
        }
        for text in [
            "   Compiling a v0.1.0\nerror[E0308]: mismatched types",
            "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1",
            "commit message too long\nhint: shorten it",
            "3f2a9c1 fix the parser\n8e1d2c3 add tests",
            "",
        ] {
            assert!(!is_change_record(text), "{text}");
        }
    }

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
