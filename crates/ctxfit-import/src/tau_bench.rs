//! tau-bench episode lists: `[{"task_id", "trial", "reward", "traj": [OpenAI messages]}, ...]`, one
//! conversation per episode.

use ctxfit_model::{openai, Conversation, Envelope, WireFormat};
use serde_json::Value;

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
            let mut conversation = Conversation::new(WireFormat::OpenAi);
            conversation.envelope = Envelope::BareList;
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
