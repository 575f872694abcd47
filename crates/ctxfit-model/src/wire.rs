//! Helpers shared by the two wire formats: reading and writing content and blocks without losing a field.

use serde_json::{Map, Value};

use crate::block::{Block, Content, Shape, TextBlock, ThinkingBlock, ToolResult, ToolUse};
use crate::conversation::WireFormat;
use crate::error::ModelError;

/// Content as JSON of its own, for saving it: written and read as the Anthropic wire writes it (here, beside the
/// wire's reader and writer, so that the model's types need not know the wire).
impl Content {
    /// This content as JSON in the Anthropic form (a string, a list of blocks, or null), for saving it;
    /// [`Content::from_json`] reads it back to the same content.
    pub fn to_json(&self) -> Value {
        write_content(self, WireFormat::Anthropic).unwrap_or(Value::Null)
    }

    /// Content saved by [`Content::to_json`]; any other value is kept as one unknown block.
    pub fn from_json(value: Value) -> Content {
        read_content(Some(value), WireFormat::Anthropic)
            .unwrap_or_else(|odd| Content::list(vec![Block::Unknown(odd)]))
    }
}

pub(crate) fn take_string(m: &mut Map<String, Value>, key: &str) -> Option<String> {
    match m.shift_remove(key) {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            m.insert(key.to_owned(), other);
            None
        }
        None => None,
    }
}

/// A tool call's input from the `arguments` string OpenAI sends: its JSON (numbers as written), or the string
/// itself when it is not JSON.
pub(crate) fn arguments_input(raw: &str) -> Value {
    match serde_json::from_str(raw) {
        Ok(mut v) => {
            crate::keep_number_spelling(raw, &mut v);
            v
        }
        Err(_) => Value::String(raw.to_owned()),
    }
}

fn has_string(m: &Map<String, Value>, key: &str) -> bool {
    matches!(m.get(key), Some(Value::String(_)))
}

/// Read a `content` field: a string, a list of blocks, `null`, or nothing. Anything else is returned back.
pub(crate) fn read_content(value: Option<Value>, format: WireFormat) -> Result<Content, Value> {
    match value {
        None => Ok(Content::absent()),
        Some(Value::Null) => Ok(Content {
            blocks: Vec::new(),
            shape: Shape::Null,
        }),
        Some(Value::String(s)) => Ok(Content::text(s)),
        Some(Value::Array(items)) => Ok(Content::list(
            items.into_iter().map(|v| read_block(v, format)).collect(),
        )),
        Some(other) => Err(other),
    }
}

