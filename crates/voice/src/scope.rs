//! Turn epochs and the cancellation tree of one call.
//!
//! ```text
//! call token ──┬── turn token (epoch n) ──┬── request (LLM stream)
//!              │                          └── request (TTS synthesis)
//!              └── side-effecting tool calls (a booking must not be half-done)
//! ```
//!
//! [`CallScope::interrupt`] (barge-in) bumps the epoch, cancels the current
//! turn token — so every request started for that turn stops at once instead
//! of being waited for — installs a fresh turn token, and tells every stage
//! out of band ([`SystemFrame::Interrupt`]), so each drops stale frames from
//! its queue and the output clears what it buffered.

use crate::frames::{Epoch, Frame, SystemFrame};
use crate::inbox::ControlHandle;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Shared by every stage of one call.
pub struct CallScope {
    epoch: AtomicU64,
    call: CancellationToken,
    turn: Mutex<CancellationToken>,
    stages: OnceLock<Vec<ControlHandle>>,
    interruptions: AtomicU64,
    epoch_changed: Notify,
}

impl Default for CallScope {
    fn default() -> Self {
        Self::new()
    }
}

impl CallScope {
    /// A new call at epoch 0.
    pub fn new() -> Self {
        let call = CancellationToken::new();
        let turn = call.child_token();
        CallScope {
            epoch: AtomicU64::new(0),
            call,
            turn: Mutex::new(turn),
            stages: OnceLock::new(),
            interruptions: AtomicU64::new(0),
            epoch_changed: Notify::new(),
        }
    }

    /// The current turn epoch.
    #[inline]
    pub fn epoch(&self) -> Epoch {
        self.epoch.load(Ordering::Acquire)
    }

    /// Cancelled when the call is over (hang-up, cancel, shutdown). Tool
    /// calls with side effects run under this token, not the turn's.
    pub fn call_token(&self) -> &CancellationToken {
        &self.call
    }

    /// The current turn's token (a child of the call token): cancelled by
    /// the next barge-in. Requests for this turn run under a child of it.
    pub fn turn_token(&self) -> CancellationToken {
        self.lock_turn().clone()
    }

    /// A token for one request of the current turn, and that turn's epoch.
    pub fn request(&self) -> (Epoch, CancellationToken) {
        let turn = self.lock_turn();
        (self.epoch(), turn.child_token())
    }

    fn lock_turn(&self) -> std::sync::MutexGuard<'_, CancellationToken> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Barge-in: a new epoch begins; the old turn's work is cancelled and
    /// every stage is told. Returns the new epoch.
    pub fn interrupt(&self) -> Epoch {
        let epoch = {
            let mut turn = self.lock_turn();
            let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
            turn.cancel();
            *turn = self.call.child_token();
            epoch
        };
        self.interruptions.fetch_add(1, Ordering::Relaxed);
        self.epoch_changed.notify_waiters();
        self.broadcast(Frame::System(SystemFrame::Interrupt { epoch }));
        epoch
    }

    /// Completes at the next barge-in (create it before checking the epoch).
    pub fn epoch_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.epoch_changed.notified()
    }

    /// How many barge-ins this call had.
    pub fn interruptions(&self) -> u64 {
        self.interruptions.load(Ordering::Relaxed)
    }

    /// Stop the call: cancels every token and tells every stage.
    pub fn cancel(&self) {
        self.call.cancel();
        self.broadcast(Frame::System(SystemFrame::Cancel));
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.call.is_cancelled()
    }

    /// Send an out-of-band frame to every stage.
    pub fn broadcast(&self, frame: Frame) {
        if let Some(stages) = self.stages.get() {
            for s in stages {
                let _ = s.push(frame.clone());
            }
        }
    }

    pub(crate) fn set_stages(&self, stages: Vec<ControlHandle>) {
        let _ = self.stages.set(stages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_cancels_the_turn_not_the_call() {
        let scope = CallScope::new();
        let (e0, req) = scope.request();
        assert_eq!(e0, 0);
        let turn = scope.turn_token();
        assert_eq!(scope.interrupt(), 1);
        assert!(req.is_cancelled());
        assert!(turn.is_cancelled());
        assert!(!scope.call_token().is_cancelled());
        let (e1, req1) = scope.request();
        assert_eq!(e1, 1);
        assert!(!req1.is_cancelled());
        scope.cancel();
        assert!(req1.is_cancelled());
        assert_eq!(scope.interruptions(), 1);
    }
}
