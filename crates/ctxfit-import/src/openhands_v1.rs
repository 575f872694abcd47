//! OpenHands 1.x event streams (the Software Agent SDK): events `{"kind", "id", "source", ...}` — a list, one a
//! JSON line, or a run's `history`.
//!
//! `SystemPromptEvent` is the system prompt; `MessageEvent` a user's or the agent's words (`llm_message`, and the
//! `extended_content` the agent's context adds to it);
//! `ActionEvent` a tool call of the model (`tool_name`, `tool_call_id`, the arguments the model wrote in
//! `tool_call`, its visible text in `thought`), the actions of one model response (`llm_response_id`) one assistant
//! message; `ObservationEvent` the result of a call (`observation.content`, `is_error`), `AgentErrorEvent` and
//! `UserRejectObservation` a call's failure. A `Condensation` (the condenser forgetting events) ends a context
//! window: the next one holds what was not forgotten — a call and its result go together — with the summary
//! at its offset, so each window is its own session, as for Claude Code and Codex CLI.

use std::collections::HashSet;

use ctxfit_model::{Block, Content, Conversation, Message, Role};
use serde_json::Value;

use crate::util::{
    chat_list, flatten_text, str_field, text_block, text_message, tool_message, tool_use,
};

/// The event kinds that make a stream OpenHands 1.x's.
const KINDS: &[&str] = &[
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
];

/// Is this an event of OpenHands 1.x?
pub(crate) fn is_event(v: &Value) -> bool {
    str_field(v, "kind").is_some_and(|k| KINDS.contains(&k)) && v.get("source").is_some()
}

/// Is this list of events OpenHands 1.x's?
pub(crate) fn is_stream(events: &[Value]) -> bool {
    events.iter().take(8).any(is_event)
}

/// A message of the window being built, with the events it came from: `(event id, the call it made or
/// answered)`.
struct Item {
    message: Message,
    events: Vec<(String, Option<String>)>,
}

/// The context windows of a stream, oldest first.
pub(crate) fn import(events: &[Value]) -> Vec<Conversation> {
    let mut windows = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut last_response: Option<String> = None;
    for event in events {
        let id = event
            .get("id")
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default();
        let push = |items: &mut Vec<Item>, message: Message, call: Option<String>| {
            items.push(Item {
                message,
                events: vec![(id.clone(), call)],
            });
        };
        match str_field(event, "kind").unwrap_or("") {
            "SystemPromptEvent" => {
                let prompt = event.get("system_prompt");
                let text = prompt
                    .and_then(|p| p.get("text"))
                    .and_then(Value::as_str)
                    .map_or_else(|| flatten_text(prompt), str::to_owned);
                push(&mut items, text_message(Role::System, &text), None);
                last_response = None;
            }
            "MessageEvent" => {
                let message = event.get("llm_message");
                let role = match message.and_then(|m| str_field(m, "role")) {
                    Some(role) => Role::parse(role),
                    None if str_field(event, "source") == Some("user") => Role::User,
                    None => Role::Assistant,
                };
                // what the agent's context added to the message is sent with it
                let mut text = flatten_text(message.and_then(|m| m.get("content")));
                text.push_str(&flatten_text(event.get("extended_content")));
                push(&mut items, text_message(role, &text), None);
                last_response = None;
            }
            "ActionEvent" => {
                let call = event.get("tool_call");
                let function = call.and_then(|c| c.get("function")).or(call);
                let Some(call_id) = str_field(event, "tool_call_id")
                    .or_else(|| call.and_then(|c| str_field(c, "id")))
                    .map(str::to_owned)
                else {
                    continue;
                };
                let name = str_field(event, "tool_name")
                    .or_else(|| function.and_then(|f| str_field(f, "name")))
                    .unwrap_or("");
                let input = function
                    .and_then(|f| str_field(f, "arguments"))
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or_else(|| action_input(event.get("action")));
                let block = tool_use(&call_id, name, input);
                let response = str_field(event, "llm_response_id").map(str::to_owned);
                let same = response.is_some() && response == last_response;
                match items.last_mut() {
                    Some(last) if same && last.message.role == Role::Assistant => {
                        last.message.content.blocks.push(block);
                        last.events.push((id.clone(), Some(call_id)));
                    }
                    _ => {
                        let thought = flatten_text(event.get("thought"));
                        let mut blocks = Vec::new();
                        if !thought.is_empty() {
                            blocks.push(text_block(&thought));
                        }
                        blocks.push(block);
                        let message = Message::new(Role::Assistant, Content::list(blocks));
                        push(&mut items, message, Some(call_id));
                    }
                }
                last_response = response;
            }
            kind @ ("ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation") => {
                let Some(call_id) = str_field(event, "tool_call_id").map(str::to_owned) else {
                    continue;
                };
                let (text, failed) = match kind {
                    "ObservationEvent" => {
                        let observation = event.get("observation");
                        let content = observation.and_then(|o| o.get("content"));
                        let text = match content {
                            Some(c) if !c.is_null() => flatten_text(Some(c)),
                            _ => observation
                                .and_then(|o| str_field(o, "output"))
                                .unwrap_or("")
                                .to_owned(),
                        };
                        let failed = observation
                            .and_then(|o| o.get("is_error"))
                            .and_then(Value::as_bool)
                            .filter(|&e| e);
                        (text, failed)
                    }
                    "AgentErrorEvent" => (
                        str_field(event, "error").unwrap_or("").to_owned(),
                        Some(true),
                    ),
                    _ => (
                        str_field(event, "rejection_reason")
                            .unwrap_or("rejected")
                            .to_owned(),
                        Some(true),
                    ),
                };
                push(
                    &mut items,
                    tool_message(&call_id, &text, failed),
                    Some(call_id.clone()),
                );
                last_response = None;
            }
            "Condensation" => {
                let forgotten: HashSet<String> = match event.get("forgotten_event_ids") {
                    Some(Value::Array(ids)) => ids
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .collect(),
                    _ => HashSet::new(),
                };
                let summary = str_field(event, "summary").filter(|s| !s.is_empty());
                let offset = event.get("summary_offset").and_then(Value::as_u64);
                let next = condensed(&items, &forgotten, summary, offset);
                windows.push(conversation(std::mem::replace(&mut items, next)));
                last_response = None;
            }
            _ => {}
        }
    }
    windows.push(conversation(items));
    windows
}

