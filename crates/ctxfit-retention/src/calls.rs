//! What a tool call does to files, across agents: which file (and range) a call reads, and what an edit changes.
//!
//! Rules share this vocabulary so that one rule serves Claude Code (`Read`, `Edit`, `MultiEdit`, `Write`),
//! OpenHands (`str_replace_editor` with `command`), SWE-agent (`open`, `create`, `edit`), the seeds'
//! `read_file`/`edit_file`, and file reads done through a shell (`cat FILE`, `nl -ba FILE | sed -n A,Bp`),
//! which are recognised by configurable patterns.

use std::borrow::Cow;
use std::sync::Arc;

use ctxfit_model::Value;
use regex::Regex;

mod patch;

/// A file (and, for a partial read, the range) a call reads. Reads of one file count as the same read only
/// when their ranges are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadTarget {
    pub path: String,
    /// A normalised description of the range (`offset=55,limit=50`, `lines 10-20`), `None` for a whole file.
    pub range: Option<String>,
}

/// Default patterns of shell commands that read a file: named groups `path` and, optionally, `range`.
pub const DEFAULT_SHELL_READS: &[&str] = &[
    r#"^\s*cat\s+(?:-n\s+)?["']?(?P<path>[^\s|;&<>"']+)["']?\s*$"#,
    r#"^\s*nl\s+-ba\s+["']?(?P<path>[^\s|;&<>"']+)["']?\s*\|\s*sed\s+-n\s+["']?(?P<range>\d+,\d+)p["']?\s*$"#,
    r#"^\s*sed\s+-n\s+["']?(?P<range>\d+,\d+)p["']?\s+["']?(?P<path>[^\s|;&<>"']+)["']?\s*$"#,
];

/// Shell commands recognised as file reads.
#[derive(Debug, Clone)]
pub struct ShellReads {
    /// Shared by the clones: a clone of a `Regex` starts its own pool of search caches, which its first search
    /// builds (~50 k instructions a pattern, paid again by every compactor that cloned the defaults).
    patterns: Arc<[Regex]>,
}

/// The default patterns, compiled once per process: compiling them took most of the time a `smart` compactor
/// took to build (0.8 ms), which a proxy or a Python program pays per conversation.
static DEFAULT: std::sync::LazyLock<ShellReads> = std::sync::LazyLock::new(|| {
    ShellReads::compile(DEFAULT_SHELL_READS).unwrap_or(ShellReads {
        patterns: Arc::new([]),
    })
});

impl Default for ShellReads {
    fn default() -> Self {
        DEFAULT.clone()
    }
}

impl ShellReads {
    /// Compile patterns; each must have a `path` group.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<ShellReads, String> {
        let defaults = patterns.len() == DEFAULT_SHELL_READS.len()
            && patterns
                .iter()
                .zip(DEFAULT_SHELL_READS)
                .all(|(p, d)| p.as_ref() == *d);
        if defaults {
            return Ok(ShellReads::default());
        }
        ShellReads::compile(patterns)
    }

    fn compile<S: AsRef<str>>(patterns: &[S]) -> Result<ShellReads, String> {
        let mut out = Vec::new();
        for p in patterns {
            let re =
                Regex::new(p.as_ref()).map_err(|e| format!("pattern `{}`: {e}", p.as_ref()))?;
            if !re.capture_names().any(|n| n == Some("path")) {
                return Err(format!("pattern `{}` has no `path` group", p.as_ref()));
            }
            out.push(re);
        }
        Ok(ShellReads {
            patterns: out.into(),
        })
    }

    /// The file a shell command reads, if it is one of the recognised forms.
    pub fn target(&self, command: &str) -> Option<ReadTarget> {
        self.patterns.iter().find_map(|re| {
            // (a match test first: most commands are not reads, and finding the groups costs more than failing)
            if !re.is_match(command) {
                return None;
            }
            let caps = re.captures(command)?;
            Some(ReadTarget {
                path: normalise(caps.name("path")?.as_str()),
                range: caps
                    .name("range")
                    .map(|r| format!("lines {}", r.as_str().replace(',', "-"))),
            })
        })
    }
}

