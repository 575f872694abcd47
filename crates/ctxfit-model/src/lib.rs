//! The conversation model of ctxfit, and its three wire formats.
//!
//! Every other crate works on one neutral model: a [`Conversation`] of [`Message`]s whose content is a list of
//! [`Block`]s (text, tool use, tool result, thinking, image, document, unknown). The key design decision is
//! that the model is **lossless**: reading an Anthropic Messages, OpenAI Chat Completions or OpenAI Responses
//! document and writing it back in its own format gives the same JSON value. That is what lets ctxfit sit
//! between an agent and its provider — the agent's `cache_control` markers, provider-specific fields and block
//! types it has never heard of pass through untouched. Three things make it so:
//!
//! * every struct has an `extra` map holding the fields ctxfit does not interpret, verbatim;
//! * blocks ctxfit does not interpret are kept as their JSON object (`Block::Unknown`), never an error;
//! * [`Content`] remembers its [`Shape`] on the wire (a string, a list, `null`, or absent), and OpenAI's
//!   tool-call `arguments` string is kept byte for byte.
//!
//! OpenAI's layout is mapped onto blocks: an assistant's `tool_calls` become [`ToolUse`] blocks after its text,
//! and a `role: "tool"` message holds one [`ToolResult`] block; a Responses item is one message (a
//! `function_call` an assistant message with one `ToolUse`, its output a tool message with one `ToolResult`).
//! So rules see tool calls and results the same way whatever the format. [`convert()`] maps between the formats
//! and reports what has no counterpart.
//!
//! The [`ToolCallIndex`] maps tool_use_id → tool name and position, updated with only the appended messages.
//!
//! ```
//! use ctxfit_model::{convert, from_json_str, to_value, WireFormat};
//!
//! let text = r#"{"model": "gpt-5", "messages": [
//!     {"role": "user", "content": "list the files"},
//!     {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
//!      "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
//!     {"role": "tool", "tool_call_id": "c1", "content": "a.rs"}]}"#;
//! let conv = from_json_str(text)?;
//! assert_eq!(conv.format, WireFormat::OpenAi);
//! assert_eq!((conv.tool_use_count(), conv.tool_result_count()), (1, 1));
//! // written back in its own format: the same JSON, the arguments string byte for byte
//! assert_eq!(to_value(&conv), serde_json::from_str::<serde_json::Value>(text)?);
//! // and in Anthropic's: the result becomes a tool_result block of a user message
//! let (anthropic, report) = convert(&conv, WireFormat::Anthropic);
//! assert!(report.is_lossless());
//! assert_eq!(to_value(&anthropic)["messages"][2]["content"][0]["type"], "tool_result");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod anthropic;
mod block;
mod check;
mod conversation;
mod convert;
mod error;
mod index;
mod numbers;
pub mod openai;
pub mod responses;
mod surrogates;
mod wire;

pub use block::{Block, Content, Shape, TextBlock, ThinkingBlock, ToolResult, ToolUse};
pub use check::{message_problems, problems, Problem};
pub use conversation::{
    begins_response, Conversation, Envelope, Message, Role, ToolDefinition, WireFormat,
};
pub use convert::{
    convert, detect, detect_decisive, detect_messages, is_responses_item, ConversionReport,
};
pub use error::{parse_json, ModelError};
pub use index::{ToolCallIndex, ToolCallSite};
pub use numbers::{keep_number_spelling, keep_number_spelling_in};
/// The JSON types the model exposes (tool inputs, extra fields).
pub use serde_json::{Map, Value};
pub use surrogates::{mend_lone_surrogates, mend_lone_surrogates_in, Mended};

/// Read a conversation from JSON text, detecting its format.
pub fn from_json_str(text: &str) -> Result<Conversation, ModelError> {
    from_value(parse_json(text)?)
}

/// Read a parsed document, detecting its format.
pub fn from_value(value: serde_json::Value) -> Result<Conversation, ModelError> {
    match detect(&value) {
        WireFormat::Anthropic => anthropic::from_value(value),
        WireFormat::OpenAi => openai::from_value(value),
        WireFormat::Responses => responses::from_value(value),
    }
}

/// Read one wire message (an item, in the Responses format) in `format`; `path` names it in errors
/// (`messages[3]`).
pub fn read_message(
    format: WireFormat,
    value: serde_json::Value,
    path: &str,
) -> Result<Message, ModelError> {
    match format {
        WireFormat::Anthropic => anthropic::read_message(value, path),
        WireFormat::OpenAi => openai::read_message(value, path),
        WireFormat::Responses => responses::read_item(value, path),
    }
}

/// Read an Anthropic request's top-level `system` prompt, given apart from its messages: a string, a list of
/// blocks, or null, as the request's own `system` field is read (anything else is an error naming `system`).
pub fn read_system(value: serde_json::Value) -> Result<Content, ModelError> {
    wire::read_content_at(Some(value), WireFormat::Anthropic, "system")
}

/// Read a request's `tools` list given apart from its messages, each tool in any of the three formats' spellings:
/// Anthropic's `{name, description, input_schema}`, OpenAI Chat's `{type: "function", function: {name,
/// description, parameters}}`, the Responses API's `{type: "function", name, description, parameters}` — and a
/// built-in tool without a name (`{"type": "web_search"}`) with its fields as extras. What a request's tools
/// cost is counted from it; nothing is written back. A list of anything but objects is an error naming `tools`
/// or the item (`tools[2]`).
pub fn read_tool_definitions(tools: serde_json::Value) -> Result<Vec<ToolDefinition>, ModelError> {
    wire::read_tool_list(tools, "expected a tool object", |mut outer, path| {
        let (mut f, wrapper_extra) = match outer.shift_remove("function") {
            Some(serde_json::Value::Object(f)) => (f, outer),
            Some(other) => {
                return Err(ModelError::shape(
                    format!("{path}.function"),
                    format!("expected an object, found {}", wire::kind_of(&other)),
                ))
            }
            None => (outer, Map::new()),
        };
        let name = match f.shift_remove("name") {
            None => String::new(),
            Some(serde_json::Value::String(name)) => name,
            Some(other) => {
                return Err(ModelError::shape(
                    format!("{path}.name"),
                    format!("expected a string, found {}", wire::kind_of(&other)),
                ))
            }
        };
        let description = wire::take_string(&mut f, "description");
        let input_schema = f
            .shift_remove("input_schema")
            .or_else(|| f.shift_remove("parameters"));
        Ok(ToolDefinition {
            name,
            description,
            input_schema,
            extra: f,
            wrapper_extra,
        })
    })
}

/// Write one message in `format`.
pub fn write_message(format: WireFormat, msg: &Message) -> serde_json::Value {
    match format {
        WireFormat::Anthropic => anthropic::write_message(msg),
        WireFormat::OpenAi => openai::write_message(msg),
        WireFormat::Responses => responses::write_item(msg),
    }
}

/// Write a conversation in its own format.
pub fn to_value(conv: &Conversation) -> serde_json::Value {
    match conv.format {
        WireFormat::Anthropic => anthropic::to_value(conv),
        WireFormat::OpenAi => openai::to_value(conv),
        WireFormat::Responses => responses::to_value(conv),
    }
}
