//! Read-only importers of recorded agent sessions into the ctxfit model.
//!
//! Real agents do not log the requests they send: Claude Code writes one JSON line per streamed content block,
//! SWE-agent a `.traj` with a `history`, OpenHands an event stream of actions and observations, tau-bench a list
//! of episodes, Letta an agent file. Each importer rebuilds, as faithfully as the log allows, **the message list
//! the agent sent to its model** — tool calls as `ToolUse` blocks, their outputs as `ToolResult` blocks linked by
//! id — because that is what ctxfit compacts and measures. Bookkeeping fields of the logs (timestamps, uuids,
//! costs) are not part of a request and are left out.
//!
//! [`import_str`] detects the format from the content ([`detect`]); one file may hold several sessions
//! (tau-bench episodes, Letta agents, OpenHands resolver lines), so importers return a list of [`Session`]s.
//!
//! ```
//! use ctxfit_import::{import_str, SourceFormat};
//!
//! // two lines of a Claude Code session log
//! let log = r#"{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}
//! {"type":"assistant","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"text","text":"hello"}]}}"#;
//! let sessions = import_str(log, None)?;
//! assert_eq!(sessions[0].source, SourceFormat::ClaudeCode);
//! assert_eq!(sessions[0].conversation.messages.len(), 2);
//! # Ok::<(), ctxfit_import::ImportError>(())
//! ```

mod claude_code;
mod codex;
mod copilot_cli;
pub mod files;
mod gemini_cli;
mod keys;
mod letta;
mod mini_swe_agent;
mod openhands;
mod openhands_v1;
mod swe_agent;
mod tau_bench;

use std::fmt;
use std::path::{Path, PathBuf};

use ctxfit_model::{Conversation, ModelError};
use serde_json::Value;

/// The recorded-session formats ctxfit reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceFormat {
    /// A plain Anthropic Messages document.
    Anthropic,
    /// A plain OpenAI Chat Completions document.
    OpenAi,
    /// A plain OpenAI Responses document (`input` items).
    Responses,
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// Gemini CLI session JSON.
    GeminiCli,
    /// GitHub Copilot CLI session events JSONL.
    CopilotCli,
    /// SWE-agent `.traj`.
    SweAgent,
    /// mini-swe-agent `.traj.json`.
    MiniSweAgent,
    /// OpenHands event stream (a JSON list) or resolver output (JSONL with a `history` per line).
    OpenHands,
    /// tau-bench episode list.
    TauBench,
    /// Letta agent file (`.af`).
    Letta,
}

