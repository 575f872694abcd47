//! Rule `excerpt`: keep of a stale result what the request does not already show, and of a long log or listing
//! the lines that say how it went.
//!
//! ## What it does
//! The result's own lines, in order, with a marker for each gap:
//!
//! 1. **Shown elsewhere.** A run of at least `min_run` lines (3) that the request already shows — in a message's
//!    text, a tool call's input, or another result whose decision is final — becomes
//!    `[… 12 lines shown elsewhere in this conversation]`. A line number (`   12→`, `12\t`) and surrounding space
//!    do not count in the comparison, so a re-read after an edit keeps just the lines that changed.
//! 2. **Logs.** Shell output that is not a file read, a search or a document (builds, tests, scripts,
//!    installs), when still longer than `log_above` characters (300), keeps its first `log_head` (2) and last
//!    `log_tail` (4) lines and every line that reports an outcome (error, failure, exception, traceback frame, warning, panic,
//!    assertion, passed/failed summary); the rest becomes `[… 40 lines omitted]`. A stack frame in code the
//!    agent did not write (an installed package, the language's library: `site-packages/`, `<frozen …>`,
//!    `node_modules/`) is not an outcome: the frames of the agent's own code and the error stay. Of a long
//!    Python traceback through the agent's own code (an import chain twenty modules deep), the first
//!    `frames_first` (1) of those frames stay — where the run started — and the last `frames_last` (3) — where it
//!    failed; the ones between go with the rest. A gap of one line no longer than its marker keeps the line.
//!    A document is output that is a JSON value (`gh … --json`, `curl` of an API; after at most a few lines
//!    the agent's tool wraps around it) or a command's manual (`--help`, `help`, `man`): it has no outcome to
//!    keep, so it is treated as an API result — only the runs shown elsewhere go, and `bash` cuts it to its head
//!    and tail when it is over 10,000 characters.
//! 3. **Listings.** A search or listing (`Grep`, `Glob`, `ls`, `find`, `grep -rn` in a shell) still longer than
//!    `listing_above` characters (2,000) keeps its first `listing_keep` lines (20).
//! 4. **Line numbers.** A numbered read (`cat -n`, Claude Code's `Read`) whose numbers run on one by one loses
//!    the number column; a first line `[lines 120–380; numbers dropped, count from 120]` says how to restore it.
//! 5. **Long listings' columns.** The lines of an `ls -l` listing (`-rw-r--r-- 1 root root 4096 Sep 10  2025
//!    setup.py`) keep their mode and name (`-rw-r--r-- setup.py`, `lrwxrwxrwx link -> target`): what is a
//!    directory, a link or an executable, and what it is called. A line `[mode and name only: the links, owner,
//!    group, size and date of 14 long-listing lines left out]` before the first says so. It takes at least
//!    `long_listing_min` (5) such lines (0: never).
//! 6. **Lists of records.** An API result (not a file read, a listing or shell output) that is one JSON value
//!    longer than `json_above` characters (2,000) keeps, of each array of more than `json_items` (1) objects or
//!    arrays, the first `json_items` — what every record holds, with the lists inside them cut the same way — and
//!    of every later one its first field, the record's key as APIs write it first (`id`, `name`, `flight_number`),
//!    with ` …` where the rest was: `{"flight_number": "HAT083" …}`. It is cut from the result's own text, spacing
//!    and escapes included; a cut record's nested lists go with the rest of it. A list whose records hold prose (a
//!    string of more than 200 bytes: comments, issue bodies, search snippets) is text to read and stays
//!    (`json_items = 0`: never cut).
//! 7. **Records fetched again.** An API result or a command's JSON that is one object on one line — a record, as
//!    function-calling tools return one (`json.dumps(reservation)`) — leaves out the fields that the request
//!    shows for good in a record with the same first field (`"reservation_id": "JG7FMM"`: the record's key), byte
//!    for byte: the reservation as an earlier lookup showed it, before the update that answered with all of it
//!    again. Each run of them longer than its marker becomes `[… 4 fields shown elsewhere in this conversation
//!    for this record]`; the fields that changed stay. It is what the first step does for a re-read file, for a
//!    record whose lines are too long to compare one by one (a pretty-printed record is compared line by line).
//!    `record_fields = false` leaves records whole.
//!
//! An excerpt must save at least `min_saving` (0.1) of the result's characters, or the result is left as it is.
//!
//! A result with a gap ends with how to get it back: `[excerpt of a stale result — re-read src/a.rs for the full
//! text]` (or re-run the command, or call the tool again). A result the rule would not change is left to the
//! next rule of the profile ([`Decision::Defer`]): `read-file`, `bash` and `recent` still apply seed 004's table.
//!
//! ## Why
//! Most of what an agent is sent again on every request is text it has already seen twice: the file it read before
//! editing and read again after, the test log of the run before last, the hundred search hits it followed one of,
//! the twenty flights an API offered that it has already answered about, the reservation an update sends back
//! whole. An agent needs each line once, the outcome
//! of a run, what a list's records hold and which there were, and the way back to the rest. What this rule keeps is
//! the result's own text, so it never invents anything, and what it leaves out is either still in front of the model
//! or one call away. It decides as soon as the model has answered the result, so the cached prefix breaks only over
//! that result and the answer (under `smart`'s payback rule a small cut that would not yet pay for its cache write
//! waits with this rule's cut, the rule asked again as the history grows and when the cut is made).
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "excerpt"
//! tools = ["bash", "read_file", "listing", "web_fetch"]
//! params = { min_run = 4, log_above = 2000, log_head = 10, log_tail = 20, listing_keep = 30, frames_last = 5 }
//! ```

