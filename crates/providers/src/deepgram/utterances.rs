//! One caller utterance from Deepgram's segments (sans-IO).
//!
//! Deepgram sends a long utterance as several *final* segments (spans that
//! will not change again) before one marked `speech_final` (its
//! endpointing heard the caller stop). Its own advice: join the final
//! segments and take the buffer as the utterance when `speech_final`
//! arrives — never `speech_final`'s segment alone. Background noise can
//! keep `speech_final` from ever coming, so `UtteranceEnd` (a gap after
//! the last final word) ends the utterance too; and when we asked for it
//! with `Finalize` (our VAD heard the caller stop, or a barge-in), the
//! answer ends it — or, since an answer is not guaranteed, a bounded wait.
//!
//! [`Utterances`] applies those rules: each utterance is emitted once,
//! empty only as the answer to a `Finalize` over a stretch with no words; interim text (the finals so far plus the current interim
//! span) goes out as [`Heard::Interim`] for barge-in decisions only.
//! Segment times are per socket; after a reconnect the client passes the
//! call-clock offset of the new socket's first audio, and final segments
//! of audio already taken (a replay) are skipped.

use super::listen::{Segment, ServerMessage};
use std::time::Duration;
use tokio::time::Instant;

/// What the caller said, as far as Deepgram knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The utterance so far (may still change): for barge-in only.
    Interim(String),
    /// One whole caller utterance (never repeated). Empty when Deepgram
    /// answered our `Finalize` and the stretch of speech our VAD heard
    /// held no words (a cough, a breath): the caller's turn is over and
    /// nothing is owed for it. A `Finalize` that gets no answer at all
    /// says nothing (words may still come after a reconnect).
    Final(String),
    /// Deepgram's VAD heard speech start.
    SpeechStarted,
}

/// Segments ending this close to what was already taken are replays.
const REPLAY_SLACK_S: f64 = 0.05;

/// Assembles caller utterances from Deepgram's messages.
#[derive(Debug)]
pub struct Utterances {
    finals: Vec<String>,
    interim: String,
    /// Call-clock seconds where the interim span ends.
    interim_until: f64,
    /// Call-clock seconds up to which final segments were taken.
    final_until: f64,
    /// Call-clock seconds up to which interim spans were emitted as an
    /// utterance (a `Finalize` unanswered): audio not to replay, though
    /// a final segment for it is still taken when it comes.
    taken_until: f64,
    /// A `Finalize` is waiting for its answer until then.
    finalize_by: Option<Instant>,
    finalize_wait: Duration,
}

impl Utterances {
    /// `finalize_wait`: how long an answer to `Finalize` is waited for
    /// before the buffer is taken as it is (~0.3–0.5 s).
    pub fn new(finalize_wait: Duration) -> Self {
        Utterances {
            finals: Vec::new(),
            interim: String::new(),
            interim_until: 0.0,
            final_until: 0.0,
            taken_until: 0.0,
            finalize_by: None,
            finalize_wait,
        }
    }

    /// Audio (call-clock seconds) that delivered words cover (final
    /// segments, and interim spans taken as an utterance): what a new
    /// socket (or another recogniser) need not hear again.
    pub fn acknowledged(&self) -> f64 {
        self.final_until.max(self.taken_until)
    }

    /// Words are waiting for the end of their utterance.
    pub fn pending(&self) -> bool {
        !self.finals.is_empty() || !self.interim.is_empty()
    }

    /// We sent `Finalize` at `now`.
    pub fn finalize_sent(&mut self, now: Instant) {
        self.finalize_by = Some(now + self.finalize_wait);
    }

    /// When [`Utterances::on_deadline`] must be called.
    pub fn deadline(&self) -> Option<Instant> {
        self.finalize_by
    }

    /// The wait for a `Finalize` answer ran out: take what is buffered.
    pub fn on_deadline(&mut self, now: Instant) -> Option<Heard> {
        match self.finalize_by {
            Some(at) if now >= at => {
                self.finalize_by = None;
                self.take(true)
            }
            _ => None,
        }
    }

    /// The socket is closing for good (the call ended): take every word
    /// heard, interim ones included.
    pub fn flush(&mut self) -> Option<Heard> {
        self.finalize_by = None;
        self.take(true)
    }

    /// Deepgram is lost for the call: take the final words only. The
    /// interim span is not final, and its audio — not acknowledged — goes
    /// to whoever hears the call next.
    pub fn flush_finals(&mut self) -> Option<Heard> {
        self.finalize_by = None;
        self.take(false)
    }

