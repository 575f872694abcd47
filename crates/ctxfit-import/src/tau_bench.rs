//! tau-bench episode lists: `[{"task_id", "trial", "reward", "traj": [OpenAI messages]}, ...]`, one
//! conversation per episode; and tau2-bench's results, `{"info", "tasks", "simulations": [{"task_id", "trial",
//! "messages"}]}`, one conversation per simulation.
//!
//! A tau2 simulation's messages are the orchestrator's record of the agent, the simulated user and the tools;
//! the agent's conversation is its own turns, the user's words and the results of the agent's tool calls. The
//! tools the simulated user calls itself (tau2's telecom domain hands it a phone: `requestor: "user"`) and
//! their results never reach the agent and are left out, as is a user turn that holds nothing else. A call's
//! `arguments` (an object) are written as the JSON text a Chat request carries; a result answers its call by
//! `id`. The domain policy (`info.environment_info.policy`), which the agent's system prompt holds, is the
//! conversation's first, system message.

use ctxfit_model::{openai, read_message, Map, WireFormat};
use serde_json::{json, Value};

use crate::{ImportError, Session, SourceFormat};

pub(crate) fn import(doc: Value) -> Result<Vec<Session>, ImportError> {
    let Value::Array(episodes) = doc else {
        return Err(ImportError::shape("$", "expected a list of episodes"));
    };
    episodes
        .into_iter()
        .enumerate()
        .map(|(i, mut episode)| {
            let path = format!("[{i}]");
            let task = episode
                .get("task_id")
                .map(Value::to_string)
                .unwrap_or_default();
            let trial = episode
                .get("trial")
                .map(Value::to_string)
                .unwrap_or_default();
            let Some(Value::Array(traj)) = episode.get_mut("traj").map(Value::take) else {
                return Err(ImportError::shape(
                    format!("{path}.traj"),
                    "missing or not a list",
                ));
            };
            let mut conversation = crate::util::chat_list();
            conversation.messages = openai::read_messages(traj)
                .map_err(|e| ImportError::from(e).within(&format!("{path}.traj.")))?;
            Ok(Session::of(
                format!("task {task} trial {trial}"),
                SourceFormat::TauBench,
                conversation,
            ))
        })
        .collect()
}

/// Is this document tau2-bench's results (`{"simulations": [...]}` beside its `tasks` or `info`; saved as a folder,
/// the `results.json` beside `simulations/` holds a `simulation_index` instead), or one simulation of such a folder
/// (`simulations/ID.json`: `{"id", "task_id", "messages", "termination_reason", ...}`)?
pub(crate) fn is_tau2(top: &Map<String, Value>) -> bool {
    let results = (matches!(top.get("simulations"), Some(Value::Array(_)))
        || matches!(top.get("simulation_index"), Some(Value::Array(_))))
        && (top.contains_key("tasks") || top.contains_key("info"));
    results || is_tau2_simulation(top)
}

fn is_tau2_simulation(top: &Map<String, Value>) -> bool {
    top.contains_key("task_id")
        && top.contains_key("termination_reason")
        && matches!(top.get("messages"), Some(Value::Array(_)))
}

/// tau2-bench's results, one session per simulation (`task 7 trial 0`); the metadata of a run saved as a folder
/// holds none (its simulations are the files beside it).
pub(crate) fn import_tau2(mut doc: Value) -> Result<Vec<Session>, ImportError> {
    if doc.as_object().is_some_and(is_tau2_simulation) {
        let policy = doc.get("policy").and_then(Value::as_str).map(str::to_owned);
        return Ok(vec![simulation(&doc, "$", policy.as_deref())?]);
    }
    let policy = doc
        .pointer("/info/environment_info/policy")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let simulations = match doc.get_mut("simulations").map(Value::take) {
        Some(Value::Array(simulations)) => simulations,
        _ => Vec::new(),
    };
    simulations
        .iter()
        .enumerate()
        .map(|(i, s)| simulation(s, &format!("simulations[{i}]"), policy.as_deref()))
        .collect()
}

