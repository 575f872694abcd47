//! The plugin API of ctxfit: how a rule decides what to keep of a stale tool result, and how it registers.
//!
//! A **rule** is a pure function of one stale tool result in its context ([`RuleContext`]: the tool, its input,
//! where it sits, how many turns ago the model saw it, its size, and the other results of the same tool) to a
//! [`Decision`]: keep it, replace its content, or replace it with a one-line pointer. Rules never see or call each
//! other, and never see the compactor: composing them by tool name, applying decisions, keeping them sticky and
//! keeping tool_use/tool_result pairs valid is the compactor's job.
//!
//! The key decision is **registration by `inventory`**: a rule crate declares a const [`RuleDescriptor`] with
//! [`register_rule!`] and is found at run time by name ([`Registry::get`]) — no central list to edit, so a team
//! adds a rule for its own tool in its own crate and names it in its policy. `inventory` only sees crates the
//! final binary links, and Cargo links a dependency only when something references it: `ctxfit-plugins` references
//! every built-in rule crate, and a custom rule crate must be referenced too (`use my_rule as _;`).

pub mod calls;
mod params;
mod record;
mod shown;
mod text;
mod wrapped;

use std::collections::BTreeMap;
use std::fmt;

use ctxfit_model::{Block, Content, Conversation, Value};

pub use params::{read_params, type_in_words};
pub use record::{record_member_line, record_members};
pub use shown::{
    each_line, is_blank, line_key, line_number_prefix, normalized_line, split_lines, trim_line,
    trim_line_start, NothingShown, ShownLines,
};
pub use text::{
    char_count, content_chars, ends_with_marker, holds_media, text_exceeds, thousands,
    truncate_content, truncate_str,
};
pub use wrapped::WrappedOutput;

#[doc(hidden)]
pub use inventory;

/// One earlier or later result of the same tool, for rules that compare reads of one file.
#[derive(Debug, Clone, Copy)]
pub struct SiblingResult<'a> {
    pub tool_use_id: &'a str,
    /// The tool's name as called (`""` when the call is not in the history).
    pub tool_name: &'a str,
    pub input: &'a Value,
    pub message_index: usize,
    pub block_index: usize,
    pub content: &'a Content,
}

impl SiblingResult<'_> {
    /// Does this result come after the one at (message, block)?
    pub fn is_after(&self, message_index: usize, block_index: usize) -> bool {
        (self.message_index, self.block_index) > (message_index, block_index)
    }
}

/// Where a tool result and its call sit: (message, block) of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultRef {
    pub result: (usize, usize),
    pub call: Option<(usize, usize)>,
}

/// Every result of one tool kind, oldest first, read lazily from the history (nothing is built per request).
#[derive(Debug, Clone, Copy)]
pub struct SameTool<'a> {
    refs: &'a [ResultRef],
    conv: &'a Conversation,
}

impl<'a> SameTool<'a> {
    pub fn new(refs: &'a [ResultRef], conv: &'a Conversation) -> Self {
        SameTool { refs, conv }
    }

