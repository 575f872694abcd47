//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
//!
//! Each line is `{"timestamp", "type", "payload"}`. The lines of `type` `response_item` are the OpenAI Responses
//! items Codex sends back to the model on every request, in order — developer and user `message`s, the model's
//! `reasoning`, `message`s, `function_call`s (`exec_command`, `write_stdin`, `update_plan`, ...),
//! `custom_tool_call`s (`apply_patch`) and web searches, and the outputs of the calls — so they are the
//! conversation, read by [`ctxfit_model::responses`]. `session_meta` gives the instructions (the system
//! prompt), `turn_context` the model. `event_msg` lines are the UI's copy of the same events and are skipped,
//! except `token_count`: the usage the API reported for each request, kept as [`RecordedUsage`].
//!
//! When Codex compacts its context, a `compacted` line holds the `replacement_history` its later requests start
//! from: the requests after it are a new context window, so each window is its own session (`window 1`,
//! `window 2`, ...; a rollout that never compacted is one unnamed session).
//!
//! Rollouts written before that envelope are read as well, as the envelope's lines would be: Codex CLI of mid
//! 2025 wrote a first line of the session's own (`{id, timestamp, instructions, git}`), `{"record_type":
//! "state"}` markers, and the Responses items bare, one a line; the CLI of spring 2025 wrote one JSON document,
//! `{"session": {id, timestamp, instructions}, "items": [...]}`.

use ctxfit_model::{responses, Content, Conversation, Map, Message, Role, Value, WireFormat};

use crate::{parse_timestamp, ImportError, Parsed, RecordedUsage, Session, SourceFormat, Window};

/// One record of a rollout in the envelope's shape, with its line and where its item stands (named in errors).
struct Record {
    line: usize,
    /// The item's place: `line 4: payload`, `line 4: $` (a bare item), `items[3]`.
    at: String,
    value: Value,
}

impl Record {
    fn enveloped((line, value): (usize, Value)) -> Self {
        Record {
            line,
            at: format!("line {line}: payload"),
            value,
        }
    }

    /// A record of a rollout from before the envelope, wrapped in it.
    fn wrapped(line: usize, at: String, kind: &str, payload: Value) -> Self {
        let mut envelope = Map::new();
        if let Some(t) = payload.get("timestamp").filter(|t| t.is_string()) {
            envelope.insert("timestamp".into(), t.clone());
        }
        envelope.insert("type".into(), Value::String(kind.into()));
        envelope.insert("payload".into(), payload);
        Record {
            line,
            at,
            value: Value::Object(envelope),
        }
    }
}

/// Is this the first line of a rollout from before the envelope: the session's own `{id, timestamp, ...}`?
fn is_legacy_header(v: &Value) -> bool {
    v.get("id").is_some_and(Value::is_string)
        && v.get("timestamp").is_some_and(Value::is_string)
        && v.get("type").is_none()
        && v.get("payload").is_none()
}

/// A Responses item written bare (no envelope): a `message`, `reasoning`, or a call or a call's output.
fn is_bare_item(v: &Value) -> bool {
    v.get("payload").is_none()
        && v.get("type").and_then(Value::as_str).is_some_and(|t| {
            t == "message"
                || t == "reasoning"
                || t.ends_with("_call")
                || t.ends_with("_call_output")
        })
}

/// Are these the lines of a rollout from before the envelope (mid 2025)? Its header, then state markers and
/// bare items.
pub(crate) fn is_legacy_lines(lines: &[(usize, Value)]) -> bool {
    let Some(((_, first), rest)) = lines.split_first() else {
        return false;
    };
    is_legacy_header(first)
        && !rest.is_empty()
        && (rest.iter().take(8)).all(|(_, v)| v.get("record_type").is_some() || is_bare_item(v))
}

/// Is this document a rollout of spring 2025: `{"session": {...}, "items": [...]}`?
pub(crate) fn is_legacy_document(top: &Map<String, Value>) -> bool {
    top.get("session").is_some_and(Value::is_object)
        && matches!(top.get("items"), Some(Value::Array(_)))
}

