//! Reading a request's body before it is compacted, bounded in size, in time and in memory, and making room for
//! it under `--max-memory` ([`make_room`]).
//!
//! What: the body's bytes, read frame by frame. Why: a body is held whole while it is compacted, so a client can
//! tie up a connection and memory with it — by stating a size and never sending it, by trickling it a byte at a
//! time, or, with others, by sending more bodies at once than the heap allows. Each is answered, in the API's own
//! error shape, before the proxy holds more than it may:
//!
//! * over `--max-body` (stated, or as it arrives): 413;
//! * a pause longer than `--body-timeout` between two pieces of the body: 408, and the connection is closed;
//! * over `--max-memory` (what a body states it will need, or the heap as bodies arrive together, once the
//!   conversations used least recently are forgotten): 503 with `retry-after`, without reading the rest — or
//!   413 when the body alone would need more than the whole limit (no retry can make it fit).
//!
//! Example: `Content-Length: 1000` and then 10 bytes and silence gets, after the timeout, `408` with
//! `{"type":"error","error":{"type":"invalid_request_error","message":"ctxfit proxy: the request body stopped
//! arriving: nothing for 30 s (990 of 1000 bytes missing)"}}`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Bytes, Incoming};
use hyper::StatusCode;

use super::{ProxyConfig, Refusal};
use crate::gateway::Gateway;

/// Why a body was not read whole.
#[derive(Debug)]
pub(super) enum Unread {
    /// Above the size cap (413).
    TooLarge(usize),
    /// Nothing arrived for this long (408).
    Stalled {
        silence: Duration,
        got: usize,
        stated: Option<u64>,
    },
    /// The heap would go past `--max-memory` (503 with `retry-after`).
    NoRoom(String),
    /// The body would need more heap than `--max-memory` allows at all (413: no retry can make it fit).
    NeverFits(String),
    /// The connection failed while the body was read (400).
    Broken,
}

impl Unread {
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Unread::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Unread::Stalled { .. } => StatusCode::REQUEST_TIMEOUT,
            Unread::NoRoom(_) => StatusCode::SERVICE_UNAVAILABLE,
            Unread::NeverFits(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Unread::Broken => StatusCode::BAD_REQUEST,
        }
    }

    pub(super) fn message(&self) -> String {
        match self {
            Unread::TooLarge(max) => format!("request body above the proxy's limit of {max} bytes"),
            Unread::Stalled {
                silence,
                got,
                stated,
            } => {
                let missing = match stated {
                    Some(n) => format!(" ({} of {n} bytes missing)", n.saturating_sub(*got as u64)),
                    None => format!(" ({got} bytes received)"),
                };
                let silence = if silence.subsec_millis() == 0 {
                    format!("{} s", silence.as_secs())
                } else {
                    format!("{} ms", silence.as_millis())
                };
                format!("ctxfit proxy: the request body stopped arriving: nothing for {silence}{missing}")
            }
            Unread::NoRoom(message) | Unread::NeverFits(message) => {
                format!("ctxfit proxy: {message}")
            }
            Unread::Broken => "the request body could not be read".to_owned(),
        }
    }
}

impl From<Refusal> for Unread {
    fn from(refusal: Refusal) -> Unread {
        match refusal {
            Refusal::TooLarge(message) => Unread::NeverFits(message),
            Refusal::Busy(message) | Refusal::Bad(message) => Unread::NoRoom(message),
        }
    }
}

/// What bounds a body's reading.
pub(super) struct Bounds<'a> {
    pub max_body: usize,
    /// The longest pause between two pieces of the body.
    pub silence: Duration,
    /// Make room for a body of this many bytes (forgetting conversations if it must), or say why there is none.
    pub room_for: &'a (dyn Fn(usize) -> Result<(), Refusal> + Sync),
    /// Is the heap past its cap now?
    pub over_memory: &'a (dyn Fn() -> bool + Sync),
}

