//! OpenAI Responses wire format: `{"instructions": ..., "input": [items], "tools": [...]}` or a bare item list.
//!
//! The Responses API sends a conversation as a flat list of **items** rather than messages: `message` items
//! (`input_text` / `output_text` parts), and, each as its own item, `function_call`, `function_call_output`,
//! `custom_tool_call` (a free-form input string, as Codex's `apply_patch`), `custom_tool_call_output`,
//! `reasoning`, and built-in tool items (`web_search_call`, ...). In the model **one item is one [`Message`]**,
//! so writing back is item for item:
//!
//! * a `message` item keeps its role; its parts are blocks (`input_text`/`output_text` → text blocks that
//!   remember their part type; anything else kept verbatim);
//! * a `function_call` / `custom_tool_call` is an assistant message holding one `ToolUse` (`call_id` is its
//!   id; the `arguments` string is kept byte for byte; a custom call's input is a JSON string); a
//!   `local_shell_call` too, as a call of the tool [`LOCAL_SHELL`] whose input is the item's `action`
//!   (`{"type": "exec", "command": ["bash", "-lc", "ls"]}`);
//! * the built-in tools' calls are calls of a tool named for them, the item's own object their input: a
//!   `shell_call` of [`SHELL`] (its `action`: `{"commands": ["ls", "cat a.rs"], ...}`), an `apply_patch_call`
//!   of [`APPLY_PATCH`] (its `operation`: `{"type": "update_file", "path": ..., "diff": ...}`);
//! * a `function_call_output`, `custom_tool_call_output`, `local_shell_call_output` (which names its call by
//!   `id`), `shell_call_output` or `apply_patch_call_output` is a `Role::Tool` message holding one
//!   `ToolResult`. A `shell_call_output`'s `output` is a list of chunks, one a command: each chunk's `stdout`
//!   and `stderr` are text blocks that say which they are, and its other fields (`outcome`) stay in the
//!   result's `extra`, so that a result compacted to other text is written back as one chunk of `stdout` with
//!   the last chunk's outcome;
//! * every other item (`reasoning`, `web_search_call`, `item_reference`, ...) is kept whole as an unknown
//!   block, in a message whose role says which side produced it (`*_output` items are the tool's, `reasoning`
//!   and `*_call` items the model's).
//!
//! An item's `type` and its fields other than those above live in the message's `extra`. The model's answer
//! to one request is often several items (reasoning, a message, parallel calls): consecutive assistant
//! messages are one response ([`crate::begins_response`]). `instructions` is the conversation's system prompt.
//! A string `input` (a one-line prompt, nothing to compact) is kept as it is, in the request's other fields.

use serde_json::{Map, Value};

use crate::block::{Block, Content, Shape, TextBlock, ToolResult, ToolUse};
use crate::conversation::{Conversation, Envelope, Message, Role, ToolDefinition, WireFormat};
use crate::error::ModelError;
use crate::wire::{extend, finish_document, kind_of, read_each, take_string, write_flat_tool};

const F: WireFormat = WireFormat::Responses;

/// Item types that are the model's output, beside `*_call` items.
const MODEL_ITEMS: &[&str] = &["reasoning"];

/// The tool name a `local_shell_call` item's call gets in the model (the item itself names no tool).
pub const LOCAL_SHELL: &str = "local_shell";
/// The tool name of a `shell_call` (the hosted or local `shell` tool; its items name no tool either).
pub const SHELL: &str = "shell";
/// The tool name of an `apply_patch_call`.
pub const APPLY_PATCH: &str = "apply_patch";

/// The built-in calls read as tool uses: item type, the field holding the call's input, the tool's name.
const BUILT_IN_CALLS: &[(&str, &str, &str)] = &[
    ("local_shell_call", "action", LOCAL_SHELL),
    ("shell_call", "action", SHELL),
    ("apply_patch_call", "operation", APPLY_PATCH),
];

/// The key of a `shell_call_output`'s text block saying which stream it holds (`"stdout"`, `"stderr"`).
pub const STREAM: &str = "stream";

