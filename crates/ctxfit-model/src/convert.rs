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

/// Guess the format of a parsed document; `Anthropic` when nothing decides it (plain user/assistant text reads
/// the same in both).
pub fn detect(value: &Value) -> WireFormat {
    if let Value::Object(top) = value {
        if top.contains_key("system") {
            return WireFormat::Anthropic;
        }
        if let Some(Value::Array(tools)) = top.get("tools") {
            if let Some(t) = tools.first() {
                if t.get("function").is_some() {
                    return WireFormat::OpenAi;
                }
                if t.get("input_schema").is_some() {
                    return WireFormat::Anthropic;
                }
            }
        }
    }
    let messages = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(top) => match top.get("messages") {
            Some(Value::Array(items)) => items.as_slice(),
            _ => &[],
        },
        _ => &[],
    };
    for m in messages {
        if matches!(
            m.get("role").and_then(Value::as_str),
            Some("tool" | "system" | "developer" | "function")
        ) || m.get("tool_calls").is_some()
            || m.get("tool_call_id").is_some()
        {
            return WireFormat::OpenAi;
        }
        if let Some(Value::Array(blocks)) = m.get("content") {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some(
                        "tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image",
                    ) => return WireFormat::Anthropic,
                    Some("image_url" | "input_audio" | "refusal") => return WireFormat::OpenAi,
                    _ => {}
                }
            }
        }
    }
    WireFormat::Anthropic
}

/// Convert to `to`. Converting to the format a conversation already has returns it unchanged.
pub fn convert(conv: &Conversation, to: WireFormat) -> (Conversation, ConversionReport) {
    let mut report = ConversionReport::default();
    if conv.format == to {
        return (conv.clone(), report);
    }
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
                if !t.extra.is_empty() {
                    report.drop("tool-definition field");
                }
                ToolDefinition {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    extra: Map::new(),
                    wrapper_extra: match to {
                        WireFormat::OpenAi => {
                            let mut w = Map::new();
                            w.insert("type".into(), "function".into());
                            w
                        }
                        WireFormat::Anthropic => Map::new(),
                    },
                }
            })
            .collect()
    });
    match to {
        WireFormat::Anthropic => to_anthropic(conv, &mut out, &mut report),
        WireFormat::OpenAi => to_openai(conv, &mut out, &mut report),
    }
    (out, report)
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
                is_error: if to == WireFormat::OpenAi {
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
            Role::System | Role::Developer => {
                system_parts.push(msg.content.joined_text());
                note_extra(msg, report);
            }
            Role::Tool => {
                note_extra(msg, report);
                let results = clean_blocks(&msg.content.blocks, WireFormat::Anthropic, report);
                // consecutive tool messages answer one assistant turn: one user message holds them all
                match out.messages.last_mut() {
                    Some(last)
                        if last.role == Role::User
                            && last
                                .content
                                .blocks
                                .iter()
                                .all(|b| matches!(b, Block::ToolResult(_))) =>
                    {
                        last.content.blocks.extend(results)
                    }
                    _ => out
                        .messages
                        .push(Message::new(Role::User, Content::list(results))),
                }
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
                // OpenAI tool content is text: flatten the text blocks of a list result
                if r.content.shape == Shape::List {
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
