//! The retrieval handle: a tool the agent offers the model, through which a result that was cut comes back
//! whole. With a profile's `retrieval_tool` set, every cut result ends with
//! `[the full result: call ctxfit_retrieve with {"handle":"toolu_01"}]`; the agent answers that call with
//! [`retrieve`] over the conversation it kept (uncompacted), so the model gets the original, byte for byte —
//! even where re-running the command or calling the tool again would not give it (the file changed since, the
//! page moved, the call had side effects).

use ctxfit_model::{Block, Content, Conversation, ToolDefinition, Value, WireFormat};
use serde_json::Map;

/// The name the documentation and the examples give the retrieval tool.
pub const RETRIEVAL_TOOL: &str = "ctxfit_retrieve";

/// What the tool definition tells the model.
const DESCRIPTION: &str = "Get back, exactly as it was, the full original of an earlier tool result that was \
     shortened to save context. Shortened results end with a line naming this tool and the handle to pass.";

/// The handle of a result: its tool_use_id, with `#n` after it for the n-th later result that reuses the id
/// (some agents reuse ids).
pub fn handle_of(tool_use_id: &str, nth: u32) -> String {
    match nth {
        0 => tool_use_id.to_owned(),
        n => format!("{tool_use_id}#{n}"),
    }
}

/// The line a cut result ends with when the profile has a retrieval tool.
pub(crate) fn retrieval_trailer(tool: &str, tool_use_id: &str, nth: u32) -> String {
    let input = serde_json::json!({ "handle": handle_of(tool_use_id, nth) });
    format!("\n[the full result: call {tool} with {input}]")
}

/// `content` with the retrieval trailer after its last text (or as a text block of its own when it has none);
/// `content` as it is without one.
pub(crate) fn with_trailer(mut content: Content, trailer: Option<&str>) -> Content {
    let Some(trailer) = trailer else {
        return content;
    };
    let last_text = content.blocks.iter_mut().rev().find_map(|b| match b {
        Block::Text(t) => Some(t),
        _ => None,
    });
    match last_text {
        Some(t) => t.text.push_str(trailer),
        None => content
            .blocks
            .push(Block::text(trailer.trim_start_matches('\n'))),
    }
    content
}

/// The original content of the result a handle names, from the conversation as the agent kept it (not a
/// compacted request): `toolu_01` is the first result answering the call `toolu_01`, `toolu_01#1` the second
/// result with that id (unless a call's id is `toolu_01#1` itself: an id is always its first result's handle).
/// `None` when the conversation has no such result.
///
/// ```
/// use ctxfit_compactor::retrieve;
/// use ctxfit_model::{Block, Conversation, Message, WireFormat};
/// use serde_json::json;
///
/// let mut conv = Conversation::new(WireFormat::Anthropic);
/// conv.messages.push(Message::user("Why does the build fail?"));
/// conv.push_response(vec![Block::tool_use("toolu_01", "bash", json!({"command": "make"}))]);
/// conv.push_tool_results(vec![Block::tool_result("toolu_01", "cc -c a.c\nerror: expected ';'", false)]);
/// let original = retrieve(&conv, "toolu_01").unwrap();
/// assert_eq!(original.joined_text(), "cc -c a.c\nerror: expected ';'");
/// assert!(retrieve(&conv, "toolu_01#1").is_none());
/// ```
pub fn retrieve(conv: &Conversation, handle: &str) -> Option<Content> {
    let handle = handle.trim();
    let nth_with = |id: &str, nth: u32| {
        conv.messages
            .iter()
            .flat_map(|m| &m.content.blocks)
            .filter_map(|b| match b {
                Block::ToolResult(r) if r.tool_use_id == id => Some(&r.content),
                _ => None,
            })
            .nth(nth as usize)
            .cloned()
    };
    // an id is itself the first result's handle, even one with a `#` in it
    nth_with(handle, 0).or_else(|| {
        let (id, n) = handle.rsplit_once('#')?;
        nth_with(id, n.parse().ok()?)
    })
}

/// The retrieval tool's definition, under `name`, for a conversation in `format` (with the `"type":
/// "function"` the OpenAI formats carry): push it onto the conversation's `tools`, and the wire format writes
/// it as Anthropic's `input_schema`, OpenAI Chat's `function` or Responses' flat function.
pub fn retrieval_tool_definition(format: WireFormat, name: &str) -> ToolDefinition {
    let input_schema = serde_json::json!({
        "type": "object",
        "properties": {
            "handle": {
                "type": "string",
                "description": "The handle the shortened result names",
            },
        },
        "required": ["handle"],
        "additionalProperties": false,
    });
    let mut tool = ToolDefinition {
        name: name.to_owned(),
        description: Some(DESCRIPTION.to_owned()),
        input_schema: Some(input_schema),
        ..ToolDefinition::default()
    };
    let function = || Map::from_iter([("type".to_owned(), Value::from("function"))]);
    match format {
        WireFormat::Anthropic => {}
        WireFormat::OpenAi => tool.wrapper_extra = function(),
        WireFormat::Responses => tool.extra = function(),
    }
    tool
}
