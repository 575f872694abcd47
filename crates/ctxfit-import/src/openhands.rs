//! OpenHands event streams.
//!
//! An event is an action or an observation. Actions with `tool_call_metadata` are tool calls of the model
//! (`function_name`, `tool_call_id`, and the model response they came in, whose `tool_calls` hold the exact
//! arguments); their observations carry the same metadata and a `cause` pointing at the action's event id.
//! Actions of one model response become one assistant message. Older streams (the resolver output, one JSON
//! line per issue with a `history`) have no ids: there an observation answers the action just before it.
//! Environment events and `null`/state-change observations are not part of the conversation.

use std::collections::HashMap;

use ctxfit_model::{Block, Content, Conversation, Message, Role};
use serde_json::Value;

use crate::util::{
    chat_list, flatten_text, str_field, text_block, text_message, tool_message, tool_use,
};
use crate::{openhands_v1, ImportError, Parsed, Session, SourceFormat};

/// Fields of an action that are bookkeeping, not the tool's input.
const NOT_INPUT: &[&str] = &[
    "action",
    "thought",
    "action_risk",
    "is_confirmed",
    "keep_prompt",
    "kernel_init_code",
    "security_risk",
    "confirmation_state",
    "impl_source",
    "translated_ipython_code",
    "hidden",
    "blocking",
    "is_input",
];

pub(crate) fn import(parsed: Parsed) -> Result<Vec<Session>, ImportError> {
    match parsed {
        Parsed::Document(Value::Array(events)) => Ok(sessions(String::new(), stream(&events))),
        Parsed::Document(Value::Object(run)) => {
            let run = Value::Object(run);
            Ok(sessions(run_name(&run), import_history(&run, "")?))
        }
        // OpenHands 1.x's events, one a line
        Parsed::Lines(lines) if lines.iter().take(8).any(|(_, v)| openhands_v1::is_event(v)) => {
            let events: Vec<Value> = lines.into_iter().map(|(_, v)| v).collect();
            Ok(sessions(String::new(), openhands_v1::import(&events)))
        }
        Parsed::Lines(lines) => {
            let mut all = Vec::new();
            for (line, run) in &lines {
                let windows = import_history(run, &format!("line {line}: "))?;
                all.extend(sessions(run_name(run), windows));
            }
            Ok(all)
        }
        Parsed::Document(_) => Err(ImportError::shape("$", "expected a list of events")),
    }
}

/// The sessions of one run's context windows: the run's name, and `window N` when it has several.
fn sessions(name: String, windows: Vec<Conversation>) -> Vec<Session> {
    let several = windows.len() > 1;
    (windows.into_iter().enumerate())
        .map(|(i, conversation)| {
            let name = match (several, name.is_empty()) {
                (false, _) => name.clone(),
                (true, true) => format!("window {}", i + 1),
                (true, false) => format!("{name} window {}", i + 1),
            };
            Session::of(name, SourceFormat::OpenHands, conversation)
        })
        .collect()
}

/// A list of events: OpenHands 1.x's (its context windows), or an earlier version's (one).
fn stream(events: &[Value]) -> Vec<Conversation> {
    if openhands_v1::is_stream(events) {
        openhands_v1::import(events)
    } else {
        vec![import_events(events)]
    }
}

fn run_name(run: &Value) -> String {
    match run.get("issue") {
        Some(issue) => format!(
            "{}/{}#{}",
            str_field(issue, "owner").unwrap_or(""),
            str_field(issue, "repo").unwrap_or(""),
            issue
                .get("number")
                .map(Value::to_string)
                .unwrap_or_default()
        ),
        // an evaluation's run: its benchmark instance
        None => str_field(run, "instance_id").unwrap_or("").to_owned(),
    }
}

/// The tool name OpenHands' function-calling agent uses for an action kind.
fn tool_name_of_action(action: &str) -> &str {
    match action {
        "run" => "execute_bash",
        "run_ipython" => "execute_ipython_cell",
        "read" | "edit" | "write" => "str_replace_editor",
        "browse" | "browse_interactive" => "browser",
        other => other,
    }
}