impl SourceFormat {
    pub const ALL: [SourceFormat; 12] = [
        SourceFormat::Anthropic,
        SourceFormat::OpenAi,
        SourceFormat::Responses,
        SourceFormat::ClaudeCode,
        SourceFormat::Codex,
        SourceFormat::GeminiCli,
        SourceFormat::CopilotCli,
        SourceFormat::SweAgent,
        SourceFormat::MiniSweAgent,
        SourceFormat::OpenHands,
        SourceFormat::TauBench,
        SourceFormat::Letta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::Anthropic => "anthropic",
            SourceFormat::OpenAi => "openai",
            SourceFormat::Responses => "responses",
            SourceFormat::ClaudeCode => "claude-code",
            SourceFormat::Codex => "codex",
            SourceFormat::GeminiCli => "gemini-cli",
            SourceFormat::CopilotCli => "copilot-cli",
            SourceFormat::SweAgent => "swe-agent",
            SourceFormat::MiniSweAgent => "mini-swe-agent",
            SourceFormat::OpenHands => "openhands",
            SourceFormat::TauBench => "tau-bench",
            SourceFormat::Letta => "letta",
        }
    }

    pub fn from_name(name: &str) -> Option<SourceFormat> {
        SourceFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl fmt::Display for SourceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One imported conversation.
#[derive(Debug, Clone)]
pub struct Session {
    /// Which part of the file it came from (`episode 3`, an agent's name); empty for single-session files.
    pub name: String,
    pub source: SourceFormat,
    pub conversation: Conversation,
    /// The usage the provider reported for each request, in order, when the log records it (Codex rollouts);
    /// empty otherwise.
    pub usage: Vec<RecordedUsage>,
    /// When each message of `conversation` was written, in milliseconds since the Unix epoch (`None` where the
    /// log says nothing), when the log records times (Claude Code, Codex CLI, mini-swe-agent); empty otherwise.
    /// A message merged from several lines has the time of its last. The replay and `ctxfit compact` read them to know when the
    /// provider's prompt cache expired (`ctxfit_compactor`'s `Compactor::compact_at`).
    pub times: Vec<Option<u64>>,
    /// What the provider billed as input for the request that produced each message (its `input_tokens`, cache
    /// writes and cache reads together), at the index of the response message, when the log records it (Claude
    /// Code: the usage of each response); empty otherwise. The replay measures savings against it: the log leaves
    /// out the system prompt and the tool definitions the request also carried.
    pub billed: Vec<Option<u64>>,
    /// How long, in seconds, the agent asked the provider to keep its prompt cache, when the log shows it: Claude
    /// Code's recorded usage says whether its cache writes were five-minute or one-hour ones (300 or 3600; half
    /// of the corpus's long Claude Code sessions used each). `None` otherwise.
    pub cache_ttl: Option<u64>,
    /// What the file held that reads but is probably wrong, said in words: a last line cut short (a log still
    /// being written, or cut off by a crash) left out. The CLI warns about them with the model's own problems
    /// (and refuses the file under `--strict`); the Python package warns.
    pub problems: Vec<String>,
}

impl Session {
    /// A session of a log that records no usage, no times and no cache lifetime: its name, format and messages.
    pub fn of(
        name: impl Into<String>,
        source: SourceFormat,
        conversation: Conversation,
    ) -> Session {
        Session {
            name: name.into(),
            source,
            conversation,
            usage: Vec::new(),
            times: Vec::new(),
            billed: Vec::new(),
            cache_ttl: None,
            problems: Vec::new(),
        }
    }
}

/// The sessions of a log cut into context windows (the agent compacted its conversation): `window 1`,
/// `window 2`, ... — or one unnamed session when it never compacted.
pub(crate) fn context_windows(windows: Vec<Window>, source: SourceFormat) -> Vec<Session> {
    let named = windows.len() > 1;
    windows
        .into_iter()
        .enumerate()
        .map(
            |(
                i,
                Window {
                    conversation,
                    usage,
                    times,
                    cache_ttl,
                    billed,
                },
            )| Session {
                name: if named {
                    format!("window {}", i + 1)
                } else {
                    String::new()
                },
                source,
                conversation,
                usage,
                times: known_times(times),
                cache_ttl,
                billed: if billed.iter().all(Option::is_none) {
                    Vec::new()
                } else {
                    billed
                },
                problems: Vec::new(),
            },
        )
        .collect()
}

/// A session's times as `Session::times` holds them: empty when the log recorded none.
pub(crate) fn known_times(times: Vec<Option<u64>>) -> Vec<Option<u64>> {
    if times.iter().all(Option::is_none) {
        Vec::new()
    } else {
        times
    }
}

/// One context window of a log as an importer builds it: the messages, the usage recorded per request, and the
/// time of each message (empty when the log has none).
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub conversation: Conversation,
    pub usage: Vec<RecordedUsage>,
    pub times: Vec<Option<u64>>,
    pub cache_ttl: Option<u64>,
    /// Per message, the input the provider billed for the request that produced it (see `Session::billed`).
    pub billed: Vec<Option<u64>>,
}

impl Window {
    pub(crate) fn new(conversation: Conversation) -> Window {
        Window {
            conversation,
            usage: Vec::new(),
            times: Vec::new(),
            cache_ttl: None,
            billed: Vec::new(),
        }
    }
}