mod json;

use ctxfit_model::{Block, Content, Value};
pub use ctxfit_retention::calls::main_program;
use ctxfit_retention::calls::{
    main_stage, program_of, read_target, shell_command, stage_words, ShellReads, SHELL_LISTERS,
};
use ctxfit_retention::{
    line_number_prefix, normalized_line, record_member_line, record_members, register_rule,
    Decision, RetentionRule, RuleConfigError, RuleContext, ShownLines,
};

/// What the rule keeps; see the crate documentation.
#[derive(Debug, Clone)]
pub struct Excerpt {
    pub min_run: usize,
    pub log_above: usize,
    pub log_head: usize,
    pub log_tail: usize,
    pub listing_above: usize,
    pub listing_keep: usize,
    /// Of each traceback's frames in the agent's own code, how many of the first and of the last stay.
    pub frames_first: usize,
    pub frames_last: usize,
    /// The fewest `ls -l` lines a result must hold for their columns to go; 0 keeps them always.
    pub long_listing_min: usize,
    /// An API result that is one JSON value longer than this many characters has its lists of records cut.
    pub json_above: usize,
    /// Of a list of records, how many of the first stay whole; 0 leaves JSON results as they are.
    pub json_items: usize,
    /// Whether a record fetched again leaves out the fields shown elsewhere for the same record.
    pub record_fields: bool,
    pub strip_line_numbers: bool,
    /// The least share of the result's characters an excerpt must save to be worth breaking the cache for.
    pub min_saving: f64,
    shell: ShellReads,
}

impl Default for Excerpt {
    fn default() -> Self {
        Excerpt {
            min_run: 3,
            log_above: 300,
            log_head: 2,
            log_tail: 4,
            listing_above: 2_000,
            listing_keep: 20,
            frames_first: 1,
            frames_last: 3,
            long_listing_min: 5,
            json_above: 2_000,
            json_items: 1,
            record_fields: true,
            strip_line_numbers: true,
            min_saving: 0.1,
            shell: ShellReads::default(),
        }
    }
}

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

/// Does a log line report an outcome? Words are matched whole and without regard to ASCII case.
pub fn reports_outcome(line: &str) -> bool {
    let trimmed = line.trim_start();
    if python_frame(line) || trimmed.starts_with("--> ") || trimmed.starts_with("E   ") {
        return true;
    }
    // one pass over the line's words (runs of ASCII letters, digits and `_`)
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(outcome_word)
}

