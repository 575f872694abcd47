//! State that survives a restart: each conversation's sticky decisions in an embedded database (redb, one file
//! `ctxfit-proxy.redb` under `--state DIR`).
//!
//! **Why a database, and why redb.** A conversation the proxy has not seen (a new one, or any after a restart) is
//! compacted request by request from its history, which gives the bytes a live agent got — unless the budget
//! trigger fired on usage the upstream reported, which no history holds. The store keeps what the history cannot
//! give back: the decisions ([`SavedState`]), the usage reported last, and the hash chain that names the
//! conversation. redb is a pure-Rust embedded key-value store with no dependencies of its own, ACID commits and a
//! single file; SQLite would bring a C library and a build script for three tables of blobs.
//!
//! **Off the request path.** The gateway hands each record to one writer thread, which commits in batches; a
//! request never waits for the disk. Reads (a conversation coming back) go through the same thread, after the
//! writes queued before them, so they see the latest record.
//!
//! **Bounded.** At most [`StoreLimits::max_conversations`] conversations are kept (the least recently used go
//! first) and none idle longer than [`StoreLimits::ttl`]; both are enforced when the store opens and every few
//! hundred writes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ctxfit_compactor::SavedState;

use crate::identity::ChainHash;
use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

/// `profile \0 id` → [`Record`] as JSON.
const RECORDS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("conversations");
/// `profile \0 id` → [`SavedState`] as JSON: rewritten only when a decision was made.
const DECISIONS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("decisions");
/// `profile \0` + the chain hash of a conversation's last request → its id.
const TIPS: TableDefinition<'_, &[u8], &str> = TableDefinition::new("tips");

/// The database's file name under the state directory.
pub const FILE_NAME: &str = "ctxfit-proxy.redb";

/// What the store keeps, at most.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// Conversations kept; the least recently used are dropped beyond it.
    pub max_conversations: usize,
    /// Conversations unused this long are dropped; `None`: never.
    pub ttl: Option<Duration>,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_conversations: 100_000,
            ttl: Some(Duration::from_secs(7 * 24 * 3600)),
        }
    }
}

/// What the store knows of a conversation besides its decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The format of this record; [`Record::VERSION`] today (others are ignored).
    pub version: u32,
    /// The chain's start (API and system prompt), hex.
    pub start: String,
    /// The chain hash over the messages of the last request, hex.
    pub tip: String,
    /// Messages of the last request.
    pub messages: usize,
    /// Input tokens the upstream reported for the last request.
    pub reported: Option<usize>,
    /// When it was last used, milliseconds since the Unix epoch.
    pub last_used_ms: u64,
    /// The regret bound's accounting after the last request (it changes at every request, the decisions only
    /// when one is made).
    #[serde(default)]
    pub ledger: ctxfit_compactor::Ledger,
    /// The model's context window the provider's refusal implied, held by the conversation
    /// ([`crate::Gateway::learn_window`]).
    #[serde(default)]
    pub window: Option<crate::window::Window>,
}

impl Record {
    pub const VERSION: u32 = 2;
}

/// Hex of a hash.
pub fn hex(hash: &ChainHash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Why the store cannot open.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("--state {dir}: {source}")]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("--state {dir}: not a folder (the state is a folder, created if missing, that holds ctxfit-proxy.redb)")]
    NotAFolder { dir: PathBuf },
    #[error("--state {path}: another process has it open (run one proxy per state directory)")]
    InUse { path: PathBuf },
    #[error("--state {path}: {source}")]
    Database { path: PathBuf, source: DbError },
    #[error("--state {path}: the state file is damaged ({why}); move it away (or delete it) to start with an empty state")]
    Damaged { path: PathBuf, why: String },
}

/// A failure of the database (boxed: redb's errors are large).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbError(Box<redb::Error>);

impl<E: Into<redb::Error>> From<E> for DbError {
    fn from(e: E) -> Self {
        DbError(Box::new(e.into()))
    }
}

