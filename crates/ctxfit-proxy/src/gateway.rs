//! Conversations and their compaction: which conversation a request continues, and the body to forward.
//!
//! **Identity.** A conversation is known by a hash chain over the messages its client sent ([`crate::identity`]:
//! each as the client's own bytes, but for the `cache_control` markers clients move between requests). A request
//! continues the conversation whose previous request's chain ends at one of its own prefix hashes — its messages
//! begin with the messages that conversation sent last — or the one its `x-ctxfit-session` names. Two
//! conversations that share a system prompt part at their first differing message; nothing is guessed from a hash
//! of the system prompt alone. A message whose marker moved is read again, so what is forwarded of it, compacted
//! or not, carries the markers of this request and no other.
//!
//! **Bytes.** The forwarded body is the client's body with each message compaction left alone written as the
//! client's own bytes, so what the provider cached of the previous request is sent again unchanged; a message
//! compaction changed is written once per decision (decisions are sticky) and reused.
//!
//! **Memory, then the store.** Conversations live in memory, the least recently used forgotten beyond
//! `max_conversations`. With a [`Store`] (`--state`), each request's decisions are also recorded there, and a
//! conversation not in memory — after a restart, or forgotten — is taken back from it with the usage its upstream
//! reported last, so it gets the same bytes even where the budget trigger fired on that usage. Without one, or
//! when the store does not have it, the conversation is compacted request by request from its history.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxfit_compactor::{Compactor, Report, Settings};
use ctxfit_model::{read_message, write_message, Content, Conversation, Message, WireFormat};
use sha2::{Digest, Sha256};

use crate::body::{Api, BodyError, RequestBody};
use hyper::body::Bytes;

use crate::identity::{Chain, ChainHash, Known};
use crate::state::{hex, now_ms, Record, Store};
use crate::window::Window;
use index::Index;

/// Why a request cannot be compacted.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error("{0}")]
    Policy(String),
}

/// What to forward, and what compaction did.
#[derive(Debug, Clone)]
pub struct Forwarded {
    pub body: Vec<u8>,
    /// The conversation's id (hex): stable for the conversation's life.
    pub conversation: String,
    /// Whether the request continued a known conversation.
    pub continued: bool,
    /// The profile it was compacted under.
    pub profile: String,
    pub report: Report,
    /// Lone surrogate escapes (half an emoji, cut by a client) written as U+FFFD so that the body reads: the
    /// provider would have refused it ([`Gateway::forward_shared`]).
    pub mended: usize,
    /// Set when the request is above the profile's own `request_budget` even so (what no step may cut — edits,
    /// the newest results — is above it): the token guard's refusal, which the server answers in place of
    /// forwarding it. (A budget learned from the provider's refusal is not the profile's: the provider judges.)
    pub over_budget: Option<ctxfit_tokens::BudgetError>,
}

struct Conv {
    id: String,
    compactor: Compactor,
    conv: Conversation,
    /// The chain over the messages read so far.
    chain: Vec<ChainHash>,
    /// Per message read: whether it held a `cache_control` marker when it was read.
    marked: Vec<bool>,
    start: ChainHash,
    /// Per message: the JSON written for it as compacted, and the stamp of the decisions it was written with
    /// (`Projection::changes`).
    written: Vec<Option<(usize, String)>>,
    /// Input tokens the upstream reported for this conversation's previous request.
    reported: Option<usize>,
    /// The compactor's revision when its decisions were last put in the store (`None`: not yet).
    stored_revision: Option<usize>,
    /// What it has been through the proxy since the proxy met it.
    stats: ConversationStats,
    /// Per tool call read: the call as a key (its tool's name and its input).
    calls: HashMap<String, String>,
    /// The keys of the calls whose results are cut.
    cut_calls: std::collections::HashSet<String>,
    /// The model's context window the provider's refusal implied ([`Gateway::learn_window`]), held from then on.
    window: Option<crate::window::Window>,
    /// The previous request's messages as received and as forwarded, in tokens; and the last of those
    /// forwarded the provider accepted (a conversation grows: the nearest size below a refused one it took), with
    /// the input the provider reported for it.
    last_before: usize,
    last_sent: usize,
    accepted: Option<(usize, Option<usize>)>,
    /// What the request holds besides its messages and system prompt — tool definitions, Responses'
    /// `instructions` — in tokens, with a hash of their bytes: counted against a budget ([`preamble`]).
    preamble: Option<(u64, usize)>,
}

