//! Gemini CLI session files (`~/.gemini/tmp/<project>/chats/session-*.json`).
//!
//! One JSON object `{sessionId, projectHash, startTime, lastUpdated, messages}` whose `messages` carry a `type`:
//! `user` (the prompt, `content` a string or parts), `gemini` (the model's answer: `content` text and
//! `toolCalls`, each holding its own `result` — `functionResponse`s — so the call and its output are logged
//! together), and UI notes (`info`, `warning`, `error`) that were never sent and are skipped. The model's
//! `thoughts` are not sent back either. Each answer with calls becomes an assistant message with its tool uses,
//! followed by one user message with their results; `tokens` (`input`, `cached`, `output`) are the recorded usage.

use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolResult, Value, WireFormat};
use serde_json::Map;

use crate::util::{flatten_text, str_field, text_block, tool_use};
use crate::{ImportError, RecordedUsage, Session, SourceFormat};

/// Does this document look like a Gemini CLI session? Its messages have a `type` and no `role`.
pub(crate) fn looks_like(top: &Map<String, Value>) -> bool {
    top.contains_key("sessionId")
        && matches!(top.get("messages"), Some(Value::Array(ms))
            if ms.iter().all(|m| m.get("type").is_some_and(Value::is_string) && m.get("role").is_none()))
}

pub(crate) fn import(doc: Value) -> Result<Vec<Session>, ImportError> {
    let Some(Value::Array(entries)) = doc.get("messages") else {
        return Err(ImportError::shape("messages", "expected a list"));
    };
    let mut conv = Conversation::new(WireFormat::Anthropic);
    let mut usage = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        match str_field(entry, "type") {
            Some("user") => {
                let text = flatten_text(entry.get("content"));
                conv.messages
                    .push(Message::new(Role::User, Content::text(text)));
            }
            Some("gemini") => {
                let mut blocks = Vec::new();
                let text = flatten_text(entry.get("content"));
                if !text.is_empty() {
                    blocks.push(text_block(&text));
                }
                let mut results = Vec::new();
                let calls = match entry.get("toolCalls") {
                    Some(Value::Array(calls)) => calls.as_slice(),
                    _ => &[],
                };
                for (c, call) in calls.iter().enumerate() {
                    let (Some(id), Some(name)) = (str_field(call, "id"), str_field(call, "name"))
                    else {
                        return Err(ImportError::shape(
                            format!("messages[{i}].toolCalls[{c}]"),
                            "a tool call needs an `id` and a `name`",
                        ));
                    };
                    blocks.push(tool_use(
                        id,
                        name,
                        call.get("args")
                            .cloned()
                            .unwrap_or(Value::Object(Map::new())),
                    ));
                    results.push(Block::ToolResult(ToolResult {
                        tool_use_id: id.to_owned(),
                        content: Content::text(result_text(call)),
                        is_error: (str_field(call, "status") == Some("error")).then_some(true),
                        extra: Map::new(),
                    }));
                }
                if let Some(t) = entry.get("tokens") {
                    let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
                    usage.push(RecordedUsage {
                        input_tokens: n("input"),
                        cached_input_tokens: n("cached"),
                        output_tokens: n("output"),
                    });
                }
                conv.messages
                    .push(Message::new(Role::Assistant, Content::list(blocks)));
                if !results.is_empty() {
                    conv.push_tool_results(results);
                }
            }
            // UI notes, never sent to the model
            _ => {}
        }
    }
    Ok(vec![Session {
        usage,
        ..Session::of("", SourceFormat::GeminiCli, conv)
    }])
}

/// What a call returned to the model: the `output` (or `error`) of its function responses, else the responses
/// as JSON.
fn result_text(call: &Value) -> String {
    let Some(Value::Array(parts)) = call.get("result") else {
        return String::new();
    };
    let texts: Vec<String> = parts
        .iter()
        .map(|p| {
            let response = p.pointer("/functionResponse/response");
            match response.and_then(|r| r.get("output").or_else(|| r.get("error"))) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => response.map_or_else(|| p.to_string(), Value::to_string),
            }
        })
        .collect();
    texts.join("\n")
}
