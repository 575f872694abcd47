//! The gateway's index of conversations: which one a request continues (by its chain's tip), which to forget
//! (least recently used, idle), and the last requests kept for the next chains ([`Known`]) within their bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Conv, ConversationStats};
use crate::identity::{ChainHash, Known};

/// Which conversations a gateway knows, and how to find them.
#[derive(Default)]
pub(super) struct Index {
    pub(super) convs: HashMap<String, Entry>,
    /// Chain hash of each conversation's last request → its id.
    pub(super) tips: HashMap<ChainHash, String>,
    /// Chain hash of a first message → the conversation that began so most recently (its last request spares
    /// the hashing of what the next repeats: [`crate::identity::Chain::of_known`]).
    pub(super) firsts: HashMap<ChainHash, String>,
    /// Bytes of the conversations' `Entry::known`, together.
    pub(super) known_bytes: usize,
    pub(super) next_id: u64,
    /// Requests handled: the clock of `Entry::last_used`.
    pub(super) requests: u64,
}

/// A conversation in the index: itself, behind its own lock, and what the index needs without taking it.
pub(super) struct Entry {
    pub(super) conv: Arc<Mutex<Conv>>,
    /// When it was last used (the gateway's request count then): the least recently used goes first.
    pub(super) last_used: u64,
    /// When it was last used, by the clock: idle ones are forgotten.
    pub(super) last_seen: std::time::Instant,
    /// The chain hash of its last request, as in `Index::tips`.
    pub(super) tip: Option<ChainHash>,
    /// Its figures after its last request (read by `/metrics` without waiting for a compaction).
    pub(super) stats: ConversationStats,
    /// Its last request, as the next one's chain reads it.
    pub(super) known: Option<Arc<Known>>,
}

impl Index {
    /// Add a conversation, forgetting the least recently used beyond `max`.
    pub(super) fn insert(&mut self, conv: Conv, max: usize) -> Arc<Mutex<Conv>> {
        let id = conv.id.clone();
        self.forget(&id);
        while self.convs.len() >= max.max(1) && self.forget_least_recent() {}
        self.requests += 1;
        let tip = conv.chain.last().copied();
        if let Some(tip) = tip {
            self.tips.insert(tip, id.clone());
        }
        let stats = conv.stats.clone();
        let conv = Arc::new(Mutex::new(conv));
        self.convs.insert(
            id,
            Entry {
                conv: Arc::clone(&conv),
                last_used: self.requests,
                last_seen: std::time::Instant::now(),
                tip,
                stats,
                known: None,
            },
        );
        conv
    }

    pub(super) fn forget(&mut self, id: &str) {
        if let Some(old) = self.convs.remove(id) {
            if let Some(tip) = old.tip {
                self.tips.remove(&tip);
            }
            if let Some(known) = old.known {
                self.let_go(id, &known);
            }
        }
    }

    /// The conversation `id` no longer keeps `known`.
    pub(super) fn let_go(&mut self, id: &str, known: &Known) {
        self.known_bytes = self.known_bytes.saturating_sub(known.size());
        if let Some(first) = known.first() {
            if self.firsts.get(&first).is_some_and(|f| f == id) {
                self.firsts.remove(&first);
            }
        }
    }

    /// Keep `known` as conversation `id`'s last request (if it is still here; `None`: too large to keep, and
    /// what it kept before is let go), letting go of the least recently used conversations' beyond `max` bytes.
    pub(super) fn keep_known(&mut self, id: &str, known: Option<Arc<Known>>, max: usize) {
        let Some(e) = self.convs.get_mut(id) else {
            return;
        };
        let old = std::mem::replace(&mut e.known, known.clone());
        if let Some(old) = old {
            self.let_go(id, &old);
        }
        let Some(known) = known else {
            return;
        };
        self.known_bytes += known.size();
        if let Some(first) = known.first() {
            self.firsts.insert(first, id.to_owned());
        }
        while self.known_bytes > max {
            let Some(oldest) = (self.convs.iter())
                .filter(|(_, e)| e.known.is_some())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            if let Some(old) = self.convs.get_mut(&oldest).and_then(|e| e.known.take()) {
                self.let_go(&oldest, &old);
            }
        }
    }

    pub(super) fn forget_least_recent(&mut self) -> bool {
        let Some(oldest) = (self.convs.iter())
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())
        else {
            return false;
        };
        self.forget(&oldest);
        true
    }
}