/// Words that report an outcome, lower case.
const OUTCOME_WORDS: &[&str] = &[
    "error",
    "errors",
    "fail",
    "failed",
    "failure",
    "failures",
    "exception",
    "traceback",
    "panic",
    "panicked",
    "warning",
    "warnings",
    "assert",
    "assertionerror",
    "passed",
    "fatal",
    "abort",
    "aborted",
    "denied",
    "undefined",
    "cannot",
    "unable",
    "killed",
    "timeout",
];

/// Is one word (ASCII) an outcome word, or an exception's name (`ValueError`, `IOException`, `KeyError`)?
fn outcome_word(w: &str) -> bool {
    let ends_with = |suffix: &str| {
        w.len() >= suffix.len() && w[w.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    (w.len() >= 4 && OUTCOME_WORDS.iter().any(|k| w.eq_ignore_ascii_case(k)))
        || (w.len() > 5 && (ends_with("error") || ends_with("exception")))
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
fn python_frame(line: &str) -> bool {
    line.trim_start().starts_with("File \"")
}

/// The frames of the agent's own code (not [`library_frame`]s) that stand between the first `first` and the last
/// `last` of their traceback. A traceback is a run of frames with only indented lines between them (the frame's
/// code, the `^^^^` under it, `[Previous line repeated 996 more times]`); a chained exception starts another.
fn frames_between(lines: &[&str], first: usize, last: usize) -> Vec<bool> {
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

/// Can the rule keep `kept` of the result's line `line`? The line itself, the line less its number
/// ([`line_number_prefix`]), or a long listing line's mode and name ([`long_listing_line`]).
pub fn keeps_of(line: &str, kept: &str) -> bool {
    line == kept
        || &line[line_number_prefix(line)..] == kept
        || long_listing_line(line)
            .is_some_and(|(mode, name)| kept == format!("{} {}", &line[mode], &line[name]))
}

type LongLine = (std::ops::Range<usize>, std::ops::RangeFrom<usize>);

/// A line of an `ls -l` listing, as its mode (`drwxr-xr-x`, `-rw-r--r--@`) and its name (`setup.py`, `link ->
/// target`): the byte ranges of both, leaving out the link count, owner, group, size (`4096`, `4.0K`, `1,5M`)
/// and date (`Sep 10  2025`, `Apr 10 07:00`, `2025-09-10 07:00`) between them.
pub fn long_listing_line(line: &str) -> Option<LongLine> {
    // `split_whitespace` yields subslices of the line: their offsets in it
    let mut words = line
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - line.as_ptr() as usize, w));
    let digits = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    let (at, mode) = words.next()?;
    let bits = mode.trim_end_matches(['.', '+', '@']);
    let mode_ok = bits.len() == 10
        && bits.starts_with(['d', 'l', 'c', 'b', 'p', 's', '-'])
        && bits[1..].bytes().all(|b| b"rwxsStT-".contains(&b));
    let links = words.next()?.1;
    let size = words.nth(2)?.1;
    let size_ok = size.starts_with(|c: char| c.is_ascii_digit())
        && size
            .trim_end_matches(['K', 'M', 'G', 'T', 'P', 'E', 'k'])
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
    if !(mode_ok && digits(links) && size_ok) {
        return None;
    }
    let time = |w: &str| {
        let mut parts = w.split(':');
        parts.next().is_some_and(digits)
            && parts
                .next()
                .is_some_and(|m| m.len() >= 2 && m.as_bytes()[..2].iter().all(u8::is_ascii_digit))
    };
    let first = words.next()?.1;
    let date_ok = if first.len() == 10 && first.as_bytes()[4] == b'-' && first.as_bytes()[7] == b'-'
    {
        time(words.next()?.1)
    } else if first.len() == 3 && first.bytes().all(|b| b.is_ascii_alphabetic()) {
        let day = words.next()?.1;
        let year_or_time = words.next()?.1;
        digits(day) && (time(year_or_time) || (year_or_time.len() == 4 && digits(year_or_time)))
    } else {
        false
    };
    let (name, _) = words.next()?;
    date_ok.then_some((at..at + mode.len(), name..))
}

/// The line before the first line of a long listing whose columns were left out starts with this.
const NAMES_HEADER: &str = "[mode and name only: the links, owner, group, size and date of ";

/// The first line of an excerpt whose line numbers were dropped starts with this.
const NUMBERS_HEADER: &str = "[lines ";
/// The last line of an excerpt with gaps starts with this.
const TRAILER: &str = "[excerpt of a stale result — ";

/// The trailer of an excerpt of lists of records says this.
const RECORDS_NOTE: &str = "of long lists of records, only the first field of ";

/// Is `cut` an excerpt of lists of records this rule wrote (`None` if not), and is it then the original's own
/// text, in order, with ` …` where fields were left out (`Some(true)`)?
pub fn keeps_records_of(original: &str, cut: &str) -> Option<bool> {
    let body = excerpt_body(cut, RECORDS_NOTE)?;
    Some(found_in_order(original, body.split(json::LEFT_OUT)))
}

/// The text above the trailer of an excerpt whose trailer says `note`.
fn excerpt_body<'a>(cut: &'a str, note: &str) -> Option<&'a str> {
    let (body, last) = cut.rsplit_once('\n')?;
    (last.starts_with(TRAILER) && last.contains(note)).then_some(body)
}