/// May this message's tool call have its input replaced (a compactor's `clear_tool_inputs`)? Not a built-in
/// call (`local_shell_call`, `shell_call`, `apply_patch_call`): its input is the item's `action` or
/// `operation`, which the API requires whole, so an emptied one would make the request invalid. Every other
/// call's input is free-form JSON or text.
pub fn call_input_is_free(msg: &Message) -> bool {
    (msg.extra.get("type").and_then(Value::as_str))
        .and_then(built_in_call)
        .is_none()
}

/// Of a built-in call's item type, the field holding the call's input and the tool's name.
fn built_in_call(kind: &str) -> Option<(&'static str, &'static str)> {
    (BUILT_IN_CALLS.iter()).find_map(|&(k, field, name)| (k == kind).then_some((field, name)))
}

/// Read a Responses document: a request object with an `input` list, or a bare item list.
pub fn from_value(value: Value) -> Result<Conversation, ModelError> {
    let mut conv = Conversation::new(F);
    match value {
        Value::Array(items) => {
            conv.envelope = Envelope::BareList;
            conv.messages = read_items(items)?;
        }
        Value::Object(mut top) => {
            match top.shift_remove("input") {
                Some(Value::Array(items)) => conv.messages = read_items(items)?,
                // a plain prompt: nothing to compact, kept verbatim
                Some(other @ Value::String(_)) => {
                    top.insert("input".into(), other);
                }
                Some(other) => {
                    return Err(ModelError::shape(
                        "input",
                        format!(
                            "expected a list of items or a string, found {}",
                            kind_of(&other)
                        ),
                    ))
                }
                None => {
                    return Err(ModelError::shape(
                        "$",
                        "expected a list of items or an object with an \"input\" list",
                    ))
                }
            }
            if matches!(top.get("instructions"), Some(Value::String(_))) {
                let text = take_string(&mut top, "instructions").unwrap_or_default();
                conv.system = Some(Content::text(text));
            }
            if let Some(tools) = top.shift_remove("tools") {
                match read_tools(tools) {
                    Ok(tools) => conv.tools = Some(tools),
                    // built-in tools (`web_search`, ...) have no name: the list stays as it was
                    Err(tools) => {
                        top.insert("tools".into(), tools);
                    }
                }
            }
            conv.extra = top;
        }
        other => {
            return Err(ModelError::shape(
                "$",
                format!(
                    "expected a list of items or an object with an \"input\" list, found {}",
                    kind_of(&other)
                ),
            ))
        }
    }
    Ok(conv)
}

/// Read a list of Responses items.
pub fn read_items(items: Vec<Value>) -> Result<Vec<Message>, ModelError> {
    read_each(items, "input", read_item)
}

/// Which side produced an item of this type, by the API's naming: the model (`reasoning`, `*_call`), the
/// tool (`*_output`), or neither (kept under its type's name).
fn item_role(kind: &str) -> Role {
    if kind.ends_with("_output") {
        Role::Tool
    } else if kind.ends_with("_call") || MODEL_ITEMS.contains(&kind) {
        Role::Assistant
    } else {
        Role::Other(kind.to_owned())
    }
}

