//! Conversion between the Anthropic and OpenAI formats, and detection of which one a document is.
//!
//! Content, roles, tool calls, tool results, system prompts and tool definitions map both ways. What has no
//! counterpart (thinking blocks in OpenAI, OpenAI's `name` on messages in Anthropic, wire-specific fields) is
//! dropped and counted in a [`ConversionReport`], never silently.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::block::{Block, Content, Shape, TextBlock, ToolResult, ToolUse};
use crate::conversation::{Conversation, Message, Role, ToolDefinition, WireFormat};

/// Top-level request fields both formats share, kept by a conversion.
const SHARED_TOP_LEVEL: &[&str] = &[
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "stream",
    "metadata",
];

/// What a conversion could not carry over, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConversionReport {
    pub dropped: BTreeMap<String, usize>,
}

impl ConversionReport {
    fn drop(&mut self, what: impl Into<String>) {
        *self.dropped.entry(what.into()).or_default() += 1;
    }

    pub fn is_lossless(&self) -> bool {
        self.dropped.is_empty()
    }
}

impl fmt::Display for ConversionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dropped.is_empty() {
            return write!(f, "nothing dropped");
        }
        let parts: Vec<String> = self
            .dropped
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        write!(f, "dropped: {}", parts.join(", "))
    }
}

/// Item types only the Responses format has (its messages carry `"type": "message"`, Chat messages no type).
const RESPONSES_ITEMS: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "computer_call",
    "computer_call_output",
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "tool_search_call",
    "tool_search_output",
    "compaction",
    "reasoning",
    "item_reference",
];

/// Whether `item` is an item of the Responses format's `input` that names its kind (`{"type": "function_call",
/// ...}`, `{"type": "message", ...}`), as opposed to a message of any format (`{"role": ...}`) or anything else.
pub fn is_responses_item(item: &Value) -> bool {
    item.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| RESPONSES_ITEMS.contains(&t))
}

/// Guess the format of a parsed document; `Anthropic` when nothing decides it (plain user/assistant text reads
/// the same in all three).
pub fn detect(value: &Value) -> WireFormat {
    detect_decisive(value).unwrap_or(WireFormat::Anthropic)
}

/// The format a parsed document's own marks decide — a Responses item, an OpenAI `tool` role or `tool_calls`, an
/// Anthropic `tool_use` block, a top-level `system` or tool schema — or `None` when nothing does (plain text).
pub fn detect_decisive(value: &Value) -> Option<WireFormat> {
    match value {
        Value::Object(top) if top.contains_key("input") && !top.contains_key("messages") => {
            return Some(WireFormat::Responses)
        }
        Value::Array(items) => return detect_messages(items),
        _ => {}
    }
    if let Value::Object(top) = value {
        if top.contains_key("system") {
            return Some(WireFormat::Anthropic);
        }
        if let Some(Value::Array(tools)) = top.get("tools") {
            if let Some(t) = tools.first() {
                if t.get("function").is_some() {
                    return Some(WireFormat::OpenAi);
                }
                if t.get("input_schema").is_some() {
                    return Some(WireFormat::Anthropic);
                }
            }
        }
    }
    match value {
        Value::Object(top) => match top.get("messages") {
            Some(Value::Array(items)) => message_marks(items),
            _ => None,
        },
        _ => None,
    }
}

/// The format the marks of a bare list of messages decide ([`detect_decisive`] of the list), read from any
/// sequence of them — a log's lines — without gathering them into one value.
pub fn detect_messages<'a, I>(messages: I) -> Option<WireFormat>
where
    I: IntoIterator<Item = &'a Value>,
    I::IntoIter: Clone,
{
    let messages = messages.into_iter();
    let responses_item = |item: &Value| {
        is_responses_item(item)
            || matches!(item.get("content"), Some(Value::Array(parts)) if parts.iter().any(|p| {
                matches!(p.get("type").and_then(Value::as_str), Some("input_text" | "output_text"))
            }))
    };
    if messages.clone().any(responses_item) {
        return Some(WireFormat::Responses);
    }
    message_marks(messages)
}