    /// One message of a socket whose audio starts at `offset` seconds of
    /// the call.
    pub fn on_message(&mut self, msg: &ServerMessage, offset: f64) -> Vec<Heard> {
        match msg {
            ServerMessage::Results(seg) => self.on_segment(seg, offset),
            ServerMessage::UtteranceEnd { .. } => self.take(false).into_iter().collect(),
            ServerMessage::SpeechStarted { .. } => vec![Heard::SpeechStarted],
            _ => Vec::new(),
        }
    }

    fn on_segment(&mut self, seg: &Segment, offset: f64) -> Vec<Heard> {
        let mut out = Vec::new();
        if !seg.is_final {
            if !seg.transcript.is_empty() && offset + seg.end() > self.final_until + REPLAY_SLACK_S
            {
                self.interim = seg.transcript.clone();
                self.interim_until = offset + seg.end();
                out.push(Heard::Interim(self.so_far()));
            }
            return out;
        }
        let end = offset + seg.end();
        let replayed = end <= self.final_until + REPLAY_SLACK_S && seg.duration > 0.0;
        if !replayed {
            self.final_until = self.final_until.max(end);
            self.interim.clear();
            if !seg.transcript.is_empty() {
                self.finals.push(seg.transcript.clone());
            }
        }
        let answered = seg.from_finalize && self.finalize_by.is_some();
        if seg.speech_final || answered {
            let asked = self.finalize_by.take().is_some();
            match self.take(false) {
                Some(h) => out.push(h),
                // Deepgram finished the stretch we asked about: no words.
                None if asked => out.push(Heard::Final(String::new())),
                None => {}
            }
        } else if !replayed && !seg.transcript.is_empty() {
            out.push(Heard::Interim(self.so_far()));
        }
        out
    }

    fn so_far(&self) -> String {
        let mut words: Vec<&str> = self.finals.iter().map(String::as_str).collect();
        if !self.interim.is_empty() {
            words.push(&self.interim);
        }
        words.join(" ")
    }

