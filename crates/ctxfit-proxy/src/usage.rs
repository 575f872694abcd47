//! The usage the upstream reports, read from its answer as the answer passes through.
//!
//! [`UsageTap`] relays an answer's frames unchanged, the moment they arrive, and keeps a copy of its first and
//! its last [`KEEP`] bytes; at the end it hands them to a callback. [`input_tokens`] reads the input tokens of the
//! request from them — JSON or server-sent events, Anthropic's `input_tokens` + `cache_read_input_tokens` +
//! `cache_creation_input_tokens` (in `message_start`, the stream's first event, when streamed) or OpenAI's
//! `prompt_tokens` / Responses' `input_tokens` (in the stream's last event: past the first bytes of a long answer,
//! whose every few characters are an event of their own): everything the provider counted, cache included, which
//! is what the budget trigger compares.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};

/// Bytes of an answer kept for reading its usage, from its start and from its end.
pub const KEEP: usize = 256 << 10;

/// What is done with an answer's first and last bytes once it has passed.
type Done = Box<dyn FnOnce(&[u8]) + Send + Sync>;

/// An answer's body, relayed unchanged, with its first and last bytes kept for `done`.
pub struct UsageTap<B = Incoming> {
    inner: B,
    /// The first [`KEEP`] bytes.
    head: Vec<u8>,
    /// Of the bytes after them, the last [`KEEP`] (up to twice as many between two trims).
    tail: Vec<u8>,
    done: Option<Done>,
}

impl<B> UsageTap<B> {
    pub fn new(inner: B, done: impl FnOnce(&[u8]) + Send + Sync + 'static) -> UsageTap<B> {
        UsageTap {
            inner,
            head: Vec::new(),
            tail: Vec::new(),
            done: Some(Box::new(done)),
        }
    }