/// What the messages' roles and blocks say: OpenAI's or Anthropic's.
fn message_marks<'a>(messages: impl IntoIterator<Item = &'a Value>) -> Option<WireFormat> {
    // a `system` message is OpenAI's unless another mark says otherwise: Anthropic's API takes one among its
    // messages too (Claude Code 2.1 sends one before its first tool call)
    let mut system = false;
    for m in messages {
        let role = m.get("role").and_then(Value::as_str);
        system |= role == Some("system");
        if matches!(role, Some("tool" | "developer" | "function"))
            || m.get("tool_calls").is_some()
            || m.get("tool_call_id").is_some()
        {
            return Some(WireFormat::OpenAi);
        }
        if let Some(Value::Array(blocks)) = m.get("content") {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some(
                        "tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image",
                    ) => return Some(WireFormat::Anthropic),
                    Some("image_url" | "input_audio" | "refusal") => {
                        return Some(WireFormat::OpenAi)
                    }
                    _ => {}
                }
            }
        }
    }
    system.then_some(WireFormat::OpenAi)
}

/// Convert to `to`. Converting to the format a conversation already has returns it unchanged.
pub fn convert(conv: &Conversation, to: WireFormat) -> (Conversation, ConversionReport) {
    let mut report = ConversionReport::default();
    if conv.format == to {
        return (conv.clone(), report);
    }
    // Responses items are first gathered into messages, as the other two formats have them
    let gathered;
    let conv = if conv.format == WireFormat::Responses {
        gathered = gather_items(conv, &mut report);
        &gathered
    } else {
        conv
    };
    let mut out = Conversation::new(to);
    out.envelope = conv.envelope;
    for (k, v) in &conv.extra {
        if SHARED_TOP_LEVEL.contains(&k.as_str()) {
            out.extra.insert(k.clone(), v.clone());
        } else {
            report.drop(format!("top-level field `{k}`"));
        }
    }
    out.tools = conv.tools.as_ref().map(|tools| {
        tools
            .iter()
            .map(|t| {
                // a Responses tool's `"type": "function"` is the wrapper the other formats write themselves
                if t.extra
                    .keys()
                    .any(|k| k != "type" || conv.format != WireFormat::Responses)
                {
                    report.drop("tool-definition field");
                }
                let mut extra = Map::new();
                if to == WireFormat::Responses {
                    extra.insert("type".into(), "function".into());
                }
                ToolDefinition {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    extra,
                    wrapper_extra: match to {
                        WireFormat::OpenAi => {
                            let mut w = Map::new();
                            w.insert("type".into(), "function".into());
                            w
                        }
                        WireFormat::Anthropic | WireFormat::Responses => Map::new(),
                    },
                }
            })
            .collect()
    });
    match to {
        WireFormat::Anthropic => to_anthropic(conv, &mut out, &mut report),
        WireFormat::OpenAi => to_openai(conv, &mut out, &mut report),
        WireFormat::Responses => to_responses(conv, &mut out, &mut report),
    }
    (out, report)
}

/// A Responses conversation as messages: consecutive model items (text, calls) become one assistant message,
/// each output a tool message, `instructions` the system prompt. Items the others cannot hold (`reasoning`,
/// built-in tool calls) and the items' own fields (`id`, `status`) are counted as dropped.
fn gather_items(conv: &Conversation, report: &mut ConversionReport) -> Conversation {
    let mut out = Conversation {
        messages: Vec::with_capacity(conv.messages.len()),
        ..conv.clone()
    };
    out.messages.clear();
    let mut continues_response = false;
    for msg in &conv.messages {
        let kind = msg
            .extra
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        for k in msg.extra.keys().filter(|k| *k != "type") {
            report.drop(format!("item field `{k}`"));
        }
        let mut blocks = Vec::new();
        for b in &msg.content.blocks {
            match b {
                Block::Text(t) => blocks.push(Block::Text(TextBlock::new(t.text.clone()))),
                Block::ToolUse(u) => {
                    u.extra
                        .keys()
                        .for_each(|k| report.drop(format!("item field `{k}`")));
                    let input = match &u.input {
                        // a custom tool's free-form input, as the one field of an object
                        Value::String(s) if kind == "custom_tool_call" => {
                            serde_json::json!({ "input": s })
                        }
                        other => other.clone(),
                    };
                    blocks.push(Block::ToolUse(ToolUse {
                        id: u.id.clone(),
                        name: u.name.clone(),
                        input,
                        extra: Map::new(),
                        ..ToolUse::default()
                    }));
                }
                Block::ToolResult(r) => blocks.push(Block::ToolResult(ToolResult {
                    tool_use_id: r.tool_use_id.clone(),
                    content: Content::text(r.content.joined_text()),
                    is_error: None,
                    extra: Map::new(),
                })),
                Block::Image(_) | Block::Document(_) => blocks.push(b.clone()),
                _ => report.drop(format!("`{kind}` item")),
            }
        }
        let model_side = msg.role == Role::Assistant;
        if blocks.is_empty() {
            continue;
        }
        match out.messages.last_mut() {
            Some(last) if model_side && continues_response => last.content.blocks.extend(blocks),
            _ => {
                let content = match blocks.as_slice() {
                    [Block::Text(_)] if msg.content.shape == Shape::String => {
                        Content::text(blocks[0].as_text().unwrap_or_default().to_owned())
                    }
                    _ => Content::list(blocks),
                };
                out.messages.push(Message::new(msg.role.clone(), content));
            }
        }
        continues_response = model_side;
    }
    out
}