/// The input of an action that carries no arguments as the model wrote them: its fields but its kind.
fn action_input(action: Option<&Value>) -> Value {
    match action {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// What the next window holds after a condensation: every message but those of forgotten events — a call and
/// its result leave together — with the summary as a user message at `offset` (counted in the events kept).
fn condensed(
    items: &[Item],
    forgotten: &HashSet<String>,
    summary: Option<&str>,
    offset: Option<u64>,
) -> Vec<Item> {
    let gone_calls: HashSet<&str> = (items.iter().flat_map(|i| &i.events))
        .filter(|(id, _)| forgotten.contains(id))
        .filter_map(|(_, call)| call.as_deref())
        .collect();
    let mut kept: Vec<Item> = Vec::new();
    for item in items {
        let keep = |(id, call): &(String, Option<String>)| {
            !forgotten.contains(id) && call.as_deref().is_none_or(|c| !gone_calls.contains(c))
        };
        let events: Vec<(String, Option<String>)> =
            item.events.iter().filter(|e| keep(e)).cloned().collect();
        if events.is_empty() {
            continue;
        }
        let mut message = item.message.clone();
        message.content.blocks.retain(|b| match b {
            Block::ToolUse(u) => !gone_calls.contains(u.id.as_str()),
            _ => true,
        });
        kept.push(Item { message, events });
    }
    if let Some(text) = summary {
        let mut at = kept.len();
        if let Some(offset) = offset {
            let mut seen = 0u64;
            for (i, item) in kept.iter().enumerate() {
                if seen >= offset {
                    at = i;
                    break;
                }
                seen += item.events.len() as u64;
            }
        }
        let message = text_message(Role::User, text);
        kept.insert(
            at,
            Item {
                message,
                events: Vec::new(),
            },
        );
    }
    kept
}

fn conversation(items: Vec<Item>) -> Conversation {
    let mut conv = chat_list();
    conv.messages = items.into_iter().map(|i| i.message).collect();
    conv
}