/// Read one item; `path` names it in errors. Only a non-object, or a message item without a role, is an error:
/// any other item the model does not interpret is kept whole.
pub fn read_item(value: Value, path: &str) -> Result<Message, ModelError> {
    let Value::Object(mut m) = value else {
        return Err(ModelError::shape(
            path,
            format!("expected an item object, found {}", kind_of(&value)),
        ));
    };
    let kind = m
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if m.contains_key("role") {
            "message"
        } else {
            ""
        })
        .to_owned();
    let mut extra = Map::new();
    let tag = |extra: &mut Map<String, Value>, m: &mut Map<String, Value>| {
        if let Some(t) = m.shift_remove("type") {
            extra.insert("type".into(), t);
        }
    };
    // a built-in call (`shell_call`, ...): the item's own object is the call's input
    if let Some((field, name)) = built_in_call(&kind).filter(|(field, _)| {
        is_str(&m, "call_id") && matches!(m.get(*field), Some(Value::Object(_)))
    }) {
        tag(&mut extra, &mut m);
        let id = take_string(&mut m, "call_id").unwrap_or_default();
        let input = m.shift_remove(field).unwrap_or_default();
        return Ok(call_message(
            ToolUse {
                id,
                name: name.to_owned(),
                input,
                extra: m,
                ..ToolUse::default()
            },
            extra,
        ));
    }
    match kind.as_str() {
        "message" => {
            let role = match take_string(&mut m, "role") {
                Some(r) => Role::parse(&r),
                None => {
                    return Err(ModelError::shape(
                        format!("{path}.role"),
                        "missing or not a string",
                    ))
                }
            };
            let content = match m.shift_remove("content") {
                None => Content::absent(),
                Some(Value::Null) => Content {
                    blocks: Vec::new(),
                    shape: Shape::Null,
                },
                Some(Value::String(s)) => Content::text(s),
                Some(Value::Array(parts)) => {
                    Content::list(parts.into_iter().map(read_part).collect())
                }
                Some(other) => {
                    return Err(ModelError::shape(
                        format!("{path}.content"),
                        format!(
                            "expected a string or a list of parts, found {}",
                            kind_of(&other)
                        ),
                    ))
                }
            };
            Ok(Message {
                role,
                content,
                extra: m,
            })
        }
        "function_call"
            if is_str(&m, "call_id") && is_str(&m, "name") && is_str(&m, "arguments") =>
        {
            tag(&mut extra, &mut m);
            let id = take_string(&mut m, "call_id").unwrap_or_default();
            let name = take_string(&mut m, "name").unwrap_or_default();
            let raw = take_string(&mut m, "arguments").unwrap_or_default();
            let input = crate::wire::arguments_input(&raw);
            Ok(call_message(
                ToolUse {
                    id,
                    name,
                    input,
                    raw_arguments: Some(raw),
                    extra: m,
                    function_extra: Map::new(),
                },
                extra,
            ))
        }
        "custom_tool_call"
            if is_str(&m, "call_id") && is_str(&m, "name") && is_str(&m, "input") =>
        {
            tag(&mut extra, &mut m);
            let id = take_string(&mut m, "call_id").unwrap_or_default();
            let name = take_string(&mut m, "name").unwrap_or_default();
            let input = Value::String(take_string(&mut m, "input").unwrap_or_default());
            Ok(call_message(
                ToolUse {
                    id,
                    name,
                    input,
                    extra: m,
                    ..ToolUse::default()
                },
                extra,
            ))
        }
        // the API's own output item names its call by `id` (Codex CLI answers with a `function_call_output`)
        "local_shell_call_output" if is_str(&m, "id") && is_str(&m, "output") => {
            tag(&mut extra, &mut m);
            let tool_use_id = take_string(&mut m, "id").unwrap_or_default();
            let content = Content::text(take_string(&mut m, "output").unwrap_or_default());
            Ok(result_message(tool_use_id, content, m, extra))
        }
        "shell_call_output" if is_str(&m, "call_id") && shell_chunks(&m).is_some() => {
            tag(&mut extra, &mut m);
            let tool_use_id = take_string(&mut m, "call_id").unwrap_or_default();
            let content = read_shell_output(&mut m);
            Ok(result_message(tool_use_id, content, m, extra))
        }
        "apply_patch_call_output" if is_str(&m, "call_id") && !m.contains_key("output") => {
            // (its `output`, a log of the patch's application, is optional)
            tag(&mut extra, &mut m);
            let tool_use_id = take_string(&mut m, "call_id").unwrap_or_default();
            Ok(result_message(tool_use_id, Content::absent(), m, extra))
        }
        "function_call_output" | "custom_tool_call_output" | "apply_patch_call_output"
            if is_str(&m, "call_id")
                && matches!(m.get("output"), Some(Value::String(_) | Value::Array(_))) =>
        {
            tag(&mut extra, &mut m);
            let tool_use_id = take_string(&mut m, "call_id").unwrap_or_default();
            let content = match m.shift_remove("output") {
                Some(Value::Array(parts)) => {
                    Content::list(parts.into_iter().map(read_part).collect())
                }
                Some(Value::String(s)) => Content::text(s),
                _ => Content::absent(),
            };
            Ok(result_message(tool_use_id, content, m, extra))
        }
        _ => {
            // the item stays whole; its type in `extra` says which item it is
            extra.insert("type".into(), Value::String(kind.clone()));
            Ok(Message {
                role: item_role(&kind),
                content: Content::list(vec![Block::Unknown(Value::Object(m))]),
                extra,
            })
        }
    }
}