/// Tool names that run shell commands.
pub const SHELL_TOOLS: &[&str] = &[
    "bash",
    "Bash",
    "execute_bash",
    "shell",
    "run",
    "exec_command",
    "local_shell",
    "run_shell_command",
];

/// Where a file tool's input names its file: Claude Code and most (`file_path`), OpenHands, SWE-agent and Copilot
/// CLI (`path`), Gemini CLI's older `read_file` (`absolute_path`), opencode (`filePath`).
const PATH_KEYS: &[&str] = &["file_path", "path", "filename", "absolute_path", "filePath"];

fn normalise(path: &str) -> String {
    path.trim().trim_start_matches("./").to_owned()
}

fn str_of<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
}

/// The shell command of a call: `command` or `cmd` (SWE-agent's made-up `{"command": action}` too), as a string
/// or as an argument vector. Codex CLI's `shell` tool and the Responses API's `local_shell` action send a vector:
/// `["bash", "-lc", SCRIPT]` is its script; any other vector is its words joined by spaces, a word that holds
/// a space or a quote in single quotes. The Responses API's `shell` action sends `commands`, a list of command
/// lines run one after the other: a script of those lines.
pub fn shell_command(input: &Value) -> Option<Cow<'_, str>> {
    if let Some(s) = str_of(input, &["command", "cmd"]) {
        return Some(Cow::Borrowed(s));
    }
    if let Some(lines) = input.get("commands").and_then(Value::as_array) {
        let lines: Vec<&str> = lines.iter().map(Value::as_str).collect::<Option<_>>()?;
        return match lines.as_slice() {
            [] => None,
            [one] => Some(Cow::Borrowed(one)),
            _ => Some(Cow::Owned(lines.join("\n"))),
        };
    }
    let argv: Vec<&str> = ["command", "cmd"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_array))?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()?;
    match argv.as_slice() {
        [] => None,
        [shell, flag, script]
            if SHELLS.contains(&shell.rsplit('/').next().unwrap_or(shell))
                && matches!(*flag, "-c" | "-lc") =>
        {
            Some(Cow::Borrowed(script))
        }
        words => Some(Cow::Owned(
            words
                .iter()
                .map(|w| {
                    if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"".contains(c))
                    {
                        format!("'{}'", w.replace('\'', r"'\''"))
                    } else {
                        (*w).to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        )),
    }
}

/// The steps of a shell command line (split at newlines, `;` and `&&`) that are not a `cd`, trimmed.
fn steps(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(['\n', ';'])
        .flat_map(|s| s.split("&&"))
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with("cd ") && *s != "cd")
}

/// The step of a shell command line that mainly runs: the first pipeline stage of the last `&&`/`;` step that is
/// not a `cd`.
pub fn main_stage(command: &str) -> &str {
    first_stage_of(last_step(command).unwrap_or(""))
}

/// The last of [`steps`], found from the end: a long script before it (a heredoc, a multi-line program) is not
/// read.
fn last_step(command: &str) -> Option<&str> {
    let kept = |s: &&str| !s.is_empty() && !s.starts_with("cd ") && *s != "cd";
    command.rsplit(['\n', ';']).find_map(|piece| {
        if piece.contains("&&&") {
            // (a run of three `&` is cut differently from each end: as `steps` cuts it, from the start)
            piece.split("&&").map(str::trim).filter(kept).last()
        } else {
            piece.rsplit("&&").map(str::trim).find(kept)
        }
    })
}

/// The first pipeline stage of the first step of a shell command line that is not a `cd` (what it starts with:
/// `cat` for a heredoc that writes a file, where [`main_stage`] is the heredoc's last line).
pub fn first_stage(command: &str) -> &str {
    first_stage_of(steps(command).next().unwrap_or(""))
}

