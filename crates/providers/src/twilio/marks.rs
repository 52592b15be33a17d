//! The mark ledger: what the caller has actually heard (sans-IO).
//!
//! Twilio plays the `media` we send in order and echoes each `mark` once
//! the audio before it has played — or at once, for every pending mark,
//! after we send `clear`. So an echo alone does not say "played" or
//! "cleared". The ledger keeps the marks we sent, in order, each naming an
//! utterance and how much of it (ms) had been sent before it:
//!
//! - [`MarkLedger::sent_audio`] counts audio sent for an utterance and says
//!   when a mark is due (every `interval_ms` of audio, and at its end);
//! - [`MarkLedger::echo`] advances "heard until" for echoes that arrive
//!   before a `clear`;
//! - [`MarkLedger::clear`] (we are sending `clear`) marks every pending mark
//!   as not played: their echoes, when they come, change nothing.
//!
//! What the caller heard — for the accountant, the transcript and the next
//! LLM request — is [`MarkLedger::heard_ms`], never what was sent; only
//! the echo of an utterance's last mark proves all of it played
//! ([`MarkLedger::heard_whole`]).

use std::collections::VecDeque;

/// One mark we sent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    name: String,
    utterance: u64,
    /// Audio of the utterance sent before this mark.
    offset_ms: u64,
    /// Sent before a `clear`: its echo means "cleared", not "played".
    cleared: bool,
    /// The utterance's last mark: its echo proves all of it played.
    last: bool,
}

/// The ledger of one stream.
#[derive(Debug)]
pub struct MarkLedger {
    interval_ms: u64,
    pending: VecDeque<Pending>,
    next_id: u64,
    /// Per utterance: audio sent so far, audio at the last mark.
    sending: Option<(u64, u64, u64)>,
    /// Per utterance, most recent first, bounded: how much was heard (ms),
    /// and whether its last mark echoed (all of it was heard).
    heard: VecDeque<Heard>,
}

/// What the echoes proved of one utterance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heard {
    utterance: u64,
    ms: u64,
    whole: bool,
}

/// A mark to send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkDue {
    pub name: String,
}

impl MarkLedger {
    /// Marks every `interval_ms` of audio (100–250 ms is a good range: one
    /// mark per 20 ms frame made Twilio's playback stutter for others).
    pub fn new(interval_ms: u64) -> Self {
        MarkLedger {
            interval_ms: interval_ms.max(20),
            pending: VecDeque::new(),
            next_id: 1,
            sending: None,
            heard: VecDeque::new(),
        }
    }

    /// `ms` of `utterance`'s audio were just sent. Returns a mark to send
    /// after that audio when one is due (every interval; `last` = the end of
    /// the utterance, always marked).
    pub fn sent_audio(&mut self, utterance: u64, ms: u64, last: bool) -> Option<MarkDue> {
        let (sent, marked) = match self.sending {
            Some((u, sent, marked)) if u == utterance => (sent + ms, marked),
            _ => (ms, 0),
        };
        self.sending = Some((utterance, sent, marked));
        if !(last || sent - marked >= self.interval_ms) {
            return None;
        }
        self.sending = Some((utterance, sent, sent));
        let name = format!("u{utterance}:{sent}:{}", self.next_id);
        self.next_id += 1;
        self.pending.push_back(Pending {
            name: name.clone(),
            utterance,
            offset_ms: sent,
            cleared: false,
            last,
        });
        Some(MarkDue { name })
    }

    /// Twilio echoed mark `name`. Returns `(utterance, heard_ms)` when it
    /// proves more audio was played; an unknown name or the echo of a
    /// cleared mark changes nothing.
    pub fn echo(&mut self, name: &str) -> Option<(u64, u64)> {
        // Echoes come in send order; anything before `name` was echoed too.
        let pos = self.pending.iter().position(|p| p.name == name)?;
        let mut played = None;
        for _ in 0..=pos {
            let Some(p) = self.pending.pop_front() else {
                break;
            };
            if !p.cleared {
                self.record_heard(p.utterance, p.offset_ms, p.last);
                played = Some((p.utterance, p.offset_ms));
            }
        }
        played
    }