/// Like [`read_content`], for a field whose odd value is an error naming `path`.
pub(crate) fn read_content_at(
    value: Option<Value>,
    format: WireFormat,
    path: &str,
) -> Result<Content, ModelError> {
    read_content(value, format).map_err(|v| {
        ModelError::shape(
            path,
            format!(
                "expected a string, a list of blocks or null, found {}",
                kind_of(&v)
            ),
        )
    })
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Read one block. A block of unexpected shape is kept verbatim as `Block::Unknown`: never an error.
pub(crate) fn read_block(value: Value, format: WireFormat) -> Block {
    let Value::Object(mut m) = value else {
        return Block::Unknown(value);
    };
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    match (kind, format) {
        ("text", _) if has_string(&m, "text") => {
            m.shift_remove("type");
            let text = take_string(&mut m, "text").unwrap_or_default();
            Block::Text(TextBlock { text, extra: m })
        }
        ("image", WireFormat::Anthropic) | ("image_url", WireFormat::OpenAi) => Block::Image(m),
        ("document", WireFormat::Anthropic) => Block::Document(m),
        ("redacted_thinking", WireFormat::Anthropic) => Block::RedactedThinking(m),
        ("thinking", WireFormat::Anthropic) if has_string(&m, "thinking") => {
            m.shift_remove("type");
            let thinking = take_string(&mut m, "thinking").unwrap_or_default();
            Block::Thinking(ThinkingBlock { thinking, extra: m })
        }
        ("tool_use", WireFormat::Anthropic)
            if has_string(&m, "id") && has_string(&m, "name") && m.contains_key("input") =>
        {
            m.shift_remove("type");
            let id = take_string(&mut m, "id").unwrap_or_default();
            let name = take_string(&mut m, "name").unwrap_or_default();
            let input = m.shift_remove("input").unwrap_or(Value::Null);
            Block::ToolUse(ToolUse {
                id,
                name,
                input,
                extra: m,
                ..ToolUse::default()
            })
        }
        ("tool_result", WireFormat::Anthropic)
            if has_string(&m, "tool_use_id")
                && matches!(m.get("is_error"), None | Some(Value::Bool(_))) =>
        {
            let content = match read_content(m.shift_remove("content"), format) {
                Ok(c) => c,
                Err(odd) => {
                    m.insert("content".to_owned(), odd);
                    return Block::Unknown(Value::Object(m));
                }
            };
            m.shift_remove("type");
            let tool_use_id = take_string(&mut m, "tool_use_id").unwrap_or_default();
            let is_error = m.shift_remove("is_error").and_then(|v| v.as_bool());
            Block::ToolResult(ToolResult {
                tool_use_id,
                content,
                is_error,
                extra: m,
            })
        }
        _ => Block::Unknown(Value::Object(m)),
    }
}

/// Write content back; `None` means the field is left out.
pub(crate) fn write_content(content: &Content, format: WireFormat) -> Option<Value> {
    let list = || {
        Value::Array(
            content
                .blocks
                .iter()
                .filter_map(|b| write_block(b, format))
                .collect(),
        )
    };
    match content.shape {
        Shape::Absent if content.blocks.is_empty() => None,
        Shape::Null if content.blocks.is_empty() => Some(Value::Null),
        Shape::String if content.is_plain_text() => Some(Value::String(
            content.blocks[0].as_text().unwrap_or_default().to_owned(),
        )),
        Shape::String if content.blocks.is_empty() => Some(Value::String(String::new())),
        _ => Some(list()),
    }
}

/// Write one block in `format`. Blocks the format cannot hold inline (tool calls and results in OpenAI
/// content, thinking in OpenAI) give `None`; the OpenAI writer places tool calls and results itself.
pub(crate) fn write_block(block: &Block, format: WireFormat) -> Option<Value> {
    let mut out = Map::new();
    match block {
        Block::Text(t) => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), t.text.clone().into());
            extend(&mut out, &t.extra);
        }
        Block::ToolUse(u) => {
            if format == WireFormat::OpenAi {
                return None;
            }
            out.insert("type".into(), "tool_use".into());
            out.insert("id".into(), u.id.clone().into());
            out.insert("name".into(), u.name.clone().into());
            out.insert("input".into(), u.input.clone());
            extend(&mut out, &u.extra);
        }
        Block::ToolResult(r) => {
            if format == WireFormat::OpenAi {
                return None;
            }
            out.insert("type".into(), "tool_result".into());
            out.insert("tool_use_id".into(), r.tool_use_id.clone().into());
            if let Some(c) = write_content(&r.content, format) {
                out.insert("content".into(), c);
            }
            if let Some(e) = r.is_error {
                out.insert("is_error".into(), e.into());
            }
            extend(&mut out, &r.extra);
        }
        Block::Thinking(t) => {
            if format == WireFormat::OpenAi {
                return None;
            }
            out.insert("type".into(), "thinking".into());
            out.insert("thinking".into(), t.thinking.clone().into());
            extend(&mut out, &t.extra);
        }
        Block::RedactedThinking(m) | Block::Image(m) | Block::Document(m) => {
            return Some(Value::Object(m.clone()))
        }
        Block::Unknown(v) => return Some(v.clone()),
    }
    Some(Value::Object(out))
}

pub(crate) fn extend(out: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        out.insert(k.clone(), v.clone());
    }
}

/// A tool definition as one flat object: `name`, `description`, its input schema under `schema_key`
/// (Anthropic's `input_schema`, the Responses API's `parameters`), then the fields kept as read.
pub(crate) fn write_flat_tool(
    tool: &crate::conversation::ToolDefinition,
    schema_key: &str,
) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), tool.name.clone().into());
    if let Some(d) = &tool.description {
        m.insert("description".into(), d.clone().into());
    }
    if let Some(s) = &tool.input_schema {
        m.insert(schema_key.into(), s.clone());
    }
    extend(&mut m, &tool.extra);
    Value::Object(m)
}

