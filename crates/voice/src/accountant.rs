//! The interruption accountant: what did the caller actually hear?
//!
//! # Why an accountant
//!
//! The LLM writes a whole reply in a second; speaking it takes ten. When the
//! caller barges in, the reply in the history must become what they heard —
//! otherwise the LLM believes it said things the caller never heard ("as I
//! said, the visit costs $89…"). Only the output side knows how much audio
//! went out, and only the TTS side knows how audio maps to words, so the
//! accounting needs one place that hears from both: this one.
//!
//! Each agent utterance is a handle (named by the history's [`MsgId`]) with
//! a lifecycle, as in LiveKit Agents:
//!
//! ```text
//! queued ──played()──▶ playing ──finished()──▶ done
//!    │                    │
//!    └──── interrupt() ───┴──▶ interrupted { heard_text }
//! ```
//!
//! Utterances play in queue order. The application reports, as they happen,
//! what was queued ([`Accountant::queue`]), what the TTS told about timing
//! ([`Accountant::set_word_timings`], [`Accountant::push_word_timing`],
//! [`Accountant::set_total_audio`]) and how much audio was sent to the
//! caller ([`Accountant::played`]); the accountant answers with
//! [`Outcome`]s, which the application appends to the history (there is a
//! `From<Outcome>` for [`Event`]).
//!
//! # The heard-text rule
//!
//! Nothing was heard until some audio was played. Otherwise, in order of
//! preference:
//!
//! 1. **Word timings** (when the TTS vendor gives them): a word is heard when
//!    `played > word.start` — a word counts from its first sample. Timing
//!    entries are matched to the text's words by position (the words of the
//!    text are its whitespace-separated tokens); entries and tokens without
//!    a letter or digit (punctuation some vendors report as words) are
//!    skipped on both sides.
//! 2. **Total audio length** (once known): the fraction `played / total` of
//!    the text's characters.
//! 3. **Speaking rate** (always available): `chars_per_second × played`
//!    characters.
//!
//! Rules 2 and 3 cut back to the last whole word inside the character count
//! (never a partial word). The heard text is always a prefix of the text,
//! with its own words and punctuation ("Thanks Jonas, I can" from "Thanks
//! Jonas, I can get a tech out tomorrow."), trimmed, ending with a word that
//! has a letter or digit. Counting is in chars, never bytes, so multi-byte
//! text is cut on char boundaries.
//!
//! # A sentence the voice gave up on
//!
//! When the TTS fails part-way through a sentence (D-23), the rest of that
//! sentence is never said: [`Accountant::cut_sentence`] drops it from the
//! utterance's text (keeping the words its audio covers, by the same rule),
//! and the utterance, once played, ends as *interrupted* with what was said
//! — never as done with words the caller never heard.
//!
//! # Memory
//!
//! Only utterances that are queued or playing are kept in full. Once an
//! utterance is done or interrupted and its outcome reported, only its final
//! state is remembered, for the last [`RECENT_SETTLED`] utterances;
//! [`Accountant::state`] returns `None` for older ones.
//!
//! Sans-IO: no clock, no audio, no async. Odd input never panics: unknown
//! ids are ignored, zero durations and empty text give empty heard text.

use std::collections::VecDeque;
use std::time::Duration;

use crate::history::{Event, MsgId};

/// How many settled (done or interrupted) utterances [`Accountant::state`]
/// remembers.
pub const RECENT_SETTLED: usize = 32;

/// Tuning of the fallback estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccountantConfig {
    /// Speaking rate for heard-text rule 3, in characters (spaces and
    /// punctuation included) per second. A value that is not a positive
    /// finite number is replaced by the default, 15.
    pub chars_per_second: f64,
}

impl Default for AccountantConfig {
    fn default() -> Self {
        Self {
            chars_per_second: 15.0,
        }
    }
}

/// When one word of an utterance starts in its audio.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordTiming {
    pub word: String,
    /// Offset from the start of the utterance's audio.
    pub start: Duration,
}

/// Where an utterance is in its lifecycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UtteranceState {
    Queued,
    /// `played` is the audio sent to the caller so far.
    Playing {
        played: Duration,
    },
    Done,
    Interrupted {
        heard_text: String,
    },
}

/// How an utterance ended; append it to the history with `Event::from`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Played to the end.
    Done { msg_id: MsgId },
    /// Cut off by the caller; `heard_text` may be empty.
    Interrupted { msg_id: MsgId, heard_text: String },
}

impl Outcome {
    pub fn msg_id(&self) -> MsgId {
        match self {
            Outcome::Done { msg_id } | Outcome::Interrupted { msg_id, .. } => *msg_id,
        }
    }
}

impl From<Outcome> for Event {
    /// `Done` → [`Event::SpeechFinished`], `Interrupted` →
    /// [`Event::Interrupted`].
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Done { msg_id } => Event::SpeechFinished { msg_id },
            Outcome::Interrupted { msg_id, heard_text } => {
                Event::Interrupted { msg_id, heard_text }
            }
        }
    }
}