fn is_str(m: &Map<String, Value>, key: &str) -> bool {
    matches!(m.get(key), Some(Value::String(_)))
}

/// Whether a `shell_call_output`'s `output` is what the API sends: a list of chunks, each with a string `stdout`
/// and `stderr` (and an `outcome`).
fn shell_chunks(m: &Map<String, Value>) -> Option<&[Value]> {
    let Some(Value::Array(chunks)) = m.get("output") else {
        return None;
    };
    (chunks.iter())
        .all(|c| matches!(c, Value::Object(c) if is_str(c, "stdout") && is_str(c, "stderr")))
        .then_some(chunks.as_slice())
}

/// The key of a `shell_call_output`'s text block saying which chunk it is from (0 for the first command's).
const CHUNK: &str = "chunk";

/// A `shell_call_output`'s chunks as text blocks — each non-empty `stdout` and `stderr`, tagged with its
/// [`STREAM`] and chunk — and, left in `m` as its `output`, each chunk's other fields (its `outcome`).
fn read_shell_output(m: &mut Map<String, Value>) -> Content {
    let Some(Value::Array(chunks)) = m.shift_remove("output") else {
        return Content::absent();
    };
    let mut blocks = Vec::with_capacity(chunks.len());
    let mut rests = Vec::with_capacity(chunks.len());
    for (i, chunk) in chunks.into_iter().enumerate() {
        let Value::Object(mut chunk) = chunk else {
            continue;
        };
        for stream in ["stdout", "stderr"] {
            let text = take_string(&mut chunk, stream).unwrap_or_default();
            if !text.is_empty() {
                let mut tag = Map::new();
                tag.insert(STREAM.into(), stream.into());
                tag.insert(CHUNK.into(), i.into());
                blocks.push(Block::Text(TextBlock { text, extra: tag }));
            }
        }
        rests.push(Value::Object(chunk));
    }
    m.insert("output".into(), Value::Array(rests));
    Content::list(blocks)
}

/// A `shell_call_output`'s `output` written back: the chunks as read while every block is one read from them;
/// else (a result compacted to other text) one chunk whose `stdout` is the text, with the last chunk's
/// `outcome` and other fields.
fn write_shell_output(r: &ToolResult) -> Value {
    let rests = match r.extra.get("output") {
        Some(Value::Array(rests)) => rests.as_slice(),
        _ => &[],
    };
    fn tagged(b: &Block, chunks: usize) -> Option<(usize, &'static str, &str)> {
        let Block::Text(t) = b else { return None };
        let stream = match t.extra.get(STREAM).and_then(Value::as_str)? {
            "stdout" => "stdout",
            "stderr" => "stderr",
            _ => return None,
        };
        let i = usize::try_from(t.extra.get(CHUNK)?.as_u64()?).ok()?;
        (i < chunks && t.extra.len() == 2).then_some((i, stream, t.text.as_str()))
    }
    let chunk = |rest: Option<&Value>, stdout: String, stderr: String| {
        let mut c = Map::new();
        c.insert("stdout".into(), stdout.into());
        c.insert("stderr".into(), stderr.into());
        if let Some(Value::Object(rest)) = rest {
            extend(&mut c, rest);
        }
        c
    };
    let blocks = r.content.blocks.as_slice();
    if blocks.iter().all(|b| tagged(b, rests.len()).is_some()) {
        let mut chunks: Vec<Map<String, Value>> = (rests.iter())
            .map(|rest| chunk(Some(rest), String::new(), String::new()))
            .collect();
        for (i, stream, text) in blocks.iter().filter_map(|b| tagged(b, rests.len())) {
            if let Some(Value::String(s)) = chunks[i].get_mut(stream) {
                s.push_str(text);
            }
        }
        return Value::Array(chunks.into_iter().map(Value::Object).collect());
    }
    let text: Vec<&str> = blocks.iter().filter_map(Block::as_text).collect();
    let one = chunk(rests.last(), text.join("\n"), String::new());
    Value::Array(vec![Value::Object(one)])
}