/// The bytes of a request's tool definitions and (Responses) `instructions`: sent with every request, outside
/// the messages the compactor reads.
fn preamble_bytes<'b>(api: Api, body: &RequestBody<'b>) -> [Option<&'b str>; 2] {
    let instructions = (api == Api::OpenAiResponses)
        .then(|| body.field("instructions"))
        .flatten();
    [body.field("tools"), instructions]
}

/// The tokens of a request's preamble ([`preamble_bytes`]), counted again only when its bytes changed.
fn preamble(known: Option<(u64, usize)>, parts: [Option<&str>; 2]) -> (u64, usize) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    let hash = h.finish();
    match known {
        Some((k, tokens)) if k == hash => (hash, tokens),
        _ => {
            let est = ctxfit_tokens::FastEstimator;
            let tokens = parts
                .iter()
                .flatten()
                .map(|p| ctxfit_tokens::TokenEstimator::count_text(&est, p))
                .sum();
            (hash, tokens)
        }
    }
}

/// One conversation through the proxy, since the proxy met it (or took it back).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ConversationStats {
    pub id: String,
    pub requests: u64,
    /// Estimated input tokens of its requests as received, and as forwarded.
    pub tokens_in: u64,
    pub tokens_forwarded: u64,
    /// What the conversation cost less than sending everything would have, in uncached input tokens at
    /// Anthropic's prices (a cache read is a tenth of one, a write 1.25, or 2.0 to the one-hour cache), as the
    /// compactor's ledger counts it — negative when it cost more.
    pub cost_saved: f64,
    /// Tool calls that fetched again what a cut left out: the same call (tool and input) as one whose result is
    /// cut — a re-read of a cut file, a second run of a cut command.
    pub refetches: u64,
    /// The request budget the model's context window comes to, once a refusal has taught it
    /// ([`Gateway::learn_window`]).
    pub window: Option<usize>,
}

/// A tool call as a key: its tool's name and its input as written.
fn call_key(name: &str, input: &ctxfit_model::Value) -> String {
    format!("{name}\u{0}{input}")
}

/// The conversations one proxy serves, under one profile. Shared by the server's tasks: a short lock over the
/// index of conversations (which one a request continues, which to forget), and a lock per conversation over
/// its compaction — two conversations compact at once, and a request waits only for its own conversation.
/// Locks are taken index → conversation only while the index is not held, or conversation → index: never the
/// index and then a conversation.
pub struct Gateway {
    settings: Settings,
    registry: ctxfit_compactor::Registry,
    index: Mutex<Index>,
    /// Conversations kept at most; the least recently used is forgotten (and replayed if it comes back).
    pub max_conversations: usize,
    /// Bytes of requests kept at most, over all conversations, to spare the next request's chain the hashing of
    /// what it repeats ([`Chain::of_known`]): each conversation's last request, the least recently used let go
    /// first (its next request is then hashed whole).
    pub max_known_bytes: usize,
    /// Conversations idle this long are forgotten (and replayed if they come back); `None`: never.
    pub max_idle: Option<std::time::Duration>,
    /// Seconds the provider keeps its prompt cache, whatever requests state (`None`: what each states, else the
    /// profile's `cache_ttl`).
    pub cache_ttl: Option<u64>,
    /// Where decisions are kept across restarts, if anywhere.
    store: Option<Arc<Store>>,
}

