//! mini-swe-agent trajectories (`*.traj.json`, `"trajectory_format": "mini-swe-agent-1.x"`).
//!
//! `messages` is the OpenAI Chat list the agent sent (system, user, assistant with `tool_calls`, `tool`
//! results), each with the agent's own bookkeeping in `extra` (the raw model response, timings, the parsed
//! actions) and a final `exit` entry holding the submission — neither was sent to the model, so both are left
//! out. Only the fields a request carries stay: `role`, `content`, `tool_calls`, `tool_call_id`, `name`; of
//! `extra`, the `timestamp` (seconds since the Unix epoch) is kept as the message's time.
//!
//! Without tool calling (mini-swe-agent's own default: the model answers with a THOUGHT and exactly one
//! ` ```bash ` block, and the command's output comes back as the next user message, `<returncode>0</returncode>
//! <output>…</output>`), the importer makes each such answer's block a call of `bash` with that command (the
//! thought around it stays the answer's text, so nothing is counted twice) and the user message after it the
//! call's result, as the SWE-agent importer does with its actions — so that both kinds read, and compact, the
//! same. An answer with no block or several is no call: the user message after it is
//! the agent's complaint about the format, and stays a user message.

use std::ops::Range;

use ctxfit_model::{openai, Content, Conversation, Role, Value, WireFormat};

use crate::util::{text_block, tool_message, tool_use};
use crate::ImportError;

/// Fields of a message that are part of a Chat Completions request.
const REQUEST_FIELDS: &[&str] = &["role", "content", "tool_calls", "tool_call_id", "name"];

/// Is this document a mini-swe-agent trajectory?
pub(crate) fn looks_like(doc: &Value) -> bool {
    doc.get("trajectory_format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("mini-swe-agent"))
        && matches!(doc.get("messages"), Some(Value::Array(_)))
}

/// The conversation, and the time each message was written.
pub(crate) fn import(doc: Value) -> Result<(Conversation, Vec<Option<u64>>), ImportError> {
    let Some(Value::Array(entries)) = doc.get("messages") else {
        return Err(ImportError::shape("messages", "expected a list"));
    };
    let mut conv = Conversation::new(WireFormat::OpenAi);
    let mut times = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(fields) = entry else {
            return Err(ImportError::shape(
                format!("messages[{i}]"),
                "expected a message object",
            ));
        };
        if fields.get("role").and_then(Value::as_str) == Some("exit") {
            continue;
        }
        let request: serde_json::Map<String, Value> = fields
            .iter()
            .filter(|(k, v)| REQUEST_FIELDS.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        conv.messages.push(openai::read_message(
            Value::Object(request),
            &format!("messages[{i}]"),
        )?);
        times.push(
            fields
                .get("extra")
                .and_then(|e| e.get("timestamp"))
                .and_then(Value::as_f64)
                .filter(|t| t.is_finite() && *t >= 0.0)
                .map(|t| (t * 1000.0) as u64),
        );
    }
    if conv.tool_use_count() == 0 {
        link_bash_blocks(&mut conv);
    }
    Ok((conv, crate::known_times(times)))
}

/// Each assistant message with exactly one bash block becomes a call of `bash`, and the user message right
/// after it that call's result.
fn link_bash_blocks(conv: &mut Conversation) {
    for i in 0..conv.messages.len().saturating_sub(1) {
        if conv.messages[i].role != Role::Assistant || conv.messages[i + 1].role != Role::User {
            continue;
        }
        let text = conv.messages[i].content.joined_text();
        let [(ref fence, command)] = bash_blocks(&text)[..] else {
            continue;
        };
        let id = format!("mini-{i}");
        let call = tool_use(&id, "bash", serde_json::json!({ "command": command }));
        // the block is the call now: the text keeps the thought around it, so nothing is counted twice
        let (before, after) = (
            text[..fence.start].trim_end(),
            text[fence.end..].trim_start(),
        );
        let thought = match (before.is_empty(), after.is_empty()) {
            (_, true) => before.to_owned(),
            (true, false) => after.to_owned(),
            (false, false) => format!("{before}\n\n{after}"),
        };
        let mut blocks = vec![call];
        if !thought.is_empty() {
            blocks.insert(0, text_block(&thought));
        }
        conv.messages[i].content = Content::list(blocks);
        let output = conv.messages[i + 1].content.joined_text();
        conv.messages[i + 1] = tool_message(&id, &output, None);
    }
}

/// The ` ```bash ` blocks of a model's answer as mini-swe-agent finds them (its pattern
/// ` ```bash\s*\n(.*?)\n``` `): where each stands, fences included, and its command.
fn bash_blocks(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(fence) = text[from..].find("```bash").map(|k| from + k) {
        let open = fence + "```bash".len();
        let rest = &text[open..];
        let space = rest.len() - rest.trim_start().len();
        // the command starts after the last line break of the white space after the fence
        let Some(newline) = rest[..space].rfind('\n') else {
            from = open;
            continue;
        };
        let start = open + newline + 1;
        // and ends at the first line that opens with a fence (the line break may be the one before it)
        let Some(close) = text[start - 1..].find("\n```").map(|k| start - 1 + k) else {
            break;
        };
        from = close + "\n```".len();
        out.push((fence..from, text.get(start..close).unwrap_or("")));
    }
    out
}

#[cfg(test)]
mod tests {
    /// The commands only.
    fn bash_blocks(text: &str) -> Vec<&str> {
        super::bash_blocks(text)
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    #[test]
    fn bash_blocks_as_mini_swe_agent_finds_them() {
        let one = "THOUGHT: look around.\n\n```bash\nls -la && cat setup.py\n```\n";
        assert_eq!(bash_blocks(one), ["ls -la && cat setup.py"]);
        let multi = "THOUGHT: x\n```bash  \n\ncd /w\npython - <<'EOF'\nprint(1)\nEOF\n```";
        assert_eq!(
            bash_blocks(multi),
            ["cd /w\npython - <<'EOF'\nprint(1)\nEOF"]
        );
        let two = "```bash\nls\n```\nthen\n```bash\npwd\n```";
        assert_eq!(bash_blocks(two), ["ls", "pwd"]);
        assert_eq!(bash_blocks("```bash\n\n```"), [""]);
        for none in [
            "no block",
            "```python\nprint(1)\n```",
            "```bash ls```",
            "```bash\nls",
            "```bash",
        ] {
            assert!(bash_blocks(none).is_empty(), "{none:?}");
        }
    }
}
