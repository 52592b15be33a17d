//! The calls this server is handling: the capacity limit, draining at
//! shutdown, and the signal that ends live calls politely.
//!
//! A call holds a [`CallSlot`] from its WebSocket upgrade to the end of its
//! post-call work; dropping the slot frees it. [`LiveCalls::try_enter`]
//! refuses beyond `max_calls` and while draining.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// How live calls should end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Go on.
    Running,
    /// The grace period is over: say goodbye, promise a callback, hang up.
    Politely,
    /// A second signal: stop now (the record is still written).
    Now,
}

/// The server's live calls.
#[derive(Debug)]
pub struct LiveCalls {
    max: usize,
    live: AtomicUsize,
    draining: AtomicBool,
    ending: watch::Sender<Shutdown>,
    idle: Notify,
}

/// One admitted call; frees its place when dropped.
#[derive(Debug)]
pub struct CallSlot {
    calls: Arc<LiveCalls>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        if self.calls.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.calls.idle.notify_waiters();
        }
    }
}

impl LiveCalls {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(LiveCalls {
            max: max.max(1),
            live: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            ending: watch::channel(Shutdown::Running).0,
            idle: Notify::new(),
        })
    }

    /// A place for one more call, unless full or draining.
    pub fn try_enter(self: &Arc<Self>) -> Option<CallSlot> {
        if self.is_draining() {
            return None;
        }
        let mut n = self.live.load(Ordering::Acquire);
        loop {
            if n >= self.max {
                return None;
            }
            match self
                .live
                .compare_exchange(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Some(CallSlot {
                        calls: self.clone(),
                    })
                }
                Err(now) => n = now,
            }
        }
    }

    /// Whether a call could be admitted now (for `/twiml`: the stream is
    /// admitted again at its upgrade).
    pub fn has_room(&self) -> bool {
        !self.is_draining() && self.live() < self.max
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Stop admitting calls.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Tell every live call how to end.
    pub fn end_all(&self, how: Shutdown) {
        self.ending.send_replace(how);
    }

    /// A receiver of the [`Shutdown`] signal, for one call.
    pub fn shutdown(&self) -> watch::Receiver<Shutdown> {
        self.ending.subscribe()
    }

    /// Wait until no call is live.
    pub async fn idle(&self) {
        loop {
            let n = self.idle.notified();
            if self.live() == 0 {
                return;
            }
            n.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_and_draining() {
        let calls = LiveCalls::new(2);
        let a = calls.try_enter().unwrap();
        let _b = calls.try_enter().unwrap();
        assert!(calls.try_enter().is_none(), "full");
        assert!(!calls.has_room());
        drop(a);
        assert_eq!(calls.live(), 1);
        assert!(calls.has_room());
        calls.drain();
        assert!(calls.try_enter().is_none(), "draining");
    }

    #[tokio::test]
    async fn idle_wakes_when_the_last_call_ends() {
        let calls = LiveCalls::new(4);
        let slot = calls.try_enter().unwrap();
        let c = calls.clone();
        let waiter = tokio::spawn(async move { c.idle().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(slot);
        waiter.await.unwrap();
    }
}