/// An RFC 3339 time as logs write it (`2026-02-11T15:47:57.771Z`, `2025-09-10T08:00:00+02:00`), in
/// milliseconds since the Unix epoch; `None` for anything else, or a time before 1970.
pub fn parse_timestamp(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // a fraction of a second: its first three digits are milliseconds
    let mut at = 19;
    let mut millis = 0;
    if b[at] == b'.' {
        at += 1;
        let start = at;
        while at < b.len() && b[at].is_ascii_digit() {
            if at - start < 3 {
                millis += i64::from(b[at] - b'0') * [100, 10, 1][at - start];
            }
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    let offset = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let minutes = num(at + 1..at + 3)? * 60 + num(at + 4..at + 6)?;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    // days since 1970-01-01 of a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil)
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset * 60;
    u64::try_from(seconds * 1000 + millis).ok()
}

/// The usage a provider reported for one request, as an agent logged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordedUsage {
    /// All input tokens of the request, cached ones included.
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Malformed JSON (`ModelError::Json`: `line`/`column` are 1-based positions in the file), or valid JSON that
    /// is not what the format needs (`ModelError::Shape`: `path` names the value).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An input larger than the limit (`files::set_max_inflated`): a device or a stream without end, or a log
    /// larger than any session.
    #[error("it holds more than {max} bytes, the limit (a device or a stream without end, or a log larger than any session: --max-inflated raises the limit)")]
    TooLarge { max: u64 },
    /// More JSON values than [`value_limit`] allows an input of its size: refused before they are read.
    #[error(
        "it holds about {values} JSON values in {bytes} bytes, more than the {limit} a session of its size may \
         (a million, and one per {VALUE_BYTES} bytes beyond; the densest real session seen holds one per 24 bytes): \
         refused before it is read, as each value takes about 80 bytes of memory however small it is"
    )]
    TooManyValues {
        values: usize,
        bytes: usize,
        limit: usize,
    },
    /// A gzip stream that does not inflate.
    #[error("not a readable gzip file: {message}")]
    Gzip { message: String },
    /// Bytes that are not UTF-8 text; `line`/`column` are 1-based, `offset` counts bytes.
    #[error("{line}:{column}: not UTF-8 text (byte 0x{byte:02x} at offset {offset})")]
    NotUtf8 {
        line: usize,
        column: usize,
        byte: u8,
        offset: usize,
    },
    /// A UTF-16 text (it began with a byte-order mark) that holds half of a surrogate pair alone.
    #[error(
        "UTF-16 text with half of a surrogate pair alone (0x{unit:04x} at byte offset {offset})"
    )]
    BadUtf16 { unit: u16, offset: usize },
    /// A UTF-16 text (it began with a byte-order mark) of an odd number of bytes: its last byte is half a unit.
    #[error("UTF-16 text of an odd number of bytes ({length}): the last one, at byte offset {}, is half a character", length - 1)]
    OddUtf16 { length: usize },
    #[error("not a recognised session format (expected one of: anthropic, openai, responses, claude-code, codex, gemini-cli, copilot-cli, swe-agent, mini-swe-agent, openhands, tau-bench, letta)")]
    Unrecognised,
}

impl ImportError {
    pub(crate) fn shape(path: impl Into<String>, message: impl Into<String>) -> Self {
        ImportError::Model(ModelError::Shape {
            path: path.into(),
            message: message.into(),
        })
    }

    /// Is the input at fault (as opposed to the file system)?
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, ImportError::Io { .. })
    }

    /// Prefix a shape error's path, e.g. with the JSONL line it came from.
    pub(crate) fn within(self, prefix: &str) -> Self {
        match self {
            ImportError::Model(ModelError::Shape { path, message }) => {
                ImportError::shape(format!("{prefix}{path}"), message)
            }
            other => other,
        }
    }
}

/// A parsed file: one JSON document, or JSON Lines (one value per non-empty line, with its line number).
pub(crate) enum Parsed {
    Document(Value),
    Lines(Vec<(usize, Value)>),
}

/// Bytes of input per JSON value an input may hold beyond its first million ([`value_limit`]).
pub const VALUE_BYTES: usize = 8;

/// The JSON values (object keys counted) an input of `bytes` bytes may hold: a million, and one per
/// [`VALUE_BYTES`] bytes beyond. A value read costs about 80 bytes of memory however small its text, so 30 MB of
/// `{}` lines took 817 MB to read, and the 1 GiB an input may hold would take 27 GB; the densest session of the
/// corpus holds one value per 24 bytes, three times under the limit.
pub fn value_limit(bytes: usize) -> usize {
    1_000_000 + bytes / VALUE_BYTES
}

/// About how many JSON values `text` holds, counted by its structure alone: each `{`, `[`, `,`, `:` and line
/// break outside strings (a value begins at each, or a key, or a line of JSON Lines). Counting stops past `stop`.
/// Also how many object members the text writes (each `:` outside strings), which says whether a key was
/// written twice in one object once the text is parsed ([`keys`]).
fn count_values(text: &str, stop: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut count, mut members, mut i) = (0, 0, 0);
    while i < bytes.len() && count <= stop {
        match bytes[i] {
            b'"' => {
                i = past_string(bytes, i);
                continue;
            }
            b':' => {
                count += 1;
                members += 1;
            }
            b'{' | b'[' | b',' | b'\n' => count += 1,
            _ => {}
        }
        i += 1;
    }
    (count, members)
}

