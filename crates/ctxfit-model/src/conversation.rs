//! Conversations, messages, roles and tool definitions.

use serde_json::{Map, Value};

use crate::block::{Block, Content};

/// The wire format a conversation was read from, and whose extra fields it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// Anthropic Messages API (`system`, `messages` with content blocks, `tools` with `input_schema`).
    Anthropic,
    /// OpenAI Chat Completions (`tool_calls`, `role: "tool"`, `tools` with `function`).
    OpenAi,
    /// OpenAI Responses (`input` items: `message`, `function_call`, `function_call_output`, `reasoning`, ...;
    /// one item per message).
    Responses,
}

impl WireFormat {
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "anthropic",
            WireFormat::OpenAi => "openai",
            WireFormat::Responses => "responses",
        }
    }

    /// The request field holding the message list: `messages`, or `input` for Responses.
    pub fn messages_key(self) -> &'static str {
        match self {
            WireFormat::Anthropic | WireFormat::OpenAi => "messages",
            WireFormat::Responses => "input",
        }
    }

    pub const ALL: [WireFormat; 3] = [
        WireFormat::Anthropic,
        WireFormat::OpenAi,
        WireFormat::Responses,
    ];

    pub fn from_name(name: &str) -> Option<WireFormat> {
        WireFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Does message `i` begin a model response — an assistant message that does not continue the one before it?
/// The agent sends a request before each. In Anthropic and OpenAI Chat documents every assistant message is one
/// response; in Responses one response is often several items (reasoning, text, parallel calls) in a row.
pub fn begins_response(messages: &[Message], i: usize) -> bool {
    messages.get(i).is_some_and(|m| m.role == Role::Assistant)
        && (i == 0 || messages[i - 1].role != Role::Assistant)
}

/// Whether the document was a request object (`{"messages": [...], ...}`), a bare message list, or messages
/// written one a line (JSON Lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Envelope {
    #[default]
    Object,
    BareList,
    /// JSON Lines, one message a line: `to_value` writes the bare list; a writer of text writes it back a
    /// message a line ([`Envelope::write_lines`]).
    Lines,
}

impl Envelope {
    /// `value` — a conversation written by a format's `to_value` — as text in this envelope's shape: JSON Lines
    /// for [`Envelope::Lines`] (each message compact, on its own line), else `None` (the caller's JSON).
    pub fn write_lines(self, value: &serde_json::Value) -> Option<String> {
        match (self, value) {
            (Envelope::Lines, serde_json::Value::Array(items)) => {
                Some(items.iter().map(|m| format!("{m}\n")).collect::<String>())
            }
            _ => None,
        }
    }
}

/// Who speaks a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    /// OpenAI's tool-result messages.
    Tool,
    /// Any other role string, kept verbatim.
    Other(String),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => Role::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Other(s) => s,
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    /// The content; for OpenAI assistant messages the `tool_calls` are `ToolUse` blocks at the end, and an
    /// OpenAI tool message holds exactly one `ToolResult` block.
    pub content: Content,
    /// Every other field of the message, verbatim (`name`, `id`, `usage`, ...).
    pub extra: Map<String, Value>,
}

