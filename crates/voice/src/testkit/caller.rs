//! The caller of a test call: a [`Mouth`] on the telephone's input and an
//! [`Ear`] at its sink, with the steps a test script takes — say, stay
//! silent, wait for the agent's response (dead air fails the test),
//! interrupt the agent after some words, hang up.
//!
//! Every wait is on what the caller hears, in virtual time
//! (`#[tokio::test(start_paused = true)]`): the agent's response is over
//! when its audio has stopped for the caller's `quiet` and the floor says
//! the agent is no longer speaking.

use super::{Ear, Mouth};
use crate::floor::Floor;
use crate::inbox::Sender;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What the agent said in one response, as heard.
#[derive(Clone, Debug)]
pub struct Heard {
    /// Seconds since the call started when the first word arrived.
    pub at: f64,
    /// The words heard, joined.
    pub text: String,
}

/// The caller of a test call.
pub struct Caller {
    pub mouth: Mouth,
    pub ear: Ear,
    floor: Arc<Floor>,
    /// When the call started.
    pub t0: Instant,
    /// How long the agent's audio must stop before a response is over.
    pub quiet: Duration,
}

impl Caller {
    /// A caller speaking into `input` at `rate` Hz, `chars_per_second`,
    /// hearing through `ear` (the telephone's sink) and reading the agent's
    /// `floor`. The call starts now.
    pub fn on(
        input: Sender,
        rate: u32,
        chars_per_second: f64,
        ear: Ear,
        floor: Arc<Floor>,
    ) -> Self {
        Caller {
            mouth: Mouth::start(input, rate, chars_per_second),
            ear,
            floor,
            t0: Instant::now(),
            quiet: Duration::from_millis(300),
        }
    }

    /// Seconds since the call started.
    pub fn t(&self) -> f64 {
        self.secs(Instant::now())
    }

    /// `at` in seconds since the call started.
    pub fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }

    /// Say `text` (returns when the last word was spoken).
    pub async fn say(&self, text: &str) {
        self.mouth.speak(text);
        self.mouth.finished().await;
    }

    /// Say each fragment, pausing `gap` between them.
    pub async fn say_fragments(&self, fragments: &[&str], gap: Duration) {
        for (i, f) in fragments.iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(gap).await;
            }
            self.say(f).await;
        }
    }

    /// Say nothing for `d`.
    pub async fn stay_silent(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }

    /// Wait for the agent's next response (audio that starts from now on)
    /// and until it finished playing. Panics (dead air) when nothing starts
    /// within `budget` after the caller's last word.
    pub async fn wait_for_response_within(&self, budget: Duration) -> Heard {
        let from = Instant::now();
        let from_idx = self.ear.snapshot().frames.len();
        let last_voice = self
            .mouth
            .last_voiced()
            .map(|t| t + Duration::from_millis(20));
        let deadline = last_voice.unwrap_or(from).max(self.t0) + budget;
        let deadline = deadline.max(from + Duration::from_millis(20));
        while self.ear.snapshot().frames.len() <= from_idx {
            if Instant::now() >= deadline {
                panic!(
                    "dead air: no agent audio within {:.1} s after the caller stopped (t={:.2} s)",
                    budget.as_secs_f64(),
                    self.t()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut quiet_since = Instant::now();
        let mut seen = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let n = self.ear.snapshot().frames.len();
            if n != seen {
                seen = n;
                quiet_since = Instant::now();
            } else if !self.floor.bot_speaking() && quiet_since.elapsed() >= self.quiet {
                break;
            }
        }
        let log = self.ear.snapshot();
        let frames = &log.frames[from_idx.min(log.frames.len())..];
        Heard {
            at: frames.first().map(|f| self.secs(f.at)).unwrap_or_default(),
            text: frames
                .iter()
                .filter_map(|f| f.word.clone())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// Say `text`, then wait (up to `budget` of dead air) for the agent's
    /// whole response: what one turn of a conversation sounds like.
    pub async fn turn(&self, text: &str, budget: Duration) -> Heard {
        self.say(text).await;
        self.wait_for_response_within(budget).await
    }

    /// Wait until the caller has heard `words` (a phrase, case-insensitive)
    /// from the agent, then say `text` over the agent. Returns when the
    /// interrupting speech began (its first voiced frame).
    pub async fn interrupt_after(&self, words: &str, text: &str) -> Instant {
        let want = normalise(words);
        let from_idx = self.ear.snapshot().frames.len();
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.ear.snapshot();
            let heard: Vec<String> = log.frames[from_idx.min(log.frames.len())..]
                .iter()
                .filter_map(|f| f.word.clone())
                .collect();
            if normalise(&heard.join(" ")).contains(&want) {
                break;
            }
            assert!(
                Instant::now() < give_up,
                "the caller never heard {words:?} (heard {heard:?})"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let starts_before = self.mouth.speech_starts().len();
        self.mouth.speak(text);
        self.mouth.finished().await;
        let starts = self.mouth.speech_starts();
        starts
            .get(starts_before)
            .or(starts.last())
            .copied()
            .unwrap_or_else(Instant::now)
    }

    /// Hang up (the telephone's input closes).
    pub fn hang_up(&self) {
        self.mouth.hang_up();
    }
}

/// Lowercase words without punctuation, single-spaced.
pub fn normalise(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