    pub fn len(&self) -> usize {
        self.refs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// How many of the results come after the one at (message, block): a binary search, as they are in order.
    pub fn count_after(&self, message_index: usize, block_index: usize) -> usize {
        self.refs.len()
            - self
                .refs
                .partition_point(|r| r.result <= (message_index, block_index))
    }

    /// The results, oldest first, with the input of their call.
    pub fn iter(&self) -> impl Iterator<Item = SiblingResult<'a>> + 'a {
        let conv = self.conv;
        self.refs.iter().filter_map(move |r| {
            let Some(Block::ToolResult(result)) = conv.block(r.result.0, r.result.1) else {
                return None;
            };
            let call = r
                .call
                .and_then(|(m, b)| conv.block(m, b))
                .and_then(|b| match b {
                    Block::ToolUse(u) => Some(u),
                    _ => None,
                });
            Some(SiblingResult {
                tool_use_id: &result.tool_use_id,
                tool_name: call.map_or("", |u| u.name.as_str()),
                input: call.map_or(&Value::Null, |u| &u.input),
                message_index: r.result.0,
                block_index: r.result.1,
                content: &result.content,
            })
        })
    }
}

/// Every tool result of the history by tool kind (what the compactor keeps current as messages arrive).
pub trait ResultIndex {
    /// The results of a kind, oldest first.
    fn results_of(&self, kind: &str) -> &[ResultRef];
}

/// An index with nothing in it, for contexts built by hand (tests, tools).
pub struct NoResults;

impl ResultIndex for NoResults {
    fn results_of(&self, _kind: &str) -> &[ResultRef] {
        &[]
    }
}

/// What a rule sees of one stale tool result.
#[derive(Clone, Copy)]
pub struct RuleContext<'a> {
    /// The tool's name as the agent called it (`Read`, `str_replace_editor`, ...).
    pub tool_name: &'a str,
    /// The kind the policy's aliases map it to (`read_file`, `edit_file`, `bash`, `listing`), or the name itself.
    pub tool_kind: &'a str,
    pub tool_use_id: &'a str,
    /// The input the tool was called with.
    pub input: &'a Value,
    /// The result's content, as the agent received it — or, when the tool wrapped its output in a JSON
    /// envelope (`{"output": "…", "metadata": {…}}`, `{"status": "OK", "message": "…"}`, [`WrappedOutput`]),
    /// that text: the compactor writes a replacement back into the envelope.
    pub content: &'a Content,
    pub is_error: bool,
    /// Position of the result: message index and block index in it.
    pub message_index: usize,
    pub block_index: usize,
    /// How many assistant turns have followed the result (≥ 1: the model has seen it).
    pub turns_ago: usize,
    /// Size of `content` in Unicode scalar values, and of the result in estimated tokens.
    pub chars: usize,
    pub tokens: usize,
    /// How many tool results (of any tool) the history holds after this one.
    pub newer_results: usize,
    /// Every result of the same tool kind in the history, oldest first, this one included.
    pub same_tool: SameTool<'a>,
    /// Every result of this result's group (see [`RetentionRule::group_key`]), oldest first, this one included;
    /// empty when the rule does not group.
    pub group: SameTool<'a>,
    /// The whole history (read-only), for rules that look at other tools' calls (edits after a read).
    pub conversation: &'a Conversation,
    /// Every result of the history by kind.
    pub results: &'a dyn ResultIndex,
    /// The lines the request shows outside this result for good (see [`ShownLines`]).
    pub shown: &'a dyn ShownLines,
}

impl<'a> RuleContext<'a> {
    /// The results of another tool kind, oldest first.
    pub fn results_of(&self, kind: &str) -> SameTool<'a> {
        SameTool::new(self.results.results_of(kind), self.conversation)
    }
}

impl fmt::Debug for RuleContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleContext")
            .field("tool_name", &self.tool_name)
            .field("tool_kind", &self.tool_kind)
            .field("tool_use_id", &self.tool_use_id)
            .field("message_index", &self.message_index)
            .field("turns_ago", &self.turns_ago)
            .field("chars", &self.chars)
            .finish()
    }
}

/// A rule's verdict on one stale tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Keep,
    /// Replace the result's content (it must not be larger; the compactor keeps the original if it is).
    Replace(Content),
    /// Replace the result with a one-line pointer text.
    Pointer(String),
    /// Not this rule's business after all (a shell command that is not a file read, for the read rule): the
    /// next rule of the profile that handles the tool decides.
    Defer,
}

/// A retention rule. Implementations must be pure: the same context gives the same decision.
pub trait RetentionRule: Send + Sync {
    /// The registered name.
    fn name(&self) -> &'static str;

