//! Claude Code session JSONL.
//!
//! Lines of `type` `user`/`assistant` carry an Anthropic `message`; other line types (`progress`, `summary`,
//! `queue-operation`, `file-history-snapshot`, ...) are not messages and are skipped. One API response is
//! streamed as several lines sharing `message.id`, and Claude Code runs a tool as soon as its `tool_use` block
//! has streamed, so the lines of one response may be interleaved with the results of its first tools. The
//! importer rebuilds the request as the API saw it: one assistant message per `message.id`, followed by one user
//! message holding all of that response's tool results. The response metadata Claude Code logs inside
//! `message` (`id`, `model`, `usage`, `stop_reason`, ...) is not part of a request and is left out.
//!
//! When the conversation outgrows its context, Claude Code compacts it (`/compact`, or on its own): a `system`
//! line of subtype `compact_boundary` is written, and the requests after it start again from a user message
//! holding the summary (`isCompactSummary`). Each context window is its own session (`window 1`, `window 2`,
//! ...; a session that never compacted is one unnamed session), as the requests of one window never held the
//! messages of the one before. A log that also holds its subagents' messages (Claude Code up to 2.0) gives
//! them as sessions of their own, `subagent 1`, `subagent 2`, ... (see `split_sidechains`).

use std::collections::HashMap;

use ctxfit_model::{anthropic, Conversation, Role, WireFormat};
use serde_json::Value;

use crate::{parse_timestamp, ImportError, Parsed, Session, SourceFormat, Window};

/// A log's JSON values with their line numbers.
type Lines = Vec<(usize, Value)>;

/// Does this line mark a compaction: the end of one context window and the start of the next?
fn is_compact_boundary(line: &Value) -> bool {
    line.get("type").and_then(Value::as_str) == Some("system")
        && line.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}

pub(crate) fn import(parsed: Parsed) -> Result<Vec<Session>, ImportError> {
    let lines = match parsed {
        Parsed::Lines(lines) => lines,
        // the records as one JSON array (what a widely used hooks template writes to `logs/chat.json`): record
        // `i` stands where line `i` would
        Parsed::Document(Value::Array(records)) => (1..).zip(records).collect(),
        Parsed::Document(v) => vec![(1, v)],
    };
    let (main, subagents) = split_sidechains(lines);
    let sessions = |lines| -> Result<Vec<Session>, ImportError> {
        Ok(crate::context_windows(
            windows(lines)?,
            SourceFormat::ClaudeCode,
        ))
    };
    let mut all = sessions(main)?;
    let mut n = 0;
    for chain in subagents {
        let windows = sessions(chain)?;
        // (a chain of lines that are not messages gives no subagent)
        if windows.iter().all(|w| w.conversation.messages.is_empty()) {
            continue;
        }
        n += 1;
        for mut s in windows {
            s.name = match s.name.as_str() {
                "" => format!("subagent {n}"),
                window => format!("subagent {n}, {window}"),
            };
            all.push(s);
        }
    }
    Ok(all)
}

/// The lines of the main conversation, and those of each subagent's conversation when the log holds them too.
///
/// Claude Code up to 2.0 wrote a subagent's messages (the `Task` tool's own conversation) into the session's
/// log, marked `isSidechain: true`; later versions write them to `subagents/agent-<id>.jsonl`, every line
/// marked. The main agent's requests never held them — only the `Task` call and its result — so in a log that
/// mixes both, the marked lines are taken out and followed from parent to child (`parentUuid` → `uuid`) into
/// one conversation per subagent, in the order they start. A log of marked lines only is one subagent's
/// transcript and reads as it is.
fn split_sidechains(lines: Lines) -> (Lines, Vec<Lines>) {
    let side = |v: &Value| v.get("isSidechain").and_then(Value::as_bool) == Some(true);
    let message = |v: &Value| {
        matches!(
            v.get("type").and_then(Value::as_str),
            Some("user" | "assistant")
        )
    };
    let mixed = lines.iter().any(|(_, v)| message(v) && side(v))
        && lines.iter().any(|(_, v)| message(v) && !side(v));
    if !mixed {
        return (lines, Vec::new());
    }
    let (mut main, mut chains) = (Vec::new(), Vec::<Lines>::new());
    let mut chain_of: HashMap<String, usize> = HashMap::new();
    for (line, v) in lines {
        if !side(&v) {
            main.push((line, v));
            continue;
        }
        let parent = v.get("parentUuid").and_then(Value::as_str);
        let chain = match parent.and_then(|p| chain_of.get(p)) {
            Some(&c) => c,
            None => {
                chains.push(Vec::new());
                chains.len() - 1
            }
        };
        if let Some(uuid) = v.get("uuid").and_then(Value::as_str) {
            chain_of.insert(uuid.to_owned(), chain);
        }
        chains[chain].push((line, v));
    }
    (main, chains)
}