/// A queued or playing utterance.
#[derive(Clone, Debug)]
struct Utterance {
    msg_id: MsgId,
    text: String,
    words: Vec<WordTiming>,
    total: Option<Duration>,
    /// `None` while queued.
    played: Option<Duration>,
    /// Byte offset in `text` where the sentence last added begins.
    sentence_at: usize,
    /// A sentence of it was cut short by the voice: it ends interrupted.
    cut: bool,
}

/// Tracks agent utterances from queued to done or interrupted. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct Accountant {
    chars_per_second: f64,
    /// Queued and playing utterances, in play order; only the head can be
    /// playing.
    active: VecDeque<Utterance>,
    /// The last settled utterances, oldest first.
    settled: VecDeque<(MsgId, UtteranceState)>,
}

impl Accountant {
    pub fn new(config: AccountantConfig) -> Self {
        let cps = config.chars_per_second;
        Self {
            chars_per_second: if cps.is_finite() && cps > 0.0 {
                cps
            } else {
                AccountantConfig::default().chars_per_second
            },
            active: VecDeque::new(),
            settled: VecDeque::new(),
        }
    }

    /// Take in what the TTS stage and the player report upstream about the
    /// agent's audio, and return the utterances that ended with it (played
    /// to the end, or cut off):
    ///
    /// - `SpeechSynthesized`: the utterance's text grows. At its first
    ///   text, `queue_first(id)` says whether to queue it (the brain knows
    ///   whether it still wants the line);
    /// - `SynthesisDone`, `SynthesisCut`: its whole audio, a sentence cut
    ///   short;
    /// - `UtteranceStarted`, `UtteranceProgress`, `UtteranceFinished`: how
    ///   much of it played;
    /// - `PlaybackInterrupted`: the caller barged in; what was playing ends
    ///   as far as it played, and everything queued is cut off.
    ///
    /// Any other frame: nothing. Every brain stage on the telephone
    /// ([`crate::telephone`]) accounts for its lines this way.
    pub fn observe(
        &mut self,
        frame: &crate::frames::ControlFrame,
        queue_first: impl FnOnce(crate::frames::UtteranceId) -> bool,
    ) -> Vec<Outcome> {
        use crate::frames::ControlFrame as C;
        match frame {
            C::SpeechSynthesized { id, text, words } => {
                if self.find(MsgId(*id)).is_none() && queue_first(*id) {
                    self.queue(MsgId(*id), "");
                }
                self.extend_text(MsgId(*id), text, words);
                Vec::new()
            }
            C::SynthesisDone { id, total } => {
                self.set_total_audio(MsgId(*id), *total);
                Vec::new()
            }
            C::SynthesisCut { id, start, spoken } => {
                self.cut_sentence(MsgId(*id), *start, *spoken);
                Vec::new()
            }
            C::UtteranceStarted { id } => self.played(MsgId(*id), Duration::ZERO),
            C::UtteranceProgress { id, played } => self.played(MsgId(*id), *played),
            C::UtteranceFinished { id } => self.finished(MsgId(*id)),
            C::PlaybackInterrupted { id, played } => {
                let mut out = match id {
                    Some(id) => self.played(MsgId(*id), *played),
                    None => Vec::new(),
                };
                out.extend(self.interrupt());
                out
            }
            _ => Vec::new(),
        }
    }

    /// Queue an utterance for speech, after everything queued before. An id
    /// that is already queued or playing is ignored.
    pub fn queue(&mut self, msg_id: MsgId, text: impl Into<String>) {
        if self.find(msg_id).is_some() {
            return;
        }
        self.active.push_back(Utterance {
            msg_id,
            text: text.into(),
            words: Vec::new(),
            total: None,
            played: None,
            sentence_at: 0,
            cut: false,
        });
    }

    /// Append synthesized text to a queued utterance (a streamed reply is
    /// synthesized sentence by sentence): `text` is joined to what is
    /// there with one space, and its `words` (offsets from the start of
    /// the utterance's audio) are added. Unknown ids are ignored.
    pub fn extend_text(&mut self, msg_id: MsgId, text: &str, words: &[WordTiming]) {
        if let Some(u) = self.find_mut(msg_id) {
            let text = text.trim();
            if !text.is_empty() {
                if !u.text.is_empty() {
                    u.text.push(' ');
                }
                u.sentence_at = u.text.len();
                u.text.push_str(text);
            }
            u.words.extend_from_slice(words);
        }
    }

    /// Replace the utterance's word timings (offsets from its audio start).
    pub fn set_word_timings(&mut self, msg_id: MsgId, words: Vec<WordTiming>) {
        if let Some(u) = self.find_mut(msg_id) {
            u.words = words;
        }
    }