/// One tau2 simulation as the agent's conversation; `path` names it in errors.
fn simulation(
    simulation: &Value,
    path: &str,
    policy: Option<&str>,
) -> Result<Session, ImportError> {
    let label = |key: &str| match simulation.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let Some(Value::Array(messages)) = simulation.get("messages") else {
        return Err(ImportError::shape(
            format!("{path}.messages"),
            "missing or not a list (a full-duplex run keeps ticks, not messages)",
        ));
    };
    let mut conversation = crate::util::chat_list();
    if let Some(policy) = simulation.get("policy").and_then(Value::as_str).or(policy) {
        let system = json!({"role": "system", "content": policy});
        conversation
            .messages
            .push(read_message(WireFormat::OpenAi, system, "policy")?);
    }
    for (k, message) in messages.iter().enumerate() {
        let at = format!("{path}.messages[{k}]");
        for seen in agent_view(message, &at)? {
            conversation
                .messages
                .push(read_message(WireFormat::OpenAi, seen, &at)?);
        }
    }
    Ok(Session::of(
        format!("task {} trial {}", label("task_id"), label("trial")),
        SourceFormat::TauBench,
        conversation,
    ))
}

/// What the agent saw of one tau2 message, as Chat messages: none (the simulated user's own tool use), one, or
/// several (a `tool_messages` list of results).
fn agent_view(message: &Value, at: &str) -> Result<Vec<Value>, ImportError> {
    let Value::Object(m) = message else {
        return Err(ImportError::shape(at, "expected a message object"));
    };
    let by_user = |v: &Value| v.get("requestor").and_then(Value::as_str) == Some("user");
    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
    let content = m.get("content").cloned().unwrap_or(Value::Null);
    if let Some(Value::Array(results)) = m.get("tool_messages") {
        return results
            .iter()
            .enumerate()
            .filter(|(_, r)| !by_user(r))
            .map(|(j, r)| result_of(r, &format!("{at}.tool_messages[{j}]")))
            .collect();
    }
    Ok(match role {
        "tool" if by_user(message) => Vec::new(),
        "tool" => vec![result_of(message, at)?],
        "assistant" | "user" => {
            let calls: Vec<Value> = match m.get("tool_calls") {
                Some(Value::Array(calls)) => calls
                    .iter()
                    .filter(|c| !by_user(c) && role == "assistant")
                    .enumerate()
                    .map(|(j, c)| call_of(c, &format!("{at}.tool_calls[{j}]")))
                    .collect::<Result<_, _>>()?,
                _ => Vec::new(),
            };
            let says = content.as_str().is_some_and(|t| !t.is_empty());
            if !says && calls.is_empty() {
                // the user simulator acting on its own tools: nothing the agent was sent
                Vec::new()
            } else {
                let mut chat = json!({"role": role, "content": content});
                if !calls.is_empty() {
                    chat["tool_calls"] = Value::Array(calls);
                }
                vec![chat]
            }
        }
        _ => vec![json!({"role": role, "content": content})],
    })
}

/// A tau2 tool call (`{id, name, arguments: {...}}`) as a Chat request's.
fn call_of(call: &Value, at: &str) -> Result<Value, ImportError> {
    let (Some(id), Some(name)) = (
        call.get("id").and_then(Value::as_str),
        call.get("name").and_then(Value::as_str),
    ) else {
        return Err(ImportError::shape(
            at,
            "a tool call needs an `id` and a `name`",
        ));
    };
    let arguments = match call.get("arguments") {
        Some(Value::String(text)) => text.clone(),
        Some(v) => v.to_string(),
        None => "{}".to_owned(),
    };
    Ok(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
}

/// A tau2 tool result (`{role: "tool", id, content}`) as a Chat tool message.
fn result_of(result: &Value, at: &str) -> Result<Value, ImportError> {
    let Some(id) = result.get("id").and_then(Value::as_str) else {
        return Err(ImportError::shape(
            at,
            "a tool result needs the `id` of its call",
        ));
    };
    let content = result.get("content").cloned().unwrap_or(Value::Null);
    let content = if content.is_null() {
        json!("")
    } else {
        content
    };
    Ok(json!({"role": "tool", "tool_call_id": id, "content": content}))
}