/// The conversation of a log's lines, cut into its context windows at each compaction, with the time of each
/// message (of its last line).
fn windows(lines: Lines) -> Result<Vec<Window>, ImportError> {
    let fresh = || Window::new(Conversation::new(WireFormat::Anthropic));
    let mut windows = vec![fresh()];
    // index in conv.messages of the last assistant message, with its message.id
    let mut last_assistant: Option<(usize, String)> = None;
    for (line, value) in lines {
        if is_compact_boundary(&value) {
            if windows
                .last()
                .is_some_and(|w| !w.conversation.messages.is_empty())
            {
                windows.push(fresh());
            }
            last_assistant = None;
            continue;
        }
        let Window {
            conversation: conv,
            times,
            cache_ttl,
            billed,
            ..
        } = windows.last_mut().expect("one window at least");
        // the cache the request asked for, as the response's usage tells: its writes are 5-minute or 1-hour ones
        if let Some(written) = value.pointer("/message/usage/cache_creation") {
            let wrote = |k: &str| written.get(k).and_then(Value::as_u64).unwrap_or(0) > 0;
            if wrote("ephemeral_1h_input_tokens") {
                *cache_ttl = Some(3600);
            } else if wrote("ephemeral_5m_input_tokens") && cache_ttl.is_none() {
                *cache_ttl = Some(300);
            }
        }
        let time = value
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_timestamp);
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let Some(message) = value.get("message").filter(|m| m.is_object()) else {
            continue;
        };
        let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        // what the request that produced this response was billed as input: uncached, written and read tokens
        // (a usage of nothing is Claude Code's stand-in message for a request that failed: no bill)
        let bill = message
            .get("usage")
            .filter(|u| u.is_object())
            .map(|u| {
                [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ]
                .iter()
                .map(|k| u.get(*k).and_then(Value::as_u64).unwrap_or(0))
                .sum::<u64>()
            })
            .filter(|&b| b > 0);
        let request_part = serde_json::json!({
            "role": message.get("role").cloned().unwrap_or(Value::Null),
            "content": message.get("content").cloned().unwrap_or(Value::Null),
        });
        let mut msg = anthropic::read_message(request_part, "message")
            .map_err(|e| ImportError::from(e).within(&format!("line {line}: ")))?;
        match msg.role {
            Role::Assistant => {
                if let (Some((at, last_id)), Some(id)) = (&last_assistant, &id) {
                    if last_id == id && only_tool_results_after(conv, *at) {
                        let at = *at;
                        let target = &mut conv.messages[at];
                        target.content.blocks.append(&mut msg.content.blocks);
                        times[at] = time.or(times[at]);
                        billed[at] = bill.or(billed[at]);
                        continue;
                    }
                }
                last_assistant = id.map(|id| (conv.messages.len(), id));
                conv.messages.push(msg);
                times.push(time);
                billed.push(bill);
            }
            _ => {
                if msg.is_tool_results() {
                    if let Some(prev) = conv.messages.last_mut() {
                        if prev.role == Role::User && prev.is_tool_results() {
                            prev.content.blocks.append(&mut msg.content.blocks);
                            let last = times.len() - 1;
                            times[last] = time.or(times[last]);
                            continue;
                        }
                    }
                }
                conv.messages.push(msg);
                times.push(time);
                billed.push(None);
            }
        }
    }
    if windows.len() > 1
        && windows
            .last()
            .is_some_and(|w| w.conversation.messages.is_empty())
    {
        windows.pop();
    }
    Ok(windows)
}

fn only_tool_results_after(conv: &Conversation, at: usize) -> bool {
    conv.messages[at + 1..]
        .iter()
        .all(|m| m.role == Role::User && m.is_tool_results())
}