/// A Messages or Chat Completions document (a request object or a bare message list): its messages read by
/// `read_messages`; of a request object, the system prompt when the format has one there (`system`), the tools
/// read by `read_tools`, and every other field kept as read.
pub(crate) fn read_document(
    value: Value,
    format: WireFormat,
    system: bool,
    read_messages: fn(Vec<Value>) -> Result<Vec<crate::conversation::Message>, ModelError>,
    read_tools: fn(Value) -> Result<Vec<crate::conversation::ToolDefinition>, ModelError>,
) -> Result<crate::conversation::Conversation, ModelError> {
    use crate::conversation::{Conversation, Envelope};
    let (items, envelope) = split_envelope(value)?;
    let mut conv = Conversation::new(format);
    conv.messages = read_messages(items)?;
    match envelope {
        None => conv.envelope = Envelope::BareList,
        Some(mut top) => {
            let prompt = if system {
                top.shift_remove("system")
            } else {
                None
            };
            if let Some(prompt) = prompt {
                conv.system = Some(read_content_at(Some(prompt), format, "system")?);
            }
            if let Some(tools) = top.shift_remove("tools") {
                conv.tools = Some(read_tools(tools)?);
            }
            conv.extra = top;
        }
    }
    Ok(conv)
}

/// Each item of a list read by `read`, named `{list}[i]` in errors.
pub(crate) fn read_each<T>(
    items: Vec<Value>,
    list: &str,
    read: impl Fn(Value, &str) -> Result<T, ModelError>,
) -> Result<Vec<T>, ModelError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| read(item, &format!("{list}[{i}]")))
        .collect()
}

/// A document's `tools` list, each item an object read by `read` (given it and its path, `tools[2]`); an item
/// that is not an object is refused with `not_an_object`.
pub(crate) fn read_tool_list(
    tools: Value,
    not_an_object: &str,
    read: impl Fn(Map<String, Value>, &str) -> Result<crate::conversation::ToolDefinition, ModelError>,
) -> Result<Vec<crate::conversation::ToolDefinition>, ModelError> {
    let Value::Array(items) = tools else {
        return Err(ModelError::shape(
            "tools",
            format!("expected a list, found {}", kind_of(&tools)),
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("tools[{i}]");
            match item {
                Value::Object(m) => read(m, &path),
                _ => Err(ModelError::shape(path, not_an_object)),
            }
        })
        .collect()
}

/// The end of a document's top-level object: its tools as `write` spells one, then the fields kept as read.
pub(crate) fn finish_document(
    mut top: Map<String, Value>,
    tools: Option<&[crate::conversation::ToolDefinition]>,
    write: impl Fn(&crate::conversation::ToolDefinition) -> Value,
    extra: &Map<String, Value>,
) -> Value {
    if let Some(tools) = tools {
        top.insert(
            "tools".into(),
            Value::Array(tools.iter().map(write).collect()),
        );
    }
    extend(&mut top, extra);
    Value::Object(top)
}

/// A document's message list, and the other top-level fields when it was a request object.
pub(crate) type Split = (Vec<Value>, Option<Map<String, Value>>);

/// The messages list of a request object or a bare list, plus the object's other fields.
pub(crate) fn split_envelope(value: Value) -> Result<Split, ModelError> {
    match value {
        Value::Array(items) => Ok((items, None)),
        Value::Object(mut m) => match m.shift_remove("messages") {
            Some(Value::Array(items)) => Ok((items, Some(m))),
            Some(other) => Err(ModelError::shape(
                "messages",
                format!("expected a list, found {}", kind_of(&other)),
            )),
            None => Err(ModelError::shape(
                "$",
                "expected a list of messages or an object with a \"messages\" list",
            )),
        },
        other => Err(ModelError::shape(
            "$",
            format!(
                "expected a list of messages or an object with a \"messages\" list, found {}",
                kind_of(&other)
            ),
        )),
    }
}

/// Split a message object into its role and the rest.
pub(crate) fn take_role(
    value: Value,
    path: &str,
) -> Result<(crate::Role, Map<String, Value>), ModelError> {
    let Value::Object(mut m) = value else {
        return Err(ModelError::shape(
            path,
            format!("expected a message object, found {}", kind_of(&value)),
        ));
    };
    match take_string(&mut m, "role") {
        Some(role) => Ok((crate::Role::parse(&role), m)),
        None => Err(ModelError::shape(
            format!("{path}.role"),
            "missing or not a string",
        )),
    }
}
