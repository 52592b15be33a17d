//! Who has the floor: shared, lock-free facts the turn-taking stage reads.
//!
//! The output writes whether the bot is speaking; the conversation stage
//! writes whether a reply is on its way and why barge-in is muted. The turn
//! stage reads them to decide whether a caller's speech is a barge-in.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Why barge-in is muted (bit set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MuteReason {
    /// The first greeting is playing.
    Greeting = 1,
    /// A tool call (a booking, a lookup) is running.
    Tool = 2,
    /// The application's own reason (e.g. a safety script).
    Other = 4,
}

/// Shared per call.
#[derive(Debug, Default)]
pub struct Floor {
    bot_speaking: AtomicBool,
    responding: AtomicBool,
    mute: AtomicU8,
}

impl Floor {
    /// The output is playing agent audio.
    pub fn bot_speaking(&self) -> bool {
        self.bot_speaking.load(Ordering::Acquire)
    }
    pub fn set_bot_speaking(&self, on: bool) {
        self.bot_speaking.store(on, Ordering::Release);
    }
    /// A reply is being generated or waits to be played.
    pub fn responding(&self) -> bool {
        self.responding.load(Ordering::Acquire)
    }
    pub fn set_responding(&self, on: bool) {
        self.responding.store(on, Ordering::Release);
    }
    /// The agent holds the floor (speaking or about to).
    pub fn agent_active(&self) -> bool {
        self.bot_speaking() || self.responding()
    }
    /// Set or clear one mute reason.
    pub fn set_muted(&self, reason: MuteReason, on: bool) {
        if on {
            self.mute.fetch_or(reason as u8, Ordering::AcqRel);
        } else {
            self.mute.fetch_and(!(reason as u8), Ordering::AcqRel);
        }
    }
    /// Whether barge-in is muted for any reason.
    pub fn muted(&self) -> bool {
        self.mute.load(Ordering::Acquire) != 0
    }
    /// Whether barge-in is muted for this reason.
    pub fn muted_for(&self, reason: MuteReason) -> bool {
        self.mute.load(Ordering::Acquire) & reason as u8 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mute_reasons_are_independent() {
        let f = Floor::default();
        f.set_muted(MuteReason::Greeting, true);
        f.set_muted(MuteReason::Tool, true);
        f.set_muted(MuteReason::Greeting, false);
        assert!(f.muted());
        assert!(f.muted_for(MuteReason::Tool));
        assert!(!f.muted_for(MuteReason::Greeting));
        f.set_muted(MuteReason::Tool, false);
        assert!(!f.muted());
    }
}