/// Where the JSON string opening at `bytes[open]` (a `"`) ends: just past its closing quote, escapes skipped — or
/// the end of `bytes`, for a text that ends inside a string or right after a backslash.
pub(crate) fn past_string(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while let Some(at) = bytes
        .get(i..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
    {
        i += at + 1;
        if bytes[i - 1] == b'"' {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

pub(crate) fn parse(text: &str) -> Result<Parsed, ImportError> {
    parse_checked(text).map(|(parsed, _)| parsed)
}

/// [`parse`], and the first key an object of the text writes twice, whose earlier value the parse left out
/// (`serde_json` keeps a repeated key's last value).
pub(crate) fn parse_checked(
    text: &str,
) -> Result<(Parsed, Option<keys::RepeatedKey>), ImportError> {
    let limit = value_limit(text.len());
    let (values, written) = count_values(text, limit);
    if values > limit {
        return Err(ImportError::TooManyValues {
            values: count_values(text, usize::MAX).0,
            bytes: text.len(),
            limit,
        });
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            ctxfit_model::keep_number_spelling(text, &mut v);
            Parsed::Document(v)
        }
        Err(whole_err) => {
            // JSON Lines: values one per line — or several on one line, as real Claude Code logs have when two
            // writers raced. Only worth trying when the first line holds values of its own.
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if line_values(first).is_err() {
                return Err(ModelError::from_json_in(&whole_err, text).into());
            }
            Parsed::Lines(parse_lines(text)?)
        }
    };
    let read = match &parsed {
        Parsed::Document(v) => keys::members(v),
        Parsed::Lines(lines) => lines.iter().map(|(_, v)| keys::members(v)).sum(),
    };
    let repeated = (read < written)
        .then(|| keys::first_repeated_key(text))
        .flatten();
    Ok((parsed, repeated))
}

/// The values of a JSON Lines text, each with its line number; a line that does not parse is an error naming
/// its line and column.
fn parse_lines(text: &str) -> Result<Vec<(usize, Value)>, ImportError> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match line_values(line) {
            Ok(values) => lines.extend(values.into_iter().map(|v| (i + 1, v))),
            Err(e) => {
                return Err(ImportError::Model(ModelError::Json {
                    line: i + 1,
                    column: e.column(),
                    message: match ModelError::from_json_in(&e, line) {
                        ModelError::Json { message, .. } => message,
                        other => other.to_string(),
                    },
                }))
            }
        }
    }
    Ok(lines)
}

/// A JSON Lines log whose last line is cut short — no line break after it, and the text ends inside its last
/// value, as a log still being written (or cut off by a crash) ends: its values before the cut, each with its line
/// number, and the number of the line cut short. `None` for any other text, or when nothing comes before the cut.
fn cut_short_last_line(text: &str) -> Option<(Vec<(usize, Value)>, usize)> {
    let body = text.trim_end_matches([' ', '\t', '\r']);
    if body.ends_with('\n') {
        return None;
    }
    let start = body.rfind('\n')? + 1;
    let line = text[..start].matches('\n').count() + 1;
    // the values the line completes before the cut (two writers' records can share a line)
    let last = &body[start..];
    let mut whole = Vec::new();
    for value in serde_json::Deserializer::from_str(last).into_iter::<Value>() {
        match value {
            Ok(v) => whole.push(v),
            Err(e) if e.is_eof() => {
                let mut lines = parse_lines(&text[..start]).ok()?;
                ctxfit_model::keep_number_spelling_in(last, &mut whole);
                lines.extend(whole.into_iter().map(|v| (line, v)));
                return (!lines.is_empty()).then_some((lines, line));
            }
            Err(_) => return None,
        }
    }
    None
}

/// The JSON values of one line: one, or several written back to back.
fn line_values(line: &str) -> Result<Vec<Value>, serde_json::Error> {
    let mut values: Vec<Value> = serde_json::Deserializer::from_str(line)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()?;
    ctxfit_model::keep_number_spelling_in(line, &mut values);
    Ok(values)
}

/// A line of a Claude Code log that holds no message: a session's summary, or a snapshot of the files it touched.
/// A log may hold nothing else (a session that was only resumed or summarised).
fn is_claude_code_bookkeeping(v: &Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("summary") => v.get("leafUuid").is_some() || v.get("summary").is_some(),
        Some("file-history-snapshot") => v.get("snapshot").is_some(),
        _ => false,
    }
}

