//! The compacted request: projected over the source history ([`Projection`]) or applied in place, and the
//! messages a profile drops from the front.

use super::*;

impl Compactor {
    /// Apply every decision so far to `conv` in place (the history [`Compactor::compact`] saw, possibly
    /// already compacted in place by an earlier call).
    pub fn apply(&mut self, conv: &mut Conversation) {
        if self.apply_to(conv) {
            // positions have shifted: read the history afresh next time (decisions are kept by id)
            self.state = State::default();
            self.drop = None;
        }
    }

    /// The compacted request as an owned conversation, leaving `conv` untouched (a full copy: to send the
    /// request, [`Compactor::projection`] writes it without one).
    pub fn project(&self, conv: &Conversation) -> Conversation {
        self.projection(conv).to_conversation()
    }

    /// A view of the compacted request that borrows everything unchanged from `conv`: only replaced blocks
    /// are held, so it costs a small fraction of the history.
    pub fn projection<'a>(&'a self, conv: &'a Conversation) -> Projection<'a> {
        Projection {
            source: conv,
            replaced: &self.state.replaced,
            decided: &self.decided,
            drop: self.drop.clone(),
            changed: &self.state.changed,
            state: self.state.id.0,
        }
    }

    /// Write the decisions into `conv`; true when messages were dropped.
    pub(super) fn apply_to(&self, conv: &mut Conversation) -> bool {
        let projection = self.projection(conv);
        let changed: Vec<(usize, Message)> = projection
            .replaced
            .keys()
            .filter(|&&i| i < conv.messages.len())
            .map(|&i| (i, projection.message(i).into_owned()))
            .collect();
        for (i, msg) in changed {
            conv.messages[i] = msg;
        }
        match &self.drop {
            Some(range) => {
                conv.messages.drain(range.clone());
                true
            }
            None => false,
        }
    }
}
/// The compacted request as a view over the source history: unchanged messages are borrowed, changed ones
/// are built block by block (unchanged blocks cloned, replaced ones from the compactor's decisions).
pub struct Projection<'a> {
    source: &'a Conversation,
    replaced: &'a HashMap<usize, Vec<(usize, Replacement)>>,
    decided: &'a HashMap<ResultKey, Sticky>,
    drop: Option<Range<usize>>,
    changed: &'a [usize],
    state: u64,
}

