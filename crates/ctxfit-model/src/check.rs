//! What reads but is probably wrong in a conversation — things a tool should say rather than pass over.
//!
//! None of these stops ctxfit from reading, compacting or writing a conversation: a result whose id several
//! calls share is credited to the latest call before it, parallel calls of one message taking their results in
//! order ([`crate::ToolCallIndex::call_before`]), an orphan
//! result is compacted as a result of an unknown tool, an odd role is kept as it is, and an OpenAI `tool` message
//! without its call's id or a tool call or result not of its format's shape is kept as written. But each is a sign the
//! history was built wrong, so the CLI names them (`stats`) and can refuse them (`--strict`).

use std::fmt;

use serde_json::Value;

use crate::block::Block;
use crate::conversation::{Conversation, Message, Role, WireFormat};
use crate::index::ToolCallIndex;

/// One problem, with the messages (0-based) where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Several calls use one id: their results cannot be told apart by id alone.
    ReusedToolUseId { id: String, messages: Vec<usize> },
    /// A result answers no call made before it.
    OrphanResult { id: String, message: usize },
    /// A role the conversation's wire format does not have (`tool` or `developer` in Anthropic messages, an
    /// unknown role in Anthropic or OpenAI Chat).
    RoleNotInFormat {
        message: usize,
        role: String,
        format: WireFormat,
    },
    /// An OpenAI Chat `tool` message without a `tool_call_id` string: the API refuses it, and ctxfit reads it as
    /// a plain message (no result to compact).
    ToolMessageWithoutCallId { message: usize },
    /// A tool call or result not of its format's shape — Anthropic `tool_use` or `tool_result` blocks, OpenAI
    /// Chat `tool_calls`, Responses `function_call` or `function_call_output` items and their kin — kept as
    /// written, so no rule reads it and no result is credited to it. `what` names it, `shape` says what it
    /// should hold.
    MalformedToolItem {
        message: usize,
        what: &'static str,
        shape: &'static str,
    },
    /// An item of a content list that is not a block — not an object with a `type` string (`[1, 2]`, `["text"]`,
    /// `[{"text": "x"}]`): no API takes it, so the history was built wrong. Kept as written. Said once per
    /// message: the first such item, and how many more the message holds.
    NotABlock {
        message: usize,
        item: usize,
        found: &'static str,
        more: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::ReusedToolUseId { id, messages } => {
                let at: Vec<String> = messages.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "tool_use id `{id}` is used by {} calls (messages {}): each result is credited to the latest \
                     call before it (calls in one message: in order)",
                    messages.len(),
                    at.join(", ")
                )
            }
            Problem::OrphanResult { id, message } => {
                write!(
                    f,
                    "message {message}: tool result `{id}` answers no earlier call"
                )
            }
            Problem::RoleNotInFormat {
                message,
                role,
                format: WireFormat::OpenAi,
            } if role == "function" => write!(
                f,
                "message {message}: a `function` message (OpenAI's deprecated function calling, the answer to an \
                 assistant's `function_call`) is kept as written but not compacted: only results of `tools` \
                 (`tool_calls`, `tool` messages) are"
            ),
            Problem::RoleNotInFormat {
                message,
                role,
                format,
            } => write!(
                f,
                "message {message}: role `{role}` is not a message role of the {} format",
                format.name()
            ),
            Problem::ToolMessageWithoutCallId { message } => write!(
                f,
                "message {message}: a `tool` message without a `tool_call_id` string answers no call (the API \
                 refuses it); kept as written, not compacted"
            ),
            Problem::MalformedToolItem {
                message,
                what,
                shape,
            } => write!(
                f,
                "message {message}: {what} not of its format's shape ({shape}); kept as written, not read as a \
                 tool call or result"
            ),
            Problem::NotABlock {
                message,
                item,
                found,
                more,
            } => {
                write!(
                    f,
                    "message {message}: content item {item} is {found}, not a block (the API takes only objects \
                     with a `type` string)"
                )?;
                match more {
                    0 => {}
                    1 => f.write_str(", nor is 1 more item of the message")?,
                    n => write!(f, ", nor are {n} more items of the message")?,
                }
                f.write_str("; kept as written")
            }
        }
    }
}

/// Every problem of a conversation, in the order of the messages where they start.
pub fn problems(conv: &Conversation) -> Vec<Problem> {
    let index = ToolCallIndex::build(conv);
    let mut found: Vec<(usize, Problem)> = index
        .reused_ids()
        .map(|(id, at)| {
            let messages: Vec<usize> = at.iter().map(|(m, _)| *m).collect();
            (
                messages[0],
                Problem::ReusedToolUseId {
                    id: id.to_owned(),
                    messages,
                },
            )
        })
        .collect();
    for (mi, msg) in conv.messages.iter().enumerate() {
        found.extend(
            message_problems(conv.format, mi, msg)
                .into_iter()
                .map(|p| (mi, p)),
        );
        for (bi, block) in msg.content.blocks.iter().enumerate() {
            if let Block::ToolResult(r) = block {
                if index.call_before(&r.tool_use_id, (mi, bi)).is_none() {
                    found.push((
                        mi,
                        Problem::OrphanResult {
                            id: r.tool_use_id.clone(),
                            message: mi,
                        },
                    ));
                }
            }
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, p)| p).collect()
}