fn result_message(
    tool_use_id: String,
    content: Content,
    fields: Map<String, Value>,
    extra: Map<String, Value>,
) -> Message {
    Message {
        role: Role::Tool,
        content: Content::list(vec![Block::ToolResult(ToolResult {
            tool_use_id,
            content,
            is_error: None,
            extra: fields,
        })]),
        extra,
    }
}

fn call_message(call: ToolUse, extra: Map<String, Value>) -> Message {
    Message {
        role: Role::Assistant,
        content: Content::list(vec![Block::ToolUse(call)]),
        extra,
    }
}

/// A content part: `input_text` / `output_text` are text blocks that remember their part type; images, files
/// and anything else are kept verbatim.
fn read_part(value: Value) -> Block {
    let Value::Object(mut m) = value else {
        return Block::Unknown(value);
    };
    match m.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") if is_str(&m, "text") => {
            let text = take_string(&mut m, "text").unwrap_or_default();
            Block::Text(TextBlock { text, extra: m })
        }
        Some("input_image") => Block::Image(m),
        Some("input_file") => Block::Document(m),
        _ => Block::Unknown(Value::Object(m)),
    }
}

/// Tools of the `function` / `custom` kind, which have a name; `Err` hands the list back when a tool has none.
fn read_tools(tools: Value) -> Result<Vec<ToolDefinition>, Value> {
    let Value::Array(items) = tools else {
        return Err(tools);
    };
    if !items
        .iter()
        .all(|t| t.get("name").is_some_and(Value::is_string))
    {
        return Err(Value::Array(items));
    }
    Ok(items
        .into_iter()
        .map(|t| {
            let Value::Object(mut m) = t else {
                unreachable!("checked above: every tool is an object with a name")
            };
            let name = take_string(&mut m, "name").unwrap_or_default();
            let description = take_string(&mut m, "description");
            let input_schema = m.shift_remove("parameters");
            ToolDefinition {
                name,
                description,
                input_schema,
                extra: m,
                wrapper_extra: Map::new(),
            }
        })
        .collect())
}

/// Write a conversation as a Responses document. Call [`crate::convert`] first when it came from another format.
pub fn to_value(conv: &Conversation) -> Value {
    let items = Value::Array(conv.messages.iter().map(write_item).collect());
    if conv.envelope != Envelope::Object {
        return items;
    }
    let mut top = Map::new();
    if let Some(system) = &conv.system {
        top.insert("instructions".into(), system.joined_text().into());
    }
    if !conv.extra.contains_key("input") || !conv.messages.is_empty() {
        top.insert("input".into(), items);
    }
    finish_document(top, conv.tools.as_deref(), write_tool, &conv.extra)
}