/// The whole body, or why not.
pub(super) async fn read_body(
    mut body: Incoming,
    stated: Option<u64>,
    bounds: Bounds<'_>,
) -> Result<Bytes, Unread> {
    if let Some(n) = stated {
        if n > bounds.max_body as u64 {
            return Err(Unread::TooLarge(bounds.max_body));
        }
        // a body that says how large it is makes room first, before a byte of it is held
        (bounds.room_for)(n as usize).map_err(Unread::from)?;
    }
    // (what a client states is not reserved ahead of its bytes: one that never sends them holds nothing)
    let mut bytes: Vec<u8> = Vec::with_capacity(stated.unwrap_or(0).min(1 << 20) as usize);
    loop {
        let frame = match tokio::time::timeout(bounds.silence, body.frame()).await {
            Err(_) => {
                return Err(Unread::Stalled {
                    silence: bounds.silence,
                    got: bytes.len(),
                    stated,
                })
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => return Err(Unread::Broken),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers: nothing of the body
        };
        if bytes.len() + data.len() > bounds.max_body {
            return Err(Unread::TooLarge(bounds.max_body));
        }
        bytes.extend_from_slice(&data);
        // bodies arriving together count as they grow: past the cap, room is made or the body refused
        if (bounds.over_memory)() && (bounds.room_for)(0).is_err() {
            return Err(Unread::NoRoom(format!(
                "the proxy reached its memory limit while this request's body arrived ({} MiB of it so far): \
                 retry later",
                bytes.len() >> 20
            )));
        }
    }
    // the body may be kept for the conversation's next request (`Gateway::forward_shared`): not its spare room
    if bytes.capacity() > bytes.len() + bytes.len() / 8 {
        bytes.shrink_to_fit();
    }
    Ok(Bytes::from(bytes))
}

/// Bytes of heap a request takes while it is compacted, per byte of its body: the body, its parsed messages, the
/// body written out (measured: 2–3).
const MEMORY_PER_BODY_BYTE: usize = 4;

/// Bytes of heap a request takes while it is compacted, per JSON object or list in its body: the model's and the
/// indexes' structures for each (measured: about 850 on bodies of 200,000 and 400,000 small messages, where a
/// byte-count alone foresaw an eighth of what the compaction took).
const MEMORY_PER_CONTAINER: usize = 1024;

/// The heap a body of `len` bytes will take, foreseen from its size alone (before it is read).
pub(super) fn need_of_size(len: usize) -> usize {
    len.saturating_mul(MEMORY_PER_BODY_BYTE)
}

/// The heap a body will take, foreseen from its size and its shape: a body of many small messages takes far more
/// per byte than one of a few long tool results.
pub(super) fn need_of_body(body: &[u8]) -> usize {
    let containers = memchr::memchr2_iter(b'{', b'[', body).count();
    need_of_size(body.len()).saturating_add(containers.saturating_mul(MEMORY_PER_CONTAINER))
}

/// Make room under `--max-memory` for a request that `need`s that many bytes of heap ([`need_of_size`],
/// [`need_of_body`]): forget the conversations used least recently, of every profile, until it fits. `Err` when
/// it does not fit even so — `TooLarge` (and nothing forgotten) when it would not fit beside the `floor` the
/// proxy itself takes, whatever else it let go.
pub(super) fn make_room(
    config: &ProxyConfig,
    gateways: &HashMap<String, Arc<Gateway>>,
    floor: usize,
    need: usize,
) -> Result<(), Refusal> {
    let (Some(max), Some(in_use)) = (config.max_memory, config.memory_in_use) else {
        return Ok(());
    };
    if need.saturating_add(floor) > max {
        // more than the whole limit leaves it: no conversation forgotten, no retry, can make it fit
        return Err(Refusal::TooLarge(format!(
            "this request needs about {} MiB of memory to be compacted, more than the proxy's whole limit of {} \
             MiB (--max-memory): raise the limit, or send it with `x-ctxfit-bypass: 1` to forward it untouched",
            need >> 20,
            max >> 20
        )));
    }
    while in_use().saturating_add(need) > max {
        let oldest = (gateways.values())
            .filter_map(|g| g.least_recently_seen().map(|seen| (seen, g)))
            .min_by_key(|(seen, _)| *seen);
        match oldest {
            Some((_, g)) => {
                g.forget_least_recent();
            }
            None => break,
        }
    }
    if in_use().saturating_add(need) > max {
        return Err(Refusal::Busy(format!(
            "the proxy is at its memory limit ({} MiB) and this request needs about {} MiB more: retry later",
            max >> 20,
            need >> 20
        )));
    }
    Ok(())
}
