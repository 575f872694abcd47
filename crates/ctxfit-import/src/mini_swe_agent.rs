//! mini-swe-agent trajectories (`*.traj.json`, `"trajectory_format": "mini-swe-agent-1.x"`).
//!
//! `messages` is the OpenAI Chat list the agent sent (system, user, assistant with `tool_calls`, `tool`
//! results), each with the agent's own bookkeeping in `extra` (the raw model response, timings, the parsed
//! actions) and a final `exit` entry holding the submission — neither was sent to the model, so both are left
//! out. Only the fields a request carries stay: `role`, `content`, `tool_calls`, `tool_call_id`, `name`.

use ctxfit_model::{openai, Conversation, Value, WireFormat};

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

pub(crate) fn import(doc: Value) -> Result<Conversation, ImportError> {
    let Some(Value::Array(entries)) = doc.get("messages") else {
        return Err(ImportError::shape("messages", "expected a list"));
    };
    let mut conv = Conversation::new(WireFormat::OpenAi);
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
    }
    Ok(conv)
}