/// A lock, taken even where a panic poisoned it: the proxy goes on serving the other conversations (a panic is
/// a fault, ended with its request; the state it leaves is what it had written).
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Conversations a gateway keeps by default.
pub const DEFAULT_MAX_CONVERSATIONS: usize = 1000;

/// Bytes of last requests a gateway keeps by default ([`Gateway::max_known_bytes`]): those of the conversations
/// in use, about twenty ~200k-token requests.
pub const DEFAULT_MAX_KNOWN_BYTES: usize = 16 << 20;

impl Gateway {
    /// The gateway of one profile. A profile's `retrieval_tool` is left off: the agent behind the proxy does not
    /// offer the model that tool, and the proxy does not answer its calls, so no cut result may name it.
    pub fn new(mut settings: Settings) -> Result<Gateway, GatewayError> {
        settings.retrieval_tool = None;
        let registry =
            ctxfit_plugins::registry().map_err(|e| GatewayError::Policy(e.to_string()))?;
        // the rules must build: a bad policy fails here, not on the first request
        Compactor::new(
            settings.clone(),
            &registry,
            Box::new(ctxfit_tokens::FastEstimator),
        )
        .map_err(|e| GatewayError::Policy(e.to_string()))?;
        Ok(Gateway {
            settings,
            registry,
            index: Mutex::new(Index::default()),
            max_conversations: DEFAULT_MAX_CONVERSATIONS,
            max_known_bytes: DEFAULT_MAX_KNOWN_BYTES,
            max_idle: None,
            cache_ttl: None,
            store: None,
        })
    }

    /// Keep every conversation's decisions in `store` too, and take conversations back from it.
    pub fn set_store(&mut self, store: Arc<Store>) {
        self.store = Some(store);
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        locked(&self.index)
    }

    /// Put a conversation's record in the store (its decisions too when they changed since last time).
    fn persist(&self, c: &mut Conv) {
        let Some(store) = &self.store else {
            return;
        };
        let Some(tip) = c.chain.last() else { return };
        let revision = c.compactor.revision();
        let state = (c.stored_revision != Some(revision)).then(|| c.compactor.save());
        c.stored_revision = Some(revision);
        let record = Record {
            version: Record::VERSION,
            start: hex(&c.start),
            tip: hex(tip),
            messages: c.conv.messages.len(),
            reported: c.reported,
            last_used_ms: now_ms(),
            ledger: c.compactor.ledger().clone(),
            window: c.window,
        };
        store.put(&self.settings.profile, &c.id, record, state);
    }

    /// Take conversation `id` back from the store if its last request's chain is a prefix of `chain` (and starts
    /// at `start`). Its compactor gets the stored decisions; it reads the request's messages afresh.
    fn recall(
        &self,
        ix: &mut Index,
        id: &str,
        format: WireFormat,
        start: ChainHash,
        chain: &[ChainHash],
    ) -> Option<Arc<Mutex<Conv>>> {
        let store = self.store.as_ref()?;
        let (record, mut saved) = store.load(&self.settings.profile, id)?;
        let n = record.messages;
        let fits = record.start == hex(&start)
            && n > 0
            && n <= chain.len()
            && record.tip == hex(&chain[n - 1]);
        if !fits {
            return None;
        }
        let mut compactor = self.compactor().ok()?;
        saved.messages = n;
        saved.ledger = record.ledger.clone();
        // the state is written when a decision is made, not at every request: the time it holds may be of a
        // request long before the last one, and would make a warm cache look expired
        saved.last_sent_at = None;
        compactor.restore(saved).ok()?;
        let revision = compactor.revision();
        let mut conv = Conv::new(id.to_owned(), compactor, format, start);
        conv.chain = chain[..n].to_vec();
        conv.reported = record.reported;
        conv.stored_revision = Some(revision);
        if let Some(window) = record.window {
            conv.hold_window(window, self.settings.request_budget);
        }
        Some(ix.insert(conv, self.max_conversations))
    }