/// What is wrong in one message, read alone (message `mi` of a conversation in `format`): a role the format does
/// not have, an OpenAI `tool` message without its call's id, a tool call or result not of its format's shape.
/// Allocates nothing where nothing is found, so a caller may check each new message as it arrives (the Python
/// package warns of them); ids shared or answering no call need the whole conversation ([`problems`]).
pub fn message_problems(format: WireFormat, mi: usize, msg: &Message) -> Vec<Problem> {
    let mut found = Vec::new();
    // a `system` message among Anthropic's is the API's own: an instruction from that point on (Claude Code
    // 2.1 sends one after the first user message)
    let odd_role = matches!(
        (format, &msg.role),
        (WireFormat::Anthropic, Role::Tool | Role::Developer)
            | (WireFormat::Anthropic | WireFormat::OpenAi, Role::Other(_))
    );
    if odd_role {
        found.push(Problem::RoleNotInFormat {
            message: mi,
            role: msg.role.as_str().to_owned(),
            format,
        });
    }
    if format == WireFormat::OpenAi {
        let is_result = |b: &Block| matches!(b, Block::ToolResult(_));
        if msg.role == Role::Tool && !msg.content.blocks.iter().any(is_result) {
            found.push(Problem::ToolMessageWithoutCallId { message: mi });
        }
        // (`null` and `[]` are how some clients write "no calls")
        let odd_calls = msg
            .extra
            .get("tool_calls")
            .is_some_and(|calls| !(calls.is_null() || calls.as_array().is_some_and(Vec::is_empty)));
        if odd_calls {
            found.push(Problem::MalformedToolItem {
                message: mi,
                what: "`tool_calls`",
                shape: "a list of calls, each with an `id`, a `function.name` and a `function.arguments` string",
            });
        }
    }
    let mut odd = msg.content.blocks.iter().enumerate();
    if let Some((item, kind)) = odd.find_map(|(i, b)| not_a_block(b).map(|k| (i, k))) {
        found.push(Problem::NotABlock {
            message: mi,
            item,
            found: kind,
            more: odd.filter(|(_, b)| not_a_block(b).is_some()).count(),
        });
    }
    for block in &msg.content.blocks {
        if let Some((what, shape)) = malformed_tool_item(format, msg, block) {
            found.push(Problem::MalformedToolItem {
                message: mi,
                what,
                shape,
            });
        }
    }
    found
}

/// What a content item kept verbatim is, when it is not a block: an object without a `type` string, or no object.
fn not_a_block(block: &Block) -> Option<&'static str> {
    match block {
        Block::Unknown(Value::Object(m)) if m.get("type").is_some_and(Value::is_string) => None,
        Block::Unknown(Value::Object(_)) => Some("an object without a `type` string"),
        Block::Unknown(other) => Some(crate::wire::kind_of(other)),
        _ => None,
    }
}

/// A block kept verbatim that its type says is a tool call or result: what it is, and the shape it should have.
fn malformed_tool_item(
    format: WireFormat,
    msg: &Message,
    block: &Block,
) -> Option<(&'static str, &'static str)> {
    let Block::Unknown(Value::Object(m)) = block else {
        return None;
    };
    match format {
        WireFormat::Anthropic => match m.get("type").and_then(Value::as_str)? {
            "tool_use" => Some((
                "a `tool_use` block",
                "an `id` and a `name` string and an `input`",
            )),
            "tool_result" => Some((
                "a `tool_result` block",
                "a `tool_use_id` string, content of text or blocks and an `is_error` of true or false",
            )),
            _ => None,
        },
        // a Responses item kept whole has its type in the message's `extra` (a `local_shell_call` may lack its
        // `call_id`: Codex CLI's own type leaves it optional)
        WireFormat::Responses => match msg.extra.get("type").and_then(Value::as_str)? {
            "function_call" => Some((
                "a `function_call` item",
                "`call_id`, `name` and `arguments` strings",
            )),
            "custom_tool_call" => Some((
                "a `custom_tool_call` item",
                "`call_id`, `name` and `input` strings",
            )),
            "function_call_output" | "custom_tool_call_output" => Some((
                "a tool output item",
                "a `call_id` string and an `output` string or list",
            )),
            _ => None,
        },
        _ => None,
    }
}
