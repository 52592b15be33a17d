//! Text to speech that never leaves the caller in silence because a voice
//! vendor is slow or down (SPEC §8.5, D-20).
//!
//! [`FallbackTts`] wraps a primary voice (Inworld in production) and a
//! fallback (Deepgram Aura), each a [`Tts`]. Per line:
//!
//! 1. While the breaker allows it, the primary is asked. What it sends
//!    before its first audio is held back, and each wait for its next event
//!    is bounded ([`FallbackOptions::first_audio_timeout`], 5 s).
//!    * First audio: the held events go out, the rest streams with no
//!      bound, the breaker records a success. An error after that ends the
//!      line where it is (the caller already heard its start, and splicing
//!      in another voice mid-sentence would be worse) and counts as a
//!      failure for the breaker (D-23). The line simply ends
//!      (the accountant counts only what was played).
//!    * An error, a timeout, or an end without audio: what was held is
//!      dropped, the breaker records a failure, and the fallback says the
//!      same line.
//! 2. While the breaker is open, the fallback speaks at once.
//!
//! The fallback is started lazily, the first time it is needed; `stop`
//! and `cancel` reach it only if it was. When the fallback fails too, an
//! optional last resort speaks (the offline voice: never silence); without
//! one the line fails with one error.
//!
//! The breaker ([`VoiceBreaker`]) can be shared by every call of a process:
//! once Inworld has failed three lines in a row, new calls go straight to
//! the fallback until the cooldown ends, and a failed probe starts the
//! cooldown again (D-20).
//!
//! Dropping a line's stream drops the vendor request in flight (a
//! barge-in): nothing stale plays.

use agent::breaker::{BreakerState, CircuitBreaker};
use futures_util::StreamExt;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

/// Builds the fallback voice the first time it is needed.
pub type LazyTts = Box<dyn Fn() -> Arc<dyn Tts> + Send + Sync>;

/// The primary voice's circuit breaker with its own monotonic clock; share
/// one `Arc` between calls so they learn from each other's failures.
#[derive(Debug)]
pub struct VoiceBreaker {
    breaker: Mutex<CircuitBreaker>,
    epoch: Instant,
    /// A half-open probe line is in flight: every other line goes to the
    /// fallback meanwhile (a dead primary costs one line its wait, not
    /// every line of every call that starts in that window).
    probing: AtomicBool,
}