/// Is each of `pieces` in `original`, one after the other?
fn found_in_order<'a>(original: &str, pieces: impl IntoIterator<Item = &'a str>) -> bool {
    let mut rest = original;
    pieces.into_iter().all(|piece| match rest.find(piece) {
        Some(at) => {
            rest = &rest[at + piece.len()..];
            true
        }
        None => false,
    })
}

/// Is this text already an excerpt this rule wrote?
pub fn is_excerpt(text: &str) -> bool {
    let last = text.rsplit('\n').next().unwrap_or("");
    let first = text.split('\n').next().unwrap_or("");
    (last.starts_with(TRAILER) && last.ends_with(']'))
        || (first.starts_with(NUMBERS_HEADER) && first.contains("; numbers dropped, count from "))
}

/// One line of the excerpt: a line of the result, or a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Line(usize),
    Shown(usize),
    Omitted(usize),
}

fn gap_len(s: &Slot) -> usize {
    match s {
        Slot::Shown(n) | Slot::Omitted(n) => *n,
        Slot::Line(_) => 0,
    }
}

/// Merge the lines of `slots` that `keep` rejects into `Omitted` gaps (adjacent gaps of that kind join). A gap of
/// one line no longer than its marker keeps the line: the marker would cost as much and say less.
fn omit_lines(slots: Vec<Slot>, lines: &[&str], keep: impl Fn(usize, usize) -> bool) -> Vec<Slot> {
    let mut nth = 0;
    let dropped: Vec<bool> = slots
        .iter()
        .map(|slot| match *slot {
            Slot::Line(i) => {
                let k = keep(nth, i);
                nth += 1;
                !k
            }
            _ => false,
        })
        .collect();
    let alone = |k: usize| (k == 0 || !dropped[k - 1]) && dropped.get(k + 1).is_none_or(|d| !d);
    let mut out: Vec<Slot> = Vec::with_capacity(slots.len());
    for (k, slot) in slots.into_iter().enumerate() {
        let short = |slot: &Slot| match *slot {
            Slot::Line(i) => lines[i].chars().count() <= ONE_LINE_OMITTED.chars().count(),
            _ => false,
        };
        if !dropped[k] || (alone(k) && short(&slot)) {
            out.push(slot);
        } else if let Some(Slot::Omitted(n)) = out.last_mut() {
            *n += 1;
        } else {
            out.push(Slot::Omitted(1));
        }
    }
    out
}

/// The marker of a gap of one line.
const ONE_LINE_OMITTED: &str = "[… 1 line omitted]";

