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
mod detect;
pub mod files;
mod gemini_cli;
mod keys;
mod letta;
mod mini_swe_agent;
mod openhands;
mod openhands_v1;
mod parse;
mod swe_agent;
mod tau_bench;
pub(crate) mod util;

use std::fmt;
use std::path::{Path, PathBuf};

use ctxfit_model::{Conversation, ModelError};
use serde_json::Value;

pub use detect::detect;
use detect::{detect_parsed, import_document_list, is_document_list};
use parse::cut_short_last_line;
pub(crate) use parse::{parse_checked, past_string, Parsed};
pub use parse::{value_limit, VALUE_BYTES};

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
    /// A file compressed otherwise than with gzip, or an archive of files, told by its magic bytes
    /// (`files::packed`): `what` it is and `how` to get at the session inside.
    #[error("{what}: {how}")]
    Packed {
        what: &'static str,
        how: &'static str,
    },
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
            // half of an emoji a client cut in two by UTF-16 code units, which its JSON writer put as a lone
            // escape (real Claude Code logs hold them): read as U+FFFD, and said
            if let Some(mended) = ctxfit_model::mend_lone_surrogates_in(text) {
                let mut sessions = import_str(&mended.text, format)?;
                // where the first is, as a JSON error is placed
                let before = &text[..mended.first];
                let line = 1 + before.matches('\n').count();
                let column = 1 + before.rsplit('\n').next().unwrap_or("").chars().count();
                let more = match mended.count {
                    1 => String::new(),
                    n => format!(" ({n} in all)"),
                };
                for s in &mut sessions {
                    s.problems.push(format!(
                        "line {line}, column {column}: a lone surrogate escape (half of a UTF-16 pair, such as an \
                         emoji a client cut in two) read as U+FFFD{more}"
                    ));
                }
                return Ok(sessions);
            }
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

/// Why a parsed file is no session: lines whose first is a whole conversation (a request object, two
/// documents written one after the other) are named by the line where the second begins; anything else is
/// [`ImportError::Unrecognised`].
fn unrecognised(parsed: &Parsed) -> ImportError {
    if let Parsed::Lines(lines) = parsed {
        if let [(first, head), (second, _), ..] = lines.as_slice() {
            // (a message alone reads as a conversation of one: not what the line is here)
            let whole = !detect::is_message(head);
            if let Some(format) = whole
                .then(|| detect_parsed(&Parsed::Document(head.clone())))
                .flatten()
            {
                return ImportError::shape(
                    format!("line {second}"),
                    format!(
                        "another JSON document after the whole {format} conversation of line {first}: a file \
                         holds one conversation, or one message a line"
                    ),
                );
            }
        }
    }
    ImportError::Unrecognised
}

/// Import every session of a parsed file; `format` forces a format instead of detecting it.
pub(crate) fn import_parsed(
    parsed: Parsed,
    format: Option<SourceFormat>,
) -> Result<Vec<Session>, ImportError> {
    let format = match format {
        Some(f) => f,
        None => detect_parsed(&parsed).ok_or_else(|| unrecognised(&parsed))?,
    };
    let single = |conversation: Conversation| vec![Session::of("", format, conversation)];
    let document = |parsed: Parsed| match parsed {
        Parsed::Document(v) => Ok(v),
        Parsed::Lines(_) => Err(ImportError::shape(
            "$",
            format!("a {format} file is one JSON document, not JSON Lines"),
        )),
    };
    let model_format = matches!(
        format,
        SourceFormat::Anthropic | SourceFormat::OpenAi | SourceFormat::Responses
    );
    let parsed = match parsed {
        Parsed::Document(Value::Array(items)) if model_format && is_document_list(&items) => {
            return import_document_list(items, format);
        }
        Parsed::Lines(lines) if model_format => {
            return Ok(single(detect::import_message_lines(lines, format)?));
        }
        Parsed::Document(message) if model_format && detect::is_message(&message) => {
            return Ok(single(detect::import_message_lines(
                vec![(1, message)],
                format,
            )?));
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

#[cfg(test)]
mod tests;