impl VoiceBreaker {
    /// Opens after `failure_threshold` consecutive failures for
    /// `cooldown_s` (SPEC §6.2: 3 and 60 s).
    pub fn new(failure_threshold: u32, cooldown_s: f64) -> Arc<Self> {
        Arc::new(VoiceBreaker {
            breaker: Mutex::new(CircuitBreaker::new(failure_threshold, cooldown_s)),
            epoch: Instant::now(),
            probing: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CircuitBreaker> {
        self.breaker.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Whether a line starting now would ask the primary: closed, or
    /// half-open with no probe in flight. Only looks.
    pub fn should_try(&self) -> bool {
        let now = self.now();
        match self.lock().state(now) {
            BreakerState::Closed => true,
            BreakerState::HalfOpen => !self.probing.load(Ordering::Acquire),
            BreakerState::Open => false,
        }
    }

    /// `Some(is_probe)` when the primary may be asked now.
    fn admit(&self) -> Option<bool> {
        let now = self.now();
        let state = self.lock().state(now);
        match state {
            BreakerState::Closed => Some(false),
            BreakerState::HalfOpen if !self.probing.swap(true, Ordering::AcqRel) => Some(true),
            _ => None,
        }
    }

    fn record_failure(&self) {
        let now = self.now();
        self.lock().record_failure(now);
        self.probing.store(false, Ordering::Release);
    }

    fn record_success(&self) {
        self.lock().record_success();
        self.probing.store(false, Ordering::Release);
    }

    /// Consecutive failures of the primary (for health output and tests).
    pub fn consecutive_failures(&self) -> u32 {
        self.lock().consecutive_failures()
    }
}

/// How a [`FallbackTts`] behaves.
#[derive(Clone)]
pub struct FallbackOptions {
    /// The primary's breaker (default: its own, 3 failures, 60 s).
    pub breaker: Arc<VoiceBreaker>,
    /// Longest wait for the primary's next event before its first audio.
    pub first_audio_timeout: Duration,
    /// Who speaks when both vendors failed (the offline voice).
    pub last_resort: Option<Arc<dyn Tts>>,
}

impl Default for FallbackOptions {
    fn default() -> Self {
        FallbackOptions {
            breaker: VoiceBreaker::new(3, 60.0),
            first_audio_timeout: Duration::from_secs(5),
            last_resort: None,
        }
    }
}

struct Shared {
    primary: Arc<dyn Tts>,
    make_fallback: LazyTts,
    fallback: Mutex<Option<Arc<dyn Tts>>>,
    opts: FallbackOptions,
    stopped: AtomicBool,
}

impl Shared {
    fn slot(&self) -> MutexGuard<'_, Option<Arc<dyn Tts>>> {
        self.fallback.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The fallback voice, started on first use.
    fn fallback(&self) -> Arc<dyn Tts> {
        self.slot()
            .get_or_insert_with(|| {
                tracing::info!("starting the fallback voice");
                let tts = (self.make_fallback)();
                tts.start();
                tts
            })
            .clone()
    }

    fn fallback_if_started(&self) -> Option<Arc<dyn Tts>> {
        self.slot().clone()
    }
}

/// A primary voice with a fallback, a circuit breaker and a last resort.
#[derive(Clone)]
pub struct FallbackTts {
    shared: Arc<Shared>,
}

impl FallbackTts {
    /// `primary` first; `fallback` built (and started) only when needed.
    pub fn new(primary: Arc<dyn Tts>, fallback: LazyTts, opts: FallbackOptions) -> Self {
        FallbackTts {
            shared: Arc::new(Shared {
                primary,
                make_fallback: fallback,
                fallback: Mutex::new(None),
                opts,
                stopped: AtomicBool::new(false),
            }),
        }
    }

    /// The primary's breaker.
    pub fn breaker(&self) -> &Arc<VoiceBreaker> {
        &self.shared.opts.breaker
    }

    /// Whether the fallback voice was started.
    pub fn fallback_started(&self) -> bool {
        self.shared.fallback_if_started().is_some()
    }
}

/// Where one line's synthesis is.
enum Phase {
    /// Asking the primary: events held until its first audio.
    Primary {
        stream: TtsStream,
        held: Vec<TtsEvent>,
    },
    /// The primary's audio is flowing.
    Streaming(TtsStream),
    /// The fallback (`last == false`) or the last resort is speaking;
    /// `spoke` once it produced anything.
    Other {
        stream: TtsStream,
        spoke: bool,
        last: bool,
    },
    Done,
}

/// One line being said.
struct Line {
    shared: Arc<Shared>,
    text: Arc<str>,
    phase: Phase,
    out: VecDeque<Result<TtsEvent, TtsError>>,
    /// This line is the half-open probe and its outcome is not known yet.
    probe: bool,
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.probe {
            // Dropped (a barge-in) before the primary answered: let the
            // next line probe instead.
            self.shared
                .opts
                .breaker
                .probing
                .store(false, Ordering::Release);
        }
    }
}

impl Line {
    fn primary_failed(&mut self, why: &str) {
        self.probe = false;
        self.shared.opts.breaker.record_failure();
        self.fall_back(why);
    }

    fn fall_back(&mut self, why: &str) {
        tracing::warn!(
            reason = why,
            "the primary voice cannot say a line; the fallback speaks"
        );
        metrics::counter!(crate::metrics::TTS_FALLBACKS, "voice" => "fallback").increment(1);
        let tts = self.shared.fallback();
        self.phase = Phase::Other {
            stream: tts.synthesize(&self.text),
            spoke: false,
            last: false,
        };
    }

    /// Advance by one event of whichever voice is speaking.
    async fn step(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Primary {
                mut stream,
                mut held,
            } => {
                let wait = self.shared.opts.first_audio_timeout;
                match tokio::time::timeout(wait, stream.next()).await {
                    Ok(Some(Ok(TtsEvent::Audio(a)))) => {
                        self.probe = false;
                        self.shared.opts.breaker.record_success();
                        self.out.extend(held.drain(..).map(Ok));
                        self.out.push_back(Ok(TtsEvent::Audio(a)));
                        self.phase = Phase::Streaming(stream);
                    }
                    Ok(Some(Ok(e))) => {
                        held.push(e);
                        self.phase = Phase::Primary { stream, held };
                    }
                    Ok(Some(Err(e))) => self.primary_failed(&e.0),
                    Ok(None) => self.primary_failed("the primary voice ended without audio"),
                    Err(_) => self.primary_failed("no audio from the primary voice in time"),
                }
            }
            Phase::Streaming(mut stream) => match stream.next().await {
                Some(Ok(e)) => {
                    self.out.push_back(Ok(e));
                    self.phase = Phase::Streaming(stream);
                }
                Some(Err(e)) => {
                    // D-23: the line ends where it is (no voice spliced in
                    // mid-sentence), but a vendor that cuts lines is failing.
                    self.shared.opts.breaker.record_failure();
                    tracing::warn!(error = %e.0, "the primary voice failed mid-line; the line ends there");
                }
                None => {}
            },
            Phase::Other {
                mut stream,
                spoke,
                last,
            } => match stream.next().await {
                Some(Ok(e)) => {
                    self.out.push_back(Ok(e));
                    self.phase = Phase::Other {
                        stream,
                        spoke: true,
                        last,
                    };
                }
                Some(Err(e)) if spoke => {
                    tracing::warn!(error = %e.0, "the fallback voice failed mid-line; the line ends there");
                }
                Some(Err(e)) => self.other_failed(&e.0, last),
                // Ended without a word: as good as an error.
                None if !spoke => self.other_failed("the voice ended without audio", last),
                None => {}
            },
            Phase::Done => {}
        }
    }
}

impl Line {
    /// The fallback (or the last resort) failed before saying anything.
    fn other_failed(&mut self, why: &str, last: bool) {
        match (&self.shared.opts.last_resort, last) {
            (Some(tts), false) => {
                tracing::error!(error = %why, "both voices failed; the offline voice speaks");
                metrics::counter!(crate::metrics::TTS_FALLBACKS, "voice" => "last_resort")
                    .increment(1);
                self.phase = Phase::Other {
                    stream: tts.synthesize(&self.text),
                    spoke: false,
                    last: true,
                };
            }
            _ => self
                .out
                .push_back(Err(TtsError(format!("no voice could say the line: {why}")))),
        }
    }
}

impl Tts for FallbackTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        let mut line = Line {
            shared: self.shared.clone(),
            text: Arc::from(text),
            phase: Phase::Done,
            out: VecDeque::new(),
            probe: false,
        };
        if let Some(probe) = self.shared.opts.breaker.admit() {
            line.probe = probe;
            line.phase = Phase::Primary {
                stream: self.shared.primary.synthesize(text),
                held: Vec::new(),
            };
        } else {
            line.fall_back("the primary voice's breaker is open");
        }
        Box::pin(futures_util::stream::unfold(line, |mut line| async move {
            loop {
                if let Some(item) = line.out.pop_front() {
                    return Some((item, line));
                }
                if matches!(line.phase, Phase::Done) {
                    return None;
                }
                line.step().await;
            }
        }))
    }

