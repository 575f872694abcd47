//! Rule `truncate`: cut every stale tool result longer than `chars` characters to its first `chars` characters
//! plus a marker. It is seed 000/001's budget-threshold compaction.
//!
//! ## What it does
//! A stale result whose text is longer than `chars` (default 500) becomes its first `chars` characters followed
//! by `marker` (default `"\n[truncated for context management]"`). A result whose text already ends with the
//! marker is left alone, so compacting twice changes nothing.
//!
//! ## Why
//! It is the simplest rule that bounds every old result, whatever the tool: the seeds' fallback when the input
//! tokens of the last call exceeded the budget.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "truncate"
//! params = { chars = 500, marker = "\n[truncated for context management]" }
//! ```

use ctxfit_model::Value;
use ctxfit_retention::{
    ends_with_marker, read_params, register_rule, truncate_content, Decision, RetentionRule,
    RuleConfigError, RuleContext,
};

/// The marker of seed 000.
pub const DEFAULT_MARKER: &str = "\n[truncated for context management]";
/// Seed 000's `retention_chars`.
pub const DEFAULT_CHARS: usize = 500;

/// Keeps the first `chars` characters of a stale result; its parameters are its fields.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeepFirstChars {
    pub chars: usize,
    pub marker: String,
}

impl Default for KeepFirstChars {
    fn default() -> Self {
        KeepFirstChars {
            chars: DEFAULT_CHARS,
            marker: DEFAULT_MARKER.to_owned(),
        }
    }
}

impl RetentionRule for KeepFirstChars {
    fn name(&self) -> &'static str {
        "truncate"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let already = ends_with_marker(ctx.content, &self.marker);
        if already {
            return Decision::Keep;
        }
        match truncate_content(ctx.content, self.chars, &self.marker) {
            Some(cut) => Decision::Replace(cut),
            None => Decision::Keep,
        }
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    Ok(Box::new(read_params::<KeepFirstChars>("truncate", params)?))
}

register_rule!(
    name: "truncate",
    tools: &["*"],
    summary: "keep the first N characters of a stale result + a marker (seed 000)",
    factory: build,
);