/// The first line number of a read whose every line but trailing notes is numbered one by one (`Some(first)`).
fn consecutive_numbers(lines: &[&str]) -> Option<u64> {
    let mut first = None;
    let mut numbered = 0;
    let mut unnumbered_at = None;
    for (i, line) in lines.iter().enumerate() {
        let p = line_number_prefix(line);
        if p == 0 {
            if !line.trim().is_empty() {
                unnumbered_at.get_or_insert(i);
            }
            continue;
        }
        if unnumbered_at.is_some() {
            // numbered lines after text that is not: not one numbered file
            return None;
        }
        let n: u64 = line[..p]
            .trim()
            .trim_end_matches(['→', '\t'])
            .parse()
            .ok()?;
        let start = *first.get_or_insert(n.checked_sub(i as u64)?);
        if n != start + i as u64 {
            return None;
        }
        numbered += 1;
    }
    (numbered >= 5 && numbered * 10 >= lines.len() * 9)
        .then_some(first)
        .flatten()
}

impl Excerpt {
    /// How to get a result back whole, for its trailer: re-read the file, re-run the command, call the tool.
    fn how_to_restore(&self, kind: ContentKind, ctx: &RuleContext<'_>) -> String {
        match (kind, read_target(ctx.tool_name, ctx.input, &self.shell)) {
            (_, Some(target)) => format!("re-read {} for the full text", target.path),
            (
                ContentKind::Read | ContentKind::Listing | ContentKind::Log | ContentKind::Document,
                None,
            ) if shell_command(ctx.input).is_some() => {
                "re-run the command for its full output".to_owned()
            }
            _ => format!("call {} again for the full result", ctx.tool_name),
        }
    }
}

/// A record fetched again (the seventh kind of cut): of a result that is a JSON object on one line, the members
/// after the first (which names the record) that the request shows for good in a record with the same first
/// member — the reservation before its update, the profile read before —, each run of them longer than its marker
/// becoming `[… 3 fields shown elsewhere in this conversation for this record]`. `None` when nothing is left out.
fn record_excerpt(text: &str, shown: &dyn ShownLines) -> Option<String> {
    let members = record_members(text)?;
    let first = &text[members[0].clone()];
    let is_shown: Vec<bool> = (members.iter().enumerate())
        .map(|(k, m)| k > 0 && shown.is_shown(&record_member_line(first, &text[m.clone()])))
        .collect();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..members[0].end]);
    let (mut k, mut cut) = (1, false);
    while k < members.len() {
        out.push_str(&text[members[k - 1].end..members[k].start]);
        let run = is_shown[k..].iter().take_while(|&&s| s).count();
        if run == 0 {
            out.push_str(&text[members[k].clone()]);
            k += 1;
            continue;
        }
        let span = &text[members[k].start..members[k + run - 1].end];
        let marker = format!(
            "{FIELDS_OPEN}{run} field{}{FIELDS_CLOSE}",
            if run == 1 { "" } else { "s" }
        );
        if span.len() > marker.len() {
            out.push_str(&marker);
            cut = true;
        } else {
            out.push_str(span);
        }
        k += run;
    }
    out.push_str(&text[members[members.len() - 1].end..]);
    cut.then_some(out)
}

/// A run of a record's fields shown elsewhere: `[… 3 fields shown elsewhere in this conversation for this record]`.
const FIELDS_OPEN: &str = "[… ";
const FIELDS_CLOSE: &str = " shown elsewhere in this conversation for this record]";

/// The trailer of an excerpt of a record fetched again says this.
const FIELDS_NOTE: &str = "of a record fetched again; ";

/// Is `cut` an excerpt of a record fetched again this rule wrote (`None` if not), and is it then the original's
/// own text, in order, with markers where fields were left out (`Some(true)`)?
pub fn keeps_fields_of(original: &str, cut: &str) -> Option<bool> {
    let body = excerpt_body(cut, FIELDS_NOTE)?;
    let mut pieces = Vec::new();
    let mut rest = body;
    while let Some(close) = rest.find(FIELDS_CLOSE) {
        let open = rest[..close].rfind(FIELDS_OPEN)?;
        pieces.push(&rest[..open]);
        rest = &rest[close + FIELDS_CLOSE.len()..];
    }
    pieces.push(rest);
    Some(found_in_order(original, pieces))
}

