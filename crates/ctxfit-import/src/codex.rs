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

use ctxfit_model::{responses, Content, Conversation, Message, Role, Value, WireFormat};

use crate::{parse_timestamp, ImportError, Parsed, RecordedUsage, Session, SourceFormat, Window};

pub(crate) fn import(parsed: Parsed) -> Result<Vec<Session>, ImportError> {
    let lines = match parsed {
        Parsed::Lines(lines) => lines,
        Parsed::Document(v) => vec![(1, v)],
    };
    let mut windows: Vec<Window> = vec![fresh(None)];
    // Codex repeats a `token_count` (rate-limit updates): a request is counted once, by its running total
    let mut last_total = None;
    for (line, value) in lines {
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
                let msg = responses::read_item(item.clone(), "payload")
                    .map_err(|e| ImportError::from(e).within(&format!("line {line}: ")))?;
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
