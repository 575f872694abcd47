//! Content blocks and the `Content` container shared by messages, tool results and system prompts.

use serde_json::{Map, Value};

/// How a piece of content was spelled on the wire, so that writing it back gives the same JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// A plain JSON string (`"content": "hello"`).
    String,
    /// A JSON list of blocks or parts.
    #[default]
    List,
    /// An explicit `null` (OpenAI assistant messages that only call tools).
    Null,
    /// The field was not there at all.
    Absent,
}

/// A list of content blocks plus the shape it had on the wire.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Content {
    pub blocks: Vec<Block>,
    pub shape: Shape,
}

impl Content {
    /// Content that was (and will be written as) a plain string.
    pub fn text(text: impl Into<String>) -> Self {
        Content {
            blocks: vec![Block::Text(TextBlock::new(text))],
            shape: Shape::String,
        }
    }

    /// Content written as a list of blocks.
    pub fn list(blocks: Vec<Block>) -> Self {
        Content {
            blocks,
            shape: Shape::List,
        }
    }

    /// Content that is missing on the wire.
    pub fn absent() -> Self {
        Content {
            blocks: Vec::new(),
            shape: Shape::Absent,
        }
    }

    /// The text of all text blocks, in order, joined by nothing (Anthropic's own concatenation).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            if let Block::Text(t) = block {
                out.push_str(&t.text);
            }
        }
        out
    }

    /// True when the content is a single plain text block that can be written as a string.
    pub fn is_plain_text(&self) -> bool {
        matches!(self.blocks.as_slice(), [Block::Text(t)] if t.extra.is_empty())
    }
}

/// A text block (`{"type": "text", "text": ...}`), also OpenAI's text content part.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextBlock {
    pub text: String,
    /// Fields other than `type` and `text` (`cache_control`, `citations`, ...), verbatim.
    pub extra: Map<String, Value>,
}

impl TextBlock {
    pub fn new(text: impl Into<String>) -> Self {
        TextBlock {
            text: text.into(),
            extra: Map::new(),
        }
    }
}

/// A call of a tool by the model (Anthropic `tool_use`, OpenAI `tool_calls[i]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// OpenAI sends arguments as a JSON *string*; the exact string read is kept so that writing it back
    /// is byte-identical. `None` when the call was built or changed here: `input` is then serialised.
    pub raw_arguments: Option<String>,
    /// Other fields of the block or call, verbatim (`cache_control`; OpenAI `type`, `index`).
    pub extra: Map<String, Value>,
    /// OpenAI: fields of the `function` object other than `name` and `arguments`, verbatim.
    pub function_extra: Map<String, Value>,
}

impl ToolUse {
    /// Replace the input; the original argument string no longer applies.
    pub fn set_input(&mut self, input: Value) {
        self.input = input;
        self.raw_arguments = None;
    }

    /// The arguments as OpenAI spells them: the string read, or the input serialised.
    pub fn arguments_string(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => self.input.to_string(),
        }
    }
}

/// The result of a tool call (Anthropic `tool_result` block; an OpenAI `role: "tool"` message).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub content: Content,
    /// `Some` only when the field was on the wire (or set here).
    pub is_error: Option<bool>,
    /// Other fields of the block, verbatim (`cache_control`, ...).
    pub extra: Map<String, Value>,
}

/// Extended thinking (`{"type": "thinking", "thinking": ..., "signature": ...}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThinkingBlock {
    pub thinking: String,
    /// Other fields (`signature`, ...), verbatim.
    pub extra: Map<String, Value>,
}

/// One content block.
///
/// Blocks whose type ctxfit does not interpret (`redacted_thinking`, `image`, `document`) or does not know at
/// all are kept as their whole JSON object, so nothing read is ever lost.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(TextBlock),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
    Thinking(ThinkingBlock),
    /// `{"type": "redacted_thinking", "data": ...}`, verbatim.
    RedactedThinking(Map<String, Value>),
    /// `{"type": "image", ...}` (or OpenAI `image_url` part), verbatim.
    Image(Map<String, Value>),
    /// `{"type": "document", ...}`, verbatim.
    Document(Map<String, Value>),
    /// Anything else, verbatim.
    Unknown(Value),
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(TextBlock::new(text))
    }

    /// A tool call.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Block {
        Block::ToolUse(ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            extra: Map::new(),
            ..ToolUse::default()
        })
    }

    /// A tool's text result; `is_error` marks a failed call.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Block {
        Block::ToolResult(ToolResult {
            tool_use_id: tool_use_id.into(),
            content: Content::text(text),
            is_error: is_error.then_some(true),
            extra: Map::new(),
        })
    }

    /// The wire `type` of the block.
    pub fn kind(&self) -> &str {
        match self {
            Block::Text(_) => "text",
            Block::ToolUse(_) => "tool_use",
            Block::ToolResult(_) => "tool_result",
            Block::Thinking(_) => "thinking",
            Block::RedactedThinking(_) => "redacted_thinking",
            Block::Image(_) => "image",
            Block::Document(_) => "document",
            Block::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or("unknown"),
        }
    }

    /// Plain text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}