enum Op {
    Put {
        key: String,
        record: Record,
        state: Option<Box<SavedState>>,
    },
    Find {
        profile: String,
        hashes: Vec<ChainHash>,
        reply: Sender<Option<String>>,
    },
    Load {
        key: String,
        reply: Sender<Option<(Record, SavedState)>>,
    },
    Flush(Sender<()>),
}

/// The store: an embedded database written by one thread of its own.
pub struct Store {
    path: PathBuf,
    ops: Mutex<Option<Sender<Op>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    shared: std::sync::Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
    conversations: AtomicU64,
}

impl Counters {
    fn error(&self, e: impl std::fmt::Display) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
    }
}

fn key(profile: &str, id: &str) -> String {
    format!("{profile}\0{id}")
}

/// A record's key split back into profile and id.
fn split_key(key: &str) -> (&str, &str) {
    key.split_once('\0').unwrap_or((key, ""))
}

/// Remove the tip entry `tip` (hex) of conversation `id` of `profile`, if it still names that conversation (a
/// later conversation may have the same tip).
fn remove_tip(
    tips: &mut redb::Table<'_, &[u8], &str>,
    profile: &str,
    id: &str,
    tip: &str,
) -> Result<(), DbError> {
    let Some(t) = unhex(tip) else { return Ok(()) };
    let k = tip_key(profile, &t);
    if tips.get(k.as_slice())?.is_some_and(|v| v.value() == id) {
        tips.remove(k.as_slice())?;
    }
    Ok(())
}

fn tip_key(profile: &str, tip: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(profile.len() + 1 + tip.len());
    k.extend_from_slice(profile.as_bytes());
    k.push(0);
    k.extend_from_slice(tip);
    k
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s.len() % 2 == 0)
        .then(|| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
                .collect()
        })
        .flatten()
}

