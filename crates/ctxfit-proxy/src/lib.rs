//! The core of `ctxfit proxy`: compaction for agents that cannot be changed, only pointed at another base URL.
//!
//! [`Gateway::forward`] takes a request body as the client sent it (Anthropic Messages, OpenAI Chat
//! Completions, or OpenAI Responses with the whole conversation in `input`), finds the conversation it
//! continues, compacts it with the conversation's own sticky compactor, and writes the body to send upstream.
//! Four properties make it safe for the provider's prompt cache, each tested in `tests/gateway.rs` and
//! `tests/gateway_live.rs`:
//!
//! * **Identity without collisions** — a hash chain over the client's messages ([`identity`]), blind to the
//!   `cache_control` markers clients move between requests; two conversations that share a system prompt stay
//!   apart.
//! * **The client's own bytes** — every message compaction left alone is forwarded byte for byte as the client
//!   wrote it; the rest of the body too ([`body`]). Nothing is re-serialised but what compaction changed.
//! * **Live equals replayed** — a conversation the gateway has not seen before (a new one, or any after a restart)
//!   is compacted request by request as a live agent would have been, so it gets the bytes it got before.
//! * **State that survives** — with a [`state::Store`] (`--state`), each conversation's decisions and the usage
//!   its upstream reported are kept on disk, and a conversation met again is taken back from them: the same
//!   bytes even where a token-budget trigger fired on reported usage, which no replay can know.
//!
//! The HTTP side is [`server`]: `ctxfit proxy` listens (loopback by default), compacts, forwards, and relays
//! the upstream's answer — server-sent events included — as it arrives.

pub mod body;
pub mod gateway;
pub mod identity;
pub mod idle;
mod scan;
pub mod server;
pub mod state;
pub mod usage;
/// The model's context window, learned from the provider's refusal (the compactor's, shared with the library).
pub use ctxfit_compactor::window;

pub use body::{Api, BodyError, RequestBody};
pub use gateway::{ConversationStats, Forwarded, Gateway, GatewayError};
/// The shared byte buffer of [`Gateway::forward_shared`] (hyper's).
pub use hyper::body::Bytes;
pub use server::{start, ProxyConfig, Running, StartError};