/// A message of Claude Code's `--output-format stream-json`: `{"type": "assistant" | "user", "message": {...},
/// "session_id"}`, or the `system`/`init` line that starts the stream.
fn is_claude_code_stream_message(v: &Value) -> bool {
    let kind = v.get("type").and_then(Value::as_str);
    v.get("session_id").is_some_and(Value::is_string)
        && (matches!(kind, Some("assistant" | "user"))
            && v.get("message").is_some_and(Value::is_object)
            || kind == Some("system") && v.get("subtype").and_then(Value::as_str) == Some("init"))
}

/// Which format a parsed file is in, judged by its content.
fn detect_parsed(parsed: &Parsed) -> Option<SourceFormat> {
    match parsed {
        Parsed::Lines(lines) => {
            let first = &lines.first()?.1;
            if first.get("history").is_some()
                || lines.iter().take(8).any(|(_, v)| openhands_v1::is_event(v))
            {
                Some(SourceFormat::OpenHands)
            } else if lines.iter().take(8).any(|(_, v)| is_codex_line(v))
                || codex::is_legacy_lines(lines)
            {
                Some(SourceFormat::Codex)
            } else if lines.iter().take(8).any(|(_, v)| copilot_cli::is_event(v)) {
                Some(SourceFormat::CopilotCli)
            } else if lines.iter().any(|(_, v)| {
                v.get("sessionId").is_some()
                    || v.get("message").is_some()
                    || is_claude_code_bookkeeping(v)
            }) {
                Some(SourceFormat::ClaudeCode)
            } else {
                None
            }
        }
        Parsed::Document(doc @ Value::Object(top)) => {
            if top
                .get("history")
                .and_then(|h| h.get(0))
                .is_some_and(|first| first.get("role").is_some())
            {
                Some(SourceFormat::SweAgent)
            } else if matches!(top.get("agents"), Some(Value::Array(_))) {
                Some(SourceFormat::Letta)
            } else if mini_swe_agent::looks_like(doc) {
                Some(SourceFormat::MiniSweAgent)
            } else if tau_bench::is_tau2(top) {
                Some(SourceFormat::TauBench)
            } else if is_codex_line(doc) || codex::is_legacy_document(top) {
                Some(SourceFormat::Codex)
            } else if copilot_cli::is_event(doc) {
                Some(SourceFormat::CopilotCli)
            } else if gemini_cli::looks_like(top) {
                Some(SourceFormat::GeminiCli)
            } else if (top.get("type").and_then(Value::as_str).is_some()
                && top.contains_key("sessionId"))
                || is_claude_code_bookkeeping(doc)
            {
                // a Claude Code log of one line (it may hold fields named like a request's)
                Some(SourceFormat::ClaudeCode)
            } else if top.contains_key("messages") || top.contains_key("input") {
                Some(model_format(doc))
            } else if top.contains_key("history") && top.contains_key("instruction") {
                Some(SourceFormat::OpenHands)
            } else {
                None
            }
        }
        Parsed::Document(doc @ Value::Array(items)) => {
            let first = items.first()?;
            if items.iter().take(8).any(|v| {
                (v.get("sessionId").is_some() && v.get("type").is_some_and(Value::is_string))
                    || is_claude_code_bookkeeping(v)
                    || is_claude_code_stream_message(v)
            }) {
                // Claude Code's records written as one JSON array; or its stream-json output gathered in one
                // (what the GitHub Action keeps as its execution log)
                Some(SourceFormat::ClaudeCode)
            } else if first.get("traj").is_some() {
                Some(SourceFormat::TauBench)
            } else if first.get("source").is_some()
                && (first.get("action").is_some() || first.get("observation").is_some())
                || openhands_v1::is_stream(items)
            {
                Some(SourceFormat::OpenHands)
            } else if first.get("role").is_some() {
                Some(model_format(doc))
            } else if is_document_list(items) {
                // what `ctxfit compact` and `ctxfit convert` write for a file of several sessions
                Some(list_format(items))
            } else {
                None
            }
        }
        Parsed::Document(_) => None,
    }
}

