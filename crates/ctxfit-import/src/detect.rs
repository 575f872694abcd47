//! Which format a file is in, judged by its content alone; and a JSON list of conversations — what `ctxfit
//! compact` and `ctxfit convert` write for a file of several sessions — read as one session each.

use ctxfit_model::Conversation;
use serde_json::Value;

use crate::parse::{parse, Parsed};
use crate::{
    codex, copilot_cli, gemini_cli, mini_swe_agent, openhands_v1, tau_bench, ImportError, Session,
    SourceFormat,
};

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
pub(crate) fn detect_parsed(parsed: &Parsed) -> Option<SourceFormat> {
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
            } else if is_message_lines(lines) {
                // a log of bare messages, one a line: what an agent that appends each message it sends writes
                Some(source_of(
                    ctxfit_model::detect_messages(lines.iter().map(|(_, v)| v))
                        .unwrap_or(ctxfit_model::WireFormat::Anthropic),
                ))
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
            } else if is_message(doc) {
                // a log of messages a line that holds one so far
                Some(source_of(
                    ctxfit_model::detect_messages([doc])
                        .unwrap_or(ctxfit_model::WireFormat::Anthropic),
                ))
            } else {
                None
            }
        }
        // a list of no messages: a conversation not begun, as `{"messages": []}` is one
        Parsed::Document(Value::Array(items)) if items.is_empty() => Some(SourceFormat::Anthropic),
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

/// JSON Lines of bare messages: every line a message (`{"role": ...}`, of any of the three formats) or a Responses
/// item (`{"type": "function_call", ...}`), at least one of them a message — not a request (`messages`, `input`).
pub(crate) fn is_message_lines(lines: &[(usize, Value)]) -> bool {
    lines.iter().any(|(_, v)| is_message(v))
        && lines
            .iter()
            .all(|(_, v)| is_message(v) || ctxfit_model::is_responses_item(v))
}

/// A bare message of any of the three formats (`{"role": "user", ...}`), not a request (`messages`, `input`): a
/// file of one is a log of messages a line that holds one so far.
pub(crate) fn is_message(v: &Value) -> bool {
    v.get("role").is_some_and(Value::is_string)
        && v.get("messages").is_none()
        && v.get("input").is_none()
}

/// Messages read one a line ([`is_message_lines`]) as the bare message list of `format`; what does not read is
/// named by its line.
pub(crate) fn import_message_lines(
    lines: Vec<(usize, Value)>,
    format: SourceFormat,
) -> Result<Conversation, ImportError> {
    let numbers: Vec<usize> = lines.iter().map(|(n, _)| *n).collect();
    let list = Value::Array(lines.into_iter().map(|(_, v)| v).collect());
    let mut conversation = match format {
        SourceFormat::Anthropic => ctxfit_model::anthropic::from_value(list),
        SourceFormat::OpenAi => ctxfit_model::openai::from_value(list),
        _ => ctxfit_model::responses::from_value(list),
    }
    .map_err(|e| match e {
        // `messages[i].content` is the `content` of the message on line N
        ctxfit_model::ModelError::Shape { path, message } => {
            let place = ["messages[", "input[", "$["]
                .iter()
                .find_map(|p| path.strip_prefix(p))
                .and_then(|rest| rest.split_once(']'))
                .and_then(|(i, rest)| Some((numbers.get(i.parse::<usize>().ok()?)?, rest)));
            match place {
                Some((line, rest)) => ImportError::shape(
                    format!("line {line}: {}", rest.strip_prefix('.').unwrap_or("$")),
                    message,
                ),
                None => ImportError::shape(path, message),
            }
        }
        other => other.into(),
    })?;
    // written back as it came: a message a line
    conversation.envelope = ctxfit_model::Envelope::Lines;
    Ok(conversation)
}

/// A JSON list of conversations, one per session — documents (`{"messages": ...}` or `{"input": ...}`) or bare
/// lists of messages or Responses items (`[{"role": ...}, {"type": ...}, ...]`): what `ctxfit compact` and
/// `ctxfit convert` write for a file that held several sessions.
pub(crate) fn is_document_list(items: &[Value]) -> bool {
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
pub(crate) fn list_format(items: &[Value]) -> SourceFormat {
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
pub(crate) fn import_document_list(
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
    source_of(ctxfit_model::detect(v))
}

fn source_of(format: ctxfit_model::WireFormat) -> SourceFormat {
    match format {
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