fn input_of_action(event: &Value) -> Value {
    let args = event.get("args").unwrap_or(event);
    match args {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !NOT_INPUT.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// Append a tool call to the last assistant message when it came from the same model response.
fn push_tool_call(conv: &mut Conversation, same_response: bool, thought: &str, call: Block) {
    if same_response {
        if let Some(last) = conv.messages.last_mut() {
            if last.role == Role::Assistant {
                last.content.blocks.push(call);
                return;
            }
        }
    }
    let mut blocks = Vec::new();
    if !thought.is_empty() {
        blocks.push(text_block(thought));
    }
    blocks.push(call);
    conv.messages
        .push(Message::new(Role::Assistant, Content::list(blocks)));
}

fn import_events(events: &[Value]) -> Conversation {
    import_stream(events, false)
}

/// An event stream as the conversation it was. `paired`: the stream was written as `[action, observation]` pairs,
/// so an observation that names no call (no metadata, no `cause` of a known action) answers the call just before
/// it, when that one is still unanswered.
fn import_stream(events: &[Value], paired: bool) -> Conversation {
    let mut conv = chat_list();
    let mut tool_of_event: HashMap<i64, String> = HashMap::new();
    let mut last_response: Option<String> = None;
    let mut unanswered: Option<String> = None;
    for (at, event) in events.iter().enumerate() {
        let source = str_field(event, "source").unwrap_or("");
        if source == "environment" {
            continue;
        }
        if let Some(action) = str_field(event, "action") {
            let meta = event.get("tool_call_metadata").filter(|m| m.is_object());
            match (action, meta) {
                ("message", _) => {
                    let text = event
                        .pointer("/args/content")
                        .and_then(Value::as_str)
                        .or_else(|| str_field(event, "message"))
                        .unwrap_or("");
                    let role = if source == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    conv.messages.push(text_message(role, text));
                    last_response = None;
                }
                ("system", _) => {
                    let text = event
                        .pointer("/args/content")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    conv.messages.push(text_message(Role::System, text));
                }
                ("recall" | "change_agent_state" | "null", _) => {}
                (_, Some(meta)) => {
                    let id = str_field(meta, "tool_call_id").unwrap_or("").to_owned();
                    let name = str_field(meta, "function_name").unwrap_or(action);
                    let response_id = meta.pointer("/model_response/id").and_then(Value::as_str);
                    let message = meta.pointer("/model_response/choices/0/message");
                    let input = message
                        .and_then(|m| m.get("tool_calls"))
                        .and_then(Value::as_array)
                        .and_then(|calls| calls.iter().find(|c| str_field(c, "id") == Some(&id)))
                        .and_then(|c| c.pointer("/function/arguments"))
                        .and_then(Value::as_str)
                        .and_then(|a| serde_json::from_str(a).ok())
                        .unwrap_or_else(|| input_of_action(event));
                    let thought = flatten_text(message.and_then(|m| m.get("content")));
                    let same = response_id.is_some() && last_response.as_deref() == response_id;
                    push_tool_call(&mut conv, same, &thought, tool_use(&id, name, input));
                    last_response = response_id.map(str::to_owned);
                    unanswered = Some(id.clone());
                    if let Some(eid) = event.get("id").and_then(Value::as_i64) {
                        tool_of_event.insert(eid, id);
                    }
                }
                (_, None) if source == "agent" => {
                    let eid = event.get("id").and_then(Value::as_i64);
                    // an event without its id is named by its place in the stream
                    let id = eid.map_or_else(|| format!("oh-at-{at}"), |e| format!("oh-{e}"));
                    let thought = event
                        .pointer("/args/thought")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let call = tool_use(&id, tool_name_of_action(action), input_of_action(event));
                    push_tool_call(&mut conv, false, thought, call);
                    last_response = None;
                    unanswered = Some(id.clone());
                    if let Some(eid) = eid {
                        tool_of_event.insert(eid, id);
                    }
                }
                _ => {}
            }
        } else if let Some(observation) = str_field(event, "observation") {
            if matches!(observation, "null" | "agent_state_changed" | "recall") {
                continue;
            }
            let id = event
                .pointer("/tool_call_metadata/tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| {
                    let cause = event.get("cause").and_then(Value::as_i64)?;
                    tool_of_event.get(&cause).cloned()
                })
                .or_else(|| unanswered.clone().filter(|_| paired));
            if let Some(id) = id {
                if unanswered.as_deref() == Some(id.as_str()) {
                    unanswered = None;
                }
                let text = str_field(event, "content").unwrap_or("");
                let failed = (observation == "error").then_some(true);
                conv.messages.push(tool_message(&id, text, failed));
            }
        }
    }
    conv
}

/// A run's `history`. Histories of whole events (each with its `source`: OpenHands' evaluation outputs since late
/// 2024) read as an event stream; OpenDevin's of 2024 are `[action, observation]` pairs of such events, read as
/// the stream of them, an observation answering the action it is paired with. Older resolver histories: no
/// source, no ids; the first message is the user's, an observation answers the action just before it.
fn import_history(run: &Value, at: &str) -> Result<Vec<Conversation>, ImportError> {
    let Some(Value::Array(history)) = run.get("history") else {
        return Err(ImportError::shape(
            format!("{at}history"),
            "missing or not a list",
        ));
    };
    let paired = !history.is_empty()
        && history
            .iter()
            .all(|h| matches!(h, Value::Array(pair) if pair.len() == 2));
    if paired {
        let events: Vec<Value> = history
            .iter()
            .filter_map(Value::as_array)
            .flatten()
            .cloned()
            .collect();
        return Ok(vec![import_stream(&events, true)]);
    }
    if openhands_v1::is_stream(history) {
        return Ok(openhands_v1::import(history));
    }
    if history.iter().any(|e| e.get("source").is_some()) {
        return Ok(vec![import_stream(history, false)]);
    }
    let mut conv = chat_list();
    let mut pending: Option<String> = None;
    for (i, event) in history.iter().enumerate() {
        if let Some(action) = str_field(event, "action") {
            match action {
                "message" => {
                    let role = if conv.messages.is_empty() {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    let text = str_field(event, "content").unwrap_or("");
                    conv.messages.push(text_message(role, text));
                }
                "null" | "change_agent_state" | "recall" => {}
                _ => {
                    let id = format!("oh-{i}");
                    let thought = str_field(event, "thought").unwrap_or("");
                    let call = tool_use(&id, tool_name_of_action(action), input_of_action(event));
                    push_tool_call(&mut conv, false, thought, call);
                    pending = Some(id);
                }
            }
        } else if let Some(observation) = str_field(event, "observation") {
            if matches!(observation, "null" | "agent_state_changed" | "recall") {
                continue;
            }
            if let Some(id) = pending.take() {
                let text = str_field(event, "content").unwrap_or("");
                let failed = (observation == "error").then_some(true);
                conv.messages.push(tool_message(&id, text, failed));
            }
        }
    }
    Ok(vec![conv])
}