fn first_stage_of(step: &str) -> &str {
    step.split('|').next().unwrap_or("").trim()
}

/// The words of a stage after its leading `VAR=value` assignments.
pub fn stage_words(stage: &str) -> impl Iterator<Item = &str> {
    stage
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
}

/// The program a stage runs: its first word after the assignments, without its directory (`/usr/bin/python3`:
/// `python3`).
pub fn program_of(stage: &str) -> &str {
    let first = stage_words(stage).next().unwrap_or("");
    first.rsplit('/').next().unwrap_or(first)
}

/// The program a shell command line mainly runs: the first word of the first pipeline stage of the last
/// `&&`/`;` step that is not a `cd`. `git grep` and `git ls-files` count as `grep` and `ls`.
pub fn main_program(command: &str) -> &str {
    stage_program(main_stage(command))
}

/// [`main_program`] of a stage already found ([`main_stage`]).
pub fn stage_program(stage: &str) -> &str {
    match (program_of(stage), stage_words(stage).nth(1)) {
        ("git", Some("grep")) => "grep",
        ("git", Some("ls-files")) => "ls",
        (first, _) => first,
    }
}

/// Programs whose output is search hits or a listing of files: a shell command whose [`main_program`] is one of
/// these prints what a `Grep`, `Glob` or `ls` tool would return.
pub const SHELL_LISTERS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "locate",
];

/// The program of a shell call that searches or lists files (`grep -rn x src | head`: `grep`), if it is one.
pub fn shell_listing(input: &Value) -> Option<&'static str> {
    let command = shell_command(input)?;
    let program = main_program(&command);
    SHELL_LISTERS.iter().copied().find(|p| *p == program)
}

/// Shells whose `-c` (`-lc`) argument is the command they run.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "fish"];

/// The first whitespace-separated word and the rest, honouring simple double quotes (`open "a b.py" 30`).
fn split_first_arg(rest: &str) -> (String, &str) {
    let rest = rest.trim_start();
    if let Some(stripped) = rest.strip_prefix('"') {
        if let Some(end) = stripped.find('"') {
            return (stripped[..end].to_owned(), &stripped[end + 1..]);
        }
    }
    match rest.find(char::is_whitespace) {
        Some(i) => (rest[..i].to_owned(), &rest[i..]),
        None => (rest.to_owned(), ""),
    }
}

/// The file a call reads, or `None` when it is not a read.
pub fn read_target(tool: &str, input: &Value, shell: &ShellReads) -> Option<ReadTarget> {
    let range_of = |keys: &[&str]| -> Option<String> {
        let parts: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                input
                    .get(*k)
                    .filter(|v| !v.is_null())
                    .map(|v| format!("{k}={v}"))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(","))
    };
    match tool {
        "Read" | "read_file" | "view_file" | "cat" | "view" => Some(ReadTarget {
            path: normalise(str_of(input, PATH_KEYS)?),
            range: range_of(&["offset", "limit", "start_line", "end_line", "view_range"]),
        }),
        "str_replace_editor" if input.get("command").and_then(Value::as_str) == Some("view") => {
            Some(ReadTarget {
                path: normalise(str_of(input, &["path"])?),
                range: range_of(&["view_range"]),
            })
        }
        "open" => {
            if let Some(path) = str_of(input, &["path", "file_path", "filename"]) {
                return Some(ReadTarget {
                    path: normalise(path),
                    range: range_of(&["line_number"]),
                });
            }
            // SWE-agent without function calling: {"command": "open \"path\" [line]"}
            let rest = str_of(input, &["command"])?.trim().strip_prefix("open")?;
            let (path, line) = split_first_arg(rest);
            let line = line.trim();
            Some(ReadTarget {
                path: normalise(&path),
                range: (!line.is_empty()).then(|| format!("line {line}")),
            })
        }
        t if SHELL_TOOLS.contains(&t) => shell.target(&shell_command(input)?),
        _ => None,
    }
}

