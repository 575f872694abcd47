//! The tool-call index: tool_use_id → tool name, input and position, kept current as messages are appended.

use rustc_hash::FxHashMap as HashMap;

use serde_json::Value;

use crate::block::Block;
use crate::conversation::Conversation;

/// Where a tool call and its result sit in a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallSite {
    pub name: String,
    /// Index of the message holding the `ToolUse` block, and of the block in it.
    pub message: usize,
    pub block: usize,
    /// The same for its result, once seen.
    pub result: Option<(usize, usize)>,
}

/// tool_use_id → [`ToolCallSite`], built once and extended by [`ToolCallIndex::update`] with only the messages
/// appended since: a growing history is never rescanned.
///
/// The index assumes the history is append-only. When messages are removed (the history got shorter) `update`
/// rebuilds it; after reordering or replacing messages in place, call [`ToolCallIndex::rebuild`].
#[derive(Debug, Clone, Default)]
pub struct ToolCallIndex {
    sites: HashMap<String, ToolCallSite>,
    /// Earlier calls whose id a later call reused (a malformed history, or parallel calls sharing an id), oldest
    /// first: a result belongs to the latest call with its id before it — of parallel calls in that call's message,
    /// the first still unanswered —, never to a later one.
    reused: HashMap<String, Vec<ToolCallSite>>,
    indexed_messages: usize,
    /// tool_result ids whose tool_use has not been seen (yet): orphans in the history read so far.
    pending_results: HashMap<String, (usize, usize)>,
}

impl ToolCallIndex {
    pub fn build(conv: &Conversation) -> Self {
        let mut index = ToolCallIndex::default();
        index.update(conv);
        index
    }

    /// Index the messages appended since the last call.
    pub fn update(&mut self, conv: &Conversation) {
        if conv.messages.len() < self.indexed_messages {
            self.rebuild(conv);
            return;
        }
        for (mi, msg) in conv.messages.iter().enumerate().skip(self.indexed_messages) {
            for (bi, block) in msg.content.blocks.iter().enumerate() {
                match block {
                    Block::ToolUse(u) => {
                        let result = self.pending_results.remove(&u.id);
                        let displaced = self.sites.insert(
                            u.id.clone(),
                            ToolCallSite {
                                name: u.name.clone(),
                                message: mi,
                                block: bi,
                                result,
                            },
                        );
                        if let Some(earlier) = displaced {
                            self.reused.entry(u.id.clone()).or_default().push(earlier);
                        }
                    }
                    Block::ToolResult(r) => match self.answered_by(&r.tool_use_id) {
                        Some(site) => site.result = Some((mi, bi)),
                        None => {
                            self.pending_results.insert(r.tool_use_id.clone(), (mi, bi));
                        }
                    },
                    _ => {}
                }
            }
        }
        self.indexed_messages = conv.messages.len();
    }

    /// The call a result with `id` read now answers: of the calls with the id in the latest message that has one,
    /// the first still unanswered — parallel calls sharing an id take their results in order —, else the latest
    /// call (an earlier message's call left unanswered was abandoned).
    fn answered_by(&mut self, id: &str) -> Option<&mut ToolCallSite> {
        let message = self.sites.get(id)?.message;
        let parallel = self.reused.get(id).is_some_and(|earlier| {
            earlier
                .iter()
                .any(|s| s.message == message && s.result.is_none())
        });
        if parallel {
            return self
                .reused
                .get_mut(id)?
                .iter_mut()
                .find(|s| s.message == message && s.result.is_none());
        }
        self.sites.get_mut(id)
    }

    /// Forget everything and index the whole conversation again.
    pub fn rebuild(&mut self, conv: &Conversation) {
        *self = ToolCallIndex::default();
        self.update(conv);
    }

    /// The latest call with this id (see [`ToolCallIndex::call_before`] for the call a result answers).
    pub fn get(&self, tool_use_id: &str) -> Option<&ToolCallSite> {
        self.sites.get(tool_use_id)
    }

    /// The call a result at `(message, block)` answers: the latest call with its id before it — but parallel calls
    /// sharing an id in one message take their results in order. Differs from [`ToolCallIndex::get`] only when a
    /// history reuses an id.
    pub fn call_before(&self, tool_use_id: &str, at: (usize, usize)) -> Option<&ToolCallSite> {
        let before = |s: &&ToolCallSite| (s.message, s.block) < at;
        let latest = self.sites.get(tool_use_id);
        let Some(earlier) = self.reused.get(tool_use_id) else {
            return latest.filter(before);
        };
        earlier
            .iter()
            .chain(latest)
            .find(|s| s.result == Some(at))
            .or_else(|| latest.filter(before))
            .or_else(|| earlier.iter().rev().find(before))
    }

    /// Ids used by more than one call, with the positions of all their calls (message, block), in order.
    pub fn reused_ids(&self) -> impl Iterator<Item = (&str, Vec<(usize, usize)>)> {
        self.reused.iter().map(|(id, earlier)| {
            let mut at: Vec<(usize, usize)> =
                earlier.iter().map(|s| (s.message, s.block)).collect();
            if let Some(last) = self.sites.get(id) {
                at.push((last.message, last.block));
            }
            (id.as_str(), at)
        })
    }

    /// The name of the tool a result answers.
    pub fn tool_name(&self, tool_use_id: &str) -> Option<&str> {
        self.sites.get(tool_use_id).map(|s| s.name.as_str())
    }

    /// The input the tool was called with, read from the conversation (the index keeps no copy).
    pub fn input<'c>(&self, conv: &'c Conversation, tool_use_id: &str) -> Option<&'c Value> {
        let site = self.sites.get(tool_use_id)?;
        match conv.block(site.message, site.block)? {
            Block::ToolUse(u) if u.id == tool_use_id => Some(&u.input),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.sites.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// Results whose call was never seen.
    pub fn orphan_results(&self) -> impl Iterator<Item = (&str, (usize, usize))> {
        self.pending_results.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Calls that have no result (yet).
    pub fn calls_without_result(&self) -> impl Iterator<Item = (&str, &ToolCallSite)> {
        self.sites
            .iter()
            .filter(|(_, s)| s.result.is_none())
            .map(|(k, s)| (k.as_str(), s))
    }
}