    /// Add one word timing, for vendors that send them as audio arrives.
    pub fn push_word_timing(&mut self, msg_id: MsgId, word: WordTiming) {
        if let Some(u) = self.find_mut(msg_id) {
            u.words.push(word);
        }
    }

    /// The voice gave up on the sentence last added with
    /// [`Accountant::extend_text`]: only `spoken` of its audio exists,
    /// from `start` into the utterance's audio. The sentence keeps the words
    /// that audio covers (by word timings from `start` on, else at the
    /// speaking rate); the rest is dropped, and the utterance will end as
    /// interrupted. Unknown ids are ignored.
    pub fn cut_sentence(&mut self, msg_id: MsgId, start: Duration, spoken: Duration) {
        let cps = self.chars_per_second;
        let Some(u) = self.find_mut(msg_id) else {
            return;
        };
        let end = start + spoken;
        let sentence = &u.text[u.sentence_at.min(u.text.len())..];
        let timed = u.words.iter().any(|w| w.start >= start);
        let kept = if spoken.is_zero() {
            ""
        } else if timed {
            let heard = u
                .words
                .iter()
                .filter(|w| w.start >= start && w.start < end)
                .filter(|w| w.word.chars().any(char::is_alphanumeric))
                .count();
            prefix_of_words(sentence, heard)
        } else {
            prefix_of_chars(sentence, (cps * spoken.as_secs_f64()).floor() as usize)
        };
        let kept = kept.to_owned();
        u.text.truncate(u.sentence_at.min(u.text.len()));
        if kept.is_empty() {
            u.text.truncate(u.text.trim_end().len());
        } else {
            u.text.push_str(&kept);
        }
        u.words.retain(|w| w.start < end);
        u.sentence_at = u.text.len();
        u.cut = true;
    }

    /// The total length of the utterance's synthesized audio, once known.
    pub fn set_total_audio(&mut self, msg_id: MsgId, total: Duration) {
        if let Some(u) = self.find_mut(msg_id) {
            u.total = Some(total);
        }
    }

    /// `played` of the utterance's audio has been sent to the caller so far
    /// (cumulative). The first call moves it to playing; a smaller value
    /// than before is ignored. Utterances queued before it have been played
    /// to their end: they are returned as `Done`. Unknown ids are ignored.
    #[must_use = "the outcomes belong in the history"]
    pub fn played(&mut self, msg_id: MsgId, played: Duration) -> Vec<Outcome> {
        let Some(index) = self.find(msg_id) else {
            return Vec::new();
        };
        let done = self.finish_before(index);
        let head = &mut self.active[0];
        head.played = Some(head.played.map_or(played, |p| p.max(played)));
        done
    }

    /// The utterance was played to its end: it is `Done`, and so is every
    /// utterance queued before it (returned first) — save one with a
    /// sentence the voice cut short, which is `Interrupted` with the text
    /// that was said. Empty for an unknown id.
    ///
    /// Returns a list rather than one outcome so those earlier utterances
    /// are reported too, as with [`Accountant::played`].
    #[must_use = "the outcomes belong in the history"]
    pub fn finished(&mut self, msg_id: MsgId) -> Vec<Outcome> {
        let Some(index) = self.find(msg_id) else {
            return Vec::new();
        };
        self.finish_before(index + 1)
    }

    /// The caller barged in: the playing utterance is interrupted with what
    /// was heard of it, every utterance still queued is interrupted with
    /// nothing heard, and the queue is empty afterwards. Outcomes are in
    /// play order.
    #[must_use = "the outcomes belong in the history"]
    pub fn interrupt(&mut self) -> Vec<Outcome> {
        let cps = self.chars_per_second;
        let mut out = Vec::with_capacity(self.active.len());
        while let Some(u) = self.active.pop_front() {
            let heard_text = heard_text(&u, cps).to_owned();
            self.remember(
                u.msg_id,
                UtteranceState::Interrupted {
                    heard_text: heard_text.clone(),
                },
            );
            out.push(Outcome::Interrupted {
                msg_id: u.msg_id,
                heard_text,
            });
        }
        out
    }

    /// Where the utterance is; `None` for an unknown id or one settled
    /// longer ago than the last [`RECENT_SETTLED`].
    pub fn state(&self, msg_id: MsgId) -> Option<UtteranceState> {
        if let Some(u) = self.find(msg_id).map(|i| &self.active[i]) {
            return Some(match u.played {
                None => UtteranceState::Queued,
                Some(played) => UtteranceState::Playing { played },
            });
        }
        self.settled
            .iter()
            .rev()
            .find(|(id, _)| *id == msg_id)
            .map(|(_, state)| state.clone())
    }

    /// What the caller has heard so far of a queued or playing utterance
    /// (what [`Accountant::interrupt`] would report now).
    pub fn heard_text(&self, msg_id: MsgId) -> Option<String> {
        self.find(msg_id)
            .map(|i| heard_text(&self.active[i], self.chars_per_second).to_owned())
    }

