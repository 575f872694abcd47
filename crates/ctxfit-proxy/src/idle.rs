//! An upstream answer that goes silent mid-way is ended, not waited on for ever.
//!
//! [`Idle`] relays a body's frames unchanged and starts a timer at each; when the body has sent nothing for the
//! limit, it ends with an error. The server then aborts the client's connection (no closing chunk), so the
//! client sees an answer cut short — an error its SDK reports, and can retry — never one that looks complete.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// The error type of the bodies the proxy sends.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A body that ends with an error after `limit` without a frame.
pub struct Idle<B> {
    inner: B,
    limit: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<B> Idle<B> {
    pub fn new(inner: B, limit: Duration) -> Idle<B> {
        Idle {
            inner,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
        }
    }
}

impl<B> Body for Idle<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let next = Instant::now() + this.limit;
                this.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(format!(
                    "the upstream sent nothing for {} s in the middle of its answer",
                    this.limit.as_secs()
                )
                .into()))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