impl Store {
    /// Open (or create) the store under `dir`, dropping what is over `limits`.
    pub fn open(dir: &Path, limits: StoreLimits) -> Result<Store, StoreError> {
        // the state holds tool output the agent saw: the folder and the file are the user's alone
        let dir_error = |source| StoreError::Dir {
            dir: dir.to_owned(),
            source,
        };
        let mut folder = std::fs::DirBuilder::new();
        folder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut folder, 0o700);
        if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(StoreError::NotAFolder {
                dir: dir.to_owned(),
            });
        }
        folder.create(dir).map_err(dir_error)?;
        let path = dir.join(FILE_NAME);
        let mut file = std::fs::OpenOptions::new();
        file.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
        drop(file.open(&path).map_err(dir_error)?);
        // redb asserts on some damaged files rather than saying so: a damaged file is an error, not a crash (nor
        // a panic message: the hook is silent while the file is opened, at start, before anything else runs)
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let opened = std::panic::catch_unwind(|| Database::create(&path));
        std::panic::set_hook(hook);
        let opened = opened.map_err(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "it cannot be read".to_owned());
            StoreError::Damaged {
                path: path.clone(),
                why,
            }
        })?;
        let db = opened.map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::InUse { path: path.clone() },
            redb::DatabaseError::Storage(redb::StorageError::Corrupted(why)) => {
                StoreError::Damaged {
                    path: path.clone(),
                    why,
                }
            }
            e => StoreError::Database {
                path: path.clone(),
                source: e.into(),
            },
        })?;
        let counters = std::sync::Arc::new(Counters::default());
        let database = |source: DbError| StoreError::Database {
            path: path.clone(),
            source,
        };
        // the tables exist, and what is over the limits goes, before anything is served
        let txn = db.begin_write().map_err(|e| database(e.into()))?;
        prune(&txn, limits, &counters).map_err(database)?;
        txn.commit().map_err(|e| database(e.into()))?;
        let (tx, rx) = mpsc::channel();
        let writer = {
            let counters = std::sync::Arc::clone(&counters);
            std::thread::Builder::new()
                .name("ctxfit-state".to_owned())
                .spawn(move || write_loop(db, rx, limits, &counters))
                .map_err(|source| StoreError::Dir {
                    dir: dir.to_owned(),
                    source,
                })?
        };
        Ok(Store {
            path,
            ops: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            shared: counters,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes and reads that failed since the store opened (each leaves the conversation to be replayed).
    pub fn errors(&self) -> u64 {
        self.shared.errors.load(Ordering::Relaxed)
    }

    /// The last failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Conversations in the store at its last write.
    pub fn conversations(&self) -> u64 {
        self.shared.conversations.load(Ordering::Relaxed)
    }

    fn send(&self, op: Op) -> bool {
        let ops = self.ops.lock().unwrap_or_else(|p| p.into_inner());
        ops.as_ref().is_some_and(|tx| tx.send(op).is_ok())
    }

    fn ask<T>(&self, op: impl FnOnce(Sender<T>) -> Op) -> Option<T> {
        let (tx, rx) = mpsc::channel();
        if !self.send(op(tx)) {
            return None;
        }
        rx.recv().ok()
    }

    /// Record a conversation of `profile` after a request (its decisions too when `state` is given). Queued:
    /// returns at once.
    pub fn put(&self, profile: &str, id: &str, record: Record, state: Option<SavedState>) {
        self.send(Op::Put {
            key: key(profile, id),
            record,
            state: state.map(Box::new),
        });
    }

    /// The conversation of `profile` whose last request's chain ends at one of `hashes` (the last such).
    pub fn find(&self, profile: &str, hashes: &[ChainHash]) -> Option<String> {
        self.ask(|reply| Op::Find {
            profile: profile.to_owned(),
            hashes: hashes.to_vec(),
            reply,
        })
        .flatten()
    }

    /// A conversation's record and decisions.
    pub fn load(&self, profile: &str, id: &str) -> Option<(Record, SavedState)> {
        self.ask(|reply| Op::Load {
            key: key(profile, id),
            reply,
        })
        .flatten()
    }

    /// Wait until everything queued so far is on disk.
    pub fn flush(&self) {
        self.ask(Op::Flush);
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // closing the queue ends the writer once it has committed what was queued
        self.ops.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = w.join();
        }
    }
}

/// Writes between two enforcements of the limits.
const PRUNE_EVERY: usize = 512;

fn write_loop(db: Database, rx: Receiver<Op>, limits: StoreLimits, counters: &Counters) {
    let mut since_prune = 0;
    while let Ok(first) = rx.recv() {
        let txn = match db.begin_write() {
            Ok(t) => t,
            Err(e) => {
                counters.error(e);
                answer_empty(first);
                continue;
            }
        };
        let mut flushes = Vec::new();
        let mut op = Some(first);
        // one transaction for everything queued: under load, one commit serves many requests
        while let Some(o) = op.take() {
            match o {
                Op::Flush(reply) => flushes.push(reply),
                o => {
                    if matches!(o, Op::Put { .. }) {
                        since_prune += 1;
                    }
                    if let Err(e) = apply(&txn, o) {
                        counters.error(e);
                    }
                }
            }
            op = rx.try_recv().ok();
        }
        if since_prune >= PRUNE_EVERY {
            since_prune = 0;
            if let Err(e) = prune(&txn, limits, counters) {
                counters.error(e);
            }
        } else if let Ok(t) = txn.open_table(RECORDS) {
            if let Ok(n) = t.len() {
                counters.conversations.store(n, Ordering::Relaxed);
            }
        }
        if let Err(e) = txn.commit() {
            counters.error(e);
        }
        for f in flushes {
            let _ = f.send(());
        }
    }
}

fn answer_empty(op: Op) {
    match op {
        Op::Find { reply, .. } => drop(reply.send(None)),
        Op::Load { reply, .. } => drop(reply.send(None)),
        Op::Flush(reply) => drop(reply.send(())),
        Op::Put { .. } => {}
    }
}

