//! Histories that read but are built wrong: a result is still credited to the call it answers.

use std::sync::{Arc, Mutex};

use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_retention::{Decision, RetentionRule, RuleContext};
use serde_json::json;

/// Notes the tool, input and text of every result it is asked about, and keeps it.
struct Recorder(Arc<Mutex<Vec<(String, String, String)>>>);

impl RetentionRule for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        self.0.lock().unwrap().push((
            ctx.tool_name.to_owned(),
            ctx.input.to_string(),
            ctx.content.joined_text(),
        ));
        Decision::Keep
    }
}

#[test]
fn a_reused_tool_use_id_credits_each_result_to_the_call_before_it() {
    // two calls share the id `a` (real SWE-agent and tau-bench trajectories do this)
    let conv = ctxfit_model::from_value(json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "x.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "fn x() {}"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x.rs"}]},
        {"role": "assistant", "content": "done"}
    ]}))
    .unwrap();
    let problems = ctxfit_model::problems(&conv);
    assert_eq!(problems.len(), 1);
    assert!(problems[0]
        .to_string()
        .contains("used by 2 calls (messages 1, 3)"));

    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut c = Compactor::with_rules(
        settings,
        vec![(Box::new(Recorder(seen.clone())), vec!["*".to_owned()])],
        Box::new(ctxfit_tokens::FastEstimator),
    );
    // in one shot the whole history is indexed at once: the later call must not claim the earlier result
    c.compact_history(&conv, None);
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        [
            (
                "read_file".to_owned(),
                json!({"path": "x.rs"}).to_string(),
                "fn x() {}".to_owned()
            ),
            (
                "bash".to_owned(),
                json!({"command": "ls"}).to_string(),
                "x.rs".to_owned()
            ),
        ]
    );
}