    fn keep(&mut self, data: &[u8]) {
        let room = KEEP.saturating_sub(self.head.len());
        let (head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(head);
        self.tail
            .extend_from_slice(&rest[rest.len().saturating_sub(KEEP)..]);
        if self.tail.len() > 2 * KEEP {
            self.tail.drain(..self.tail.len() - KEEP);
        }
    }

    /// The bytes kept: the head, then (after a line break, where more came) the tail.
    fn finish(&mut self) {
        if let Some(done) = self.done.take() {
            if !self.tail.is_empty() {
                self.head.push(b'\n');
                self.head.append(&mut self.tail);
            }
            done(&self.head);
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for UsageTap<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.keep(data);
                }
                // a body of known length is not polled again after its last bytes
                this.inner.is_end_stream()
            }
            Poll::Ready(None) => true,
            _ => false,
        };
        if ended {
            this.finish();
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

/// The input a provider reported for a request: everything it counted, and of that what it read from its prompt
/// cache and what it wrote to it (OpenAI reports no writes: 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportedUsage {
    pub input_tokens: usize,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
}

/// The usage the provider reported for the request, from the first (and last) bytes of its answer: Anthropic's
/// `input_tokens` (uncached) with `cache_read_input_tokens` and `cache_creation_input_tokens`; OpenAI Chat's
/// `prompt_tokens` and Responses' `input_tokens`, each with its details' `cached_tokens`.
pub fn reported_usage(answer: &[u8]) -> Option<ReportedUsage> {
    let text = String::from_utf8_lossy(answer);
    let cached = || number_after(&text, "cached_tokens").unwrap_or(0);
    if let Some(prompt) = number_after(&text, "prompt_tokens") {
        return Some(ReportedUsage {
            input_tokens: prompt,
            cache_read_tokens: cached().min(prompt),
            cache_write_tokens: 0,
        });
    }
    let input = number_after(&text, "input_tokens")?;
    let read = number_after(&text, "cache_read_input_tokens");
    let write = number_after(&text, "cache_creation_input_tokens");
    Some(if read.is_some() || write.is_some() {
        // Anthropic's `input_tokens` are what was neither read from the cache nor written to it
        let (read, write) = (read.unwrap_or(0), write.unwrap_or(0));
        ReportedUsage {
            input_tokens: input + read + write,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    } else {
        ReportedUsage {
            input_tokens: input,
            cache_read_tokens: cached().min(input),
            cache_write_tokens: 0,
        }
    })
}

/// The input tokens the provider counted for the request, cache included.
pub fn input_tokens(answer: &[u8]) -> Option<usize> {
    reported_usage(answer).map(|u| u.input_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_from_json_and_from_events() {
        let json = br#"{"id":"m","usage":{"input_tokens": 12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":5}}"#;
        assert_eq!(input_tokens(json), Some(2112));
        let sse = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"cache_read_input_tokens\":0}}}\n\n";
        assert_eq!(input_tokens(sse), Some(7));
        let openai = br#"{"usage":{"prompt_tokens":321,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":300}}}"#;
        assert_eq!(input_tokens(openai), Some(321));
        assert_eq!(input_tokens(b"{\"error\":\"x\"}"), None);
        // and what of it the cache served and took
        let usage = |a: &[u8]| reported_usage(a).unwrap();
        assert_eq!(
            usage(json),
            ReportedUsage {
                input_tokens: 2112,
                cache_read_tokens: 2000,
                cache_write_tokens: 100
            }
        );
        assert_eq!(
            usage(openai),
            ReportedUsage {
                input_tokens: 321,
                cache_read_tokens: 300,
                cache_write_tokens: 0
            }
        );
        let responses = br#"data: {"type":"response.completed","response":{"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":800},"output_tokens":3}}}"#;
        assert_eq!(
            usage(responses),
            ReportedUsage {
                input_tokens: 900,
                cache_read_tokens: 800,
                cache_write_tokens: 0
            }
        );
        assert_eq!(usage(sse).cache_read_tokens, 0);
    }

    /// A body of the given frames.
    struct Frames(std::collections::VecDeque<Bytes>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    /// What a tap hands on at the end of `frames`, and the bytes it relayed.
    fn tapped(frames: Vec<Vec<u8>>) -> (Vec<u8>, Vec<u8>) {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(None));
        let into = std::sync::Arc::clone(&kept);
        let mut tap = UsageTap::new(
            Frames(frames.into_iter().map(Bytes::from).collect()),
            move |bytes| *into.lock().unwrap() = Some(bytes.to_vec()),
        );
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut relayed = Vec::new();
        while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut tap).poll_frame(&mut cx) {
            relayed.extend_from_slice(frame.data_ref().unwrap());
        }
        let kept = kept.lock().unwrap().take().expect("handed on at the end");
        (kept, relayed)
    }

    #[test]
    fn usage_at_the_end_of_a_long_stream_is_read() {
        // a Responses stream: its usage in the last event, after a megabyte of small deltas
        let mut frames =
            vec![b"event: response.created\ndata: {\"response\":{\"usage\":null}}\n\n".to_vec()];
        let delta = b"event: response.output_text.delta\ndata: {\"delta\":\"abc\"}\n\n";
        frames.extend(std::iter::repeat_n(delta.to_vec(), (1 << 20) / delta.len()));
        frames.push(
            b"event: response.completed\ndata: {\"response\":{\"usage\":{\"input_tokens\":4242}}}\n\n".to_vec(),
        );
        let all: Vec<u8> = frames.concat();
        let (kept, relayed) = tapped(frames);
        assert_eq!(relayed, all, "relayed unchanged");
        assert!(kept.len() <= 3 * KEEP + 1, "bounded: {}", kept.len());
        assert_eq!(input_tokens(&kept), Some(4242));
        // one frame larger than both windows: its start and its end
        let mut big = b"{\"usage\":{\"input_tokens\":7}}".to_vec();
        big.resize(5 * KEEP, b' ');
        let (kept, relayed) = tapped(vec![big.clone()]);
        assert_eq!((relayed, kept.len()), (big, 2 * KEEP + 1));
        assert_eq!(input_tokens(&kept), Some(7));
        // Anthropic's usage comes first, and the first reading wins over a later one
        let (kept, _) = tapped(vec![
            b"data: {\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n".to_vec(),
            vec![b' '; 3 * KEEP],
            b"data: {\"usage\":{\"input_tokens\":1}}\n\n".to_vec(),
        ]);
        assert_eq!(input_tokens(&kept), Some(9));
    }
}
