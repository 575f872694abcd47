//! The conversation model of ctxfit, and its two wire formats.
//!
//! Every other crate works on one neutral model: a [`Conversation`] of [`Message`]s whose content is a list of
//! [`Block`]s (text, tool use, tool result, thinking, image, document, unknown). The key design decision is
//! that the model is **lossless**: reading an Anthropic Messages or OpenAI Chat Completions document and
//! writing it back in its own format gives the same JSON value. That is what lets ctxfit sit between an agent
//! and its provider — the agent's `cache_control` markers, provider-specific fields and block types it has
//! never heard of pass through untouched. Three things make it so:
//!
//! * every struct has an `extra` map holding the fields ctxfit does not interpret, verbatim;
//! * blocks ctxfit does not interpret are kept as their JSON object (`Block::Unknown`), never an error;
//! * [`Content`] remembers its [`Shape`] on the wire (a string, a list, `null`, or absent), and OpenAI's
//!   tool-call `arguments` string is kept byte for byte.
//!
//! OpenAI's layout is mapped onto blocks: an assistant's `tool_calls` become [`ToolUse`] blocks after its text,
//! and a `role: "tool"` message holds one [`ToolResult`] block. So rules see tool calls and results the same
//! way whatever the format. [`convert()`] maps between the formats and reports what has no counterpart.
//!
//! The [`ToolCallIndex`] maps tool_use_id → tool name and position, updated with only the appended messages.

pub mod anthropic;
mod block;
mod conversation;
mod convert;
mod error;
mod index;
pub mod openai;
mod wire;

pub use block::{Block, Content, Shape, TextBlock, ThinkingBlock, ToolResult, ToolUse};
pub use conversation::{Conversation, Envelope, Message, Role, ToolDefinition, WireFormat};
pub use convert::{convert, detect, ConversionReport};
pub use error::{parse_json, ModelError};
pub use index::{ToolCallIndex, ToolCallSite};
/// The JSON types the model exposes (tool inputs, extra fields).
pub use serde_json::{Map, Value};

/// Read a conversation from JSON text, detecting its format.
pub fn from_json_str(text: &str) -> Result<Conversation, ModelError> {
    from_value(parse_json(text)?)
}

/// Read a parsed document, detecting its format.
pub fn from_value(value: serde_json::Value) -> Result<Conversation, ModelError> {
    match detect(&value) {
        WireFormat::Anthropic => anthropic::from_value(value),
        WireFormat::OpenAi => openai::from_value(value),
    }
}

/// Write a conversation in its own format.
pub fn to_value(conv: &Conversation) -> serde_json::Value {
    match conv.format {
        WireFormat::Anthropic => anthropic::to_value(conv),
        WireFormat::OpenAi => openai::to_value(conv),
    }
}