/// The records of a rollout, whichever of its layouts it is in.
fn records(parsed: Parsed) -> Vec<Record> {
    match parsed {
        Parsed::Lines(lines) if is_legacy_lines(&lines) => {
            let mut lines = lines.into_iter();
            let header = lines.next().map(|(line, header)| {
                Record::wrapped(line, format!("line {line}: $"), "session_meta", header)
            });
            header
                .into_iter()
                .chain(
                    lines
                        .filter(|(_, v)| v.get("record_type").is_none())
                        .map(|(line, item)| {
                            Record::wrapped(line, format!("line {line}: $"), "response_item", item)
                        }),
                )
                .collect()
        }
        Parsed::Lines(lines) => lines.into_iter().map(Record::enveloped).collect(),
        Parsed::Document(Value::Object(mut top)) if is_legacy_document(&top) => {
            let session = top.shift_remove("session").unwrap_or_default();
            let items = match top.shift_remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            };
            std::iter::once(Record::wrapped(
                1,
                "session".into(),
                "session_meta",
                session,
            ))
            .chain(
                items.into_iter().enumerate().map(|(i, item)| {
                    Record::wrapped(1, format!("items[{i}]"), "response_item", item)
                }),
            )
            .collect()
        }
        Parsed::Document(v) => vec![Record::enveloped((1, v))],
    }
}

pub(crate) fn import(parsed: Parsed) -> Result<Vec<Session>, ImportError> {
    let mut windows: Vec<Window> = vec![fresh(None)];
    // Codex repeats a `token_count` (rate-limit updates): a request is counted once, by its running total
    let mut last_total = None;
    for Record { line, at, value } in records(parsed) {
        let payload = value.get("payload");
        let Window {
            conversation: conv,
            usage,
            times,
            ..
        } = windows.last_mut().expect("one window at least");
        match value.get("type").and_then(Value::as_str) {
            Some("session_meta") => {
                let instructions = payload.and_then(|p| {
                    p.pointer("/base_instructions/text")
                        .or_else(|| p.get("instructions"))
                        .and_then(Value::as_str)
                });
                if let Some(text) = instructions {
                    conv.system = Some(Content::text(text));
                }
            }
            Some("turn_context") => {
                if let Some(model) = payload
                    .and_then(|p| p.get("model"))
                    .filter(|m| m.is_string())
                {
                    conv.extra.insert("model".into(), model.clone());
                }
            }
            Some("response_item") => {
                let Some(item) = payload else { continue };
                let msg = responses::read_item(item.clone(), &at)?;
                conv.messages.push(msg);
                times.push(
                    value
                        .get("timestamp")
                        .and_then(Value::as_str)
                        .and_then(parse_timestamp),
                );
            }
            Some("event_msg") => {
                if let Some((total, u)) = payload.and_then(token_count) {
                    if last_total != Some(total) {
                        usage.push(u);
                    }
                    last_total = Some(total);
                }
            }
            Some("compacted") => {
                let history = match payload.and_then(|p| p.get("replacement_history")) {
                    Some(Value::Array(items)) => responses::read_items(items.clone())
                        .map_err(|e| ImportError::from(e).within(&format!("line {line}: ")))?,
                    // older rollouts keep only the summary, which Codex sends as a user message
                    _ => payload
                        .and_then(|p| p.get("message"))
                        .and_then(Value::as_str)
                        .filter(|m| !m.is_empty())
                        .map(|m| vec![Message::new(Role::User, Content::text(m))])
                        .unwrap_or_default(),
                };
                let mut next = fresh(Some(conv));
                // the replacement history is sent with the first request after the compaction
                next.times = vec![None; history.len()];
                next.conversation.messages = history;
                windows.push(next);
            }
            _ => {}
        }
    }
    Ok(crate::context_windows(windows, SourceFormat::Codex))
}

/// A new context window: the instructions and model of the one before, no messages.
fn fresh(before: Option<&Conversation>) -> Window {
    let mut conversation = Conversation::new(WireFormat::Responses);
    if let Some(b) = before {
        conversation.system.clone_from(&b.system);
        conversation.extra.clone_from(&b.extra);
    }
    Window::new(conversation)
}

/// A `token_count` event's running total and usage of the last request (`info.last_token_usage`).
fn token_count(payload: &Value) -> Option<(u64, RecordedUsage)> {
    if payload.get("type").and_then(Value::as_str) != Some("token_count") {
        return None;
    }
    let last = payload.pointer("/info/last_token_usage")?;
    let total = payload
        .pointer("/info/total_token_usage/total_tokens")
        .and_then(Value::as_u64)?;
    let n = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some((
        total,
        RecordedUsage {
            input_tokens: n("input_tokens"),
            cached_input_tokens: n("cached_input_tokens"),
            output_tokens: n("output_tokens"),
        },
    ))
}
