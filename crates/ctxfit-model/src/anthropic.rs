//! Anthropic Messages wire format: `{"system": ..., "messages": [...], "tools": [...]}` or a bare message list.

use serde_json::{Map, Value};

use crate::conversation::{Conversation, Envelope, Message, ToolDefinition, WireFormat};
use crate::error::ModelError;
use crate::wire::{
    extend, finish_document, read_content_at, read_document, read_each, read_tool_list, take_role,
    take_string, write_content, write_flat_tool,
};

const F: WireFormat = WireFormat::Anthropic;

/// Read an Anthropic Messages document. Unknown fields and blocks are kept verbatim.
pub fn from_value(value: Value) -> Result<Conversation, ModelError> {
    read_document(value, F, true, read_messages, read_tools)
}

/// Read a list of Anthropic message objects.
pub fn read_messages(items: Vec<Value>) -> Result<Vec<Message>, ModelError> {
    read_each(items, "messages", read_message)
}

/// Read one Anthropic message object; `path` names it in errors.
pub fn read_message(value: Value, path: &str) -> Result<Message, ModelError> {
    let (role, mut m) = take_role(value, path)?;
    let content = read_content_at(m.shift_remove("content"), F, &format!("{path}.content"))?;
    Ok(Message {
        role,
        content,
        extra: m,
    })
}

fn read_tools(tools: Value) -> Result<Vec<ToolDefinition>, ModelError> {
    read_tool_list(tools, "expected a tool object", |mut m, path| {
        let name = take_string(&mut m, "name")
            .ok_or_else(|| ModelError::shape(format!("{path}.name"), "missing or not a string"))?;
        Ok(ToolDefinition {
            name,
            description: take_string(&mut m, "description"),
            input_schema: m.shift_remove("input_schema"),
            extra: m,
            wrapper_extra: Map::new(),
        })
    })
}

/// Write a conversation as an Anthropic document. Call [`crate::convert`] first when it came from another
/// format; this writer only spells what the model holds.
pub fn to_value(conv: &Conversation) -> Value {
    let messages = Value::Array(conv.messages.iter().map(write_message).collect());
    if conv.envelope != Envelope::Object {
        return messages;
    }
    let mut top = Map::new();
    if let Some(system) = &conv.system {
        if let Some(v) = write_content(system, F) {
            top.insert("system".into(), v);
        }
    }
    top.insert("messages".into(), messages);
    finish_document(top, conv.tools.as_deref(), write_tool, &conv.extra)
}

/// Write one message as an Anthropic message object.
pub fn write_message(msg: &Message) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), msg.role.as_str().into());
    if let Some(c) = write_content(&msg.content, F) {
        m.insert("content".into(), c);
    }
    extend(&mut m, &msg.extra);
    Value::Object(m)
}

fn write_tool(tool: &ToolDefinition) -> Value {
    write_flat_tool(tool, "input_schema")
}
