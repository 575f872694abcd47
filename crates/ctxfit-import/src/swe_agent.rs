//! SWE-agent `.traj` files: the `history` list is what the model saw.
//!
//! With function calling, assistant entries carry OpenAI `tool_calls` and observations come back as
//! `role: "tool"` with `tool_call_ids`. Older trajectories have only an `action` string on the assistant entry
//! and the observation as the next user entry: the importer makes that a tool call (named after the SWE-agent
//! command, or `bash` for a shell command) and its result, so both kinds read the same.

use ctxfit_model::{openai, Block, Content, Conversation, Envelope, Message, Role, WireFormat};
use serde_json::Value;

use crate::util::{flatten_text, str_field, text_block, tool_message, tool_use};
use crate::ImportError;

/// SWE-agent's own commands; any other action is a shell command, named `bash`.
const COMMANDS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "insert",
    "search_dir",
    "search_file",
    "find_file",
    "submit",
    "str_replace_editor",
    "filemap",
    "exit_forfeit",
    "decompile",
    "disassemble",
    "debug_start",
    "debug_add_breakpoint",
    "debug_continue",
    "debug_step",
    "debug_exec",
    "debug_stop",
    "connect_start",
    "connect_sendline",
    "connect_exec",
    "connect_stop",
    "python3",
    "review_on_submit",
];

/// The tool an action string calls: its first word when that is a SWE-agent command, else `bash`.
pub(crate) fn command_name(action: &str) -> &str {
    let first = action.split_whitespace().next().unwrap_or("");
    if COMMANDS.contains(&first) && first != "python3" {
        first
    } else {
        "bash"
    }
}

pub(crate) fn import(doc: Value) -> Result<Conversation, ImportError> {
    let Some(Value::Array(history)) = doc.get("history") else {
        return Err(ImportError::shape("history", "missing or not a list"));
    };
    let mut conv = Conversation::new(WireFormat::OpenAi);
    conv.envelope = Envelope::BareList;
    // the id of a tool call made up for an action whose observation has not come yet
    let mut pending: Option<String> = None;
    for (i, entry) in history.iter().enumerate() {
        let path = format!("history[{i}]");
        let role = str_field(entry, "role")
            .ok_or_else(|| ImportError::shape(format!("{path}.role"), "missing or not a string"))?;
        let text = flatten_text(entry.get("content"));
        match role {
            "assistant" => {
                let action = str_field(entry, "action").unwrap_or("").trim();
                if matches!(entry.get("tool_calls"), Some(Value::Array(c)) if !c.is_empty()) {
                    let mut m = serde_json::Map::new();
                    m.insert("role".into(), "assistant".into());
                    m.insert("content".into(), text.into());
                    m.insert("tool_calls".into(), entry["tool_calls"].clone());
                    let msg = openai::read_message(Value::Object(m), &path)?;
                    conv.messages.push(msg);
                    pending = None;
                } else if !action.is_empty() {
                    let id = format!("swe-{i}");
                    let blocks = vec![
                        text_block(&text),
                        tool_use(
                            &id,
                            command_name(action),
                            serde_json::json!({ "command": action }),
                        ),
                    ];
                    conv.messages
                        .push(Message::new(Role::Assistant, Content::list(blocks)));
                    pending = Some(id);
                } else {
                    conv.messages
                        .push(Message::new(Role::Assistant, Content::text(text)));
                    pending = None;
                }
            }
            "tool" => {
                let id = entry
                    .get("tool_call_ids")
                    .and_then(|ids| ids.get(0))
                    .or_else(|| entry.get("tool_call_id"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                conv.messages.push(tool_message(id, &text, None));
                pending = None;
            }
            "user" if pending.is_some() => {
                let id = pending.take().unwrap_or_default();
                conv.messages.push(tool_message(&id, &text, None));
            }
            other => {
                conv.messages
                    .push(Message::new(Role::parse(other), Content::text(text)));
                pending = None;
            }
        }
    }
    // an assistant entry whose text is empty gets no empty text block
    for msg in &mut conv.messages {
        if msg.content.blocks.len() > 1 {
            msg.content
                .blocks
                .retain(|b| !matches!(b, Block::Text(t) if t.text.is_empty()));
        }
    }
    Ok(conv)
}
