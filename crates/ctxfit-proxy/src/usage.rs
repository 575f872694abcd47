//! The usage the upstream reports, read from its answer as the answer passes through.
//!
//! [`UsageTap`] relays an answer's frames unchanged, the moment they arrive, and keeps a copy of its first
//! [`KEEP`] bytes; at the end it hands them to a callback. [`input_tokens`] reads the input tokens of the request
//! from them — JSON or server-sent events, Anthropic's `input_tokens` + `cache_read_input_tokens` +
//! `cache_creation_input_tokens` (in `message_start` when streamed) or OpenAI's `prompt_tokens` / Responses'
//! `input_tokens`: everything the provider counted, cache included, which is what the budget trigger compares.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};

/// Bytes of an answer kept for reading its usage.
pub const KEEP: usize = 256 << 10;

/// What is done with an answer's first bytes once it has passed.
type Done = Box<dyn FnOnce(&[u8]) + Send + Sync>;

/// An answer's body, relayed unchanged, with its first bytes kept for `done`.
pub struct UsageTap {
    inner: Incoming,
    kept: Vec<u8>,
    done: Option<Done>,
}

impl UsageTap {
    pub fn new(inner: Incoming, done: impl FnOnce(&[u8]) + Send + Sync + 'static) -> UsageTap {
        UsageTap {
            inner,
            kept: Vec::new(),
            done: Some(Box::new(done)),
        }
    }
}

impl Body for UsageTap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let room = KEEP.saturating_sub(this.kept.len());
                    this.kept.extend_from_slice(&data[..room.min(data.len())]);
                }
                // a body of known length is not polled again after its last bytes
                this.inner.is_end_stream()
            }
            Poll::Ready(None) => true,
            _ => false,
        };
        if ended {
            if let Some(done) = this.done.take() {
                done(&this.kept);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The first number after `"key":` in `text`.
fn number_after(text: &str, key: &str) -> Option<usize> {
    let pattern = format!("\"{key}\"");
    let at = text.find(&pattern)? + pattern.len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    digits.parse().ok()
}

/// The input tokens the provider counted for the request, from the first bytes of its answer.
pub fn input_tokens(answer: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(answer);
    if let Some(prompt) = number_after(&text, "prompt_tokens") {
        return Some(prompt);
    }
    let input = number_after(&text, "input_tokens")?;
    let cached = ["cache_read_input_tokens", "cache_creation_input_tokens"]
        .iter()
        .filter_map(|k| number_after(&text, k))
        .sum::<usize>();
    Some(input + cached)
}

#[cfg(test)]
mod tests {
    use super::input_tokens;

    #[test]
    fn usage_is_read_from_json_and_from_events() {
        let json = br#"{"id":"m","usage":{"input_tokens": 12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":5}}"#;
        assert_eq!(input_tokens(json), Some(2112));
        let sse = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"cache_read_input_tokens\":0}}}\n\n";
        assert_eq!(input_tokens(sse), Some(7));
        let openai = br#"{"usage":{"prompt_tokens":321,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":300}}}"#;
        assert_eq!(input_tokens(openai), Some(321));
        assert_eq!(input_tokens(b"{\"error\":\"x\"}"), None);
    }
}
