//! Rule `sql-query`: an example of a team's own retention rule, in its own crate, for its own tool.
//!
//! ## What it does
//! A stale result of the `sql_query` tool — a table printed one row per line — keeps its header line and its
//! first `rows` rows (default 5), followed by `[… N more rows omitted]`. Results that are not longer than that
//! are kept whole.
//!
//! ## Why
//! Once the model has read a query's output, the column names and a few rows tell it what the data looked like;
//! the full result can be fetched again by re-running the query, which is in the tool call's input.
//!
//! ## Example
//! ```toml
//! [profiles.analyst]
//! extends = "seed-002"
//! [[profiles.analyst.rules]]
//! rule = "sql-query"
//! params = { rows = 3 }
//! [[profiles.analyst.rules]]
//! rule = "tiered"
//! ```

use ctxfit_model::{Content, Value};
use ctxfit_retention::{
    read_params, register_rule, Decision, RetentionRule, RuleConfigError, RuleContext,
};

/// Keeps the header and the first rows of a tabular result.
#[derive(Debug, Clone)]
pub struct KeepHeaderAndFirstRows {
    pub rows: usize,
}

impl RetentionRule for KeepHeaderAndFirstRows {
    fn name(&self) -> &'static str {
        "sql-query"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let text = ctx.content.joined_text();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() <= self.rows + 1 || text.ends_with("rows omitted]") {
            return Decision::Keep;
        }
        let omitted = lines.len() - 1 - self.rows;
        let mut kept = lines[..=self.rows].join("\n");
        kept.push_str(&format!("\n[… {omitted} more rows omitted]"));
        Decision::Replace(Content::text(kept))
    }
}

/// The rule's parameters, read through serde: unknown ones are refused with the list of these.
#[derive(serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Params {
    /// Rows kept after the header.
    rows: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params { rows: 5 }
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let Params { rows } = read_params("sql-query", params)?;
    Ok(Box::new(KeepHeaderAndFirstRows { rows }))
}

register_rule!(
    name: "sql-query",
    tools: &["sql_query"],
    summary: "keep the header and first rows of a stale SQL result",
    factory: build,
);