    /// Decide what to keep of one stale tool result.
    fn decide(&self, ctx: &RuleContext<'_>) -> Decision;

    /// Can a `Keep` change as the history grows (the rule looks at `turns_ago` or later results of the same
    /// tool)? When `false` (the default) the compactor asks once per result, which keeps each turn's work
    /// proportional to the new content.
    fn depends_on_history(&self) -> bool {
        false
    }

    /// For a history-dependent rule: can a `Defer` turn into a decision as the history grows? `false` for a rule
    /// that defers by what the result itself is (`images` on a result without images): the result is then the
    /// next rule's for good, as if this rule were not in the chain. Default: [`RetentionRule::depends_on_history`].
    fn defer_depends_on_history(&self) -> bool {
        self.depends_on_history()
    }
    /// For a history-dependent rule that keeps this result: is the `Keep` final, whatever comes later (a result it
    /// cut in an earlier pass over the history: `images` on a compacted history compacted again)? Then the
    /// compactor keeps the result for good, as a history-independent rule's, and counts its lines as shown.
    /// Default: `false`.
    fn keep_is_final(&self, _ctx: &RuleContext<'_>) -> bool {
        false
    }
    /// For a history-dependent rule: the tool kinds whose new results can change a `Keep` (the result's own kind
    /// always can). `None` (the default) means any new result can. The compactor asks again about a kept result
    /// only when such a result has arrived since it last asked.
    fn reconsider_on_kinds(&self) -> Option<&'static [&'static str]> {
        None
    }

    /// For a history-dependent rule that just kept a result: how many more results that can change its mind
    /// (of its group, or of the kinds of [`RetentionRule::reconsider_on_kinds`]) must arrive before the answer
    /// can change — `recent` keeping the 8th newest of 10 knows it needs 2 more. The compactor does not ask
    /// again before then, so a window of N results costs one decision per result, not one per result per
    /// request. Default 1: ask at the next one.
    fn reconsider_after(&self, _ctx: &RuleContext<'_>) -> usize {
        1
    }

    /// For a history-dependent rule: the group a call belongs to, when only new results of the same group can
    /// change a `Keep` (reads of one file, results of one tool). The compactor counts results per group as
    /// they arrive and asks again about a kept result only when its group has grown — so a turn costs the
    /// rule's decisions on the groups it touched, not on the whole history. `None`: use `reconsider_on_kinds`.
    fn group_key(&self, _tool_name: &str, _input: &Value) -> Option<String> {
        None
    }
}

/// Why a rule could not be built from its parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule `{rule}`: {message}")]
pub struct RuleConfigError {
    pub rule: String,
    pub message: String,
}

impl RuleConfigError {
    pub fn new(rule: &str, message: impl Into<String>) -> Self {
        RuleConfigError {
            rule: rule.to_owned(),
            message: message.into(),
        }
    }
}

/// Builds a rule from the `params` table of its policy entry (`null` when there is none).
pub type RuleFactory = fn(&Value) -> Result<Box<dyn RetentionRule>, RuleConfigError>;

/// What a rule crate registers.
pub struct RuleDescriptor {
    /// Unique name, used in policies.
    pub name: &'static str,
    /// Tool kinds or names it handles by default; `"*"` for any tool.
    pub tools: &'static [&'static str],
    /// One line for `ctxfit policy show` and the docs.
    pub summary: &'static str,
    pub factory: RuleFactory,
    /// Where it was registered (`module_path!()`), to name both sides of a duplicate.
    pub origin: &'static str,
}

impl fmt::Debug for RuleDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleDescriptor")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .field("origin", &self.origin)
            .finish()
    }
}

impl RuleDescriptor {
    /// Does this rule handle a tool of this kind or name by default?
    pub fn handles(&self, tool_kind: &str, tool_name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| *t == "*" || *t == tool_kind || *t == tool_name)
    }
}

inventory::collect!(RuleDescriptor);

