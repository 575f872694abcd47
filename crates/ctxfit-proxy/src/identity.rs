//! Which conversation a request continues: a hash chain over its messages, blind to what clients move.
//!
//! `h₀ = SHA-256(api, system prompt)`, `hᵢ = SHA-256(hᵢ₋₁, message i)`, each over the client's own bytes **with
//! every `cache_control` member of a message or of one of its content blocks left out** (and of a block inside a
//! tool result's content, and of the system prompt's blocks). Clients move that marker on every request: Claude
//! Code and the Anthropic SDK's examples put the breakpoint on the newest message and take it off the one before,
//! so the exact bytes of an earlier message change while it stays the same message. A `cache_control` key
//! anywhere else — inside a tool call's input, say — is the conversation's content and stays in the hash.
//!
//! Content that is a list of one plain text block (`[{"type":"text","text":S}]`, nothing else in the block once its
//! marker is out) is hashed as the string `S` it says: a program that wraps only its newest message in a block to
//! mark it — the string it sent before becomes a block for one request, then a string again — or keeps it wrapped
//! without the marker, sends the same message each time. The system prompt likewise.
//!
//! The scan is one pass over the bytes and allocates nothing; a message without the text `"cache_control"` is
//! hashed as it is, but for a content list of one text block. What is forwarded is never touched here: it keeps the
//! client's bytes, markers included.
//!
//! A conversation's next request repeats most of its last one byte for byte: with that request [`Known`], each
//! message it repeats after the same chain takes its hash from there ([`Chain::of_known`]) — comparing bytes runs
//! an order of magnitude faster than hashing them — and the chain comes out the same.

use std::sync::Arc;

use hyper::body::Bytes;
use sha2::{Digest, Sha256};

use crate::body::{Api, RequestBody};
use crate::scan::{next_is_colon, skip_ws, string_end, value_end};

/// A hash of a conversation's messages so far.
pub type ChainHash = [u8; 32];

/// The key that clients move between requests.
const MARKER: &[u8] = b"\"cache_control\"";

/// The chain over a body's messages: `start` covers the API and the system prompt, `hashes[i]` messages `0..=i`,
/// and `marked[i]` says whether message `i` held a `cache_control` marker (its bytes may change while it stays
/// the same message).
pub struct Chain {
    pub start: ChainHash,
    pub hashes: Vec<ChainHash>,
    pub marked: Vec<bool>,
}

impl Chain {
    /// The chain of a request body.
    pub fn of(api: Api, body: &RequestBody<'_>) -> Chain {
        Chain::of_known(api, body, |_| None)
    }

    /// The chain of a request body, sparing the hashing of what it repeats of a request seen before: `known`
    /// is asked, with the hash of the first message, for the last request seen that began so; each message that
    /// stands in it byte for byte after the same chain takes its hash from there. The chain is the same as
    /// [`Chain::of`]'s, whichever request `known` gives (a wrong one spares nothing).
    pub fn of_known(
        api: Api,
        body: &RequestBody<'_>,
        known: impl FnOnce(&ChainHash) -> Option<Arc<Known>>,
    ) -> Chain {
        let start = chain_start(api, body.field("system"));
        let mut hashes = Vec::with_capacity(body.messages.len());
        let mut marked = Vec::with_capacity(body.messages.len());
        let (mut h, mut known, mut ask) = (start, None, Some(known));
        for (i, m) in body.messages.iter().enumerate() {
            let same = (known.as_deref()).filter(|k: &&Known| k.repeats(i, &h, m));
            let (next, was_marked) = match same {
                Some(k) => (k.hashes[i], k.marked[i]),
                None => chain_next(&h, m),
            };
            h = next;
            hashes.push(h);
            marked.push(was_marked);
            if let Some(ask) = ask.take() {
                known = ask(&h);
            }
        }
        Chain {
            start,
            hashes,
            marked,
        }
    }
}

