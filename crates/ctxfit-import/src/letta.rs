//! Letta agent files (`.af`): `{"agents": [{"name", "messages": [...]}, ...]}`, one conversation per agent.
//!
//! Letta messages are OpenAI-like (`tool_calls`, `role: "tool"` with `tool_call_id`) with content as a list of
//! `text` and `reasoning` parts; reasoning becomes a thinking block.

use ctxfit_model::{Block, Content, Message, Role, ThinkingBlock};
use serde_json::{Map, Value};

use crate::util::{flatten_text, str_field, text_block, tool_message, tool_use};
use crate::{ImportError, Session, SourceFormat};

pub(crate) fn import(doc: Value) -> Result<Vec<Session>, ImportError> {
    let Some(Value::Array(agents)) = doc.get("agents") else {
        return Err(ImportError::shape("agents", "missing or not a list"));
    };
    agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let Some(Value::Array(messages)) = agent.get("messages") else {
                return Err(ImportError::shape(
                    format!("agents[{i}].messages"),
                    "missing or not a list",
                ));
            };
            let mut conversation = crate::util::chat_list();
            for (j, m) in messages.iter().enumerate() {
                let role = str_field(m, "role").ok_or_else(|| {
                    ImportError::shape(format!("agents[{i}].messages[{j}].role"), "missing")
                })?;
                conversation
                    .messages
                    .push(read_message(Role::parse(role), m));
            }
            Ok(Session::of(
                str_field(agent, "name").unwrap_or("agent"),
                SourceFormat::Letta,
                conversation,
            ))
        })
        .collect()
}

fn read_message(role: Role, m: &Value) -> Message {
    if role == Role::Tool {
        let id = str_field(m, "tool_call_id").unwrap_or("");
        let text = flatten_text(m.get("content"));
        let failed = m
            .pointer("/tool_returns/0/status")
            .and_then(Value::as_str)
            .map(|s| s == "error");
        return tool_message(id, &text, failed.filter(|f| *f));
    }
    let mut blocks = Vec::new();
    if let Some(Value::Array(parts)) = m.get("content") {
        for part in parts {
            match str_field(part, "type") {
                Some("text") => blocks.push(text_block(str_field(part, "text").unwrap_or(""))),
                Some("reasoning") => blocks.push(Block::Thinking(ThinkingBlock {
                    thinking: str_field(part, "reasoning").unwrap_or("").to_owned(),
                    extra: Map::new(),
                })),
                _ => blocks.push(Block::Unknown(part.clone())),
            }
        }
    } else if let Some(Value::String(s)) = m.get("content") {
        blocks.push(text_block(s));
    }
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        for call in calls {
            let id = str_field(call, "id").unwrap_or("");
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let args = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            let input =
                serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_owned()));
            blocks.push(tool_use(id, name, input));
        }
    }
    Message::new(role, Content::list(blocks))
}