/// Messages as Responses items: text runs become `message` items, each call a `function_call`, each result a
/// `function_call_output` (its text).
fn to_responses(conv: &Conversation, out: &mut Conversation, report: &mut ConversionReport) {
    out.system = conv.system.as_ref().map(|s| Content::text(s.joined_text()));
    let item = |kind: &str, role: Role, blocks: Vec<Block>| {
        let mut m = Message::new(role, Content::list(blocks));
        m.extra.insert("type".into(), kind.into());
        m
    };
    for msg in &conv.messages {
        note_extra(msg, report);
        let mut texts: Vec<Block> = Vec::new();
        let flush = |texts: &mut Vec<Block>, out: &mut Conversation| {
            if !texts.is_empty() {
                let mut m = item("message", msg.role.clone(), std::mem::take(texts));
                if msg.content.shape == Shape::String && m.content.blocks.len() == 1 {
                    m.content.shape = Shape::String;
                }
                out.messages.push(m);
            }
        };
        for b in clean_blocks(&msg.content.blocks, WireFormat::Responses, report) {
            match b {
                Block::ToolUse(_) => {
                    flush(&mut texts, out);
                    out.messages
                        .push(item("function_call", Role::Assistant, vec![b]));
                }
                Block::ToolResult(mut r) => {
                    flush(&mut texts, out);
                    r.content = Content::text(r.content.joined_text());
                    out.messages.push(item(
                        "function_call_output",
                        Role::Tool,
                        vec![Block::ToolResult(r)],
                    ));
                }
                other => texts.push(other),
            }
        }
        flush(&mut texts, out);
    }
}

fn clean_blocks(blocks: &[Block], to: WireFormat, report: &mut ConversionReport) -> Vec<Block> {
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        match b {
            Block::Text(t) => out.push(Block::Text(TextBlock::new(t.text.clone()))),
            Block::ToolUse(u) => {
                let mut extra = Map::new();
                if to == WireFormat::OpenAi {
                    extra.insert("type".into(), "function".into());
                }
                out.push(Block::ToolUse(ToolUse {
                    id: u.id.clone(),
                    name: u.name.clone(),
                    input: u.input.clone(),
                    raw_arguments: None,
                    extra,
                    function_extra: Map::new(),
                }))
            }
            Block::ToolResult(r) => out.push(Block::ToolResult(ToolResult {
                tool_use_id: r.tool_use_id.clone(),
                content: clean_content(&r.content, to, report),
                is_error: if to != WireFormat::Anthropic {
                    if r.is_error.is_some() {
                        report.drop("tool_result is_error flag");
                    }
                    None
                } else {
                    r.is_error
                },
                extra: Map::new(),
            })),
            Block::Thinking(_) if to == WireFormat::Anthropic => out.push(b.clone()),
            Block::Image(_) if to == WireFormat::Responses => {
                report.drop(format!("{} block", b.kind()))
            }
            Block::Image(m) => match convert_image(m, to) {
                Some(img) => out.push(Block::Image(img)),
                None => report.drop(format!("{} block", b.kind())),
            },
            other => report.drop(format!("{} block", other.kind())),
        }
    }
    out
}

fn clean_content(c: &Content, to: WireFormat, report: &mut ConversionReport) -> Content {
    let blocks = clean_blocks(&c.blocks, to, report);
    let shape = match c.shape {
        Shape::String => Shape::String,
        _ if blocks.len() == 1 && blocks[0].as_text().is_some() => Shape::String,
        Shape::Absent | Shape::Null if blocks.is_empty() => {
            if to == WireFormat::OpenAi {
                Shape::Null
            } else {
                Shape::List
            }
        }
        _ => Shape::List,
    };
    Content { blocks, shape }
}

