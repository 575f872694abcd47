//! What a decision is made of: a result as the rules see it, what the rules decide, the change a cut makes,
//! what waits and why, and the sticky record a decision leaves.

use super::*;

/// A result as the rules see it: its own content, or the output text inside a tool's JSON wrapper
/// ([`WrappedOutput`]), whose replacement goes back into the wrapper.
pub(super) enum View<'c> {
    Plain(&'c Content),
    Wrapped(WrappedOutput, Content),
}

impl<'c> View<'c> {
    pub(super) fn of(content: &'c Content) -> View<'c> {
        match WrappedOutput::of_content(content) {
            Some(w) => {
                let output = w.output_content();
                View::Wrapped(w, output)
            }
            None => View::Plain(content),
        }
    }

    pub(super) fn content(&self) -> &Content {
        match self {
            View::Plain(c) => c,
            View::Wrapped(_, c) => c,
        }
    }

    /// A replacement of the viewed content as a replacement of the result — with the result's blocks of kinds
    /// the model does not know, which no cut drops: a block such as Anthropic's `tool_reference` (Claude Code's
    /// `ToolSearch` answers with them) is what makes a deferred tool callable, not text to shorten; kept in
    /// their order after what the cut left, unless the replacement holds them already.
    pub(super) fn back(&self, original: &Content, replacement: Content) -> Content {
        let mut back = match self {
            View::Plain(_) => replacement,
            View::Wrapped(w, _) => w.wrap_content(original, replacement),
        };
        fn unknown(c: &Content) -> impl Iterator<Item = &Block> {
            c.blocks.iter().filter(|b| matches!(b, Block::Unknown(_)))
        }
        // (compared in place: a cut of a result that holds none, nearly every one, copies nothing)
        if unknown(original).next().is_some() && !unknown(&back).eq(unknown(original)) {
            back.blocks.retain(|b| !matches!(b, Block::Unknown(_)));
            back.blocks.extend(unknown(original).cloned());
            back.shape = ctxfit_model::Shape::List;
        }
        back
    }
}

/// Which new results can change a history-dependent rule's `Keep`.
#[derive(Debug, Clone)]
pub(super) enum WaitingOn {
    /// Results of this group of this rule.
    Group(usize, String),
    /// Results of the result's own kind and these kinds.
    Kinds(&'static [&'static str]),
    /// Any result.
    Any,
}

/// A decision about to be committed, or a cut held back waiting for its turn.
#[derive(Clone)]
pub(super) struct Change {
    pub(super) content: Content,
    pub(super) tokens_after: usize,
    pub(super) chars_before: usize,
    pub(super) rule: &'static str,
    pub(super) action: Action,
    pub(super) clear_input: bool,
    /// The count of tool results in the history when its rule was asked (last), for a cut held back.
    pub(super) asked_at: usize,
    /// What the rules consulted of the shown lines when last asked, where nothing else they see changes as the
    /// history grows (no rule of the chain depends on the history): while none of it changes, they answer
    /// the same.
    pub(super) consulted: Option<Consulted>,
}

/// Whether a held cut's rule, last asked when the history had `asked_at` tool results, is asked again with
/// `results` in it: once the results have grown by a quarter. Asking at every request would make each request
/// cost the size of everything held, and a long history holds many cuts too small to pay for rewriting the long
/// cached tail after them; asking as the history grows geometrically asks each a few times over a session, and
/// still lets it leave out what later results showed.
pub(super) fn reask_due(asked_at: usize, results: usize) -> bool {
    results > asked_at && 4 * results >= 5 * asked_at
}

/// What the rules decide about a pending result.
pub(super) enum Asked {
    /// Keep it as it is, for good.
    Keep,
    /// Kept by a history-dependent rule: ask again once this many more results it depends on have arrived.
    Wait(WaitingOn, usize),
    Cut(Change),
}

/// What replaces a block in the request.
#[derive(Debug, Clone)]
pub(super) enum Replacement {
    /// The sticky content decided for this result.
    Result(ResultKey),
    /// The call's input, cleared.
    ClearInput,
}

/// A decision that, once made, is repeated byte for byte in every later request (saved as
/// `Decided<Value>`, the content as `Content::to_json` writes it).
pub(super) type Sticky = super::saved::Decided<Content>;
