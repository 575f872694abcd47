//! The provider's prompt cache: its lifetime as requests state it, and whether it expired between two requests.

use super::*;

/// Has the provider's cache expired between a request sent at `last` and one sent at `now` (milliseconds since
/// the Unix epoch), when it keeps a prefix `ttl` seconds after its last use (0: forever)?
pub fn cache_expired(last: u64, now: u64, ttl: u64) -> bool {
    ttl > 0 && now.saturating_sub(last) > ttl.saturating_mul(1000)
}

/// Now, in milliseconds since the Unix epoch (0 if the clock is set before it): the time to give
/// [`Compactor::compact_at`] for a request about to be sent.
pub fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The prompt cache lifetime a request asks for, in seconds: the longest any of its marks asks for — the Anthropic
/// `cache_control` marks on the system prompt's blocks, on the blocks of `conv.messages[from..]` (the messages new
/// to this request) and on the tool definitions, and the request-level fields [`requested_cache_ttl`] reads in
/// `conv.extra`. 3600 for a `"ttl": "1h"` mark, 300 for any other mark, 86400 for OpenAI's
/// `"prompt_cache_retention": "24h"`; `None` when the request asks for nothing (the profile's `cache_ttl` holds).
///
/// The longest wins, although Anthropic keeps each part of a prompt as long as its own mark says: believing a
/// cache warm for too long only keeps a cut waiting, while believing it expired too soon makes cuts that rewrite it.
pub fn stated_cache_ttl(conv: &Conversation, from: usize) -> Option<u64> {
    let of_block = |b: &Block| match b {
        Block::Text(t) => mark_ttl(&t.extra),
        Block::ToolUse(u) => mark_ttl(&u.extra),
        Block::ToolResult(r) => mark_ttl(&r.extra),
        Block::Thinking(t) => mark_ttl(&t.extra),
        Block::RedactedThinking(m) | Block::Image(m) | Block::Document(m) => mark_ttl(m),
        Block::Unknown(Value::Object(m)) => mark_ttl(m),
        Block::Unknown(_) => None,
    };
    conv.system
        .iter()
        .flat_map(|c| c.blocks.iter())
        .chain(
            conv.messages
                .get(from..)
                .unwrap_or_default()
                .iter()
                .flat_map(|m| m.content.blocks.iter()),
        )
        .filter_map(of_block)
        .chain(
            conv.tools
                .iter()
                .flatten()
                .filter_map(|t| mark_ttl(&t.extra)),
        )
        .chain(requested_cache_ttl(&conv.extra))
        .max()
}

/// The names of the request-level fields [`requested_cache_ttl`] reads: a gateway that keeps a request's
/// top-level fields apart from its conversation hands over these.
pub const CACHE_FIELDS: [&str; 3] = ["cache_control", "prompt_cache_retention", "tools"];

/// The prompt cache lifetime, in seconds, that a request's top-level fields ask for: Anthropic's request-level
/// `cache_control` (automatic caching) and the `cache_control` of a definition in `tools` (3600 for `"ttl": "1h"`,
/// else 300), OpenAI's `prompt_cache_retention` (86400 for `"24h"`; `"in_memory"` states no lifetime — OpenAI
/// keeps such a prefix five to ten minutes, at most an hour). The longest wins; `None` when none asks.
pub fn requested_cache_ttl(fields: &serde_json::Map<String, Value>) -> Option<u64> {
    let tools = fields
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_object().and_then(mark_ttl));
    let retention = match fields.get("prompt_cache_retention").and_then(Value::as_str) {
        Some("24h") => Some(86_400),
        _ => None,
    };
    mark_ttl(fields)
        .into_iter()
        .chain(tools)
        .chain(retention)
        .max()
}

/// The lifetime an object's Anthropic `cache_control` mark asks for: 3600 for `"ttl": "1h"`, else 300.
fn mark_ttl(extra: &serde_json::Map<String, Value>) -> Option<u64> {
    extra
        .get("cache_control")
        .filter(|c| c.is_object())
        .map(|c| match c.get("ttl").and_then(Value::as_str) {
            Some("1h") => 3600,
            _ => 300,
        })
}
