//! A compacted request the provider refuses as too long for its model's context window, sent again within it.
//!
//! The refusal is an error answer of a few hundred bytes ([`crate::window`]): the first [`ERROR_READ`] bytes of a
//! 400 are read before anything is relayed; if they say the request is too long, the conversation learns the
//! window ([`Gateway::learn_window`]), and the request — the client's bytes as they came — is compacted again
//! under it and sent once more: the client sees the answer to that one. Any other answer, and a refusal that
//! teaches nothing, goes to the client as it came, byte for byte (a longer error answer: what was read, then the
//! rest as it arrives).

use std::pin::Pin;
use std::task::{Context, Poll};

use super::*;

/// What it takes to send a compacted request again: the request as it came (inflated), where it went, and
/// what chose its conversation.
pub(super) struct Again {
    pub(super) method: Method,
    pub(super) target: Uri,
    pub(super) headers: HeaderMap,
    pub(super) request: Bytes,
    pub(super) profile: Option<String>,
    pub(super) session: Option<String>,
    /// The tokens of the request as first compacted.
    pub(super) sent: u64,
}

/// Bytes of an upstream's error answer read before it is relayed, to see whether it refuses the request as too
/// long for the model (such an answer is a few hundred bytes; a longer one is relayed whole, as it comes).
const ERROR_READ: usize = 64 << 10;

/// Relay a compacted request's answer; when the upstream refuses it as too long for its model's context window
/// (a 400 that says so: [`crate::window`]), the conversation learns the budget the refusal implies and the
/// request is compacted again under it and sent once more — the client sees the answer to that one. A refusal
/// that teaches nothing (no budget lower than the one held) is relayed as it came.
pub(super) async fn within_window(
    shared: &Arc<Shared>,
    api: Api,
    up: Request<Body>,
    mut extra: HeaderMap,
    of: UsageOf,
    again: Again,
) -> Response<Body> {
    let answer = match send(shared, Some(api), up).await {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let small = answer
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok())
        .is_none_or(|n| n <= ERROR_READ);
    if answer.status() != StatusCode::BAD_REQUEST || !small {
        return pass(
            shared,
            Some(api),
            boxed(answer),
            extra,
            Some((of, again.request)),
        );
    }
    let (parts, body) = answer.into_parts();
    let (error, rest) = match head(body, ERROR_READ, shared.config.upstream_timeout).await {
        Ok(read) => read,
        Err(e) => {
            return api_error(
                Some(api),
                StatusCode::BAD_GATEWAY,
                &format!("ctxfit proxy: the upstream's error answer broke off: {e}"),
            )
        }
    };
    // longer than any refusal of the kind: relayed whole, what was read first and then the rest
    if let Some(rest) = rest {
        let answer = Response::from_parts(parts, Prefixed::new(error, rest).boxed());
        return pass(shared, Some(api), answer, extra, None);
    }
    let learned = crate::window::overflow(api.wire_format(), &error).and_then(|overflow| {
        gateway_of(shared, &of.profile)?.learn_window(
            &of.conversation,
            &overflow,
            api,
            &again.request,
        )
    });
    let as_it_came = |extra| {
        pass(
            shared,
            Some(api),
            Response::from_parts(parts, full(error.clone())),
            extra,
            None,
        )
    };
    let Some(budget) = learned else {
        return as_it_came(extra);
    };
    count(shared, api, |s| s.windows_learned += 1);
    let f = match compact(
        shared,
        api,
        &again.request,
        again.profile.as_deref(),
        again.session.as_deref(),
        false,
    ) {
        Ok(f) => f,
        Err(_) => return as_it_came(extra),
    };
    let (before, after) = (f.report.tokens_before as u64, f.report.tokens_after as u64);
    // (the request is counted once, as it was last sent)
    count(shared, api, |s| {
        s.window_retries += 1;
        s.tokens_forwarded = (s.tokens_forwarded + after).saturating_sub(again.sent);
    });
    for (k, v) in [
        ("x-ctxfit-tokens-after", after.to_string()),
        (
            "x-ctxfit-tokens-saved",
            before.saturating_sub(after).to_string(),
        ),
        ("x-ctxfit-window", budget.to_string()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&v) {
            extra.insert(HeaderName::from_static(k), v);
        }
    }
    let mut headers = again.headers;
    headers.insert("content-length", HeaderValue::from(f.body.len()));
    let mut up = Request::new(full(f.body));
    *up.method_mut() = again.method;
    *up.uri_mut() = again.target;
    *up.headers_mut() = headers;
    relay(shared, Some(api), up, extra, Some((of, again.request))).await
}

/// The first bytes of `body`, up to `limit` (or all of it, if it ends before), read within `patience`; and the
/// rest of it, if it goes on.
async fn head(
    mut body: Incoming,
    limit: usize,
    patience: Duration,
) -> Result<(Bytes, Option<Incoming>), BoxError> {
    let mut read = Vec::new();
    let reading = async {
        while read.len() <= limit {
            match body.frame().await {
                Some(frame) => {
                    if let Some(data) = frame?.data_ref() {
                        read.extend_from_slice(data);
                    }
                }
                None => return Ok::<bool, BoxError>(true),
            }
        }
        Ok(false)
    };
    let ended = tokio::time::timeout(patience, reading)
        .await
        .map_err(|_| format!("nothing for {} s", patience.as_secs()))??;
    Ok((Bytes::from(read), (!ended).then_some(body)))
}

/// A body whose first bytes were read already: they come first, then the rest as it arrives.
struct Prefixed {
    first: Option<Bytes>,
    rest: Incoming,
}

impl Prefixed {
    fn new(first: Bytes, rest: Incoming) -> Prefixed {
        Prefixed {
            first: Some(first),
            rest,
        }
    }
}

impl hyper::body::Body for Prefixed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(first))));
        }
        Pin::new(&mut this.rest)
            .poll_frame(cx)
            .map(|f| f.map(|f| f.map_err(BoxError::from)))
    }
}