impl RetentionRule for Excerpt {
    fn name(&self) -> &'static str {
        "excerpt"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let texts: Option<Vec<&str>> = ctx.content.blocks.iter().map(Block::as_text).collect();
        let Some(texts) = texts.filter(|t| !t.is_empty()) else {
            // images, documents: not lines
            return Decision::Defer;
        };
        let text = texts.join("\n");
        let kind = self.kind(ctx.tool_kind, ctx.tool_name, ctx.input, &text);
        if is_excerpt(&text) {
            // compacted before: as final as if it had been cut here
            return Decision::Keep;
        }
        if kind == ContentKind::Other && self.json_items > 0 && text.len() > self.json_above {
            if let Some((kept, cut)) = json::records_excerpt(&text, self.json_items) {
                let out = format!(
                    "{kept}\n{TRAILER}{RECORDS_NOTE}{cut} later one{s} (`{LEFT_OUT}` marks what was left \
                     out); call {tool} again for the full result]",
                    s = if cut == 1 { "" } else { "s" },
                    LEFT_OUT = json::LEFT_OUT.trim(),
                    tool = ctx.tool_name,
                );
                if (out.len() as f64) <= (1.0 - self.min_saving) * text.len() as f64 {
                    return Decision::Replace(Content::text(out));
                }
            }
        }
        if self.record_fields && matches!(kind, ContentKind::Other | ContentKind::Document) {
            if let Some(kept) = record_excerpt(&text, ctx.shown) {
                let out = format!(
                    "{kept}\n{TRAILER}{FIELDS_NOTE}{}]",
                    self.how_to_restore(kind, ctx)
                );
                if (out.len() as f64) <= (1.0 - self.min_saving) * text.len() as f64 {
                    return Decision::Replace(Content::text(out));
                }
            }
        }
        let lines: Vec<&str> = text.split('\n').collect();

        // 1. runs of lines shown elsewhere
        let shown: Vec<bool> = lines
            .iter()
            .map(|l| normalized_line(l).is_some() && ctx.shown.is_shown(l))
            .collect();
        let blank = |i: usize| lines[i].trim().is_empty();
        let mut slots = Vec::with_capacity(lines.len());
        let mut i = 0;
        while i < lines.len() {
            if !shown[i] {
                slots.push(Slot::Line(i));
                i += 1;
                continue;
            }
            let (mut j, mut count, mut last_shown) = (i, 0, i);
            while j < lines.len() && (shown[j] || blank(j)) {
                if shown[j] {
                    count += 1;
                    last_shown = j;
                }
                j += 1;
            }
            if count >= self.min_run.max(1) {
                slots.push(Slot::Shown(last_shown + 1 - i));
                i = last_shown + 1;
            } else {
                slots.extend((i..j).map(Slot::Line));
                i = j;
            }
        }
        let kept_chars = |slots: &[Slot]| -> usize {
            slots
                .iter()
                .map(|s| match s {
                    Slot::Line(i) => lines[*i].len() + 1,
                    _ => 0,
                })
                .sum()
        };

        // 2. logs: head, tail and outcomes; 3. listings: the first lines
        if kind == ContentKind::Log && kept_chars(&slots) > self.log_above {
            let total = slots.iter().filter(|s| matches!(s, Slot::Line(_))).count();
            let (head, tail) = (self.log_head, self.log_tail);
            let between = frames_between(&lines, self.frames_first, self.frames_last);
            slots = omit_lines(slots, &lines, |nth, i| {
                nth < head
                    || nth + tail >= total
                    || (reports_outcome(lines[i]) && !library_frame(lines[i]) && !between[i])
            });
        } else if kind == ContentKind::Listing && kept_chars(&slots) > self.listing_above {
            let keep = self.listing_keep;
            slots = omit_lines(slots, &lines, |nth, _| nth < keep);
        }