impl<'a> Projection<'a> {
    /// Indices (in the source) of the messages the request keeps.
    fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.source.messages.len())
            .filter(|i| !self.drop.as_ref().is_some_and(|r| r.contains(i)))
    }

    /// What a message's decisions are, as one number: the blocks they change, and for each result what it is cut
    /// to (its size after the cut, in tokens and characters). A decision made again is always smaller, so its
    /// stamp differs.
    fn stamp(&self, changes: &[(usize, Replacement)]) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        changes.len().hash(&mut h);
        for (block, replacement) in changes {
            block.hash(&mut h);
            match replacement {
                Replacement::Result(key) => match self.decided.get(key) {
                    Some(d) => (1u8, d.tokens_after, d.chars_after).hash(&mut h),
                    None => 2u8.hash(&mut h),
                },
                Replacement::ClearInput => 3u8.hash(&mut h),
            }
        }
        h.finish() as usize
    }

    /// Message `i` of the source as the request sends it.
    pub fn message(&self, i: usize) -> std::borrow::Cow<'a, Message> {
        let msg = &self.source.messages[i];
        let Some(changes) = self.replaced.get(&i) else {
            return std::borrow::Cow::Borrowed(msg);
        };
        let mut blocks = Vec::with_capacity(msg.content.blocks.len());
        for (bi, block) in msg.content.blocks.iter().enumerate() {
            let change = changes.iter().find(|(b, _)| *b == bi).map(|(_, r)| r);
            let decided_content =
                |key: &ResultKey| self.decided.get(key).and_then(|d| d.content.as_ref());
            blocks.push(match (change, block) {
                (Some(Replacement::Result(id)), Block::ToolResult(r))
                    if decided_content(id).is_some() =>
                {
                    Block::ToolResult(ctxfit_model::ToolResult {
                        tool_use_id: r.tool_use_id.clone(),
                        content: decided_content(id).cloned().unwrap_or_default(),
                        is_error: r.is_error,
                        extra: r.extra.clone(),
                    })
                }
                (Some(Replacement::ClearInput), Block::ToolUse(u)) => {
                    let mut u = u.clone();
                    u.set_input(Value::Object(Default::default()));
                    Block::ToolUse(u)
                }
                _ => block.clone(),
            });
        }
        std::borrow::Cow::Owned(Message {
            role: msg.role.clone(),
            content: Content {
                blocks,
                shape: msg.content.shape,
            },
            extra: msg.extra.clone(),
        })
    }

    /// The source messages the request leaves out (`max_conversation_messages`), if any.
    pub fn dropped(&self) -> Option<Range<usize>> {
        self.drop.clone()
    }

    /// The source messages with sticky decisions — `(index, stamp)` in no particular order — among those the
    /// request keeps; every other kept message is sent as the source has it. While a message's stamp stays the
    /// same, [`Projection::message`] gives the same message: a caller holding its own copy of the source's
    /// messages (a binding to another language, a proxy with the client's bytes) sends that copy for the rest and
    /// converts each of these once per stamp. The stamp changes with every decision about the message's blocks —
    /// one more, and one made again (the budget's escalation turns a cut result into a pointer: as many decisions
    /// as before, one of them smaller) — so a stale copy is never sent.
    pub fn changes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.replaced
            .iter()
            .map(|(&i, changes)| (i, self.stamp(changes)))
            .filter(|(i, _)| {
                *i < self.source.messages.len()
                    && !self.drop.as_ref().is_some_and(|r| r.contains(i))
            })
    }

    /// The messages whose decisions changed since `mark` (from [`Projection::change_mark`] of an earlier
    /// projection of the same compactor), with their stamps as [`Projection::changes`] gives them — what a caller
    /// holding its own copy of the messages converts again, in time proportional to what changed rather than to
    /// every message ever changed. A message may come more than once; one whose decisions were all taken back
    /// comes with the stamp of none (its original). A mark of another state (the compactor read the history
    /// afresh since) reads from the beginning. Dropped messages are not left out: the caller drops them.
    pub fn changes_since(&self, mark: ChangeMark) -> impl Iterator<Item = (usize, usize)> + '_ {
        let from = if mark.state == self.state && mark.seen <= self.changed.len() {
            mark.seen
        } else {
            0
        };
        self.changed[from..]
            .iter()
            .copied()
            .filter(|&i| i < self.source.messages.len())
            .map(|i| {
                (
                    i,
                    self.stamp(self.replaced.get(&i).map_or(&[][..], Vec::as_slice)),
                )
            })
    }

    /// Where the log of changed messages ends now: the mark for the next [`Projection::changes_since`].
    pub fn change_mark(&self) -> ChangeMark {
        ChangeMark {
            state: self.state,
            seen: self.changed.len(),
        }
    }

    /// Every message of the request, in order.
    pub fn messages(&self) -> impl Iterator<Item = std::borrow::Cow<'a, Message>> + '_ {
        self.kept().map(|i| self.message(i))
    }

    /// The request as an owned conversation (a full copy).
    pub fn to_conversation(&self) -> Conversation {
        Conversation {
            format: self.source.format,
            envelope: self.source.envelope,
            system: self.source.system.clone(),
            messages: self.messages().map(std::borrow::Cow::into_owned).collect(),
            tools: self.source.tools.clone(),
            extra: self.source.extra.clone(),
        }
    }

    /// Write the request as JSON in the source's wire format, one message at a time: the whole compacted
    /// history is never held in memory.
    pub fn write_json(&self, mut w: impl std::io::Write, pretty: bool) -> std::io::Result<()> {
        let write_message = |m: &Message| ctxfit_model::write_message(self.source.format, m);
        let write_value = |w: &mut dyn std::io::Write, v: &Value| {
            if pretty {
                serde_json::to_writer_pretty(w, v)
            } else {
                serde_json::to_writer(w, v)
            }
            .map_err(std::io::Error::from)
        };
        let write_messages = |w: &mut dyn std::io::Write| -> std::io::Result<()> {
            w.write_all(b"[")?;
            for (n, m) in self.messages().enumerate() {
                if n > 0 {
                    w.write_all(b",")?;
                }
                write_value(w, &write_message(&m))?;
            }
            w.write_all(b"]")
        };
        let header = Conversation {
            messages: Vec::new(),
            ..Conversation::new(self.source.format)
        };
        let header = Conversation {
            envelope: self.source.envelope,
            system: self.source.system.clone(),
            tools: self.source.tools.clone(),
            extra: self.source.extra.clone(),
            ..header
        };
        match ctxfit_model::to_value(&header) {
            Value::Object(fields) => {
                w.write_all(b"{")?;
                for (n, (k, v)) in fields.iter().enumerate() {
                    if n > 0 {
                        w.write_all(b",")?;
                    }
                    write_value(&mut w, &Value::String(k.clone()))?;
                    w.write_all(b":")?;
                    if k == self.source.format.messages_key() && v.is_array() {
                        write_messages(&mut w)?;
                    } else {
                        write_value(&mut w, v)?;
                    }
                }
                w.write_all(b"}")
            }
            _ => write_messages(&mut w),
        }
    }
}

/// The input of the call at `at`.
pub(super) fn call_input(conv: &Conversation, at: Option<(usize, usize)>) -> Option<&Value> {
    let (m, b) = at?;
    match conv.block(m, b)? {
        Block::ToolUse(u) => Some(&u.input),
        _ => None,
    }
}

/// Messages to drop from the front to keep at most `max` (0 = no limit): never the leading system messages or
/// the first user message, and never leaving a tool result whose call was dropped.
pub(super) fn drop_range(conv: &Conversation, max: usize) -> Option<Range<usize>> {
    let n = conv.messages.len();
    if max == 0 || n <= max {
        return None;
    }
    let head = conv
        .messages
        .iter()
        .position(|m| m.role == Role::User)
        .map_or_else(
            || {
                conv.messages
                    .iter()
                    .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                    .count()
            },
            |i| i + 1,
        );
    let mut start = n - max.saturating_sub(head).min(n);
    if start <= head {
        return None;
    }
    let is_result_message = |m: &Message| {
        m.content
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolResult(_)))
    };
    while start < n && is_result_message(&conv.messages[start]) {
        start += 1;
    }
    Some(head..start)
}