    /// The queued and playing utterances, in play order.
    pub fn active(&self) -> impl Iterator<Item = MsgId> + '_ {
        self.active.iter().map(|u| u.msg_id)
    }

    /// Nothing queued or playing: the agent has stopped speaking.
    pub fn is_idle(&self) -> bool {
        self.active.is_empty()
    }

    fn find(&self, msg_id: MsgId) -> Option<usize> {
        self.active.iter().position(|u| u.msg_id == msg_id)
    }

    fn find_mut(&mut self, msg_id: MsgId) -> Option<&mut Utterance> {
        self.active.iter_mut().find(|u| u.msg_id == msg_id)
    }

    /// Settle the first `count` active utterances as played to their end
    /// (done, or interrupted with all that was said when the voice cut a
    /// sentence short).
    fn finish_before(&mut self, count: usize) -> Vec<Outcome> {
        let done: Vec<Outcome> = self
            .active
            .drain(..count)
            .map(|u| match u.cut {
                false => Outcome::Done { msg_id: u.msg_id },
                true => Outcome::Interrupted {
                    msg_id: u.msg_id,
                    heard_text: u.text.trim().to_owned(),
                },
            })
            .collect();
        for outcome in &done {
            let state = match outcome {
                Outcome::Done { .. } => UtteranceState::Done,
                Outcome::Interrupted { heard_text, .. } => UtteranceState::Interrupted {
                    heard_text: heard_text.clone(),
                },
            };
            self.remember(outcome.msg_id(), state);
        }
        done
    }

    fn remember(&mut self, msg_id: MsgId, state: UtteranceState) {
        if self.settled.len() == RECENT_SETTLED {
            self.settled.pop_front();
        }
        self.settled.push_back((msg_id, state));
    }
}

impl Default for Accountant {
    fn default() -> Self {
        Self::new(AccountantConfig::default())
    }
}

/// The heard-text rule of the module docs.
fn heard_text(u: &Utterance, chars_per_second: f64) -> &str {
    let played = match u.played {
        Some(p) if !p.is_zero() => p,
        _ => return "",
    };
    if !u.words.is_empty() {
        let heard = u
            .words
            .iter()
            .filter(|w| played > w.start && w.word.chars().any(char::is_alphanumeric))
            .count();
        return prefix_of_words(&u.text, heard);
    }
    let chars = match u.total {
        Some(total) if total.is_zero() => usize::MAX,
        Some(total) => {
            let fraction = (played.as_secs_f64() / total.as_secs_f64()).min(1.0);
            // Float to int casts saturate (NaN → 0): never panics.
            (fraction * u.text.chars().count() as f64).floor() as usize
        }
        None => (chars_per_second * played.as_secs_f64()).floor() as usize,
    };
    prefix_of_chars(&u.text, chars)
}

/// End of a whitespace-separated token that has a letter or digit.
struct WordEnd {
    /// Byte offset just after the token.
    byte: usize,
    /// Char offset just after the token.
    chars: usize,
}

/// The tokens of `text` that have a letter or digit, in order.
fn word_ends(text: &str) -> impl Iterator<Item = WordEnd> + '_ {
    let mut chars = 0;
    let mut alnum = false;
    let mut iter = text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')));
    std::iter::from_fn(move || {
        for (byte, c) in iter.by_ref() {
            chars += 1;
            if !c.is_whitespace() {
                alnum |= c.is_alphanumeric();
            } else if std::mem::take(&mut alnum) {
                return Some(WordEnd {
                    byte,
                    chars: chars - 1,
                });
            }
        }
        None
    })
}

/// The text through its `count`-th word (all of it when it has fewer),
/// trimmed.
fn prefix_of_words(text: &str, count: usize) -> &str {
    if count == 0 {
        return "";
    }
    let end = word_ends(text).take(count).last().map_or(0, |w| w.byte);
    text[..end].trim()
}