/// Write one message as the item it was read from.
pub fn write_item(msg: &Message) -> Value {
    let kind = msg.extra.get("type").and_then(Value::as_str);
    let blocks = msg.content.blocks.as_slice();
    match (kind, blocks) {
        (Some("function_call" | "custom_tool_call") | None, [Block::ToolUse(u)])
            if msg.role == Role::Assistant =>
        {
            write_call(u, kind)
        }
        (Some(built_in), [Block::ToolUse(u)])
            if msg.role == Role::Assistant && built_in_call(built_in).is_some() =>
        {
            let field = built_in_call(built_in).map_or("action", |(field, _)| field);
            let mut m = Map::new();
            m.insert("type".into(), built_in.into());
            m.insert("call_id".into(), u.id.clone().into());
            m.insert(field.into(), u.input.clone());
            extend(&mut m, &u.extra);
            Value::Object(m)
        }
        (Some("shell_call_output"), [Block::ToolResult(r)]) => {
            let mut m = Map::new();
            m.insert("type".into(), "shell_call_output".into());
            m.insert("call_id".into(), r.tool_use_id.clone().into());
            m.insert("output".into(), write_shell_output(r));
            for (k, v) in r.extra.iter().filter(|(k, _)| *k != "output") {
                m.insert(k.clone(), v.clone());
            }
            Value::Object(m)
        }
        (
            Some(
                "function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
                | "apply_patch_call_output",
            )
            | None,
            [Block::ToolResult(r)],
        ) => {
            let mut m = Map::new();
            let kind = kind.unwrap_or("function_call_output");
            m.insert("type".into(), kind.into());
            let id_key = if kind == "local_shell_call_output" {
                "id"
            } else {
                "call_id"
            };
            m.insert(id_key.into(), r.tool_use_id.clone().into());
            let output = match r.content.shape {
                // an `apply_patch_call_output` without its optional `output`
                Shape::Absent if r.content.blocks.is_empty() => None,
                Shape::List => Some(Value::Array(
                    r.content
                        .blocks
                        .iter()
                        .map(|b| write_part(b, false))
                        .collect(),
                )),
                _ => Some(Value::String(r.content.joined_text())),
            };
            if let Some(output) = output {
                m.insert("output".into(), output);
            }
            extend(&mut m, &r.extra);
            Value::Object(m)
        }
        (Some(k), [Block::Unknown(item)]) if k != "message" => item.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("role".into(), msg.role.as_str().into());
            let output = msg.role == Role::Assistant;
            match (msg.content.shape, blocks) {
                (Shape::Absent, []) => {}
                (Shape::Null, []) => {
                    m.insert("content".into(), Value::Null);
                }
                (Shape::String, _) if msg.content.is_plain_text() || blocks.is_empty() => {
                    m.insert("content".into(), msg.content.joined_text().into());
                }
                _ => {
                    m.insert(
                        "content".into(),
                        Value::Array(blocks.iter().map(|b| write_part(b, output)).collect()),
                    );
                }
            }
            extend(&mut m, &msg.extra);
            Value::Object(m)
        }
    }
}

fn write_call(u: &ToolUse, kind: Option<&str>) -> Value {
    let mut m = Map::new();
    let custom = kind == Some("custom_tool_call");
    m.insert(
        "type".into(),
        if custom {
            "custom_tool_call"
        } else {
            "function_call"
        }
        .into(),
    );
    m.insert("call_id".into(), u.id.clone().into());
    m.insert("name".into(), u.name.clone().into());
    if custom {
        let input = match &u.input {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        m.insert("input".into(), input.into());
    } else {
        m.insert("arguments".into(), u.arguments_string().into());
    }
    extend(&mut m, &u.extra);
    Value::Object(m)
}

/// Write a block as a content part; a text block without its part type gets the side's (`output_text` for
/// the model's messages).
fn write_part(block: &Block, output: bool) -> Value {
    match block {
        Block::Text(t) => {
            let mut m = Map::new();
            let default = if output { "output_text" } else { "input_text" };
            m.insert(
                "type".into(),
                t.extra
                    .get("type")
                    .cloned()
                    .unwrap_or_else(|| default.into()),
            );
            m.insert("text".into(), t.text.clone().into());
            extend(&mut m, &t.extra);
            Value::Object(m)
        }
        Block::Image(m) | Block::Document(m) | Block::RedactedThinking(m) => {
            Value::Object(m.clone())
        }
        Block::Unknown(v) => v.clone(),
        // blocks of other formats have no part form; `convert` turns them into items first
        Block::ToolUse(_) | Block::ToolResult(_) | Block::Thinking(_) => {
            crate::wire::write_block(block, WireFormat::Anthropic).unwrap_or(Value::Null)
        }
    }
}

fn write_tool(tool: &ToolDefinition) -> Value {
    // `type` is in `extra` when it was read (and set by `convert`): a tool written without one stays so
    write_flat_tool(tool, "parameters")
}
