//! Rule `recent`: keep only the most recent results of navigation tools; older ones become a one-line pointer.
//!
//! ## What it does
//! For each tool (or, with `scope = "all"`, across every tool the rule handles) the `keep` most recent results
//! (default 3) are kept; each older one becomes `[Old {tool} result omitted — input: {input}]` (configurable,
//! `{tool}`, `{input}` and `{lines}` — the result's line count — are filled in; the input is shortened to 120
//! characters).
//!
//! With `shell_listings = true` it applies, of the results it is bound to (a shell tool's), only to commands that
//! search or list files (`grep`, `rg`, `find`, `ls`, … as the command line's main program: `cd /repo && grep -rn
//! x src | head`); they compete per program, as `Grep` and `Glob` results compete per tool, and every other
//! result is left to the next rule of the profile.
//!
//! ## Why
//! Listings and searches (`ls`, `Glob`, `Grep`, `find_file`, `focus`) describe a state that later ones
//! supersede; the model needs the latest few, and the pointer says what was asked so it can ask again. An agent
//! with only a shell searches with `grep -rn` and lists with `find`: the same results, under another tool.
//! With `tools = ["*"]`, `scope = "all"` and `keep = 30` it is also seed 004's old baseline, "keep the last
//! 30 tool results".
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "recent"
//! tools = ["listing"]
//! params = { keep = 2 }
//! ```

use ctxfit_model::Value;
use ctxfit_retention::calls::shell_listing;
use ctxfit_retention::{
    read_params, register_rule, truncate_str, Decision, RetentionRule, RuleConfigError, RuleContext,
};

pub const DEFAULT_POINTER: &str = "[Old {tool} result omitted — input: {input}]";

/// Which results compete for the `keep` places (`scope = "tool"` or `"all"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Results of the same tool name.
    Tool,
    /// Every result the rule handles, whatever the tool.
    All,
}

/// The K most recent results of each navigation tool; its parameters are its fields.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeepMostRecent {
    pub keep: usize,
    pub scope: Scope,
    pub pointer: String,
    /// Only shell commands that search or list files, competing per program ([`shell_listing`]).
    pub shell_listings: bool,
}

impl Default for KeepMostRecent {
    fn default() -> Self {
        KeepMostRecent {
            keep: 3,
            scope: Scope::Tool,
            pointer: DEFAULT_POINTER.to_owned(),
            shell_listings: false,
        }
    }
}

impl KeepMostRecent {
    fn pointer_for(&self, ctx: &RuleContext<'_>) -> String {
        let input = ctx.input.to_string();
        let short = truncate_str(&input, 120);
        let input = if short.len() < input.len() {
            format!("{short}…")
        } else {
            input
        };
        // one pass over the template, so that a tool's name or input holding `{lines}` is written as it is
        let mut out = String::with_capacity(self.pointer.len() + input.len());
        let mut rest = self.pointer.as_str();
        while let Some(at) = rest.find('{') {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            let field = if rest.starts_with("{tool}") {
                out.push_str(ctx.tool_name);
                "{tool}"
            } else if rest.starts_with("{input}") {
                out.push_str(&input);
                "{input}"
            } else if rest.starts_with("{lines}") {
                let lines = ctx.content.joined_text().lines().count();
                out.push_str(&lines.to_string());
                "{lines}"
            } else {
                out.push('{');
                "{"
            };
            rest = &rest[field.len()..];
        }
        out.push_str(rest);
        out
    }
}

impl KeepMostRecent {
    /// Newer results competing with this one for the `keep` places.
    fn newer(&self, ctx: &RuleContext<'_>) -> usize {
        match self.scope {
            // the group is this tool's results, in order: counted without reading them
            Scope::Tool if !ctx.group.is_empty() => {
                ctx.group.count_after(ctx.message_index, ctx.block_index)
            }
            Scope::Tool => ctx
                .same_tool
                .iter()
                .filter(|r| {
                    r.tool_name == ctx.tool_name && r.is_after(ctx.message_index, ctx.block_index)
                })
                .count(),
            Scope::All => ctx.newer_results,
        }
    }
}

impl RetentionRule for KeepMostRecent {
    fn name(&self) -> &'static str {
        "recent"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        if self.shell_listings && shell_listing(ctx.input).is_none() {
            return Decision::Defer;
        }
        let text = ctx.content.joined_text();
        let stem = self.pointer.split('{').next().unwrap_or("");
        if !stem.is_empty() && text.starts_with(stem) && !text.contains('\n') {
            return Decision::Keep; // already a pointer
        }
        if self.newer(ctx) < self.keep {
            Decision::Keep
        } else {
            Decision::Pointer(self.pointer_for(ctx))
        }
    }

    fn depends_on_history(&self) -> bool {
        true
    }

    fn reconsider_after(&self, ctx: &RuleContext<'_>) -> usize {
        // the result leaves the window once `keep` newer ones are there
        self.keep.saturating_sub(self.newer(ctx)).max(1)
    }

    fn group_key(&self, tool_name: &str, input: &Value) -> Option<String> {
        match (self.scope, self.shell_listings) {
            (Scope::Tool, false) => Some(tool_name.to_owned()),
            (Scope::Tool, true) => shell_listing(input).map(|p| format!("{tool_name}: {p}")),
            (Scope::All, _) => None,
        }
    }

    fn reconsider_on_kinds(&self) -> Option<&'static [&'static str]> {
        match self.scope {
            // only newer results of the same tool push a result out
            Scope::Tool => Some(&[]),
            Scope::All => None,
        }
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let rule: KeepMostRecent = read_params("recent", params)?;
    if rule.shell_listings && rule.scope == Scope::All {
        return Err(RuleConfigError::new(
            "recent",
            "`shell_listings` compares each program's results with its own: it needs scope = \"tool\"",
        ));
    }
    Ok(Box::new(rule))
}

register_rule!(
    name: "recent",
    tools: &["listing"],
    summary: "keep the K most recent results of each navigation tool, older ones become a pointer",
    factory: build,
);