/// A JSON list of conversations, one per session — documents (`{"messages": ...}` or `{"input": ...}`) or bare
/// lists of messages or Responses items (`[{"role": ...}, {"type": ...}, ...]`): what `ctxfit compact` and
/// `ctxfit convert` write for a file that held several sessions.
fn is_document_list(items: &[Value]) -> bool {
    let document = |v: &Value| {
        v.as_object().is_some_and(|o| {
            (o.contains_key("messages") || o.contains_key("input")) && !o.contains_key("role")
        })
    };
    // (a Responses item list holds calls and their outputs, which have a `type` and no `role`)
    let bare_list = |v: &Value| {
        v.as_array().is_some_and(|m| {
            m.iter()
                .all(|m| m.get("role").is_some() || m.get("type").is_some_and(Value::is_string))
        })
    };
    !items.is_empty()
        && (items.iter().all(document)
            || items.iter().all(bare_list)
                && items
                    .iter()
                    .any(|v| v.as_array().is_some_and(|m| !m.is_empty())))
}

/// The format of a list of conversations: that of its first, unless another tells more (a conversation that
/// reads as either is taken for Anthropic's: one with a `system` or `tool` message is OpenAI's).
fn list_format(items: &[Value]) -> SourceFormat {
    let mut formats = items
        .iter()
        .filter(|v| v.as_array().is_none_or(|m| !m.is_empty()))
        .map(model_format);
    let first = formats.next().unwrap_or(SourceFormat::Anthropic);
    match first {
        SourceFormat::Anthropic => formats
            .find(|f| *f != SourceFormat::Anthropic)
            .unwrap_or(first),
        _ => first,
    }
}

/// Each conversation of a list of them, read in `format`, as one session (`document 1`, `document 2`, ...); one
/// that does not read is named by its place in the list.
fn import_document_list(
    items: Vec<Value>,
    format: SourceFormat,
) -> Result<Vec<Session>, ImportError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, doc)| {
            let conversation = match format {
                SourceFormat::Anthropic => ctxfit_model::anthropic::from_value(doc),
                SourceFormat::OpenAi => ctxfit_model::openai::from_value(doc),
                _ => ctxfit_model::responses::from_value(doc),
            }
            .map_err(|e| ImportError::from(e).within(&format!("$[{i}].")))?;
            Ok(Session::of(
                format!("document {}", i + 1),
                format,
                conversation,
            ))
        })
        .collect()
}

fn model_format(v: &Value) -> SourceFormat {
    match ctxfit_model::detect(v) {
        ctxfit_model::WireFormat::Anthropic => SourceFormat::Anthropic,
        ctxfit_model::WireFormat::OpenAi => SourceFormat::OpenAi,
        ctxfit_model::WireFormat::Responses => SourceFormat::Responses,
    }
}

/// A line of a Codex rollout: `{"type": "session_meta" | "response_item" | ..., "payload": {...}}`.
fn is_codex_line(v: &Value) -> bool {
    matches!(
        v.get("type").and_then(Value::as_str),
        Some("session_meta" | "response_item" | "turn_context" | "compacted")
    ) && v.get("payload").is_some_and(Value::is_object)
}

/// Detect the format of a file's text, by content.
pub fn detect(text: &str) -> Option<SourceFormat> {
    parse(text).ok().as_ref().and_then(detect_parsed)
}

/// Import every session in `text`; `format` forces a format instead of detecting it.
pub fn import_str(text: &str, format: Option<SourceFormat>) -> Result<Vec<Session>, ImportError> {
    // a byte-order mark some editors write is not part of the JSON
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        // an empty log (an agent that started and stopped): no session, and nothing wrong
        return Ok(Vec::new());
    }
    match parse_checked(text) {
        Ok((parsed, repeated)) => {
            let mut sessions = import_parsed(parsed, format)?;
            if let Some(repeated) = repeated {
                for s in &mut sessions {
                    s.problems.push(repeated.problem());
                }
            }
            Ok(sessions)
        }
        Err(e) => {
            // a log still being written: the lines before its last, and the cut named as a problem
            let Some((lines, line)) = cut_short_last_line(text) else {
                return Err(e);
            };
            // (lines that do not read as a session either: the cut is not what is wrong with them)
            let Ok(mut sessions) = import_parsed(Parsed::Lines(lines), format) else {
                return Err(e);
            };
            for s in &mut sessions {
                s.problems.push(format!(
                    "line {line} is cut short (a log still being written?): read without it"
                ));
            }
            Ok(sessions)
        }
    }
}

