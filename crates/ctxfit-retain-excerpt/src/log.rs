//! Logs: of a long log, its first and last lines and every line that says how the run went.
//!
//! ## What
//! Shell output that is not a read, a listing or a document (builds, tests, scripts, installs), when still
//! longer than `log_above` characters (300) once the runs shown elsewhere are out, keeps its first `log_head` (2)
//! and last `log_tail` (4) lines and every line that reports an outcome ([`reports_outcome`]: error, failure,
//! exception, traceback frame, warning, panic, assertion, a passed/failed summary); the rest becomes
//! `[… 40 lines omitted]`. A stack frame in code the agent did not write ([`library_frame`]: `site-packages/`,
//! `<frozen …>`, `node_modules/`) is not an outcome. Of a long Python traceback through the agent's own code,
//! the first `frames_first` (1) of those frames stay — where the run started — and the last `frames_last` (3) —
//! where it failed (`frames_between` says which go). A gap of one line no longer than its marker keeps the line.
//!
//! ## Why
//! What an agent needs again of a test run or a build is whether it passed, what failed and where: the summary
//! line, the error, the frames of its own code. The progress lines between are what makes logs long.
//!
//! ## Example
//! ```text
//! running 120 tests
//! test io::read_empty ... ok
//! [… 114 lines omitted]
//! test io::read_gzip ... FAILED
//! thread 'io::read_gzip' panicked at src/io.rs:88:5:
//! test result: FAILED. 119 passed; 1 failed
//! ```

use ctxfit_retention::trim_line_start;

/// Does a log line report an outcome? Words are matched whole and without regard to ASCII case.
pub fn reports_outcome(line: &str) -> bool {
    let trimmed = trim_line_start(line);
    if trimmed.starts_with(PYTHON_FRAME)
        || trimmed.starts_with("--> ")
        || trimmed.starts_with("E   ")
    {
        return true;
    }
    // one pass over the line's bytes: a word is a run of ASCII letters, digits and `_` (every byte of a
    // character beyond ASCII ends one, as the character itself would)
    let mut start = 0;
    for (i, &b) in line.as_bytes().iter().enumerate() {
        if !(b.is_ascii_alphanumeric() || b == b'_') {
            if outcome_word(&line.as_bytes()[start..i]) {
                return true;
            }
            start = i + 1;
        }
    }
    outcome_word(&line.as_bytes()[start..])
}

/// Words that report an outcome, lower case.
const OUTCOME_WORDS: &[&[u8]] = &[
    b"error",
    b"errors",
    b"fail",
    b"failed",
    b"failure",
    b"failures",
    b"exception",
    b"traceback",
    b"panic",
    b"panicked",
    b"warning",
    b"warnings",
    b"assert",
    b"assertionerror",
    b"passed",
    b"fatal",
    b"abort",
    b"aborted",
    b"denied",
    b"undefined",
    b"cannot",
    b"unable",
    b"killed",
    b"timeout",
];