    fn compactor(&self) -> Result<Compactor, GatewayError> {
        Compactor::new(
            self.settings.clone(),
            &self.registry,
            Box::new(ctxfit_tokens::FastEstimator),
        )
        .map_err(|e| GatewayError::Policy(e.to_string()))
    }

    /// When the conversation used least recently was last used, if there is one.
    pub fn least_recently_seen(&self) -> Option<std::time::Instant> {
        self.index().convs.values().map(|e| e.last_seen).min()
    }

    /// Forget the conversation used least recently (a returning one is taken back from the state, or replayed
    /// to the same bytes): whether there was one. A request it is serving finishes as it would have.
    pub fn forget_least_recent(&self) -> bool {
        self.index().forget_least_recent()
    }

    /// Each conversation in memory, through the proxy, as of its last request.
    pub fn conversation_stats(&self) -> Vec<ConversationStats> {
        let mut all: Vec<ConversationStats> = self
            .index()
            .convs
            .values()
            .map(|e| e.stats.clone())
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Conversations known.
    pub fn conversations(&self) -> usize {
        self.index().convs.len()
    }

    /// Record the input tokens the upstream reported for a conversation's last request (cache reads and writes
    /// included): its next request's budget trigger uses them.
    pub fn report_usage(&self, conversation: &str, input_tokens: usize) {
        let Some(conv) = self.conv(conversation) else {
            return;
        };
        let mut c = locked(&conv);
        c.reported = Some(input_tokens);
        if let Some((_, theirs)) = &mut c.accepted {
            *theirs = Some(input_tokens);
        }
        // the window in the proxy's count, at the rate of the request the provider just counted
        let ours = c.last_sent + c.preamble.map_or(0, |(_, t)| t);
        let budget = (c.window).and_then(|w| w.at_rate(ours, input_tokens));
        if let (Some(window), Some(budget)) = (c.window, budget) {
            c.hold_window(Window { budget, ..window }, self.settings.request_budget);
        }
        self.persist(&mut c);
    }

    /// The provider accepted the conversation's last request (it answered it): a size its model takes, which a
    /// refusal that says no numbers falls back on ([`crate::window::Overflow::window`]).
    pub fn accepted(&self, conversation: &str) {
        let Some(conv) = self.conv(conversation) else {
            return;
        };
        let mut c = locked(&conv);
        c.accepted = Some((c.last_sent, None));
    }

    /// The provider refused the conversation's last request as too long for its model (`overflow`); `request`
    /// is that request's body as the client sent it. From the refusal, the conversation holds a request budget
    /// from now on — as if its profile set `request_budget` — unless it holds one as low already: the budget
    /// when it is new, else `None` (nothing learned; sending the request again would be refused again).
    pub fn learn_window(
        &self,
        conversation: &str,
        overflow: &crate::window::Overflow,
        api: Api,
        request: &[u8],
    ) -> Option<usize> {
        let conv = self.conv(conversation)?;
        let body = RequestBody::split(api, request).ok()?;
        let mut c = locked(&conv);
        let (hash, extra) = preamble(c.preamble, preamble_bytes(api, &body));
        let accepted = c.accepted.map(|(ours, theirs)| (ours + extra, theirs));
        let window = overflow.window(c.last_sent + extra, accepted)?;
        let held = c.compactor.settings().request_budget;
        if held != 0 && window.budget >= held {
            return None;
        }
        c.preamble = Some((hash, extra));
        c.compactor.set_unseen_tokens(extra);
        c.hold_window(window, self.settings.request_budget);
        // the refused request is not counted: it never reached the model
        c.stats.requests = c.stats.requests.saturating_sub(1);
        c.stats.tokens_in = (c.stats.tokens_in).saturating_sub(c.last_before as u64);
        c.stats.tokens_forwarded = (c.stats.tokens_forwarded).saturating_sub(c.last_sent as u64);
        // the decisions stand; the next request (this one sent again) is held to the budget
        c.stored_revision = None;
        self.persist(&mut c);
        Some(window.budget)
    }

    fn conv(&self, conversation: &str) -> Option<Arc<Mutex<Conv>>> {
        (self.index().convs.get(conversation)).map(|e| Arc::clone(&e.conv))
    }

    /// A new conversation in the index: named `id` (a client's session), or a fresh id.
    fn new_conv(
        &self,
        ix: &mut Index,
        id: Option<&str>,
        format: WireFormat,
        start: ChainHash,
    ) -> Result<(String, Arc<Mutex<Conv>>), GatewayError> {
        let id = match id {
            Some(id) => id.to_owned(),
            None => {
                // unique across restarts (the store keeps ids): the chain's start, the clock and a count
                ix.next_id += 1;
                let mut h = Sha256::new();
                h.update(start);
                h.update(ix.next_id.to_le_bytes());
                h.update(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos())
                        .to_le_bytes(),
                );
                let h: ChainHash = h.finalize().into();
                format!("c{}-{}", ix.next_id, &hex(&h)[..16])
            }
        };
        let conv = Conv::new(id.clone(), self.compactor()?, format, start);
        Ok((id, ix.insert(conv, self.max_conversations)))
    }