/// A request seen before, as [`Chain::of_known`] reads it: its body, where its messages are in it, and their
/// chain. It holds the body the request came in (no copy); comparing bytes runs an order of magnitude faster than
/// hashing them.
pub struct Known {
    start: ChainHash,
    body: Bytes,
    /// Where each message is in `body`.
    ranges: Vec<std::ops::Range<usize>>,
    hashes: Vec<ChainHash>,
    marked: Vec<bool>,
}

impl Known {
    /// The request `body`, split from `bytes`, whose chain is `start`, `hashes` and `marked` (as [`Chain`]'s).
    /// (Messages that are not part of `bytes` are not kept: nothing is then spared.)
    pub fn of(
        bytes: &Bytes,
        body: &RequestBody<'_>,
        start: ChainHash,
        hashes: &[ChainHash],
        marked: &[bool],
    ) -> Known {
        let base = bytes.as_ptr() as usize;
        let ranges: Option<Vec<_>> = (body.messages.iter())
            .map(|m| {
                let begin = (m.as_ptr() as usize).checked_sub(base)?;
                let end = begin + m.len();
                (end <= bytes.len()).then_some(begin..end)
            })
            .collect();
        let ranges = ranges.unwrap_or_default();
        let n = ranges.len();
        Known {
            start,
            body: bytes.clone(),
            ranges,
            hashes: hashes[..n.min(hashes.len())].to_vec(),
            marked: marked[..n.min(marked.len())].to_vec(),
        }
    }

    /// Bytes it holds: the body, and where its messages are with their chain.
    pub fn size(&self) -> usize {
        self.body.len() + self.ranges.len() * (2 * std::mem::size_of::<usize>() + 33)
    }

    /// The hash of its first message, if it has one.
    pub fn first(&self) -> Option<ChainHash> {
        self.hashes.first().copied()
    }

    /// Whether message `i` of a request, whose chain before it is `before`, is this request's message `i` after
    /// the same chain, byte for byte (so its hash and marker are the same).
    fn repeats(&self, i: usize, before: &ChainHash, message: &[u8]) -> bool {
        let (Some(range), Some(_)) = (self.ranges.get(i), self.hashes.get(i)) else {
            return false;
        };
        let chain_before = if i == 0 {
            &self.start
        } else {
            &self.hashes[i - 1]
        };
        chain_before == before && self.body.get(range.clone()) == Some(message)
    }
}

fn chain_start(api: Api, system: Option<&str>) -> ChainHash {
    let mut h = Sha256::new();
    h.update(b"ctxfit-proxy/3\0");
    h.update(api.name().as_bytes());
    h.update([0]);
    let system = system.unwrap_or("");
    // the system prompt is a string or a list of blocks: its blocks' markers are at depth [array, object]
    let mut canonical = Vec::new();
    let (bytes, _) = without_markers(system.as_bytes(), SYSTEM_PATHS, &mut canonical);
    let bytes = match single_text(bytes, skip_ws(bytes, 0)) {
        Some(text) => &bytes[text],
        None => bytes,
    };
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
    h.finalize().into()
}

fn chain_next(previous: &ChainHash, message: &[u8]) -> (ChainHash, bool) {
    let mut h = Sha256::new();
    h.update(previous);
    let mut canonical = Vec::new();
    let (bytes, marked) = without_markers(message, MESSAGE_PATHS, &mut canonical);
    let mut unwrapped = Vec::new();
    let bytes = content_unwrapped(bytes, &mut unwrapped).unwrap_or(bytes);
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
    (h.finalize().into(), marked)
}

/// A container on the path from the value's top: an object or an array.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Object,
    Array,
}
use Kind::{Array, Object};

/// Where a marker of a message may sit: the message itself, one of its blocks, a block of a tool result's content.
const MESSAGE_PATHS: &[&[Kind]] = &[
    &[Object],
    &[Object, Array, Object],
    &[Object, Array, Object, Array, Object],
];
/// Where a marker of the system prompt may sit: one of its blocks.
const SYSTEM_PATHS: &[&[Kind]] = &[&[Array, Object]];

