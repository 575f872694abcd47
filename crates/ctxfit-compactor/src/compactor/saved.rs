//! The saved state: what a compactor must remember across a restart to send the same bytes ([`SavedState`]),
//! and how it is saved and put back.

use super::*;

/// What a compactor must remember across a restart to send the same bytes: its decisions, and the cuts waiting
/// for their turn. Saved with
/// [`Compactor::save`], serialisable with serde (JSON, or any serde format), put back with
/// [`Compactor::restore`]. Everything else it knows is rebuilt from the history on the next request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedState {
    /// The format of this structure; [`SavedState::VERSION`] today.
    pub version: u32,
    /// The profile the decisions were made under: restoring into another one is refused.
    pub profile: String,
    /// Messages of the last request compacted before the save (what the provider has cached).
    pub messages: usize,
    /// Results replaced for good, in history order.
    pub decided: Vec<SavedDecision>,
    /// Results a rule chose to keep for good: (tool_use_id, which result with that id, from 0).
    pub kept: Vec<(String, u32)>,
    pub compacted_results: usize,
    /// When the last request before the save was sent, in milliseconds since the Unix epoch, if the caller said
    /// ([`Compactor::compact_at`]): after a restart, whether the provider's cache has expired since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sent_at: Option<u64>,
    /// Cuts a rule chose that wait for their turn (the payback rule, the reclaim checks), in history order: the
    /// replacement was settled when the rule was asked, and is made as it is when the cut pays back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<SavedHeld>,
    /// Requests before the save that found the provider's cache expired (the payback rule's forecast).
    #[serde(default)]
    pub expired_requests: usize,
    /// What the conversation had cost by the save against sending everything (the regret bound's accounting).
    #[serde(default)]
    pub ledger: Ledger,
    /// The model's context window a provider's refusal taught ([`Compactor::learn_window`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<crate::window::Window>,
}

impl SavedState {
    pub const VERSION: u32 = 1;
}

/// One sticky decision: the result it is about, and what it became.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedDecision {
    pub tool_use_id: String,
    /// Which result with this id (ids are reused by some agents), from 0.
    pub nth: u32,
    /// The result's new content, as `Content::to_json` writes it, and what the cut saved.
    #[serde(flatten)]
    pub decision: Decided<Value>,
}

/// A decision made for good: what a tool result became, and what that saved. In a running compactor the content
/// is the model's `Content`; saved, it is the JSON `Content::to_json` writes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decided<C> {
    /// The result's new content (`None` when only the call's input was cleared).
    pub content: Option<C>,
    pub clear_input: bool,
    pub rule: String,
    pub chars_before: usize,
    pub chars_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub input_tokens_saved: usize,
}

impl<C> Decided<C> {
    /// The same decision with its content written another way.
    pub fn map_content<D>(&self, write: impl FnOnce(&C) -> D) -> Decided<D> {
        Decided {
            content: self.content.as_ref().map(write),
            clear_input: self.clear_input,
            rule: self.rule.clone(),
            chars_before: self.chars_before,
            chars_after: self.chars_after,
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            input_tokens_saved: self.input_tokens_saved,
        }
    }
}

/// One cut waiting for its turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedHeld {
    pub tool_use_id: String,
    /// Which result with this id, from 0.
    pub nth: u32,
    /// The result's content once cut, as `Content::to_json` writes it.
    pub content: Value,
    /// The rule that chose it (one of the profile's).
    pub rule: String,
    pub action: Action,
    pub clear_input: bool,
    pub chars_before: usize,
    pub tokens_after: usize,
    /// The count of tool results in the history when its rule was last asked (it is asked again as the history
    /// grows).
    pub asked_at: usize,
}

/// Why a saved state cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "saved state version {found} is not supported (this build reads version {})",
        SavedState::VERSION
    )]
    Version { found: u32 },
    #[error("saved state is of profile `{saved}`, this compactor runs `{running}`")]
    Profile { saved: String, running: String },
}

impl Compactor {
    /// Its decisions, to save across a restart (see [`SavedState`]).
    pub fn save(&self) -> SavedState {
        let mut decided: Vec<SavedDecision> = self
            .decided
            .iter()
            .map(|((id, nth), d)| SavedDecision {
                tool_use_id: id.clone(),
                nth: *nth,
                decision: d.map_content(Content::to_json),
            })
            .collect();
        decided.sort_by(|a, b| (&a.tool_use_id, a.nth).cmp(&(&b.tool_use_id, b.nth)));
        let mut kept: Vec<(String, u32)> = self.kept.iter().cloned().collect();
        kept.sort();
        let mut held: Vec<SavedHeld> = self
            .held
            .iter()
            .map(|((id, nth), c)| SavedHeld {
                tool_use_id: id.clone(),
                nth: *nth,
                content: c.content.to_json(),
                rule: c.rule.to_owned(),
                action: c.action,
                clear_input: c.clear_input,
                chars_before: c.chars_before,
                tokens_after: c.tokens_after,
                asked_at: c.asked_at,
            })
            .collect();
        held.sort_by(|a, b| (&a.tool_use_id, a.nth).cmp(&(&b.tool_use_id, b.nth)));
        SavedState {
            version: SavedState::VERSION,
            profile: self.settings.profile.clone(),
            messages: self.state.messages,
            decided,
            kept,
            compacted_results: self.compacted_results,
            last_sent_at: self.last_sent_at,
            held,
            expired_requests: self.expired_requests,
            ledger: self.ledger.clone(),
            window: self.window,
        }
    }

    /// Put back the decisions of a saved state, into a compactor built with the same profile that has not
    /// compacted yet. Its next [`Compactor::compact`] rebuilds the rest from the history, and from then on it
    /// sends, byte for byte, what the compactor that was saved would have sent.
    pub fn restore(&mut self, saved: SavedState) -> Result<(), RestoreError> {
        if saved.version != SavedState::VERSION {
            return Err(RestoreError::Version {
                found: saved.version,
            });
        }
        if saved.profile != self.settings.profile {
            return Err(RestoreError::Profile {
                saved: saved.profile,
                running: self.settings.profile.clone(),
            });
        }
        self.decided = saved
            .decided
            .into_iter()
            .map(|d| {
                let sticky = d.decision.map_content(|v| Content::from_json(v.clone()));
                ((d.tool_use_id, d.nth), sticky)
            })
            .collect();
        self.replaced = self
            .decided
            .values()
            .filter(|d| d.content.is_some())
            .count();
        self.kept = saved.kept.into_iter().collect();
        // (a cut whose rule this profile no longer has is asked again)
        let rule_named = |name: &str| {
            self.rules
                .iter()
                .map(|r| r.rule.name())
                .find(|n| *n == name)
        };
        self.held = saved
            .held
            .into_iter()
            .filter_map(|h| {
                let change = Change {
                    content: Content::from_json(h.content),
                    tokens_after: h.tokens_after,
                    chars_before: h.chars_before,
                    rule: rule_named(&h.rule)?,
                    action: h.action,
                    clear_input: h.clear_input,
                    asked_at: h.asked_at,
                    consulted: None,
                };
                Some(((h.tool_use_id, h.nth), change))
            })
            .collect();
        self.compacted_results = saved.compacted_results;
        self.expired_requests = saved.expired_requests;
        self.ledger = saved.ledger;
        self.state = State::default();
        self.resumed_cached = Some(saved.messages);
        self.last_sent_at = saved.last_sent_at;
        self.window = saved.window;
        self.hold_window();
        Ok(())
    }
}
