//! Rule `edit-file`: edits are always kept — their call and their result — and the history of edits can be
//! read back as a changelog or replayed into a file's content.
//!
//! ## What it does
//! Results of edit tools (`edit_file`, Claude Code `Edit`/`MultiEdit`/`Write`, OpenHands `str_replace_editor`
//! create/str_replace/insert, SWE-agent `edit`/`create`) are never compacted, and neither is their input.
//! [`with_intent`] adds seed 004's optional `intent` field to an edit tool's schema, so the agent says why it
//! edits; [`changelog`] lists the edits per file with their intents, and [`file_state`] rebuilds a file's content
//! at a turn from the reads and edits seen so far.
//!
//! ## Why
//! An edit is the agent's own work: dropping it makes the model forget what it changed and redo or undo it.
//! Edits are also small next to the reads they follow.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "edit-file"        # before any catch-all rule, so edits never reach it
//! ```

mod history;

pub use history::{changelog, file_state, ChangeEntry, FileState};

use ctxfit_model::{ToolDefinition, Value};
use ctxfit_retention::{
    read_params, register_rule, Decision, RetentionRule, RuleConfigError, RuleContext,
};

/// Keeps every edit.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepEveryEdit;

impl RetentionRule for KeepEveryEdit {
    fn name(&self) -> &'static str {
        "edit-file"
    }

    fn decide(&self, _ctx: &RuleContext<'_>) -> Decision {
        Decision::Keep
    }
}

/// No parameters: `read_params` refuses any.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Params {}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let Params {} = read_params("edit-file", params)?;
    Ok(Box::new(KeepEveryEdit))
}

register_rule!(
    name: "edit-file",
    tools: &["edit_file"],
    summary: "keep every edit, call and result (seed 004)",
    factory: build,
);

/// The description of the `intent` field added by [`with_intent`].
pub const INTENT_DESCRIPTION: &str =
    "Optional: one sentence on why you make this edit (kept in the history even if the edit itself is compressed).";

/// The tool definition with an optional `intent` string property added to its input schema (seed 004). A
/// definition that already has one, or whose schema is not an object schema, is returned unchanged.
pub fn with_intent(tool: &ToolDefinition) -> ToolDefinition {
    let mut out = tool.clone();
    let schema = out
        .input_schema
        .get_or_insert_with(|| serde_json::json!({"type": "object", "properties": {}}));
    if let Some(Value::Object(props)) = schema.as_object_mut().map(|s| {
        s.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()))
    }) {
        props.entry("intent").or_insert_with(
            || serde_json::json!({"type": "string", "description": INTENT_DESCRIPTION}),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_is_added_once_and_optional() {
        let tool = ToolDefinition {
            name: "edit_file".into(),
            input_schema: Some(
                serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            ),
            ..ToolDefinition::default()
        };
        let with = with_intent(&tool);
        let schema = with.input_schema.as_ref().unwrap();
        assert_eq!(schema["properties"]["intent"]["type"], "string");
        assert_eq!(
            schema["required"],
            serde_json::json!(["path"]),
            "intent stays optional"
        );
        assert_eq!(with_intent(&with), with);
        let bare = with_intent(&ToolDefinition {
            name: "Write".into(),
            ..ToolDefinition::default()
        });
        assert!(bare.input_schema.unwrap()["properties"]["intent"].is_object());
    }
}
