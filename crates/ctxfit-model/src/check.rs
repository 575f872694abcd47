//! What reads but is probably wrong in a conversation — things a tool should say rather than pass over.
//!
//! None of these stops ctxfit from reading, compacting or writing a conversation: a result whose id several
//! calls share is credited to the latest call before it, parallel calls of one message taking their results in
//! order ([`crate::ToolCallIndex::call_before`]), an orphan
//! result is compacted as a result of an unknown tool, an odd role is kept as it is, and an OpenAI `tool` message
//! without its call's id or `tool_calls` of another shape are kept as written. But each is a sign the
//! history was built wrong, so the CLI names them (`stats`) and can refuse them (`--strict`).

use std::fmt;

use crate::block::Block;
use crate::conversation::{Conversation, Role, WireFormat};
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
    /// OpenAI Chat `tool_calls` not of the format's shape (a list of calls, each with an `id`, a `function.name`
    /// and a `function.arguments` string): kept as written, so its results answer no call ctxfit knows.
    MalformedToolCalls { message: usize },
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
            Problem::MalformedToolCalls { message } => write!(
                f,
                "message {message}: `tool_calls` is not a list of calls with an `id`, a `function.name` and a \
                 `function.arguments` string; kept as written, and no result is credited to them"
            ),
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
        // a `system` message among Anthropic's is the API's own: an instruction from that point on (Claude Code
        // 2.1 sends one after the first user message)
        let odd_role = matches!(
            (conv.format, &msg.role),
            (WireFormat::Anthropic, Role::Tool | Role::Developer)
                | (WireFormat::Anthropic | WireFormat::OpenAi, Role::Other(_))
        );
        if odd_role {
            found.push((
                mi,
                Problem::RoleNotInFormat {
                    message: mi,
                    role: msg.role.as_str().to_owned(),
                    format: conv.format,
                },
            ));
        }
        if conv.format == WireFormat::OpenAi {
            let is_result = |b: &Block| matches!(b, Block::ToolResult(_));
            if msg.role == Role::Tool && !msg.content.blocks.iter().any(is_result) {
                found.push((mi, Problem::ToolMessageWithoutCallId { message: mi }));
            }
            // (`null` and `[]` are how some clients write "no calls")
            let odd_calls = msg.extra.get("tool_calls").is_some_and(|calls| {
                !(calls.is_null() || calls.as_array().is_some_and(Vec::is_empty))
            });
            if odd_calls {
                found.push((mi, Problem::MalformedToolCalls { message: mi }));
            }
        }
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