/// Anthropic `{"type":"image","source":{...}}` ⇄ OpenAI `{"type":"image_url","image_url":{"url":...}}`.
fn convert_image(m: &Map<String, Value>, to: WireFormat) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    match to {
        // Responses images (`input_image`) are not converted
        WireFormat::Responses => return None,
        WireFormat::OpenAi => {
            let source = m.get("source")?;
            let url = match source.get("type")?.as_str()? {
                "base64" => format!(
                    "data:{};base64,{}",
                    source.get("media_type")?.as_str()?,
                    source.get("data")?.as_str()?
                ),
                "url" => source.get("url")?.as_str()?.to_owned(),
                _ => return None,
            };
            out.insert("type".into(), "image_url".into());
            out.insert("image_url".into(), serde_json::json!({ "url": url }));
        }
        WireFormat::Anthropic => {
            let url = m.get("image_url")?.get("url")?.as_str()?;
            let source = match url.strip_prefix("data:") {
                Some(rest) => {
                    let (media_type, data) = rest.split_once(";base64,")?;
                    serde_json::json!({"type": "base64", "media_type": media_type, "data": data})
                }
                None => serde_json::json!({"type": "url", "url": url}),
            };
            out.insert("type".into(), "image".into());
            out.insert("source".into(), source);
        }
    }
    Some(out)
}

fn note_extra(msg: &Message, report: &mut ConversionReport) {
    for k in msg.extra.keys() {
        report.drop(format!("message field `{k}`"));
    }
}

fn to_anthropic(conv: &Conversation, out: &mut Conversation, report: &mut ConversionReport) {
    let mut system_parts: Vec<String> = Vec::new();
    for msg in &conv.messages {
        match msg.role {
            // the instructions before the conversation are the system prompt; one given later stays where it
            // is, a `system` message (the Messages API takes one there and applies it from there on, as OpenAI does)
            Role::System | Role::Developer if out.messages.is_empty() => {
                system_parts.push(msg.content.joined_text());
                note_extra(msg, report);
            }
            Role::System | Role::Developer => {
                note_extra(msg, report);
                let text = msg.content.joined_text();
                out.messages
                    .push(Message::new(Role::System, Content::text(text)));
            }
            Role::Tool => {
                note_extra(msg, report);
                let results = clean_blocks(&msg.content.blocks, WireFormat::Anthropic, report);
                // consecutive tool messages answer one assistant turn: one user message holds them all
                out.push_tool_results(results);
            }
            _ => {
                note_extra(msg, report);
                let mut content = clean_content(&msg.content, WireFormat::Anthropic, report);
                if content
                    .blocks
                    .iter()
                    .any(|b| matches!(b, Block::ToolUse(_)))
                {
                    content.shape = Shape::List;
                    content.blocks.retain(|b| b.as_text() != Some(""));
                }
                out.messages.push(Message::new(msg.role.clone(), content));
            }
        }
    }
    if let Some(sys) = &conv.system {
        system_parts.insert(0, sys.joined_text());
    }
    if !system_parts.is_empty() {
        out.system = Some(Content::text(system_parts.join("\n\n")));
    }
}

fn to_openai(conv: &Conversation, out: &mut Conversation, report: &mut ConversionReport) {
    if let Some(sys) = &conv.system {
        out.messages
            .push(Message::new(Role::System, Content::text(sys.joined_text())));
    }
    for msg in &conv.messages {
        note_extra(msg, report);
        let blocks = clean_blocks(&msg.content.blocks, WireFormat::OpenAi, report);
        let (results, rest): (Vec<Block>, Vec<Block>) = blocks
            .into_iter()
            .partition(|b| matches!(b, Block::ToolResult(_)));
        for r in results {
            if let Block::ToolResult(mut r) = r {
                // OpenAI tool content is text: flatten the text blocks of a list result (an image in it has
                // no counterpart)
                if r.content.shape == Shape::List {
                    for b in r.content.blocks.iter().filter(|b| b.as_text().is_none()) {
                        report.drop(format!("{} block", b.kind()));
                    }
                    let text = r.content.joined_text();
                    r.content = Content::text(text);
                }
                out.messages.push(Message::new(
                    Role::Tool,
                    Content::list(vec![Block::ToolResult(r)]),
                ));
            }
        }
        if rest.is_empty()
            && msg
                .content
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolResult(_)))
        {
            continue;
        }
        let texts: Vec<&str> = rest.iter().filter_map(Block::as_text).collect();
        let only_text = rest
            .iter()
            .all(|b| matches!(b, Block::Text(_) | Block::ToolUse(_)));
        let content = if only_text {
            let mut blocks: Vec<Block> = Vec::new();
            let shape = if texts.is_empty() {
                Shape::Null
            } else {
                blocks.push(Block::Text(TextBlock::new(texts.concat())));
                Shape::String
            };
            blocks.extend(rest.into_iter().filter(|b| matches!(b, Block::ToolUse(_))));
            Content { blocks, shape }
        } else {
            Content::list(rest)
        };
        out.messages.push(Message::new(msg.role.clone(), content));
    }
}