/// Register a rule under a name, with the tools it handles by default, a one-line summary and a factory that
/// builds it from its `params`; the macro fills in where it was registered. Rule crates need not depend on
/// `inventory`.
///
/// ```
/// use ctxfit_retention::{register_rule, Decision, Registry, RetentionRule, RuleConfigError, RuleContext};
/// use ctxfit_model::Value;
///
/// /// Keeps the first line of a stale SQL result.
/// struct FirstLine;
///
/// impl RetentionRule for FirstLine {
///     fn name(&self) -> &'static str {
///         "sql-first-line"
///     }
///     fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
///         let text = ctx.content.joined_text();
///         match text.split_once('\n') {
///             Some((first, _)) => Decision::Pointer(format!("{first} [rest omitted — re-run the query]")),
///             None => Decision::Keep,
///         }
///     }
/// }
///
/// fn build(_params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
///     Ok(Box::new(FirstLine))
/// }
///
/// register_rule!(
///     name: "sql-first-line",
///     tools: &["sql_query"],
///     summary: "keep the first line of a stale query result",
///     factory: build,
/// );
///
/// // found by name at run time, like the built-in rules
/// let registry = Registry::collect().unwrap();
/// let rule = registry.get("sql-first-line").unwrap();
/// assert!(rule.handles("", "sql_query"));
/// assert!((rule.factory)(&Value::Null).is_ok());
/// ```
#[macro_export]
macro_rules! register_rule {
    (name: $name:expr, tools: $tools:expr, summary: $summary:expr, factory: $factory:expr $(,)?) => {
        $crate::inventory::submit! {
            $crate::RuleDescriptor {
                name: $name,
                tools: $tools,
                summary: $summary,
                factory: $factory,
                origin: module_path!(),
            }
        }
    };
}

/// Two rules registered under one name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule `{name}` is registered twice: by `{first}` and by `{second}`")]
pub struct DuplicateRule {
    pub name: String,
    pub first: String,
    pub second: String,
}

/// Every rule linked into this binary, by name.
#[derive(Debug)]
pub struct Registry {
    rules: BTreeMap<&'static str, &'static RuleDescriptor>,
}

impl Registry {
    /// Collect the registered rules; fails on a duplicate name, naming both registrations.
    pub fn collect() -> Result<Registry, DuplicateRule> {
        let mut rules: BTreeMap<&'static str, &'static RuleDescriptor> = BTreeMap::new();
        let mut all: Vec<&'static RuleDescriptor> = inventory::iter::<RuleDescriptor>().collect();
        all.sort_by_key(|d| (d.name, d.origin));
        for d in all {
            if let Some(first) = rules.insert(d.name, d) {
                return Err(DuplicateRule {
                    name: d.name.to_owned(),
                    first: first.origin.to_owned(),
                    second: d.origin.to_owned(),
                });
            }
        }
        Ok(Registry { rules })
    }

    pub fn get(&self, name: &str) -> Option<&'static RuleDescriptor> {
        self.rules.get(name).copied()
    }

    /// Sorted names of every registered rule.
    pub fn names(&self) -> Vec<&'static str> {
        self.rules.keys().copied().collect()
    }

    /// Rules that handle a tool by default.
    pub fn for_tool(&self, tool_kind: &str, tool_name: &str) -> Vec<&'static RuleDescriptor> {
        self.rules
            .values()
            .copied()
            .filter(|d| d.handles(tool_kind, tool_name))
            .collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static RuleDescriptor> + '_ {
        self.rules.values().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_after_one_are_counted_by_position() {
        let conv = Conversation::new(ctxfit_model::WireFormat::Anthropic);
        let refs: Vec<ResultRef> = [(2, 0), (4, 0), (4, 1), (6, 0)]
            .into_iter()
            .map(|result| ResultRef { result, call: None })
            .collect();
        let same = SameTool::new(&refs, &conv);
        assert_eq!(same.count_after(1, 0), 4);
        assert_eq!(same.count_after(2, 0), 3);
        assert_eq!(same.count_after(4, 0), 2);
        assert_eq!(same.count_after(4, 1), 1);
        assert_eq!(same.count_after(5, 3), 1);
        assert_eq!(same.count_after(6, 0), 0);
        assert_eq!(SameTool::new(&[], &conv).count_after(0, 0), 0);
    }
}