fn apply(txn: &WriteTransaction, op: Op) -> Result<(), DbError> {
    match op {
        Op::Put { key, record, state } => {
            let (profile, id) = split_key(&key);
            let mut records = txn.open_table(RECORDS)?;
            let mut tips = txn.open_table(TIPS)?;
            let old: Option<Record> = records
                .get(key.as_str())?
                .and_then(|v| serde_json::from_slice(v.value()).ok());
            if let Some(old) = old.filter(|o| o.tip != record.tip) {
                remove_tip(&mut tips, profile, id, &old.tip)?;
            }
            if let Some(t) = unhex(&record.tip) {
                tips.insert(tip_key(profile, &t).as_slice(), id)?;
            }
            let json = serde_json::to_vec(&record).expect("a record serialises");
            records.insert(key.as_str(), json.as_slice())?;
            if let Some(state) = state {
                let json = serde_json::to_vec(&state).expect("a saved state serialises");
                txn.open_table(DECISIONS)?
                    .insert(key.as_str(), json.as_slice())?;
            }
        }
        Op::Find {
            profile,
            hashes,
            reply,
        } => {
            let tips = txn.open_table(TIPS)?;
            let mut found = None;
            for h in hashes.iter().rev() {
                if let Some(id) = tips.get(tip_key(&profile, h).as_slice())? {
                    found = Some(id.value().to_owned());
                    break;
                }
            }
            let _ = reply.send(found);
        }
        Op::Load { key, reply } => {
            let records = txn.open_table(RECORDS)?;
            let decisions = txn.open_table(DECISIONS)?;
            let record: Option<Record> = records
                .get(key.as_str())?
                .and_then(|v| serde_json::from_slice(v.value()).ok())
                .filter(|r: &Record| r.version == Record::VERSION);
            let state: Option<SavedState> = decisions
                .get(key.as_str())?
                .and_then(|v| serde_json::from_slice(v.value()).ok());
            let _ = reply.send(record.zip(state));
        }
        Op::Flush(reply) => drop(reply.send(())),
    }
    Ok(())
}

/// Drop the conversations unused longer than the time-to-live, then the least recently used beyond the count.
fn prune(txn: &WriteTransaction, limits: StoreLimits, counters: &Counters) -> Result<(), DbError> {
    let mut records = txn.open_table(RECORDS)?;
    let mut decisions = txn.open_table(DECISIONS)?;
    let mut tips = txn.open_table(TIPS)?;
    let mut all: Vec<(u64, String, Option<String>)> = Vec::new();
    for entry in records.iter()? {
        let (k, v) = entry?;
        let record: Option<Record> = serde_json::from_slice(v.value()).ok();
        all.push(match record {
            Some(r) if r.version == Record::VERSION => {
                (r.last_used_ms, k.value().to_owned(), Some(r.tip))
            }
            // unreadable or of another version: first to go
            _ => (0, k.value().to_owned(), None),
        });
    }
    let now = now_ms();
    let expired = |t: u64| {
        limits
            .ttl
            .is_some_and(|ttl| now.saturating_sub(t) > ttl.as_millis() as u64)
    };
    all.sort();
    let over = all.len().saturating_sub(limits.max_conversations);
    let mut kept = all.len();
    for (n, (last_used, key, tip)) in all.iter().enumerate() {
        let stale = n < over || expired(*last_used) || tip.is_none();
        if !stale {
            continue;
        }
        kept -= 1;
        records.remove(key.as_str())?;
        decisions.remove(key.as_str())?;
        if let Some(tip) = tip {
            let (profile, id) = split_key(key);
            remove_tip(&mut tips, profile, id, tip)?;
        }
    }
    counters.conversations.store(kept as u64, Ordering::Relaxed);
    Ok(())
}