/// The text through the last word that ends within its first `chars`
/// chars, trimmed.
fn prefix_of_chars(text: &str, chars: usize) -> &str {
    let end = word_ends(text)
        .take_while(|w| w.chars <= chars)
        .last()
        .map_or(0, |w| w.byte);
    text[..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observing_the_upstream_frames_accounts_for_a_line() {
        use crate::frames::ControlFrame as C;
        let mut a = Accountant::default();
        let said = |id: u64, text: &str| C::SpeechSynthesized {
            id,
            text: text.into(),
            words: Vec::new().into(),
        };
        // The brain no longer wants line 2: it is never queued.
        assert!(a.observe(&said(1, "Hello there."), |_| true).is_empty());
        assert!(a.observe(&said(2, "Unwanted."), |_| false).is_empty());
        assert!(a.state(MsgId(2)).is_none());
        // Asked only at the first text.
        assert!(a
            .observe(&said(1, "How can I help?"), |_| panic!("asked twice"))
            .is_empty());
        let total = Duration::from_secs(2);
        a.observe(&C::SynthesisDone { id: 1, total }, |_| true);
        assert!(a
            .observe(&C::UtteranceStarted { id: 1 }, |_| true)
            .is_empty());
        let cut = a.observe(
            &C::PlaybackInterrupted {
                id: Some(1),
                played: Duration::from_secs(1),
            },
            |_| true,
        );
        assert_eq!(cut.len(), 1, "{cut:?}");
        assert!(
            matches!(&cut[0], Outcome::Interrupted { msg_id, heard_text }
            if *msg_id == MsgId(1) && heard_text.starts_with("Hello"))
        );
        // A line played to its end.
        a.observe(&said(3, "Bye."), |_| true);
        a.observe(&C::UtteranceStarted { id: 3 }, |_| true);
        let done = a.observe(&C::UtteranceFinished { id: 3 }, |_| true);
        assert!(matches!(done.as_slice(), [Outcome::Done { msg_id, .. }] if *msg_id == MsgId(3)));
        // Anything else: nothing.
        assert!(a.observe(&C::BotStoppedSpeaking, |_| true).is_empty());
    }

    #[test]
    fn streamed_text_is_accounted_sentence_by_sentence() {
        let mut a = Accountant::default();
        let id = MsgId(1);
        a.queue(id, "");
        let w = |word: &str, ms| WordTiming {
            word: word.into(),
            start: Duration::from_millis(ms),
        };
        a.extend_text(id, "Got it.", &[w("Got", 0), w("it.", 300)]);
        a.extend_text(
            id,
            " What's the address?",
            &[w("What's", 700), w("the", 1000), w("address?", 1200)],
        );
        let _ = a.played(id, Duration::from_millis(1100));
        let out = a.interrupt();
        assert_eq!(
            out,
            vec![Outcome::Interrupted {
                msg_id: id,
                heard_text: "Got it. What's the".into()
            }]
        );
    }

    const TEXT: &str = "Thanks Jonas, I can get a tech out tomorrow.";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// One word every 300 ms.
    fn timings(text: &str) -> Vec<WordTiming> {
        text.split_whitespace()
            .enumerate()
            .map(|(i, w)| WordTiming {
                word: w.trim_matches(|c: char| !c.is_alphanumeric()).into(),
                start: ms(300 * i as u64),
            })
            .collect()
    }

    fn interrupted(msg_id: MsgId, heard: &str) -> Outcome {
        Outcome::Interrupted {
            msg_id,
            heard_text: heard.into(),
        }
    }

    fn playing(text: &str, f: impl FnOnce(&mut Accountant)) -> Accountant {
        let mut acc = Accountant::default();
        acc.queue(MsgId(1), text);
        f(&mut acc);
        acc
    }

    fn heard_after(acc: &mut Accountant, played: Duration) -> String {
        assert!(acc.played(MsgId(1), played).is_empty());
        acc.heard_text(MsgId(1)).unwrap()
    }

    #[test]
    fn rule_1_word_timings_count_words_whose_start_was_played() {
        let mut acc = playing(TEXT, |a| a.set_word_timings(MsgId(1), timings(TEXT)));
        // Starts 0, 300, 600, 900, 1200…; a word counts strictly after its start.
        assert_eq!(heard_after(&mut acc, ms(1)), "Thanks");
        assert_eq!(heard_after(&mut acc, ms(900)), "Thanks Jonas, I");
        assert_eq!(heard_after(&mut acc, ms(1000)), "Thanks Jonas, I can");
        assert_eq!(heard_after(&mut acc, ms(60_000)), TEXT);
        assert_eq!(
            acc.interrupt(),
            [interrupted(MsgId(1), TEXT)],
            "everything heard, but still cut off"
        );
    }

    #[test]
    fn rule_1_timings_may_arrive_one_by_one() {
        let mut acc = playing(TEXT, |_| {});
        let all = timings(TEXT);
        for w in &all[..3] {
            acc.push_word_timing(MsgId(1), w.clone());
        }
        // Only three timings are known: they are authoritative.
        assert_eq!(heard_after(&mut acc, ms(5_000)), "Thanks Jonas, I");
        acc.push_word_timing(MsgId(1), all[3].clone());
        assert_eq!(acc.heard_text(MsgId(1)).unwrap(), "Thanks Jonas, I can");
    }

    #[test]
    fn rule_1_skips_punctuation_on_both_sides() {
        let text = "Sure - I can do that.";
        let words = ["Sure", "-", "I", ",", "can"]
            .iter()
            .enumerate()
            .map(|(i, w)| WordTiming {
                word: (*w).into(),
                start: ms(100 * i as u64),
            })
            .collect();
        let mut acc = playing(text, |a| a.set_word_timings(MsgId(1), words));
        assert_eq!(heard_after(&mut acc, ms(50)), "Sure");
        assert_eq!(heard_after(&mut acc, ms(150)), "Sure");
        assert_eq!(heard_after(&mut acc, ms(250)), "Sure - I");
        assert_eq!(heard_after(&mut acc, ms(450)), "Sure - I can");
    }

    #[test]
    fn rule_2_total_audio_gives_the_fraction_cut_to_whole_words() {
        assert_eq!(TEXT.chars().count(), 44);
        let mut acc = playing(TEXT, |a| a.set_total_audio(MsgId(1), ms(4_400)));
        // 20 chars: "Thanks Jonas, I can " — "can" ends at 19.
        assert_eq!(heard_after(&mut acc, ms(2_000)), "Thanks Jonas, I can");
        let mut acc = playing(TEXT, |a| a.set_total_audio(MsgId(1), ms(4_400)));
        // 18 chars: "Thanks Jonas, I ca" — the partial word is dropped.
        assert_eq!(heard_after(&mut acc, ms(1_800)), "Thanks Jonas, I");
        assert_eq!(
            heard_after(&mut acc, ms(4_300)),
            "Thanks Jonas, I can get a tech out"
        );
        assert_eq!(heard_after(&mut acc, ms(4_400)), TEXT);
        assert_eq!(heard_after(&mut acc, ms(9_999)), TEXT);
    }

    #[test]
    fn rule_2_zero_total_means_all_was_played() {
        let mut acc = playing(TEXT, |a| a.set_total_audio(MsgId(1), Duration::ZERO));
        assert_eq!(heard_after(&mut acc, Duration::ZERO), "");
        assert_eq!(heard_after(&mut acc, ms(1)), TEXT);
    }

    #[test]
    fn rule_3_estimates_from_the_speaking_rate() {
        let mut acc = playing(TEXT, |_| {});
        // 15 chars/s × 1.3 s = 19.5 → 19 chars: "Thanks Jonas, I can".
        assert_eq!(heard_after(&mut acc, ms(1_300)), "Thanks Jonas, I can");
        let mut acc = playing(TEXT, |_| {});
        // 18 chars: "can" is not whole yet.
        assert_eq!(heard_after(&mut acc, ms(1_200)), "Thanks Jonas, I");
        let mut acc = playing(TEXT, |_| {});
        assert_eq!(heard_after(&mut acc, ms(300)), "");
        assert_eq!(heard_after(&mut acc, ms(400)), "Thanks");
        let mut slow = Accountant::new(AccountantConfig {
            chars_per_second: 5.0,
        });
        slow.queue(MsgId(1), TEXT);
        assert_eq!(heard_after(&mut slow, ms(1_300)), "Thanks");
    }

    #[test]
    fn rules_are_preferred_in_order() {
        let mut acc = playing(TEXT, |a| {
            a.set_total_audio(MsgId(1), ms(100_000));
            a.set_word_timings(MsgId(1), timings(TEXT));
        });
        // Words say 2, the fraction says 0, the rate says 15 chars.
        assert_eq!(heard_after(&mut acc, ms(400)), "Thanks Jonas,");
        let mut acc = playing(TEXT, |a| a.set_total_audio(MsgId(1), ms(100_000)));
        assert_eq!(heard_after(&mut acc, ms(1_000)), "");
    }

    #[test]
    fn interrupt_cuts_the_playing_one_and_empties_the_queue() {
        let mut acc = Accountant::default();
        acc.queue(MsgId(1), TEXT);
        acc.queue(MsgId(2), "What is your address?");
        acc.queue(MsgId(3), "Anything else?");
        assert_eq!(acc.state(MsgId(2)), Some(UtteranceState::Queued));
        assert!(acc.played(MsgId(1), ms(1_300)).is_empty());
        assert_eq!(
            acc.state(MsgId(1)),
            Some(UtteranceState::Playing { played: ms(1_300) })
        );
        assert_eq!(
            acc.interrupt(),
            [
                interrupted(MsgId(1), "Thanks Jonas, I can"),
                interrupted(MsgId(2), ""),
                interrupted(MsgId(3), ""),
            ]
        );
        assert!(acc.is_idle());
        assert!(acc.interrupt().is_empty());
        assert_eq!(
            acc.state(MsgId(1)),
            Some(UtteranceState::Interrupted {
                heard_text: "Thanks Jonas, I can".into()
            })
        );
        assert_eq!(
            acc.state(MsgId(3)),
            Some(UtteranceState::Interrupted {
                heard_text: String::new()
            })
        );
        assert_eq!(acc.heard_text(MsgId(1)), None);
    }

    #[test]
    fn queued_but_unplayed_is_interrupted_with_nothing_heard() {
        let mut acc = playing(TEXT, |a| {
            a.set_total_audio(MsgId(1), ms(1));
            a.set_word_timings(MsgId(1), timings(TEXT));
        });
        assert_eq!(acc.heard_text(MsgId(1)).unwrap(), "");
        assert_eq!(acc.interrupt(), [interrupted(MsgId(1), "")]);
    }

    #[test]
    fn playing_a_later_one_finishes_the_earlier_ones() {
        let mut acc = Accountant::default();
        for i in 1..=4 {
            acc.queue(MsgId(i), format!("line {i}"));
        }
        assert!(acc.played(MsgId(1), ms(100)).is_empty());
        assert_eq!(
            acc.played(MsgId(3), ms(10)),
            [
                Outcome::Done { msg_id: MsgId(1) },
                Outcome::Done { msg_id: MsgId(2) }
            ]
        );
        assert_eq!(acc.state(MsgId(2)), Some(UtteranceState::Done));
        assert_eq!(acc.finished(MsgId(4)).len(), 2);
        assert!(acc.is_idle());
    }

    #[test]
    fn finished_reports_done_once() {
        let mut acc = Accountant::default();
        acc.queue(MsgId(1), "Hello!");
        acc.queue(MsgId(2), "Bye!");
        assert!(acc.played(MsgId(1), ms(200)).is_empty());
        assert_eq!(acc.finished(MsgId(1)), [Outcome::Done { msg_id: MsgId(1) }]);
        assert!(acc.finished(MsgId(1)).is_empty());
        assert_eq!(acc.state(MsgId(1)), Some(UtteranceState::Done));
        assert!(!acc.is_idle());
        assert_eq!(acc.interrupt(), [interrupted(MsgId(2), "")]);
    }

    #[test]
    fn played_is_monotone() {
        let mut acc = playing(TEXT, |_| {});
        assert_eq!(heard_after(&mut acc, ms(1_300)), "Thanks Jonas, I can");
        assert_eq!(heard_after(&mut acc, ms(100)), "Thanks Jonas, I can");
        assert_eq!(
            acc.state(MsgId(1)),
            Some(UtteranceState::Playing { played: ms(1_300) })
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = "Grüße, Jürgen — ça va? 日本語 テキスト です。";
        for played in (0..4_000).step_by(7) {
            for total in [None, Some(ms(1_500)), Some(ms(3_333))] {
                let mut acc = playing(text, |a| {
                    if let Some(total) = total {
                        a.set_total_audio(MsgId(1), total);
                    }
                });
                let heard = heard_after(&mut acc, ms(played));
                assert!(text.starts_with(&heard), "{heard:?}");
            }
        }
        // 15 chars/s × 0.5 s = 7 chars: "Grüße, " → "Grüße,".
        let mut acc = playing(text, |_| {});
        assert_eq!(heard_after(&mut acc, ms(500)), "Grüße,");
        // Rule 2: 35 chars × 0.75 = 26 chars, which end right after "日本語".
        assert_eq!(text.chars().count(), 35);
        let mut acc = playing(text, |a| a.set_total_audio(MsgId(1), ms(1_000)));
        assert_eq!(
            heard_after(&mut acc, ms(750)),
            "Grüße, Jürgen — ça va? 日本語"
        );
    }

    #[test]
    fn odd_input_never_panics() {
        let mut acc = Accountant::new(AccountantConfig {
            chars_per_second: f64::NAN,
        });
        // Unknown ids are ignored.
        acc.set_word_timings(MsgId(9), Vec::new());
        acc.push_word_timing(
            MsgId(9),
            WordTiming {
                word: "x".into(),
                start: Duration::ZERO,
            },
        );
        acc.set_total_audio(MsgId(9), ms(1));
        assert!(acc.played(MsgId(9), ms(1)).is_empty());
        assert!(acc.finished(MsgId(9)).is_empty());
        assert_eq!(acc.state(MsgId(9)), None);
        assert_eq!(acc.heard_text(MsgId(9)), None);
        // Empty and whitespace-only text; a NaN rate falls back to 15 chars/s.
        acc.queue(MsgId(1), "");
        acc.queue(MsgId(2), "   ");
        acc.queue(MsgId(3), "Hi there");
        acc.queue(MsgId(3), "ignored: already queued");
        assert_eq!(heard_after(&mut acc, Duration::MAX), "");
        assert_eq!(acc.played(MsgId(3), Duration::ZERO).len(), 2);
        assert_eq!(acc.heard_text(MsgId(3)).unwrap(), "");
        assert!(acc.played(MsgId(3), ms(400)).is_empty());
        assert_eq!(acc.heard_text(MsgId(3)).unwrap(), "Hi");
        assert!(acc.played(MsgId(3), Duration::MAX).is_empty());
        assert_eq!(acc.interrupt(), [interrupted(MsgId(3), "Hi there")]);
        // Huge totals and unordered timings.
        acc.queue(MsgId(4), "a b c");
        acc.set_total_audio(MsgId(4), Duration::MAX);
        assert!(acc.played(MsgId(4), Duration::MAX).is_empty());
        assert_eq!(acc.heard_text(MsgId(4)).unwrap(), "a b c");
        acc.set_word_timings(
            MsgId(4),
            [2, 0, 1]
                .iter()
                .map(|&s| WordTiming {
                    word: "w".into(),
                    start: ms(s),
                })
                .chain(
                    std::iter::repeat_with(|| WordTiming {
                        word: "extra".into(),
                        start: ms(0),
                    })
                    .take(3),
                )
                .collect(),
        );
        assert_eq!(acc.heard_text(MsgId(4)).unwrap(), "a b c");
    }

    #[test]
    fn settled_states_are_forgotten_after_a_while() {
        let mut acc = Accountant::default();
        let n = RECENT_SETTLED as u64 + 5;
        for i in 0..n {
            acc.queue(MsgId(i), "x");
            assert_eq!(acc.finished(MsgId(i)).len(), 1);
        }
        assert_eq!(acc.state(MsgId(0)), None);
        assert_eq!(acc.state(MsgId(4)), None);
        assert_eq!(acc.state(MsgId(5)), Some(UtteranceState::Done));
        assert_eq!(acc.state(MsgId(n - 1)), Some(UtteranceState::Done));
        // A settled id may be queued again (a new handle).
        acc.queue(MsgId(n - 1), "again");
        assert_eq!(acc.state(MsgId(n - 1)), Some(UtteranceState::Queued));
    }

    #[test]
    fn outcomes_become_history_events() {
        let done = Outcome::Done { msg_id: MsgId(3) };
        assert_eq!(done.msg_id(), MsgId(3));
        assert_eq!(
            Event::from(done),
            Event::SpeechFinished { msg_id: MsgId(3) }
        );
        let cut = interrupted(MsgId(4), "Hi");
        assert_eq!(cut.msg_id(), MsgId(4));
        assert_eq!(
            Event::from(cut),
            Event::Interrupted {
                msg_id: MsgId(4),
                heard_text: "Hi".into()
            }
        );
    }

    fn timed(word: &str, start_ms: u64) -> WordTiming {
        WordTiming {
            word: word.into(),
            start: ms(start_ms),
        }
    }

    #[test]
    fn a_sentence_the_voice_cut_short_keeps_only_what_was_said() {
        // Word timings: the second sentence failed after two words' audio.
        let mut a = Accountant::default();
        let id = MsgId(1);
        a.queue(id, "");
        a.extend_text(id, "Got it.", &[timed("Got", 0), timed("it.", 200)]);
        a.extend_text(id, "The visit costs $89 today.", &[]);
        for (i, w) in ["The", "visit", "costs"].iter().enumerate() {
            a.push_word_timing(id, timed(w, 600 + 250 * i as u64));
        }
        a.cut_sentence(id, ms(600), ms(400)); // "The" and "visit" began
                                              // A later sentence of the same reply is said whole.
        a.extend_text(id, "Anything else?", &[timed("Anything", 1000)]);
        assert!(a.played(id, ms(300)).is_empty());
        assert_eq!(a.heard_text(id).as_deref(), Some("Got it."));
        assert_eq!(
            a.finished(id),
            vec![interrupted(id, "Got it. The visit Anything else?")]
        );
        assert_eq!(
            a.state(id),
            Some(UtteranceState::Interrupted {
                heard_text: "Got it. The visit Anything else?".into()
            })
        );
    }

    #[test]
    fn a_sentence_without_audio_is_dropped_and_without_timings_cut_at_the_rate() {
        let mut a = Accountant::new(AccountantConfig {
            chars_per_second: 10.0,
        });
        // No audio at all: nothing of the sentence was said.
        a.queue(MsgId(1), "");
        a.extend_text(MsgId(1), "Sorry about that.", &[]);
        a.cut_sentence(MsgId(1), Duration::ZERO, Duration::ZERO);
        assert_eq!(a.finished(MsgId(1)), vec![interrupted(MsgId(1), "")]);
        // No timings: 1 s of audio at 10 chars/s keeps "One moment" of it.
        a.queue(MsgId(2), "");
        a.extend_text(MsgId(2), "Hello.", &[]);
        a.extend_text(MsgId(2), "One moment please, checking.", &[]);
        a.cut_sentence(MsgId(2), ms(500), ms(1000));
        // A barge-in in the cut line hears from the kept text.
        assert!(a.played(MsgId(2), ms(100_000)).is_empty());
        assert_eq!(
            a.interrupt(),
            vec![interrupted(MsgId(2), "Hello. One moment")]
        );
        // An utterance not cut is done as before; unknown ids are ignored.
        a.cut_sentence(MsgId(9), ms(1), ms(1));
        a.queue(MsgId(3), "Fine.");
        assert_eq!(
            a.finished(MsgId(3)),
            vec![Outcome::Done { msg_id: MsgId(3) }]
        );
    }
}