impl Message {
    pub fn new(role: Role, content: Content) -> Self {
        Message {
            role,
            content,
            extra: Map::new(),
        }
    }

    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message::new(Role::User, Content::text(text))
    }

    /// An assistant message: its text and tool calls as blocks ([`Block::text`], [`Block::tool_use`]).
    pub fn assistant(blocks: Vec<Block>) -> Self {
        Message::new(Role::Assistant, Content::list(blocks))
    }

    pub fn blocks(&self) -> &[Block] {
        &self.content.blocks
    }

    /// Tool results in this message (Anthropic user messages may hold several; an OpenAI tool message one).
    pub fn tool_results(&self) -> impl Iterator<Item = &crate::ToolResult> {
        self.content.blocks.iter().filter_map(|b| match b {
            Block::ToolResult(r) => Some(r),
            _ => None,
        })
    }

    /// Does this message hold tool results and nothing else?
    pub fn is_tool_results(&self) -> bool {
        !self.content.blocks.is_empty()
            && self
                .content
                .blocks
                .iter()
                .all(|b| matches!(b, Block::ToolResult(_)))
    }

    /// Tool calls in this message.
    pub fn tool_uses(&self) -> impl Iterator<Item = &crate::ToolUse> {
        self.content.blocks.iter().filter_map(|b| match b {
            Block::ToolUse(u) => Some(u),
            _ => None,
        })
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolDefinition {
    pub name: String,
    pub description: Option<String>,
    /// JSON schema of the input (Anthropic `input_schema`, OpenAI `function.parameters`).
    pub input_schema: Option<Value>,
    /// Other fields of the definition (Anthropic) or of its `function` object (OpenAI), verbatim.
    pub extra: Map<String, Value>,
    /// OpenAI: fields of the outer object other than `function` (usually `"type": "function"`).
    pub wrapper_extra: Map<String, Value>,
}

/// A whole conversation: what an agent sends on each model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The format whose wire-specific extras this conversation carries.
    pub format: WireFormat,
    pub envelope: Envelope,
    /// Anthropic's top-level `system` (OpenAI system prompts are messages with `Role::System`).
    pub system: Option<Content>,
    pub messages: Vec<Message>,
    /// `None` when the document had no `tools` field.
    pub tools: Option<Vec<ToolDefinition>>,
    /// Other top-level fields of the request (`model`, `max_tokens`, ...), verbatim.
    pub extra: Map<String, Value>,
}

impl Conversation {
    pub fn new(format: WireFormat) -> Self {
        Conversation {
            format,
            envelope: Envelope::Object,
            system: None,
            messages: Vec::new(),
            tools: None,
            extra: Map::new(),
        }
    }

    /// Block `block` of message `message`, if both exist.
    pub fn block(&self, message: usize, block: usize) -> Option<&Block> {
        self.messages.get(message)?.content.blocks.get(block)
    }

    /// Append the model's response (its text and tool calls, [`Block::text`], [`Block::tool_use`]) as the
    /// conversation's format holds it: one assistant message, or in Responses a `message` item for the text and
    /// a `function_call` item per call.
    pub fn push_response(&mut self, blocks: Vec<Block>) {
        if self.format != WireFormat::Responses {
            self.messages.push(Message::assistant(blocks));
            return;
        }
        let mut text = Vec::new();
        let flush = |text: &mut Vec<Block>, messages: &mut Vec<Message>| {
            if !text.is_empty() {
                let mut m = Message::assistant(std::mem::take(text));
                m.extra.insert("type".into(), "message".into());
                messages.push(m);
            }
        };
        for b in blocks {
            if matches!(b, Block::ToolUse(_)) {
                flush(&mut text, &mut self.messages);
                let mut m = Message::assistant(vec![b]);
                m.extra.insert("type".into(), "function_call".into());
                self.messages.push(m);
            } else {
                text.push(b);
            }
        }
        flush(&mut text, &mut self.messages);
    }

    /// Append tool results as the conversation's format holds them: Anthropic puts the results of one response
    /// in one user message (joining the last message when it is one), OpenAI Chat and Responses give each
    /// result a tool message of its own.
    pub fn push_tool_results(&mut self, results: Vec<Block>) {
        if self.format != WireFormat::Anthropic {
            for r in results {
                self.messages
                    .push(Message::new(Role::Tool, Content::list(vec![r])));
            }
            return;
        }
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User && last.is_tool_results() => {
                last.content.blocks.extend(results)
            }
            _ => self
                .messages
                .push(Message::new(Role::User, Content::list(results))),
        }
    }

    /// The number of tool-result blocks in the conversation.
    pub fn tool_result_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_results().count()).sum()
    }

    /// The number of tool-call blocks in the conversation.
    pub fn tool_use_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_uses().count()).sum()
    }
}
