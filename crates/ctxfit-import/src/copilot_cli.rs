//! GitHub Copilot CLI session event logs (`~/.copilot/session-state/<id>.jsonl`).
//!
//! Each line is an event `{"type", "data", "id", "timestamp", "parentId"}`. What was sent to the model:
//! `system.message` (the system prompt, re-sent before each user turn; the latest is kept), `user.message`
//! (`transformedContent` — the prompt as sent, with the context Copilot adds — else `content`),
//! `assistant.message` (`content` text and `toolRequests`: `toolCallId`, `name`, `arguments`) and
//! `tool.execution_complete` (`result.content`, or `error.message` when the call failed). The results of one
//! response's calls become one user message. Hooks, turn markers and session bookkeeping are skipped.

use ctxfit_model::{Block, Content, Conversation, Message, Role, ToolResult, Value, WireFormat};
use serde_json::Map;

use crate::util::{str_field, text_block, tool_use};
use crate::{ImportError, Parsed, Session, SourceFormat};

/// Does this line look like a Copilot CLI event? `{"type": "session.start" | "user.message" | ..., "data": {...}}`.
pub(crate) fn is_event(v: &Value) -> bool {
    matches!(
        str_field(v, "type"),
        Some("session.start" | "system.message" | "user.message" | "assistant.message")
    ) && v.get("data").is_some_and(Value::is_object)
}

pub(crate) fn import(parsed: Parsed) -> Result<Vec<Session>, ImportError> {
    let lines = match parsed {
        Parsed::Lines(lines) => lines,
        Parsed::Document(v) => vec![(1, v)],
    };
    let mut conv = Conversation::new(WireFormat::Anthropic);
    for (line, event) in lines {
        let Some(data) = event.get("data") else {
            continue;
        };
        match str_field(&event, "type") {
            Some("system.message") => {
                if let Some(text) = str_field(data, "content") {
                    conv.system = Some(Content::text(text));
                }
            }
            Some("user.message") => {
                let text = str_field(data, "transformedContent")
                    .or_else(|| str_field(data, "content"))
                    .unwrap_or_default();
                conv.messages
                    .push(Message::new(Role::User, Content::text(text)));
            }
            Some("assistant.message") => {
                let mut blocks = Vec::new();
                if let Some(text) = str_field(data, "content").filter(|t| !t.is_empty()) {
                    blocks.push(text_block(text));
                }
                if let Some(Value::Array(requests)) = data.get("toolRequests") {
                    for r in requests {
                        let (Some(id), Some(name)) =
                            (str_field(r, "toolCallId"), str_field(r, "name"))
                        else {
                            return Err(ImportError::shape(
                                format!("line {line}: data.toolRequests"),
                                "a tool request needs a `toolCallId` and a `name`",
                            ));
                        };
                        let input = r
                            .get("arguments")
                            .cloned()
                            .unwrap_or(Value::Object(Map::new()));
                        blocks.push(tool_use(id, name, input));
                    }
                }
                conv.messages
                    .push(Message::new(Role::Assistant, Content::list(blocks)));
            }
            Some("tool.execution_complete") => {
                let Some(id) = str_field(data, "toolCallId") else {
                    continue;
                };
                let failed = data.get("success").and_then(Value::as_bool) == Some(false);
                let text = data
                    .pointer("/result/content")
                    .or_else(|| data.pointer("/error/message"))
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_default();
                let result = Block::ToolResult(ToolResult {
                    tool_use_id: id.to_owned(),
                    content: Content::text(text),
                    is_error: failed.then_some(true),
                    extra: Map::new(),
                });
                conv.push_tool_results(vec![result]);
            }
            _ => {}
        }
    }
    Ok(vec![Session::of("", SourceFormat::CopilotCli, conv)])
}