        // 4. the number column of a numbered read
        let numbers = if self.strip_line_numbers {
            consecutive_numbers(&lines)
        } else {
            None
        };
        // 5. the columns of a long listing
        let mut names: Vec<Option<LongLine>> = vec![None; lines.len()];
        if kind != ContentKind::Read && self.long_listing_min > 0 {
            for slot in &slots {
                if let Slot::Line(i) = *slot {
                    names[i] = long_listing_line(lines[i]);
                }
            }
            if names.iter().flatten().count() < self.long_listing_min {
                names.fill(None);
            }
        }
        let long_lines = names.iter().flatten().count();
        let has_gap = long_lines > 0 || slots.iter().any(|s| gap_len(s) > 0);
        // a read is final as it is (later reads leave out what it shows); anything else is left to the next
        // rule of the profile
        let unchanged = match kind {
            ContentKind::Read => Decision::Keep,
            _ => Decision::Defer,
        };
        if !has_gap && numbers.is_none() {
            return unchanged;
        }

        let mut out = String::with_capacity(text.len() / 2);
        if let Some(first) = numbers {
            let last =
                first + lines.iter().filter(|l| line_number_prefix(l) > 0).count() as u64 - 1;
            out.push_str(&format!(
                "{NUMBERS_HEADER}{first}–{last}; numbers dropped, count from {first}]\n"
            ));
        }
        let mut named = false;
        for slot in &slots {
            match *slot {
                Slot::Line(i) => match (numbers, names[i].clone()) {
                    (_, Some((mode, name))) => {
                        if !named {
                            named = true;
                            out.push_str(&format!(
                                "{NAMES_HEADER}{long_lines} long-listing lines left out]\n"
                            ));
                        }
                        out.push_str(&lines[i][mode]);
                        out.push(' ');
                        out.push_str(&lines[i][name]);
                    }
                    (Some(_), None) => out.push_str(&lines[i][line_number_prefix(lines[i])..]),
                    (None, None) => out.push_str(lines[i]),
                },
                Slot::Shown(n) => out.push_str(&format!(
                    "[… {n} line{} shown elsewhere in this conversation]",
                    if n == 1 { "" } else { "s" }
                )),
                Slot::Omitted(n) => out.push_str(&format!(
                    "[… {n} line{} omitted]",
                    if n == 1 { "" } else { "s" }
                )),
            }
            out.push('\n');
        }
        if has_gap {
            out.push_str(&format!("{TRAILER}{}]", self.how_to_restore(kind, ctx)));
        } else {
            out.pop();
        }
        if (out.len() as f64) > (1.0 - self.min_saving) * text.len() as f64 {
            return unchanged;
        }
        Decision::Replace(Content::text(out))
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let mut rule = Excerpt::default();
    let Some(map) = params.as_object() else {
        return if params.is_null() {
            Ok(Box::new(rule))
        } else {
            Err(RuleConfigError::new("excerpt", "params must be a table"))
        };
    };
    for (k, v) in map {
        let n = || {
            v.as_u64().map(|n| n as usize).ok_or_else(|| {
                RuleConfigError::new("excerpt", format!("`{k}` must be a non-negative integer"))
            })
        };
        match k.as_str() {
            "min_run" => rule.min_run = n()?,
            "log_above" => rule.log_above = n()?,
            "log_head" => rule.log_head = n()?,
            "log_tail" => rule.log_tail = n()?,
            "listing_above" => rule.listing_above = n()?,
            "listing_keep" => rule.listing_keep = n()?,
            "frames_first" => rule.frames_first = n()?,
            "frames_last" => rule.frames_last = n()?,
            "long_listing_min" => rule.long_listing_min = n()?,
            "json_above" => rule.json_above = n()?,
            "json_items" => rule.json_items = n()?,
            "min_saving" => {
                rule.min_saving = v
                    .as_f64()
                    .filter(|f| (0.0..1.0).contains(f))
                    .ok_or_else(|| {
                        RuleConfigError::new("excerpt", "`min_saving` must be a number from 0 to below 1")
                    })?
            }
            "strip_line_numbers" => {
                rule.strip_line_numbers = v.as_bool().ok_or_else(|| {
                    RuleConfigError::new("excerpt", "`strip_line_numbers` must be true or false")
                })?
            }
            "record_fields" => {
                rule.record_fields = v.as_bool().ok_or_else(|| {
                    RuleConfigError::new("excerpt", "`record_fields` must be true or false")
                })?
            }
            "shell_patterns" => {
                let patterns: Vec<&str> = v
                    .as_array()
                    .and_then(|a| a.iter().map(Value::as_str).collect())
                    .ok_or_else(|| {
                        RuleConfigError::new("excerpt", "`shell_patterns` must be a list of strings")
                    })?;
                rule.shell = ShellReads::new(&patterns)
                    .map_err(|e| RuleConfigError::new("excerpt", e))?;
            }
            other => {
                return Err(RuleConfigError::new(
                    "excerpt",
                    format!("unknown parameter `{other}` (expected min_run, log_above, log_head, log_tail, listing_above, listing_keep, frames_first, frames_last, long_listing_min, json_above, json_items, record_fields, strip_line_numbers, min_saving, shell_patterns)"),
                ))
            }
        }
    }
    Ok(Box::new(rule))
}