/// One change an edit makes to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditOp {
    /// Replace `old` by `new` (every occurrence when `all`).
    Replace { old: String, new: String, all: bool },
    /// The whole file is `content` (a write or a create).
    Write { content: String },
    /// Insert `text` after line `after_line` (0 = at the top, `usize::MAX` = at the end).
    Insert { after_line: usize, text: String },
    /// A change ctxfit cannot replay (line-range edits, undo): the content after it is unknown.
    Opaque { description: String },
}

/// An edit call: which file, what changes, and the agent's stated intent if its tool asked for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditCall {
    /// `None` when the call does not name its file (SWE-agent's `edit` acts on the open file).
    pub path: Option<String>,
    pub ops: Vec<EditOp>,
    pub intent: Option<String>,
}

/// Every edit a call makes, one per file: [`edit_call`]'s, or — Codex CLI's `apply_patch`, as its own tool (the
/// patch its input, or `{"input": PATCH}`) or run by a shell tool (`["apply_patch", PATCH]`, or a script starting
/// with `apply_patch` that holds the patch) — one per file its patch adds, updates or deletes.
pub fn edit_calls(tool: &str, input: &Value) -> Vec<EditCall> {
    match patch_text(tool, input) {
        Some(text) => patch::patch_edits(&text),
        None => edit_call(tool, input).into_iter().collect(),
    }
}

/// The patch of an `apply_patch` call.
fn patch_text<'a>(tool: &str, input: &'a Value) -> Option<Cow<'a, str>> {
    if tool == "apply_patch" {
        return (input.as_str())
            .or_else(|| str_of(input, &["input", "patch"]))
            .map(Cow::Borrowed)
            .or_else(|| operation_patch(input).map(Cow::Owned));
    }
    if !SHELL_TOOLS.contains(&tool) {
        return None;
    }
    let is_apply_patch = |program: &str| program.rsplit('/').next() == Some("apply_patch");
    let argv = ["command", "cmd"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_array));
    if let Some([program, patch]) = argv.map(Vec::as_slice) {
        if program.as_str().is_some_and(is_apply_patch) {
            return patch.as_str().map(Cow::Borrowed);
        }
    }
    let script = shell_command(input)?;
    (is_apply_patch(program_of(first_stage(&script))) && script.contains("*** Begin Patch"))
        .then_some(script)
}

/// The Responses API's `apply_patch` tool sends one file's change as an `operation` — `{"type": "update_file",
/// "path": P, "diff": HUNKS}` (and `move_to` when it renames the file), `create_file` (its `diff` the file's `+`
/// lines) or `delete_file` — which is that file's part of a patch.
fn operation_patch(input: &Value) -> Option<String> {
    let path = str_of(input, &["path"])?;
    let diff = str_of(input, &["diff"]).unwrap_or("");
    let (header, body) = match str_of(input, &["type"])? {
        "create_file" => ("Add File", diff),
        "update_file" => ("Update File", diff),
        "delete_file" => ("Delete File", ""),
        _ => return None,
    };
    let moved = match str_of(input, &["move_to"]) {
        Some(to) if header == "Update File" => format!("*** Move to: {to}\n"),
        _ => String::new(),
    };
    let newline = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    Some(format!(
        "*** Begin Patch\n*** {header}: {path}\n{moved}{body}{newline}*** End Patch\n"
    ))
}

