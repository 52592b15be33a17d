//! A stream of items released after chosen delays (tokio time, so it runs
//! in virtual time under a paused clock), that reports whether it
//! completed or was dropped early. The offline TTS speaks through it.

use futures_core::Stream;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

type OnEnd = Box<dyn FnOnce(bool) + Send>;

/// Yields each item after its delay (counted from the previous item).
pub struct TimedStream<T> {
    items: VecDeque<(Duration, T)>,
    sleep: Option<Pin<Box<Sleep>>>,
    on_end: Option<OnEnd>,
}

impl<T> TimedStream<T> {
    /// `on_end(true)` when every item was taken, `on_end(false)` when the
    /// stream is dropped before that.
    pub fn new(items: Vec<(Duration, T)>, on_end: impl FnOnce(bool) + Send + 'static) -> Self {
        TimedStream {
            items: items.into(),
            sleep: None,
            on_end: Some(Box::new(on_end)),
        }
    }
}

impl<T: Unpin> Stream for TimedStream<T> {
    type Item = T;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        let Some((delay, _)) = this.items.front() else {
            if let Some(f) = this.on_end.take() {
                f(true);
            }
            return Poll::Ready(None);
        };
        let delay = *delay;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
        match sleep.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.sleep = None;
                Poll::Ready(this.items.pop_front().map(|(_, t)| t))
            }
        }
    }
}

use std::future::Future;

impl<T> Drop for TimedStream<T> {
    fn drop(&mut self) {
        if let Some(f) = self.on_end.take() {
            f(false);
        }
    }
}
