//! What counts as a reference for recall: an identifier an assistant turn uses that, so far, only tool results
//! have shown. Shared by the replay's recall and the oracle, so both mean the same thing.

use ctxfit_model::{Block, Conversation, Message, Role};
use rustc_hash::FxHashSet;

use crate::idents::identifiers;
use crate::{block_texts, for_each_text};

/// The messages of the model response that begins at `at`: it and the assistant messages right after it.
fn response(messages: &[Message], at: usize) -> &[Message] {
    let len = messages[at..]
        .iter()
        .take_while(|m| m.role == Role::Assistant)
        .count()
        .max(1);
    &messages[at..(at + len).min(messages.len())]
}

/// Where identifiers have been seen so far: in tool results, or anywhere else (system, user, assistant).
#[derive(Default)]
pub(crate) struct Provenance {
    in_results: FxHashSet<String>,
    elsewhere: FxHashSet<String>,
}

impl Provenance {
    pub(crate) fn new(conv: &Conversation) -> Self {
        let mut p = Provenance::default();
        if let Some(system) = &conv.system {
            for b in &system.blocks {
                for_each_text(b, |t| {
                    p.elsewhere.extend(identifiers(t).map(str::to_owned));
                });
            }
        }
        p
    }

    /// The references of the model response that begins at message `at` (all its messages: in Responses
    /// documents the reasoning, text and calls of one response are messages in a row): identifiers it uses that
    /// so far only tool results have shown — each once, in the order the response first uses them.
    pub(crate) fn references(&self, messages: &[Message], at: usize) -> Vec<String> {
        let mut texts = Vec::new();
        response(messages, at)
            .iter()
            .flat_map(|m| &m.content.blocks)
            .for_each(|b| block_texts(b, &mut texts));
        let mut once = FxHashSet::default();
        texts
            .iter()
            .flat_map(|t| identifiers(t))
            .filter(|id| self.in_results.contains(*id) && !self.elsewhere.contains(*id))
            .filter(|id| once.insert(*id))
            .map(str::to_owned)
            .collect()
    }

    /// Record the identifiers of a message that joins the history.
    pub(crate) fn join(&mut self, msg: &Message) {
        for block in &msg.content.blocks {
            let into = if matches!(block, Block::ToolResult(_)) {
                &mut self.in_results
            } else {
                &mut self.elsewhere
            };
            for_each_text(block, |t| into.extend(identifiers(t).map(str::to_owned)));
        }
    }
}