fn replace_op(v: &Value, old_keys: &[&str], new_keys: &[&str]) -> Option<EditOp> {
    Some(EditOp::Replace {
        old: str_of(v, old_keys)?.to_owned(),
        new: str_of(v, new_keys).unwrap_or("").to_owned(),
        all: v
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// What an edit call changes, or `None` when the call is not an edit.
pub fn edit_call(tool: &str, input: &Value) -> Option<EditCall> {
    let intent = str_of(input, &["intent"]).map(str::to_owned);
    let path = str_of(input, PATH_KEYS).map(normalise);
    let ops = match tool {
        // Claude Code, and Gemini CLI's `replace`
        "Edit" | "replace" => vec![replace_op(input, &["old_string"], &["new_string"])?],
        "MultiEdit" => input
            .get("edits")?
            .as_array()?
            .iter()
            .filter_map(|e| replace_op(e, &["old_string"], &["new_string"]))
            .collect(),
        "Write" | "write_file" => vec![EditOp::Write {
            content: str_of(input, &["content", "file_text"])
                .unwrap_or("")
                .to_owned(),
        }],
        "edit_file" => match replace_op(
            input,
            &["old_string", "old_str", "old"],
            &["new_string", "new_str", "new"],
        ) {
            Some(op) => vec![op],
            None => match str_of(input, &["content", "file_text"]) {
                Some(c) => vec![EditOp::Write {
                    content: c.to_owned(),
                }],
                None => vec![EditOp::Opaque {
                    description: "edit_file".into(),
                }],
            },
        },
        "str_replace_editor" => match input.get("command").and_then(Value::as_str)? {
            "create" => vec![EditOp::Write {
                content: str_of(input, &["file_text"]).unwrap_or("").to_owned(),
            }],
            "str_replace" => vec![replace_op(input, &["old_str"], &["new_str"])?],
            "insert" => vec![EditOp::Insert {
                after_line: input
                    .get("insert_line")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as usize,
                text: str_of(input, &["new_str"]).unwrap_or("").to_owned(),
            }],
            "view" => return None,
            other => vec![EditOp::Opaque {
                description: format!("str_replace_editor {other}"),
            }],
        },
        "create" => {
            let path = path.clone().or_else(|| {
                let rest = str_of(input, &["command"])?.trim().strip_prefix("create")?;
                Some(normalise(&split_first_arg(rest).0))
            });
            return Some(EditCall {
                path,
                // SWE-agent's `create` makes an empty file; Copilot CLI's writes its `file_text`
                ops: vec![EditOp::Write {
                    content: str_of(input, &["file_text", "content"])
                        .unwrap_or("")
                        .to_owned(),
                }],
                intent,
            });
        }
        // SWE-agent with function calling: edit {search, replace}, insert {text, line?}
        "edit" if input.get("search").is_some() => {
            vec![replace_op(input, &["search"], &["replace"])?]
        }
        // Copilot CLI: edit {path, old_str, new_str}
        "edit" if input.get("old_str").is_some() => {
            vec![replace_op(input, &["old_str"], &["new_str"])?]
        }
        "insert" if input.get("text").is_some() => vec![EditOp::Insert {
            after_line: input
                .get("line")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |l| l as usize),
            text: str_of(input, &["text"]).unwrap_or("").to_owned(),
        }],
        "edit" | "insert" => vec![EditOp::Opaque {
            description: shell_command(input)
                .map(|c| c.lines().next().unwrap_or("").to_owned())
                .unwrap_or_else(|| format!("{tool} {input}")),
        }],
        _ => return None,
    };
    Some(EditCall { path, ops, intent })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every command line of up to six characters from the ones that cut steps (and a `cd`): the last step
    /// found from the end is the last one `steps` gives.
    #[test]
    fn the_last_step_from_the_end_as_from_the_start() {
        const CHARS: &[char] = &['a', ' ', '&', ';', '\n', 'c', 'd'];
        let mut line = Vec::new();
        for len in 0..=6u32 {
            for mut n in 0..CHARS.len().pow(len) {
                line.clear();
                for _ in 0..len {
                    line.push(CHARS[n % CHARS.len()]);
                    n /= CHARS.len();
                }
                let command: String = line.iter().collect();
                assert_eq!(last_step(&command), steps(&command).last(), "{command:?}");
            }
        }
    }

    #[test]
    fn shell_commands_as_strings_and_argument_vectors() {
        let check = |input: Value, want: Option<&str>| {
            assert_eq!(shell_command(&input).as_deref(), want, "{input}");
        };
        check(json!({"command": "ls -la"}), Some("ls -la"));
        check(json!({"cmd": "cargo test"}), Some("cargo test"));
        // Codex CLI's `shell` and the Responses API's `local_shell` action: a shell's script is the command
        check(
            json!({"command": ["bash", "-lc", "rg -n foo | head"], "workdir": "/w"}),
            Some("rg -n foo | head"),
        );
        check(
            json!({"type": "exec", "command": ["/bin/sh", "-c", "make"]}),
            Some("make"),
        );
        // the Responses API's `shell` action: its command lines, a script
        check(
            json!({"commands": ["cargo test -q"], "timeout_ms": 60000}),
            Some("cargo test -q"),
        );
        check(
            json!({"commands": ["cd src", "rg -n TODO"]}),
            Some("cd src\nrg -n TODO"),
        );
        check(json!({"commands": []}), None);
        check(json!({"commands": ["ls", 1]}), None);
        // any other vector is its words, quoted where a shell would need it
        check(
            json!({"command": ["rg", "-n", "fn main", "src/"]}),
            Some("rg -n 'fn main' src/"),
        );
        check(
            json!({"command": ["echo", "it's"]}),
            Some(r"echo 'it'\''s'"),
        );
        check(
            json!({"command": ["bash", "-x", "run.sh"]}),
            Some("bash -x run.sh"),
        );
        check(json!({"command": []}), None);
        check(json!({"command": ["ls", 3]}), None);
        check(json!({"path": "a"}), None);
        // a shell read through a vector is a read
        let shell = ShellReads::default();
        assert_eq!(
            read_target(
                "shell",
                &json!({"command": ["bash", "-lc", "cat src/a.rs"]}),
                &shell
            ),
            Some(ReadTarget {
                path: "src/a.rs".into(),
                range: None
            })
        );
        assert_eq!(
            read_target(
                "local_shell",
                &json!({"command": ["sed", "-n", "1,80p", "b.py"]}),
                &shell
            ),
            Some(ReadTarget {
                path: "b.py".into(),
                range: Some("lines 1-80".into())
            })
        );
    }

    #[test]
    fn reads_across_agents() {
        let shell = ShellReads::default();
        // the defaults compile (else the default would recognise nothing), and asking for them by value gives them
        assert!(ShellReads::compile(DEFAULT_SHELL_READS).is_ok());
        assert_eq!(shell.patterns.len(), DEFAULT_SHELL_READS.len());
        // every compactor's defaults are the same patterns, with one pool of search caches
        assert!(Arc::ptr_eq(
            &shell.patterns,
            &ShellReads::default().patterns
        ));
        assert!(Arc::ptr_eq(
            &shell.patterns,
            &ShellReads::new(DEFAULT_SHELL_READS).unwrap().patterns
        ));
        assert_eq!(
            ShellReads::new(DEFAULT_SHELL_READS).map(|s| s.patterns.len()),
            Ok(DEFAULT_SHELL_READS.len())
        );
        let check = |tool: &str, input: Value, expected: Option<(&str, Option<&str>)>| {
            let got = read_target(tool, &input, &shell);
            let expected = expected.map(|(p, r)| ReadTarget {
                path: p.into(),
                range: r.map(Into::into),
            });
            assert_eq!(got, expected, "{tool} {input}");
        };
        check(
            "Read",
            json!({"file_path": "/a/b.rs"}),
            Some(("/a/b.rs", None)),
        );
        check(
            "Read",
            json!({"file_path": "/a/b.rs", "offset": 55, "limit": 50}),
            Some(("/a/b.rs", Some("offset=55,limit=50"))),
        );
        check(
            "str_replace_editor",
            json!({"command": "view", "path": "/w/x.py", "view_range": [1, 20]}),
            Some(("/w/x.py", Some("view_range=[1,20]"))),
        );
        check(
            "str_replace_editor",
            json!({"command": "create", "path": "/w/x.py"}),
            None,
        );
        check(
            "open",
            json!({"path": "src/fields.py", "line_number": 1474}),
            Some(("src/fields.py", Some("line_number=1474"))),
        );
        check(
            "open",
            json!({"command": "open \"src/marshmallow/fields.py\" 1474"}),
            Some(("src/marshmallow/fields.py", Some("line 1474"))),
        );
        check(
            "Bash",
            json!({"command": "cat ./README.md"}),
            Some(("README.md", None)),
        );
        check(
            "bash",
            json!({"command": "nl -ba src/a.rs | sed -n 10,40p"}),
            Some(("src/a.rs", Some("lines 10-40"))),
        );
        check(
            "execute_bash",
            json!({"command": "sed -n '5,9p' x.txt"}),
            Some(("x.txt", Some("lines 5-9"))),
        );
        check("Bash", json!({"command": "cat a.txt | grep x"}), None);
        check("Bash", json!({"command": "git status"}), None);
        check("Grep", json!({"pattern": "x"}), None);
        // Gemini CLI, Copilot CLI, opencode
        check(
            "read_file",
            json!({"absolute_path": "/w/src/main.py"}),
            Some(("/w/src/main.py", None)),
        );
        check(
            "view",
            json!({"path": "src/app.ts", "view_range": [1, 40]}),
            Some(("src/app.ts", Some("view_range=[1,40]"))),
        );
        check(
            "read_file",
            json!({"filePath": "lib/x.go", "offset": 10}),
            Some(("lib/x.go", Some("offset=10"))),
        );
        check(
            "run_shell_command",
            json!({"command": "cat package.json"}),
            Some(("package.json", None)),
        );
    }

    #[test]
    fn edits_across_agents() {
        let e = edit_call("Edit", &json!({"file_path": "a.md", "old_string": "x", "new_string": "y", "intent": "fix typo"})).unwrap();
        assert_eq!(e.path.as_deref(), Some("a.md"));
        assert_eq!(
            e.ops,
            [EditOp::Replace {
                old: "x".into(),
                new: "y".into(),
                all: false
            }]
        );
        assert_eq!(e.intent.as_deref(), Some("fix typo"));
        let m = edit_call("MultiEdit", &json!({"file_path": "a", "edits": [{"old_string": "1", "new_string": "2"}, {"old_string": "3", "new_string": "4", "replace_all": true}]})).unwrap();
        assert_eq!(m.ops.len(), 2);
        let w = edit_call("Write", &json!({"file_path": "n.txt", "content": "hello"})).unwrap();
        assert_eq!(
            w.ops,
            [EditOp::Write {
                content: "hello".into()
            }]
        );
        let i = edit_call(
            "str_replace_editor",
            &json!({"command": "insert", "path": "p", "insert_line": 3, "new_str": "z"}),
        )
        .unwrap();
        assert_eq!(
            i.ops,
            [EditOp::Insert {
                after_line: 3,
                text: "z".into()
            }]
        );
        assert!(edit_call(
            "str_replace_editor",
            &json!({"command": "view", "path": "p"})
        )
        .is_none());
        let c = edit_call("create", &json!({"command": "create reproduce.py"})).unwrap();
        assert_eq!(c.path.as_deref(), Some("reproduce.py"));
        let s = edit_call(
            "edit",
            &json!({"command": "edit 1:1\nprint(1)\nend_of_edit"}),
        )
        .unwrap();
        assert!(matches!(&s.ops[0], EditOp::Opaque { description } if description == "edit 1:1"));
        assert!(edit_call("Read", &json!({"file_path": "x"})).is_none());
        // Gemini CLI's replace, Copilot CLI's edit and create
        let replace = |old: &str, new: &str| {
            vec![EditOp::Replace {
                old: old.into(),
                new: new.into(),
                all: false,
            }]
        };
        let g = edit_call(
            "replace",
            &json!({"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}),
        )
        .unwrap();
        assert_eq!(
            (g.path.as_deref(), g.ops),
            (Some("/w/a.py"), replace("a", "b"))
        );
        let e = edit_call(
            "edit",
            &json!({"path": "src/a.ts", "old_str": "let", "new_str": "const"}),
        )
        .unwrap();
        assert_eq!(
            (e.path.as_deref(), e.ops),
            (Some("src/a.ts"), replace("let", "const"))
        );
        let c = edit_call("create", &json!({"path": "n.md", "file_text": "# N"})).unwrap();
        assert_eq!(
            (c.path.as_deref(), c.ops),
            (
                Some("n.md"),
                vec![EditOp::Write {
                    content: "# N".into()
                }]
            )
        );
    }

    #[test]
    fn apply_patch_in_each_of_its_forms() {
        let patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** Add File: b.py\n+y = 3\n*** End Patch";
        let paths = |tool: &str, input: Value| -> Vec<String> {
            edit_calls(tool, &input)
                .into_iter()
                .map(|e| e.path.unwrap())
                .collect()
        };
        let both = ["a.py", "b.py"];
        // Codex CLI's free-form tool, and the function tool before it
        assert_eq!(paths("apply_patch", json!(patch)), both);
        assert_eq!(paths("apply_patch", json!({"input": patch})), both);
        // run by a shell tool: an argument vector, or a script with a heredoc
        assert_eq!(
            paths("shell", json!({"command": ["apply_patch", patch]})),
            both
        );
        let heredoc = format!("apply_patch <<'EOF'\n{patch}\nEOF\n");
        assert_eq!(paths("exec_command", json!({"cmd": heredoc})), both);
        assert_eq!(
            paths("shell", json!({"command": ["bash", "-lc", heredoc]})),
            both
        );
        // the Responses API's `apply_patch` tool: one file's operation
        let update = json!({"type": "update_file", "path": "a.py", "diff": "@@\n-x = 1\n+x = 2\n"});
        let edits = edit_calls("apply_patch", &update);
        assert_eq!(
            edits,
            patch::patch_edits(&patch.replace("*** Add File: b.py\n+y = 3\n", ""))
        );
        assert_eq!(edits.len(), 1);
        let create = json!({"type": "create_file", "path": "b.py", "diff": "+y = 3"});
        assert_eq!(paths("apply_patch", create), ["b.py"]);
        let delete = json!({"type": "delete_file", "path": "old.py"});
        assert_eq!(
            edit_calls("apply_patch", &delete)[0].ops,
            [EditOp::Opaque {
                description: "delete the file".into()
            }]
        );
        assert!(paths("apply_patch", json!({"type": "rename", "path": "a"})).is_empty());
        let moved =
            json!({"type": "update_file", "path": "a.py", "move_to": "b.py", "diff": "@@\n-x\n+y"});
        assert_eq!(
            edit_calls("apply_patch", &moved),
            patch::patch_edits("*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch")
        );
        // a shell command that only mentions a patch, and another tool, are not apply_patch
        assert!(paths(
            "shell",
            json!({"command": format!("cat <<'EOF'\n{patch}\nEOF")})
        )
        .is_empty());
        assert!(paths("Read", json!({"file_path": "a.py"})).is_empty());
        // the other edit tools are one edit each, as edit_call reads them
        assert_eq!(
            edit_calls(
                "Edit",
                &json!({"file_path": "c.py", "old_string": "a", "new_string": "b"})
            ),
            vec![edit_call(
                "Edit",
                &json!({"file_path": "c.py", "old_string": "a", "new_string": "b"})
            )
            .unwrap()]
        );
    }
}