register_rule!(
    name: "excerpt",
    tools: &["*"],
    summary: "leave out runs of lines shown elsewhere; logs keep head, tail and outcomes; listings their first lines; `ls -l` lines their mode and name; long JSON lists of records their first items and the others' first field; a record fetched again the fields that changed; drop read line numbers",
    factory: build,
);

#[cfg(test)]
mod tests {
    use super::{is_json_output, long_listing_line, prints_manual, python_frame, reports_outcome};
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
        let words = super::OUTCOME_WORDS.iter().copied().chain([
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

    /// The mode and name `long_listing_line` finds, as text.
    fn parts(line: &str) -> Option<(&str, &str)> {
        long_listing_line(line).map(|(mode, name)| (&line[mode], &line[name]))
    }

    #[test]
    fn long_listing_lines_of_every_date_and_size_style() {
        let cases = [
            (
                "-rw-r--r-- 1 root root  1157 May  6  2025 .gitignore",
                ("-rw-r--r--", ".gitignore"),
            ),
            (
                "drwxr-xr-x  2 dev staff  4096 Apr 10 07:00 my dir",
                ("drwxr-xr-x", "my dir"),
            ),
            (
                "lrwxrwxrwx 1 root root 7 2025-09-10 07:00 bin -> usr/bin",
                ("lrwxrwxrwx", "bin -> usr/bin"),
            ),
            (
                "-rwxr-xr-x@ 1 me staff 4.0K Jan  2 12:34:56 run.sh",
                ("-rwxr-xr-x@", "run.sh"),
            ),
            (
                "drwxrwsr-t+ 12 a b 1,5M Dec 31  1999 shared",
                ("drwxrwsr-t+", "shared"),
            ),
            (
                "crw-rw-rw- 1 root root 1 Sep 10  2025 null",
                ("crw-rw-rw-", "null"),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parts(line), Some(want), "{line}");
        }
    }

    #[test]
    fn lines_that_only_look_like_a_long_listing_are_not_one() {
        for line in [
            "total 176",
            "-rw-r--r-- 1 root root 1157 May  6  2025", // no name
            "-rw-r--r-- x root root 1157 May  6  2025 a.txt", // no link count
            "-rw-r--r-- 1 root root big May  6  2025 a.txt", // no size
            "-rw-r--r-- 1 root root 1157 yesterday 6 2025 a", // no date
            "rw-r--r--- 1 root root 1157 May  6  2025 a.txt", // no file type first
            "-rw-r--r-- 1 root root 1157 May six 2025 a.txt",
            "-rw-r--r-- 1 root root 1157 May 6 1:aé a.txt", // a minute that is not one, cut inside a character
            "error: 1 2 3 4 5 6 7",
            "",
        ] {
            assert_eq!(parts(line), None, "{line}");
        }
    }
}