    /// Forget the conversations idle longer than `max_idle`.
    fn forget_idle(&self, ix: &mut Index) {
        let Some(max) = self.max_idle else { return };
        let idle: Vec<String> = (ix.convs.iter())
            .filter(|(_, e)| e.last_seen.elapsed() > max)
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            ix.forget(&id);
        }
    }

    /// Which conversation a request continues (in memory, else in the store), marked as used now.
    fn find(
        &self,
        format: WireFormat,
        start: ChainHash,
        chain: &[ChainHash],
        session: Option<&str>,
    ) -> Option<(String, Arc<Mutex<Conv>>)> {
        let mut ix = self.index();
        self.forget_idle(&mut ix);
        let found = match session {
            Some(s) => ix.convs.contains_key(s).then(|| s.to_owned()),
            None => chain.iter().rev().find_map(|h| ix.tips.get(h)).cloned(),
        };
        if let Some(id) = found {
            ix.requests += 1;
            let now = ix.requests;
            let e = ix.convs.get_mut(&id).expect("found in the index");
            e.last_used = now;
            e.last_seen = std::time::Instant::now();
            return Some((id, Arc::clone(&e.conv)));
        }
        let stored = match session {
            Some(s) => Some(s.to_owned()),
            None => self.store.as_ref()?.find(&self.settings.profile, chain),
        }?;
        let conv = self.recall(&mut ix, &stored, format, start, chain)?;
        Some((stored, conv))
    }

    /// Compact a request body of `api`: find or start its conversation (`session` is the client's
    /// `x-ctxfit-session`, if any), read its new messages, compact, and write the body to forward. Requests of
    /// different conversations run at once; those of one conversation one after the other.
    pub fn forward(
        &self,
        api: Api,
        bytes: &[u8],
        session: Option<&str>,
    ) -> Result<Forwarded, GatewayError> {
        self.forward_shared(api, Bytes::copy_from_slice(bytes), session)
    }

    /// [`Gateway::forward`] of a body the caller shares rather than lends: the conversation keeps it, without a
    /// copy, for its next request's chain ([`Chain::of_known`]).
    ///
    /// A body that does not read because it holds lone surrogate escapes (`"\ud83d"`: half of an emoji a client
    /// cut in two by UTF-16 code units, which the Anthropic API refuses as "no low surrogate in string", request
    /// after request, since each repeats it) is read with each written `\ufffd` (U+FFFD, what a decoder puts for
    /// what is no character) and forwarded so; [`Forwarded::mended`] says how many. Only a body that fails to read
    /// is looked at for them: the others cost nothing more.
    pub fn forward_shared(
        &self,
        api: Api,
        bytes: Bytes,
        session: Option<&str>,
    ) -> Result<Forwarded, GatewayError> {
        match self.forward_as_sent(api, &bytes, session) {
            Err(GatewayError::Body(e)) => match ctxfit_model::mend_lone_surrogates(&bytes) {
                Some(mended) => {
                    let mut f = self.forward_as_sent(api, &Bytes::from(mended.text), session)?;
                    f.mended = mended.count;
                    Ok(f)
                }
                None => Err(GatewayError::Body(e)),
            },
            other => other,
        }
    }

    fn forward_as_sent(
        &self,
        api: Api,
        bytes: &Bytes,
        session: Option<&str>,
    ) -> Result<Forwarded, GatewayError> {
        // split by structure alone: the messages the conversation has read are known by their hashes (bytes it
        // has parsed before), the rest is checked below as it is read; a check that fails names the place as a
        // full parse does
        let body = RequestBody::split(api, bytes)?;
        let named = |e: BodyError| {
            if body.is_unchecked() {
                RequestBody::named_error(api, bytes, e)
            } else {
                e
            }
        };
        body.check_fields().map_err(named)?;
        let format = api.wire_format();
        // the chain, sparing what the last request that began the same way repeats byte for byte
        let known_after = |first: &ChainHash| {
            let ix = self.index();
            let id = ix.firsts.get(first)?;
            ix.convs.get(id)?.known.clone()
        };
        let Chain {
            start,
            hashes: chain,
            marked,
        } = Chain::of_known(api, &body, known_after);

        // which conversation, and how much of this request it has read; then its lock, and no other
        let found = self.find(format, start, &chain, session);
        let held = found.as_ref().map(|(_, conv)| Arc::clone(conv));
        let mut guard = held.as_deref().map(locked);
        // continued (the conversation has read a prefix of this request), or new (its session named or not)
        let continued = guard.as_ref().is_some_and(|c| {
            c.start == start
                && c.chain.len() <= chain.len()
                && c.conv.messages.len() <= body.messages.len()
                && c.chain
                    .last()
                    .is_none_or(|tip| chain[c.chain.len() - 1] == *tip)
        });
        let from = match (&guard, continued) {
            (Some(c), true) => c.conv.messages.len(),
            _ => 0,
        };

        // read the new messages: nothing changes if one is malformed
        let new: Vec<Message> = body.messages[from..]
            .iter()
            .enumerate()
            .map(|(k, _)| {
                let raw = body.message(from + k).map_err(named)?;
                let mut value: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
                    named(BodyError::in_part(
                        &format!("messages[{}]", from + k),
                        &e,
                        raw,
                    ))
                })?;
                // a message compaction changes is written anew: its numbers as the client wrote them
                ctxfit_model::keep_number_spelling(raw, &mut value);
                // (the path is written only for an error)
                read_message(format, value, "").map_err(|e| {
                    BodyError::Message(
                        e.under(&format!("{}[{}]", api.messages_key(), from + k))
                            .to_string(),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        // the request's own fields that say how long the provider keeps its cache; the tool definitions, as long
        // on every request, are read only when they hold a mark (only Anthropic's do)
        let mut fields = serde_json::Map::new();
        for key in ctxfit_compactor::CACHE_FIELDS {
            let marked = |raw: &&str| {
                key != "tools"
                    || (api == Api::AnthropicMessages && raw.contains("\"cache_control\""))
            };
            if let Some(raw) = body.field(key).filter(marked) {
                let value =
                    serde_json::from_str(raw).map_err(|e| BodyError::in_part(key, &e, raw))?;
                fields.insert(key.to_owned(), value);
            }
        }
        let requested = ctxfit_compactor::requested_cache_ttl(&fields);
        let system = match body.field("system") {
            Some(raw) if from == 0 => Some(Content::from_json(
                serde_json::from_str(raw).map_err(|e| BodyError::in_part("system", &e, raw))?,
            )),
            _ => None,
        };
        let (id, conv) = match found {
            Some((id, conv)) if continued => (id, conv),
            other => {
                // a named session whose history was rewritten starts over under its name
                drop(guard.take());
                let name = match &other {
                    Some((id, _)) if session.is_some() => Some(id.as_str()),
                    _ => session,
                };
                self.new_conv(&mut self.index(), name, format, start)?
            }
        };
        let mut c = match guard {
            Some(g) => g,
            None => locked(&conv),
        };
        if system.is_some() {
            c.conv.system = system;
        }
        // a message read before whose marker moved (it had one then, or has one now): read again, so that what is
        // written of it carries this request's markers
        let first_new = c.conv.messages.len();
        let moved = marked.iter().enumerate().take(first_new);
        let moved = moved.filter(|&(i, now)| *now || c.marked.get(i).copied().unwrap_or(false));
        // all read before any is taken: a malformed one leaves the conversation as it was
        let reread = moved
            .map(|(i, _)| {
                let raw = body.message(i).map_err(named)?;
                let value: serde_json::Value = serde_json::from_str(raw)
                    .map_err(|e| named(BodyError::in_part(&format!("messages[{i}]"), &e, raw)))?;
                let m = read_message(format, value, "").map_err(|e| {
                    BodyError::Message(e.under(&format!("{}[{i}]", api.messages_key())).to_string())
                })?;
                Ok((i, m))
            })
            .collect::<Result<Vec<_>, BodyError>>()?;
        for (i, m) in reread {
            c.conv.messages[i] = m;
            c.written[i] = None;
        }
        c.marked = marked;
        let c = &mut *c;
        // a call the same as one whose result is cut fetches again what the cut left out
        for block in new.iter().flat_map(|m| &m.content.blocks) {
            if let ctxfit_model::Block::ToolUse(u) = block {
                let key = call_key(&u.name, &u.input);
                c.stats.refetches += u64::from(c.cut_calls.contains(&key));
                c.calls.insert(u.id.clone(), key);
            }
        }
        c.conv.messages.extend(new);
        c.chain = chain;
        c.written.resize_with(c.conv.messages.len(), || None);

        // a conversation new to the gateway (or to a restarted one) is compacted request by request, as a live
        // agent would have been: the same bytes as if the gateway had seen every request
        // the cache the client asks for, if its request says: an Anthropic `cache_control` of one hour on a
        // block, a tool or the request, or OpenAI's 24-hour `prompt_cache_retention`
        // what the request holds besides its messages counts against a budget, when one is held
        let settings = c.compactor.settings();
        if settings.request_budget > 0 || settings.warning_threshold > 0 {
            let counted = preamble(c.preamble, preamble_bytes(api, &body));
            c.preamble = Some(counted);
            c.compactor.set_unseen_tokens(counted.1);
        }
        let next = ctxfit_compactor::NextRequest {
            first_new,
            reported_input_tokens: c.reported.take(),
            requested_cache_ttl: requested,
            cache_ttl: self.cache_ttl,
            sent_at: None,
        };
        let report = if continued {
            // when it is sent: after five minutes without a request the provider's cache has expired, and every
            // waiting cut is made for free
            c.compactor.next_request(&c.conv, next)
        } else {
            c.compactor.take_cache_ttl(&c.conv, &next);
            // (the earlier requests' times are not known: only this one's)
            let mut times = vec![None; c.conv.messages.len()];
            if let Some(last) = times.last_mut() {
                *last = Some(ctxfit_compactor::unix_millis());
            }
            c.compactor
                .compact_history_at(&c.conv, next.reported_input_tokens, &times)
        };

        // the body: the client's bytes where nothing changed
        let projection = c.compactor.projection(&c.conv);
        for (i, stamp) in projection.changes() {
            if !matches!(&c.written[i], Some((n, _)) if *n == stamp) {
                let json = write_message(format, &projection.message(i)).to_string();
                c.written[i] = Some((stamp, json));
            }
        }
        let dropped = projection.dropped().unwrap_or(0..0);
        let changed: HashMap<usize, usize> = projection.changes().collect();
        // the calls whose results this request cut (cuts are sticky: the set only grows)
        for b in &report.new_blocks {
            if b.action != ctxfit_compactor::Action::InputCleared {
                if let Some(key) = c.calls.get(&b.tool_use_id) {
                    c.cut_calls.insert(key.clone());
                }
            }
        }
        (c.last_before, c.last_sent) = (report.tokens_before, report.tokens_after);
        c.stats.requests += 1;
        c.stats.tokens_in += report.tokens_before as u64;
        c.stats.tokens_forwarded += report.tokens_after as u64;
        // the ledger's savings are in cache reads, a tenth of an uncached input token
        c.stats.cost_saved = c.compactor.ledger().saved[0] / 10.0;
        let written = &c.written;
        let out = body.write(|i| {
            if dropped.contains(&i) {
                None
            } else if changed.contains_key(&i) {
                written[i].as_ref().map(|(_, s)| s.as_bytes())
            } else {
                Some(body.messages[i])
            }
        });
        // the index learns where the conversation now ends (unless it was forgotten meanwhile), and keeps this
        // request for the next one's chain
        let known = (bytes.len() <= self.max_known_bytes)
            .then(|| Arc::new(Known::of(bytes, &body, start, &c.chain, &c.marked)));
        {
            let mut ix = self.index();
            let tip = c.chain.last().copied();
            let old = match ix.convs.get_mut(&id) {
                Some(e) if Arc::ptr_eq(&e.conv, &conv) => {
                    e.stats = c.stats.clone();
                    Some(std::mem::replace(&mut e.tip, tip))
                }
                _ => None,
            };
            if old.is_some() {
                ix.keep_known(&id, known, self.max_known_bytes);
            }
            if let Some(old) = old {
                if let Some(old) = old {
                    ix.tips.remove(&old);
                }
                if let Some(tip) = tip {
                    ix.tips.insert(tip, id.clone());
                }
            }
        }
        self.persist(c);
        let whole = report.tokens_after + c.preamble.map_or(0, |(_, t)| t);
        let budget = self.settings.request_budget;
        let over_budget = (budget > 0 && whole > budget).then_some(ctxfit_tokens::BudgetError {
            tokens: whole,
            budget,
        });
        Ok(Forwarded {
            body: out,
            conversation: id,
            continued,
            profile: self.settings.profile.clone(),
            report,
            mended: 0,
            over_budget,
        })
    }
}

impl Conv {
    /// Hold `window` from the next request on (its budget, or the profile's own `request_budget` where that is
    /// lower).
    fn hold_window(&mut self, window: Window, configured: usize) {
        let budget = match configured {
            0 => window.budget,
            c => c.min(window.budget),
        };
        self.window = Some(window);
        self.stats.window = Some(budget);
        self.compactor.set_request_budget(budget);
    }

    fn new(id: String, compactor: Compactor, format: WireFormat, start: ChainHash) -> Conv {
        Conv {
            stats: ConversationStats {
                id: id.clone(),
                ..ConversationStats::default()
            },
            id,
            compactor,
            conv: Conversation::new(format),
            chain: Vec::new(),
            marked: Vec::new(),
            start,
            written: Vec::new(),
            reported: None,
            stored_revision: None,
            calls: HashMap::new(),
            cut_calls: Default::default(),
            window: None,
            last_before: 0,
            last_sent: 0,
            accepted: None,
            preamble: None,
        }
    }
}

mod index;
#[cfg(test)]
mod tests;