/// The JSON text `json` with every `"cache_control": value` member whose object sits at one of `paths` left out
/// (with its comma), and whether any was. Text without the marker is returned as it is; otherwise the rest is
/// written to `out`. Malformed text is returned as it is (the body was parsed before: it does not happen).
fn without_markers<'a>(
    json: &'a [u8],
    paths: &[&[Kind]],
    out: &'a mut Vec<u8>,
) -> (&'a [u8], bool) {
    if !contains(json, MARKER) {
        return (json, false);
    }
    let mut stack: Vec<Kind> = Vec::new();
    let mut removed = false;
    let mut i = 0;
    let mut kept_from = 0;
    // where the last member's separating comma is in `out`, when the member after it may be left out
    let mut pending_comma: Option<usize> = None;
    out.clear();
    out.reserve(json.len());
    while i < json.len() {
        match json[i] {
            b'"' => {
                let end = string_end(json, i);
                let is_key = stack.last() == Some(&Object) && next_is_colon(json, end);
                if is_key && &json[i..end] == MARKER && paths.contains(&stack.as_slice()) {
                    // the member: key, colon, value; then its comma, or the comma before it
                    let colon = skip_ws(json, end);
                    let value_end = value_end(json, skip_ws(json, colon + 1));
                    let after = skip_ws(json, value_end);
                    out.extend_from_slice(&json[kept_from..i]);
                    if json.get(after) == Some(&b',') {
                        kept_from = skip_ws(json, after + 1);
                    } else {
                        if let Some(comma) = pending_comma {
                            out.truncate(comma);
                        }
                        kept_from = after;
                    }
                    removed = true;
                    i = kept_from;
                    pending_comma = None;
                    continue;
                }
                i = end;
                pending_comma = None;
            }
            b'{' => {
                stack.push(Object);
                pending_comma = None;
                i += 1;
            }
            b'[' => {
                stack.push(Array);
                pending_comma = None;
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                pending_comma = None;
                i += 1;
            }
            b',' => {
                pending_comma = Some(out.len() + (i - kept_from));
                i += 1;
            }
            _ => i += 1,
        }
    }
    if !removed {
        return (json, false);
    }
    out.extend_from_slice(&json[kept_from..]);
    (out.as_slice(), true)
}

/// The message `json` (an object) with its `content` member's value written as the string of its one text block,
/// when that is what it is; `None` (nothing written) when not. Only the members before `content` and its first
/// block are scanned: a message whose content is a string, or whose first block is not plain text, costs a few
/// bytes.
fn content_unwrapped<'a>(json: &[u8], out: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    let mut i = skip_ws(json, 0);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(json, i + 1);
    while json.get(i) == Some(&b'"') {
        let key_end = string_end(json, i);
        let colon = skip_ws(json, key_end);
        if json.get(colon) != Some(&b':') {
            return None;
        }
        let value = skip_ws(json, colon + 1);
        if &json[i..key_end] == b"\"content\"" {
            let text = single_text(json, value)?;
            let list_end = value_end(json, value);
            out.clear();
            out.extend_from_slice(&json[..value]);
            out.extend_from_slice(&json[text]);
            out.extend_from_slice(&json[list_end..]);
            return Some(out.as_slice());
        }
        let end = skip_ws(json, value_end(json, value));
        if json.get(end) != Some(&b',') {
            return None;
        }
        i = skip_ws(json, end + 1);
    }
    None
}