    /// Emit the buffered finals (and the interim span with `with_interim`).
    fn take(&mut self, with_interim: bool) -> Option<Heard> {
        let text = if with_interim {
            if !self.interim.is_empty() {
                // Its words are delivered now: not to be heard again.
                self.taken_until = self.taken_until.max(self.interim_until);
            }
            self.so_far()
        } else {
            self.finals.join(" ")
        };
        self.finals.clear();
        self.interim.clear();
        let text = text.trim();
        (!text.is_empty()).then(|| Heard::Final(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(t: &str, start: f64, dur: f64, is_final: bool, speech_final: bool) -> ServerMessage {
        ServerMessage::Results(Segment {
            transcript: t.into(),
            is_final,
            speech_final,
            from_finalize: false,
            start,
            duration: dur,
        })
    }

    fn finals(v: Vec<Heard>) -> Vec<String> {
        v.into_iter()
            .filter_map(|h| match h {
                Heard::Final(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn words_taken_from_an_interim_are_acknowledged_and_a_lost_socket_keeps_interims_unsaid() {
        // A Finalize unanswered: the interim words go out as the
        // utterance, and their audio counts as heard (not replayed).
        let mut u = Utterances::new(Duration::from_millis(400));
        u.on_message(&seg("My AC stopped", 0.0, 1.5, true, false), 0.0);
        u.on_message(&seg("cooling", 1.5, 0.6, false, false), 0.0);
        assert_eq!(u.acknowledged(), 1.5);
        let now = Instant::now();
        u.finalize_sent(now);
        assert_eq!(
            u.on_deadline(now + Duration::from_millis(500)),
            Some(Heard::Final("My AC stopped cooling".into()))
        );
        assert!(
            (u.acknowledged() - 2.1).abs() < 1e-9,
            "{}",
            u.acknowledged()
        );
        // Lost mid-utterance: the finals are said, the interim is not
        // (its audio is unacknowledged, for the next recogniser).
        u.on_message(&seg("It's 4329", 3.0, 1.0, true, false), 0.0);
        u.on_message(&seg("Franklin", 4.0, 0.5, false, false), 0.0);
        assert_eq!(u.flush_finals(), Some(Heard::Final("It's 4329".into())));
        assert_eq!(u.acknowledged(), 4.0);
        assert!(!u.pending());
    }

    #[test]
    fn final_segments_are_joined_and_emitted_on_speech_final_once() {
        let mut u = Utterances::new(Duration::from_millis(400));
        let mut out = Vec::new();
        out.extend(u.on_message(&seg("my AC", 0.0, 1.0, false, false), 0.0));
        out.extend(u.on_message(&seg("My AC stopped", 0.0, 1.5, true, false), 0.0));
        assert_eq!(out.last(), Some(&Heard::Interim("My AC stopped".into())));
        out.extend(u.on_message(&seg("cooling", 1.5, 0.5, false, false), 0.0));
        assert_eq!(
            out.last(),
            Some(&Heard::Interim("My AC stopped cooling".into()))
        );
        out.extend(u.on_message(&seg("cooling last night.", 1.5, 1.2, true, true), 0.0));
        out.extend(u.on_message(&ServerMessage::UtteranceEnd { last_word_end: 2.7 }, 0.0));
        assert_eq!(finals(out), ["My AC stopped cooling last night."]);
        assert!(!u.pending());
    }

    #[test]
    fn utterance_end_ends_an_utterance_that_never_got_speech_final() {
        let mut u = Utterances::new(Duration::from_millis(400));
        let mut out = u.on_message(&seg("It's 78745", 0.0, 1.0, true, false), 0.0);
        out.extend(u.on_message(&seg("", 1.0, 1.0, true, false), 0.0));
        out.extend(u.on_message(&ServerMessage::UtteranceEnd { last_word_end: 0.9 }, 0.0));
        assert_eq!(finals(out), ["It's 78745"]);
        assert!(u
            .on_message(&ServerMessage::UtteranceEnd { last_word_end: 0.9 }, 0.0)
            .is_empty());
    }

    #[test]
    fn a_finalize_is_answered_or_times_out_and_never_emits_twice() {
        let t0 = Instant::now();
        let mut u = Utterances::new(Duration::from_millis(400));
        u.on_message(&seg("yes that's", 0.0, 1.0, true, false), 0.0);
        u.finalize_sent(t0);
        let answer = ServerMessage::Results(Segment {
            transcript: "right".into(),
            is_final: true,
            speech_final: false,
            from_finalize: true,
            start: 1.0,
            duration: 0.4,
        });
        assert_eq!(finals(u.on_message(&answer, 0.0)), ["yes that's right"]);
        assert_eq!(u.deadline(), None);
        // No answer: the interim words are taken at the deadline.
        u.on_message(&seg("no", 2.0, 0.3, false, false), 0.0);
        u.finalize_sent(t0);
        assert_eq!(u.on_deadline(t0 + Duration::from_millis(100)), None);
        assert_eq!(
            u.on_deadline(t0 + Duration::from_millis(400)),
            Some(Heard::Final("no".into()))
        );
        assert_eq!(u.on_deadline(t0 + Duration::from_secs(1)), None);
        // A late speech_final with nothing new emits nothing.
        assert!(u.on_message(&seg("", 2.0, 0.5, true, true), 0.0).is_empty());
        // A cough: our VAD heard a stretch, Deepgram's answer has no
        // words. The stretch is over; nothing is owed for it.
        u.finalize_sent(t0);
        let nothing = ServerMessage::Results(Segment {
            transcript: String::new(),
            is_final: true,
            speech_final: false,
            from_finalize: true,
            start: 3.0,
            duration: 0.6,
        });
        assert_eq!(u.on_message(&nothing, 0.0), [Heard::Final(String::new())]);
        assert_eq!(u.deadline(), None);
        // Unasked, an empty result is no utterance.
        assert!(u.on_message(&nothing, 0.0).is_empty());
    }

    #[test]
    fn replayed_audio_after_a_reconnect_is_not_heard_twice() {
        let mut u = Utterances::new(Duration::from_millis(400));
        u.on_message(&seg("my name is", 0.0, 1.2, true, false), 0.0);
        assert_eq!(u.acknowledged(), 1.2);
        // The new socket gets the audio from 1.2 s on: its times start at 0.
        let out = u.on_message(&seg("Dana Fields.", 0.0, 1.0, true, true), 1.2);
        assert_eq!(finals(out), ["my name is Dana Fields."]);
        // A segment that only repeats covered audio is skipped.
        let mut u = Utterances::new(Duration::from_millis(400));
        u.on_message(&seg("hello", 0.0, 1.0, true, false), 0.0);
        let out = u.on_message(&seg("hello", 0.0, 1.0, true, true), 0.0);
        assert_eq!(finals(out), ["hello"]);
    }

    #[test]
    fn flush_keeps_interim_words_at_the_end_of_the_call() {
        let mut u = Utterances::new(Duration::from_millis(400));
        u.on_message(&seg("I have to", 0.0, 1.0, true, false), 0.0);
        u.on_message(&seg("go now", 1.0, 0.6, false, false), 0.0);
        assert_eq!(u.flush(), Some(Heard::Final("I have to go now".into())));
        assert_eq!(u.flush(), None);
        assert_eq!(
            u.on_message(&ServerMessage::SpeechStarted { timestamp: 3.0 }, 0.0),
            [Heard::SpeechStarted]
        );
    }
}