    /// We are sending `clear` (barge-in): every pending mark is now "not
    /// played". Returns how much of the utterance being played was heard.
    pub fn clear(&mut self) -> Option<(u64, u64)> {
        for p in &mut self.pending {
            p.cleared = true;
        }
        self.sending = None;
        let u = self.pending.front().map(|p| p.utterance)?;
        Some((u, self.heard_ms(u)))
    }

    /// Audio of `utterance` the caller has heard, by the echoes (ms).
    pub fn heard_ms(&self, utterance: u64) -> u64 {
        self.find(utterance).map_or(0, |h| h.ms)
    }

    /// The echo of `utterance`'s last mark came back before any `clear`:
    /// the caller heard all of it, to its last frame.
    pub fn heard_whole(&self, utterance: u64) -> bool {
        self.find(utterance).is_some_and(|h| h.whole)
    }

    /// Marks sent and not echoed yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn find(&self, utterance: u64) -> Option<&Heard> {
        self.heard.iter().find(|h| h.utterance == utterance)
    }

    fn record_heard(&mut self, utterance: u64, ms: u64, last: bool) {
        match self.heard.iter_mut().find(|h| h.utterance == utterance) {
            Some(h) => {
                h.ms = h.ms.max(ms);
                h.whole |= last;
            }
            None => {
                self.heard.push_front(Heard {
                    utterance,
                    ms,
                    whole: last,
                });
                self.heard.truncate(16);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Send `ms` of audio of `u` in 20 ms frames; the marks that fall due.
    fn send(l: &mut MarkLedger, u: u64, ms: u64) -> Vec<String> {
        let frames = ms / 20;
        (0..frames)
            .filter_map(|i| l.sent_audio(u, 20, i + 1 == frames))
            .map(|m| m.name)
            .collect()
    }

    #[test]
    fn marks_fall_every_interval_and_at_the_end() {
        let mut l = MarkLedger::new(200);
        let marks = send(&mut l, 1, 1000);
        assert_eq!(marks.len(), 5, "{marks:?}");
        assert!(marks[0].starts_with("u1:200:"));
        assert!(marks[4].starts_with("u1:1000:"));
        let marks = send(&mut l, 2, 90);
        assert_eq!(marks.len(), 1, "a short utterance is marked at its end");
        assert_eq!(l.pending(), 6);
    }

    #[test]
    fn echoes_say_what_was_heard() {
        let mut l = MarkLedger::new(200);
        let marks = send(&mut l, 1, 1000);
        assert_eq!(l.heard_ms(1), 0, "sent is not heard");
        assert_eq!(l.echo(&marks[0]), Some((1, 200)));
        assert_eq!(
            l.echo(&marks[2]),
            Some((1, 600)),
            "earlier marks echo first"
        );
        assert_eq!(l.heard_ms(1), 600);
        assert!(!l.heard_whole(1), "its last mark has not come back");
        assert_eq!(l.echo(&marks[4]), Some((1, 1000)));
        assert!(
            l.heard_whole(1),
            "the last mark's echo proves it all played"
        );
        assert_eq!(l.echo("nonsense"), None);
        assert_eq!(l.echo(&marks[0]), None, "an echo twice changes nothing");
    }

    #[test]
    fn after_clear_the_echoes_are_not_played() {
        let mut l = MarkLedger::new(200);
        let marks = send(&mut l, 1, 1000);
        l.echo(&marks[1]);
        // Barge-in at ~450 ms: we send `clear`; Twilio echoes the rest.
        assert_eq!(l.clear(), Some((1, 400)));
        for m in &marks[2..] {
            assert_eq!(l.echo(m), None, "{m} was cleared, not played");
        }
        assert_eq!(l.heard_ms(1), 400, "the transcript keeps only 400 ms");
        assert!(!l.heard_whole(1), "a cleared last mark proves nothing");
        assert_eq!(l.pending(), 0);
        // The next utterance starts afresh.
        let next = send(&mut l, 2, 200);
        assert_eq!(l.echo(&next[0]), Some((2, 200)));
    }
}
