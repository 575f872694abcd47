//! The oracle: an evaluation-only policy that reads the session's future.
//!
//! Of each stale tool result it keeps only the lines holding an identifier that a later turn uses for the first
//! time (a *reference*, as the replay's recall counts them), and drops the rest at once. No real policy can do
//! this — it needs to know what the agent will do — so it is not a registered rule and no profile can name it:
//! it exists to draw the corner of the frontier (the most a policy could save at full recall), against which
//! every real policy's saving is measured.

use ctxfit_model::{Content, Conversation};
use ctxfit_retention::{Decision, RetentionRule, RuleContext};
use rustc_hash::FxHashMap;

use crate::idents::identifiers;
use crate::references::Provenance;

/// For each identifier that is ever a reference, the index of the assistant message that first uses it.
pub(crate) fn future_references(conv: &Conversation) -> FxHashMap<String, usize> {
    let mut seen = Provenance::new(conv);
    let mut first_use = FxHashMap::default();
    for (mi, msg) in conv.messages.iter().enumerate() {
        if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
            for id in seen.references(&conv.messages, mi) {
                first_use.entry(id).or_insert(mi);
            }
        }
        seen.join(msg);
    }
    first_use
}

/// Keeps the lines of a stale result that hold an identifier a later turn first uses.
pub(crate) struct Oracle {
    pub(crate) first_use: FxHashMap<String, usize>,
}

impl RetentionRule for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        // the request being built ends just before the assistant message at this index
        let now = ctx.conversation.messages.len();
        let text = ctx.content.joined_text();
        let needed = |line: &str| {
            identifiers(line).any(|id| self.first_use.get(id).is_some_and(|&t| t >= now))
        };
        let kept: Vec<&str> = text.lines().filter(|l| needed(l)).collect();
        if kept.len() == text.lines().count() && ctx.content.is_plain_text() {
            return Decision::Keep;
        }
        Decision::Replace(Content::text(kept.join("\n")))
    }
}
