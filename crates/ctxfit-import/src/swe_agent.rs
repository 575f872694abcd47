//! SWE-agent `.traj` files: the `history` list is what the model saw.
//!
//! With function calling, assistant entries carry OpenAI `tool_calls` and observations come back as
//! `role: "tool"` with `tool_call_ids`. Older trajectories have only an `action` string on the assistant entry
//! and the observation as the next user entry: the importer makes that a tool call (named after the SWE-agent
//! command, or `bash` for a shell command) and its result, so both kinds read the same; the response's text
//! keeps its thought, without the fenced action the call now holds.

use ctxfit_model::{openai, Block, Content, Conversation, Message, Role};
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

/// The text of a response whose action becomes a call: its thought, when the response is the thought followed
/// by the action in a fenced block (as SWE-agent's parsers write and read it) — the call holds the action, so
/// it is not counted twice. Any other response is kept as it is.
fn thought_of<'a>(content: &'a str, thought: Option<&str>, action: &str) -> &'a str {
    let Some(thought) = thought.map(str::trim).filter(|t| !t.is_empty()) else {
        return content;
    };
    let Some(rest) = content.trim_start().strip_prefix(thought) else {
        return content;
    };
    let rest = rest.trim();
    let fenced = rest.starts_with("```")
        && rest.ends_with("```")
        && rest.len() >= 6
        && rest[3..rest.len() - 3].contains(action);
    if fenced {
        // the thought as the response wrote it (its own leading space trimmed, as the thought is)
        let start = content.len() - content.trim_start().len();
        &content[start..start + thought.len()]
    } else {
        content
    }
}

pub(crate) fn import(doc: Value) -> Result<Conversation, ImportError> {
    let Some(Value::Array(history)) = doc.get("history") else {
        return Err(ImportError::shape("history", "missing or not a list"));
    };
    let mut conv = crate::util::chat_list();
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
                        text_block(thought_of(&text, str_field(entry, "thought"), action)),
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

#[cfg(test)]
mod tests {
    use super::thought_of;

    #[test]
    fn the_fenced_action_leaves_the_text_for_the_call() {
        let content = "Look at the page.\n```\ncurl http://x:8000\n```";
        assert_eq!(
            thought_of(content, Some("Look at the page.\n"), "curl http://x:8000"),
            "Look at the page."
        );
        // a response that is not the thought and a fenced action is kept whole
        for (thought, action) in [
            (None, "ls"),
            (Some(""), "ls"),
            (Some("Something else."), "curl http://x:8000"),
            (Some("Look at the page."), "rm -rf build"),
        ] {
            assert_eq!(thought_of(content, thought, action), content);
        }
        let unfenced = "Look at the page.\ncurl http://x:8000";
        assert_eq!(
            thought_of(unfenced, Some("Look at the page."), "curl http://x:8000"),
            unfenced
        );
    }
}
