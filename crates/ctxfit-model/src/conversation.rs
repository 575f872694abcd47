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
}

impl WireFormat {
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "anthropic",
            WireFormat::OpenAi => "openai",
        }
    }
}

/// Whether the document was a request object (`{"messages": [...], ...}`) or a bare message list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Envelope {
    #[default]
    Object,
    BareList,
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

    /// The number of tool-result blocks in the conversation.
    pub fn tool_result_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_results().count()).sum()
    }

    /// The number of tool-call blocks in the conversation.
    pub fn tool_use_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_uses().count()).sum()
    }
}