    fn start(&self) {
        self.shared.primary.start();
    }

    fn stop(&self) {
        if self.shared.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.primary.stop();
        if let Some(f) = self.shared.fallback_if_started() {
            f.stop();
        }
    }

    fn cancel(&self) {
        self.shared.primary.cancel();
        if let Some(f) = self.shared.fallback_if_started() {
            f.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use voice::frames::Audio;

    /// A voice that says one audio chunk per line after `delay`, or fails.
    struct Voice {
        tag: u8,
        fail: bool,
        delay: Duration,
        calls: AtomicUsize,
        dropped: Arc<AtomicUsize>,
    }

    impl Voice {
        fn new(tag: u8, fail: bool, delay: Duration) -> Arc<Self> {
            Arc::new(Voice {
                tag,
                fail,
                delay,
                calls: AtomicUsize::new(0),
                dropped: Arc::default(),
            })
        }
    }

    struct OnDrop(Arc<AtomicUsize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Tts for Voice {
        fn synthesize(&self, _text: &str) -> TtsStream {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let (tag, fail, delay) = (self.tag, self.fail, self.delay);
            let guard = OnDrop(self.dropped.clone());
            Box::pin(futures_util::stream::once(async move {
                let _guard = guard;
                tokio::time::sleep(delay).await;
                if fail {
                    Err(TtsError("down".into()))
                } else {
                    Ok(TtsEvent::Audio(Audio::pcm16(vec![tag, 0], 8000)))
                }
            }))
        }
    }

    async fn say(tts: &FallbackTts) -> Vec<Result<TtsEvent, TtsError>> {
        tts.synthesize("hello").collect().await
    }

    fn tag(items: &[Result<TtsEvent, TtsError>]) -> Vec<i32> {
        items
            .iter()
            .map(|i| match i {
                Ok(TtsEvent::Audio(a)) => a.bytes[0] as i32,
                Ok(TtsEvent::Word(_)) => -2,
                Err(_) => -1,
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_primary_is_replaced_after_the_first_audio_timeout() {
        let primary = Voice::new(1, false, Duration::from_secs(30));
        let fallback = Voice::new(2, false, Duration::ZERO);
        let f2 = fallback.clone();
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(move || f2.clone() as Arc<dyn Tts>),
            FallbackOptions::default(),
        );
        let t0 = Instant::now();
        assert_eq!(tag(&say(&tts).await), vec![2]);
        assert_eq!(t0.elapsed(), Duration::from_secs(5));
        assert_eq!(primary.dropped.load(Ordering::SeqCst), 1, "request dropped");
        assert_eq!(tts.breaker().consecutive_failures(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_resort_speaks_when_both_voices_fail_and_the_breaker_is_shared() {
        let breaker = VoiceBreaker::new(3, 60.0);
        let last = Voice::new(9, false, Duration::ZERO);
        let make = |breaker: &Arc<VoiceBreaker>| {
            let f = Voice::new(2, true, Duration::ZERO);
            FallbackTts::new(
                Voice::new(1, true, Duration::ZERO),
                Box::new(move || f.clone() as Arc<dyn Tts>),
                FallbackOptions {
                    breaker: breaker.clone(),
                    last_resort: Some(last.clone()),
                    ..FallbackOptions::default()
                },
            )
        };
        let (a, b) = (make(&breaker), make(&breaker));
        assert_eq!(tag(&say(&a).await), vec![9]);
        assert_eq!(tag(&say(&b).await), vec![9]);
        assert_eq!(tag(&say(&a).await), vec![9]);
        assert!(
            !breaker.should_try(),
            "three failures over two calls open it"
        );
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(breaker.should_try(), "half-open after the cooldown");
        assert_eq!(tag(&say(&b).await), vec![9]);
        assert!(
            !breaker.should_try(),
            "a failed probe restarts the cooldown (D-20)"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_lets_one_line_probe_and_the_rest_use_the_fallback() {
        let breaker = VoiceBreaker::new(1, 60.0);
        let primary = Voice::new(1, false, Duration::from_secs(2));
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(|| Voice::new(2, false, Duration::ZERO) as Arc<dyn Tts>),
            FallbackOptions {
                breaker: breaker.clone(),
                ..FallbackOptions::default()
            },
        );
        breaker.record_failure();
        tokio::time::advance(Duration::from_secs(61)).await;
        // The probe is in flight (slow primary); a second line meanwhile
        // goes straight to the fallback.
        let probe = tts.synthesize("one");
        assert_eq!(tag(&say(&tts).await), vec![2]);
        assert_eq!(primary.calls.load(Ordering::SeqCst), 1);
        // A probe dropped before its answer frees the slot.
        drop(probe);
        assert!(breaker.should_try());
        // The next probe succeeds: closed again, every line asks the primary.
        assert_eq!(tag(&say(&tts).await), vec![1]);
        assert_eq!(breaker.consecutive_failures(), 0);
        assert_eq!(tag(&say(&tts).await), vec![1]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_fallback_ending_without_audio_hands_the_line_to_the_last_resort() {
        struct Mute;
        impl Tts for Mute {
            fn synthesize(&self, _text: &str) -> TtsStream {
                Box::pin(futures_util::stream::empty())
            }
        }
        let tts = FallbackTts::new(
            Voice::new(1, true, Duration::ZERO),
            Box::new(|| Arc::new(Mute) as Arc<dyn Tts>),
            FallbackOptions {
                last_resort: Some(Voice::new(9, false, Duration::ZERO)),
                ..FallbackOptions::default()
            },
        );
        assert_eq!(tag(&say(&tts).await), vec![9]);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_a_line_drops_the_request_in_flight() {
        let primary = Voice::new(1, false, Duration::from_secs(2));
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(|| Voice::new(2, false, Duration::ZERO) as Arc<dyn Tts>),
            FallbackOptions::default(),
        );
        let mut line = tts.synthesize("hello");
        assert!(
            tokio::time::timeout(Duration::from_millis(100), line.next())
                .await
                .is_err()
        );
        drop(line);
        assert_eq!(primary.dropped.load(Ordering::SeqCst), 1);
        assert!(!tts.fallback_started());
    }
}