/// Import every session of a parsed file; `format` forces a format instead of detecting it.
pub(crate) fn import_parsed(
    parsed: Parsed,
    format: Option<SourceFormat>,
) -> Result<Vec<Session>, ImportError> {
    let format = match format {
        Some(f) => f,
        None => detect_parsed(&parsed).ok_or(ImportError::Unrecognised)?,
    };
    let single = |conversation: Conversation| vec![Session::of("", format, conversation)];
    let document = |parsed: Parsed| match parsed {
        Parsed::Document(v) => Ok(v),
        Parsed::Lines(_) => Err(ImportError::shape(
            "$",
            format!("a {format} file is one JSON document, not JSON Lines"),
        )),
    };
    let parsed = match parsed {
        Parsed::Document(Value::Array(items))
            if matches!(
                format,
                SourceFormat::Anthropic | SourceFormat::OpenAi | SourceFormat::Responses
            ) && is_document_list(&items) =>
        {
            return import_document_list(items, format);
        }
        parsed => parsed,
    };
    Ok(match format {
        SourceFormat::Anthropic => single(ctxfit_model::anthropic::from_value(document(parsed)?)?),
        SourceFormat::OpenAi => single(ctxfit_model::openai::from_value(document(parsed)?)?),
        SourceFormat::Responses => single(ctxfit_model::responses::from_value(document(parsed)?)?),
        SourceFormat::ClaudeCode => claude_code::import(parsed)?,
        SourceFormat::Codex => codex::import(parsed)?,
        SourceFormat::GeminiCli => gemini_cli::import(document(parsed)?)?,
        SourceFormat::CopilotCli => copilot_cli::import(parsed)?,
        SourceFormat::SweAgent => single(swe_agent::import(document(parsed)?)?),
        SourceFormat::MiniSweAgent => {
            let (conversation, times) = mini_swe_agent::import(document(parsed)?)?;
            let mut sessions = single(conversation);
            sessions[0].times = times;
            sessions
        }
        SourceFormat::OpenHands => openhands::import(parsed)?,
        SourceFormat::TauBench => match document(parsed)? {
            Value::Object(top) if tau_bench::is_tau2(&top) => {
                tau_bench::import_tau2(Value::Object(top))?
            }
            doc => tau_bench::import(doc)?,
        },
        SourceFormat::Letta => letta::import(document(parsed)?)?,
    })
}

/// Read and import a file, gzipped or not ([`files::load_file`]).
pub fn import_file(path: &Path, format: Option<SourceFormat>) -> Result<Vec<Session>, ImportError> {
    files::load_file(path, format)
}

/// Helpers shared by the importers.
pub(crate) mod util {
    use ctxfit_model::{
        Block, Content, Conversation, Envelope, Message, Role, TextBlock, ToolResult, ToolUse,
        WireFormat,
    };
    use serde_json::{Map, Value};

    /// An empty OpenAI Chat conversation written as a bare list of messages: what the agents' logs that are
    /// not requests (SWE-agent, OpenHands, tau-bench, Letta) become.
    pub fn chat_list() -> Conversation {
        let mut conv = Conversation::new(WireFormat::OpenAi);
        conv.envelope = Envelope::BareList;
        conv
    }

    pub fn text_message(role: Role, text: &str) -> Message {
        Message::new(role, Content::text(text))
    }

    pub fn tool_use(id: &str, name: &str, input: Value) -> Block {
        Block::ToolUse(ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
            extra: Map::new(),
            ..ToolUse::default()
        })
    }

    /// An OpenAI-style tool message holding one result.
    pub fn tool_message(id: &str, text: &str, is_error: Option<bool>) -> Message {
        Message::new(
            Role::Tool,
            Content::list(vec![Block::ToolResult(ToolResult {
                tool_use_id: id.to_owned(),
                content: Content::text(text),
                is_error,
                extra: Map::new(),
            })]),
        )
    }

    pub fn text_block(text: &str) -> Block {
        Block::Text(TextBlock::new(text))
    }

    pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
        v.get(key).and_then(Value::as_str)
    }

    /// Text of a content field that may be a string or a list of `{type: text, text}` parts.
    pub fn flatten_text(v: Option<&Value>) -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests;