/// Where the string `S` is when the value at `start` is `[{"type":"text","text":S}]` (members in either order, any
/// spacing, no other member).
fn single_text(json: &[u8], start: usize) -> Option<std::ops::Range<usize>> {
    if json.get(start) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(json, start + 1);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(json, i + 1);
    let (mut typed, mut text) = (false, None);
    loop {
        if json.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(json, i);
        let colon = skip_ws(json, key_end);
        if json.get(colon) != Some(&b':') {
            return None;
        }
        let value = skip_ws(json, colon + 1);
        if json.get(value) != Some(&b'"') {
            return None;
        }
        let end = string_end(json, value);
        match &json[i..key_end] {
            b"\"type\"" if !typed && &json[value..end] == b"\"text\"" => typed = true,
            b"\"text\"" if text.is_none() => text = Some(value..end),
            _ => return None,
        }
        i = skip_ws(json, end);
        match json.get(i) {
            Some(b',') => i = skip_ws(json, i + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    let close = skip_ws(json, i + 1);
    (typed && json.get(close) == Some(&b']')).then_some(text?)
}

/// Whether `needle` occurs in `haystack` (a vectorised search: a message without the marker is looked through at
/// memory speed, where a window-by-window comparison took longer than hashing it).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expect: &str) {
        let mut out = Vec::new();
        let (bytes, removed) = without_markers(json.as_bytes(), MESSAGE_PATHS, &mut out);
        assert_eq!(std::str::from_utf8(bytes).unwrap(), expect, "{json}");
        assert_eq!(removed, json != expect);
        // what is left is still JSON, and the same value but for the markers
        let left: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        let _: serde_json::Value = serde_json::from_str(json).unwrap();
        assert!(!left.to_string().contains("ephemeral"), "{left}");
    }

    #[test]
    fn markers_of_messages_and_blocks_are_left_out() {
        // a message without the marker is its own bytes
        check(
            r#"{"role":"user","content":"hi"}"#,
            r#"{"role":"user","content":"hi"}"#,
        );
        // on the last block, the comma before it goes
        check(
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
        );
        // first in its object, with spaces: the comma after it goes
        check(
            r#"{"role":"user","content":[{ "cache_control" : {"type":"ephemeral","ttl":"1h"} , "type":"text","text":"b"}]}"#,
            r#"{"role":"user","content":[{ "type":"text","text":"b"}]}"#,
        );
        // alone in its object, after a comma of the list it is in
        check(
            r#"{"role":"user","content":["x", {"cache_control":{"type":"ephemeral"}}]}"#,
            r#"{"role":"user","content":["x", {}]}"#,
        );
        // alone in its object
        check(
            r#"{"role":"user","content":[{"cache_control":{"type":"ephemeral"}}]}"#,
            r#"{"role":"user","content":[{}]}"#,
        );
        // on the message itself and on a block of a tool result
        check(
            r#"{"role":"user","cache_control":{"type":"ephemeral"},"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}"#,
        );
    }

    #[test]
    fn the_text_cache_control_elsewhere_stays() {
        // in a string, as a value, inside a tool call's input: content, not a marker
        for json in [
            r#"{"role":"user","content":"a \"cache_control\": {\"type\":\"ephemeral\"} b"}"#,
            r#"{"role":"user","content":[{"type":"text","text":"cache_control"}]}"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"cache_control":{"type":"ephemeral"}}}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"x\\","k":"cache_control"}]}"#,
        ] {
            let mut out = Vec::new();
            let (bytes, removed) = without_markers(json.as_bytes(), MESSAGE_PATHS, &mut out);
            assert_eq!(bytes, json.as_bytes());
            assert!(!removed, "{json}");
        }
    }

    #[test]
    fn system_blocks_lose_their_markers() {
        let mut out = Vec::new();
        let (bytes, removed) = without_markers(
            br#"[{"type":"text","text":"be terse","cache_control":{"type":"ephemeral"}}]"#,
            SYSTEM_PATHS,
            &mut out,
        );
        assert!(removed);
        assert_eq!(bytes, br#"[{"type":"text","text":"be terse"}]"#);
    }
}

#[cfg(test)]
mod known_tests {
    use super::*;

    /// A request of `n` messages as Claude Code sends it: the breakpoint on the newest message only.
    fn request(first: &str, n: usize) -> Vec<u8> {
        let messages: Vec<String> = (0..n)
            .map(|i| {
                let marker = if i + 1 == n {
                    r#","cache_control":{"type":"ephemeral"}"#
                } else {
                    ""
                };
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                let text = if i == 0 {
                    first.to_owned()
                } else {
                    format!("turn {i}")
                };
                format!(
                    r#"{{"role":"{role}","content":[{{"type":"text","text":"{text}"{marker}}}]}}"#
                )
            })
            .collect();
        format!(r#"{{"system":"s","messages":[{}]}}"#, messages.join(",")).into_bytes()
    }

    #[test]
    fn a_chain_spared_by_a_known_request_is_the_chain() {
        let api = Api::AnthropicMessages;
        for (earlier, later) in [
            (request("a", 5), request("a", 7)),
            // the same number of messages, the breakpoint in the same place
            (request("a", 7), request("a", 7)),
            // another conversation that began the same way, and one that did not
            (request("a", 3), request("b", 7)),
            (request("b", 9), request("a", 7)),
            // a longer request known than the one asked about
            (request("a", 9), request("a", 4)),
        ] {
            let earlier = Bytes::from(earlier);
            let e = RequestBody::split(api, &earlier).unwrap();
            let chain = Chain::of(api, &e);
            let known = Arc::new(Known::of(
                &earlier,
                &e,
                chain.start,
                &chain.hashes,
                &chain.marked,
            ));
            let l = RequestBody::split(api, &later).unwrap();
            let plain = Chain::of(api, &l);
            let mut asked = None;
            let spared = Chain::of_known(api, &l, |first| {
                asked = Some(*first);
                Some(Arc::clone(&known))
            });
            assert_eq!(asked, plain.hashes.first().copied());
            assert_eq!(spared.start, plain.start);
            assert_eq!(spared.hashes, plain.hashes);
            assert_eq!(spared.marked, plain.marked);
        }
    }
}

#[cfg(test)]
mod unwrap_tests {
    use super::*;

    fn hash(message: &str) -> ChainHash {
        chain_next(&[0; 32], message.as_bytes()).0
    }

    #[test]
    fn a_string_and_its_one_text_block_are_the_same_message() {
        let plain = hash(r#"{"role":"user","content":"fix the \"bug\" in a.rs"}"#);
        for wrapped in [
            r#"{"role":"user","content":[{"type":"text","text":"fix the \"bug\" in a.rs","cache_control":{"type":"ephemeral"}}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"fix the \"bug\" in a.rs"}]}"#,
            r#"{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"fix the \"bug\" in a.rs","type":"text"}]}"#,
            r#"{ "role" : "user" , "content" : [ { "type" : "text" , "text" : "fix the \"bug\" in a.rs" } ] }"#,
        ] {
            let spaced = hash(r#"{ "role" : "user" , "content" : "fix the \"bug\" in a.rs" }"#);
            assert!(
                hash(wrapped) == plain || hash(wrapped) == spaced,
                "{wrapped}"
            );
        }
        assert_eq!(
            hash(r#"{"content":[{"type":"text","text":"hi"}],"role":"assistant"}"#),
            hash(r#"{"content":"hi","role":"assistant"}"#)
        );
    }

    #[test]
    fn anything_more_than_one_plain_text_block_stays_itself() {
        let plain = hash(r#"{"role":"user","content":"hi"}"#);
        for other in [
            // two blocks, another kind of block, another member in the block, another role, a list of a string
            r#"{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"hi"}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"hi"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"hi","citations":null}]}"#,
            r#"{"role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"hi"}]}"#,
            r#"{"role":"user","content":["hi"]}"#,
            r#"{"role":"user","content":[{"type":"text","type":"text","text":"hi"}]}"#,
        ] {
            assert_ne!(hash(other), plain, "{other}");
        }
    }

    #[test]
    fn a_system_prompt_wrapped_in_one_block_is_its_string() {
        let plain = chain_start(Api::AnthropicMessages, Some(r#""be terse""#));
        let wrapped = chain_start(
            Api::AnthropicMessages,
            Some(r#"[{"type":"text","text":"be terse","cache_control":{"type":"ephemeral"}}]"#),
        );
        assert_eq!(plain, wrapped);
        let two = chain_start(
            Api::AnthropicMessages,
            Some(r#"[{"type":"text","text":"be"},{"type":"text","text":"terse"}]"#),
        );
        assert_ne!(plain, two);
    }
}
