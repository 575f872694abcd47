//! Helpers shared by the importers: the message and block shapes their logs become.

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
