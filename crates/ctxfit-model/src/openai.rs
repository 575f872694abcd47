//! OpenAI Chat Completions wire format: `tool_calls` with `function.name`/`arguments`, `role: "tool"` results.
//!
//! In the model an assistant's `tool_calls` become `ToolUse` blocks after its text, and a tool message holds one
//! `ToolResult` block; the exact `arguments` string is kept so writing back is byte-identical.

use serde_json::{Map, Value};

use crate::block::{Block, Content, ToolResult, ToolUse};
use crate::conversation::{Conversation, Envelope, Message, Role, ToolDefinition, WireFormat};
use crate::error::ModelError;
use crate::wire::{
    extend, finish_document, read_content, read_content_at, read_document, read_each,
    read_tool_list, take_role, take_string, write_content,
};

const F: WireFormat = WireFormat::OpenAi;

/// Read an OpenAI Chat Completions document (request object or bare message list).
pub fn from_value(value: Value) -> Result<Conversation, ModelError> {
    read_document(value, F, false, read_messages, read_tools)
}

/// Read a list of OpenAI message objects.
pub fn read_messages(items: Vec<Value>) -> Result<Vec<Message>, ModelError> {
    read_each(items, "messages", read_message)
}

/// Read one OpenAI message object; `path` names it in errors.
pub fn read_message(value: Value, path: &str) -> Result<Message, ModelError> {
    let (role, mut m) = take_role(value, path)?;
    if role == Role::Tool && matches!(m.get("tool_call_id"), Some(Value::String(_))) {
        if let Ok(result_content) = read_content(m.get("content").cloned(), F) {
            m.shift_remove("content");
            let tool_use_id = take_string(&mut m, "tool_call_id").unwrap_or_default();
            let result = ToolResult {
                tool_use_id,
                content: result_content,
                is_error: None,
                extra: Map::new(),
            };
            return Ok(Message {
                role,
                content: Content::list(vec![Block::ToolResult(result)]),
                extra: m,
            });
        }
    }
    let mut content = read_content_at(m.shift_remove("content"), F, &format!("{path}.content"))?;
    if let Some(calls) = m.shift_remove("tool_calls") {
        match read_tool_calls(calls) {
            Ok(uses) => content.blocks.extend(uses.into_iter().map(Block::ToolUse)),
            Err(odd) => {
                m.insert("tool_calls".into(), odd);
            }
        }
    }
    Ok(Message {
        role,
        content,
        extra: m,
    })
}

/// Tool calls of the expected shape become `ToolUse`s; `null`, `[]` or anything odd is handed back verbatim.
fn read_tool_calls(calls: Value) -> Result<Vec<ToolUse>, Value> {
    let well_formed = |c: &Value| {
        c.get("id").is_some_and(Value::is_string)
            && c.pointer("/function/name").is_some_and(Value::is_string)
            && c.pointer("/function/arguments")
                .is_some_and(Value::is_string)
    };
    match calls {
        Value::Array(items) if !items.is_empty() && items.iter().all(well_formed) => Ok(items
            .into_iter()
            .map(|c| {
                let Value::Object(mut outer) = c else {
                    unreachable!("checked above")
                };
                let id = take_string(&mut outer, "id").unwrap_or_default();
                let mut function = match outer.shift_remove("function") {
                    Some(Value::Object(f)) => f,
                    _ => Map::new(),
                };
                let name = take_string(&mut function, "name").unwrap_or_default();
                let raw = take_string(&mut function, "arguments").unwrap_or_default();
                let input = crate::wire::arguments_input(&raw);
                ToolUse {
                    id,
                    name,
                    input,
                    raw_arguments: Some(raw),
                    extra: outer,
                    function_extra: function,
                }
            })
            .collect()),
        other => Err(other),
    }
}

fn read_tools(tools: Value) -> Result<Vec<ToolDefinition>, ModelError> {
    let expected = "expected {\"type\": \"function\", \"function\": {\"name\": ...}}";
    read_tool_list(tools, expected, |mut outer, path| {
        let Some(Value::Object(mut f)) = outer.shift_remove("function") else {
            return Err(ModelError::shape(path, expected));
        };
        let name = take_string(&mut f, "name").ok_or_else(|| {
            ModelError::shape(format!("{path}.function.name"), "missing or not a string")
        })?;
        Ok(ToolDefinition {
            name,
            description: take_string(&mut f, "description"),
            input_schema: f.shift_remove("parameters"),
            extra: f,
            wrapper_extra: outer,
        })
    })
}

/// Write a conversation as an OpenAI document. Call [`crate::convert`] first when it came from another format.
pub fn to_value(conv: &Conversation) -> Value {
    let messages = Value::Array(conv.messages.iter().map(write_message).collect());
    if conv.envelope != Envelope::Object {
        return messages;
    }
    let mut top = Map::new();
    top.insert("messages".into(), messages);
    finish_document(top, conv.tools.as_deref(), write_tool, &conv.extra)
}

/// Write one message as an OpenAI message object.
pub fn write_message(msg: &Message) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), msg.role.as_str().into());
    if let [Block::ToolResult(r)] = msg.content.blocks.as_slice() {
        m.insert("tool_call_id".into(), r.tool_use_id.clone().into());
        if let Some(c) = write_content(&r.content, F) {
            m.insert("content".into(), c);
        }
        extend(&mut m, &msg.extra);
        return Value::Object(m);
    }
    let (uses, rest): (Vec<&Block>, Vec<&Block>) = msg
        .content
        .blocks
        .iter()
        .partition(|b| matches!(b, Block::ToolUse(_)));
    let text_part = Content {
        blocks: rest.into_iter().cloned().collect(),
        shape: msg.content.shape,
    };
    if let Some(c) = write_content(&text_part, F) {
        m.insert("content".into(), c);
    }
    if !uses.is_empty() {
        let calls = uses
            .into_iter()
            .filter_map(|b| match b {
                Block::ToolUse(u) => Some(write_tool_call(u)),
                _ => None,
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    extend(&mut m, &msg.extra);
    Value::Object(m)
}

fn write_tool_call(u: &ToolUse) -> Value {
    let mut outer = Map::new();
    outer.insert("id".into(), u.id.clone().into());
    extend(&mut outer, &u.extra);
    let mut f = Map::new();
    f.insert("name".into(), u.name.clone().into());
    f.insert("arguments".into(), u.arguments_string().into());
    extend(&mut f, &u.function_extra);
    outer.insert("function".into(), Value::Object(f));
    Value::Object(outer)
}

fn write_tool(tool: &ToolDefinition) -> Value {
    let mut f = Map::new();
    f.insert("name".into(), tool.name.clone().into());
    if let Some(d) = &tool.description {
        f.insert("description".into(), d.clone().into());
    }
    if let Some(s) = &tool.input_schema {
        f.insert("parameters".into(), s.clone());
    }
    extend(&mut f, &tool.extra);
    let mut outer = tool.wrapper_extra.clone();
    outer.insert("function".into(), Value::Object(f));
    Value::Object(outer)
}