/// Is one word (ASCII) an outcome word, or an exception's name (`ValueError`, `IOException`, `KeyError`)?
fn outcome_word(w: &[u8]) -> bool {
    // (the longest word of the list has 14 letters: a longer word can only end like an exception's name)
    const LONGEST: usize = 14;
    if w.len() < 4 {
        return false;
    }
    let ends_with = |suffix: &str| {
        w.len() > suffix.len()
            && w[w.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    if ends_with("error") || ends_with("exception") {
        return true;
    }
    if w.len() > LONGEST {
        return false;
    }
    let mut lower = [0u8; LONGEST];
    for (l, b) in lower.iter_mut().zip(w) {
        *l = b.to_ascii_lowercase();
    }
    OUTCOME_WORDS.contains(&&lower[..w.len()])
}

/// Is a log line a stack frame in code the agent did not write — an installed package, the language's own
/// library, the interpreter's frozen modules? (`File "/usr/lib/python3.11/site-packages/x.py", line 3, in f`,
/// `at Object.<anonymous> (node_modules/a/b.js:1:2)`.)
pub fn library_frame(line: &str) -> bool {
    const PLACES: &[&str] = &[
        "site-packages/",
        "dist-packages/",
        "/lib/python",
        "<frozen ",
        "node_modules/",
        "/rustc/",
        "/.cargo/registry/",
        "/usr/lib/",
        "/usr/local/lib/",
    ];
    let t = line.trim_start();
    let frame = python_frame(line) || t.starts_with("at ");
    frame && PLACES.iter().any(|p| t.contains(p))
}

/// Is a log line a Python stack frame (`  File "src/app.py", line 3, in main`)?
pub(crate) fn python_frame(line: &str) -> bool {
    trim_line_start(line).starts_with(PYTHON_FRAME)
}

/// What a Python stack frame's line starts with, after its indent.
const PYTHON_FRAME: &str = "File \"";

/// The frames of the agent's own code (not [`library_frame`]s) that stand between the first `first` and the last
/// `last` of their traceback. A traceback is a run of frames with only indented lines between them (the frame's
/// code, the `^^^^` under it, `[Previous line repeated 996 more times]`); a chained exception starts another.
pub(crate) fn frames_between(lines: &[&str], first: usize, last: usize) -> Vec<bool> {
    let mut between = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if !python_frame(lines[i]) {
            i += 1;
            continue;
        }
        let mut own = Vec::new();
        let mut end = i;
        let mut j = i;
        while j < lines.len() {
            if python_frame(lines[j]) {
                if !library_frame(lines[j]) {
                    own.push(j);
                }
                end = j + 1;
            } else if lines[j].trim().is_empty() || !lines[j].starts_with(char::is_whitespace) {
                break;
            }
            j += 1;
        }
        let n = own.len();
        for (k, &f) in own.iter().enumerate() {
            between[f] = k >= first && k + last < n;
        }
        i = end.max(i + 1);
    }
    between
}

#[cfg(test)]
mod tests {
    use super::{python_frame, reports_outcome};
    use proptest::prelude::*;

    /// The outcome test as first written (a search per word over the lowered line): the one-pass version answers
    /// the same.
    fn reports_outcome_by_search(line: &str) -> bool {
        let trimmed = line.trim_start();
        if python_frame(line) || trimmed.starts_with("--> ") || trimmed.starts_with("E   ") {
            return true;
        }
        let lower = line.to_ascii_lowercase();
        let bytes = lower.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        super::OUTCOME_WORDS.iter().any(|w| {
            let w = std::str::from_utf8(w).unwrap();
            lower.match_indices(w).any(|(at, _)| {
                let end = at + w.len();
                (at == 0 || !is_word(bytes[at - 1])) && (end == bytes.len() || !is_word(bytes[end]))
            })
        }) || lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w.len() > 5 && (w.ends_with("error") || w.ends_with("exception")))
    }

    #[test]
    fn outcome_lines_as_the_search_found_them() {
        let words = (super::OUTCOME_WORDS.iter())
            .map(|w| std::str::from_utf8(w).unwrap())
            .chain([
                "ValueError",
                "IOException",
                "Error",
                "error_",
                "errorx",
                "xerror",
                "érror",
                "FAİL",
            ]);
        for w in words {
            for line in [
                w.to_owned(),
                w.to_ascii_uppercase(),
                format!("  {w}: x"),
                format!("a_{w}"),
                format!("{w}1 ok"),
                format!("é{w}é"),
                format!("test::{w}::b ... ok"),
                format!("1 {w}, 2 ok"),
            ] {
                assert_eq!(
                    reports_outcome(&line),
                    reports_outcome_by_search(&line),
                    "{line:?}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn outcome_any_line(line in "[ a-zA-Z_:.é(),0-9-]{0,40}(error|fail|passed|exception|Error)?[ a-z_.é]{0,10}") {
            prop_assert_eq!(reports_outcome(&line), reports_outcome_by_search(&line));
        }
    }
}
