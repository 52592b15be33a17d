//! Text to speech that never leaves the caller in silence because a voice
//! vendor is slow or down (SPEC §8.5, D-20).
//!
//! [`FallbackTts`] wraps a primary voice (Inworld in production) and a
//! fallback (Deepgram Aura), each a [`Tts`]. Per line:
//!
//! 1. While the breaker allows it, the primary is asked. What it sends
//!    before its first audio is held back.
//!    * Late ([`FallbackOptions::hedge_after`], 0.5 s) without audio: the
//!      fallback is asked too, and whichever voice speaks first says the
//!      line; the other request is dropped. A primary that loses the race
//!      counts as a failure for the breaker. (Issue 24: the caller's dead
//!      air is bounded by the hedge, not by the vendor's timeout.)
//!    * First audio: the held events go out, the breaker records a
//!      success, the rest streams.
//!    * An error after that ends the line where it is and counts as a
//!      failure for the breaker (D-23); a [`TtsEvent::Cut`] after the
//!      audio tells the listener the rest was never said (the accountant
//!      keeps only what was).
//!    * A stall after that (no event for [`FallbackOptions::stall_after`],
//!      1 s) counts as a failure too, and the fallback says the *rest* of
//!      the line: the words whose audio the primary had not sent (from its
//!      word timings, else the audio's length at 15 characters a second).
//!      A voice that changes mid-line is better than silence.
//!    * An error, an end without audio, or no audio at all by
//!      [`FallbackOptions::first_audio_timeout`] (5 s): what was held is
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

use futures_util::StreamExt;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

/// Builds the fallback voice the first time it is needed.
pub type LazyTts = Box<dyn Fn() -> Arc<dyn Tts> + Send + Sync>;

/// The primary voice's circuit breaker; share one `Arc` between calls so
/// they learn from each other's failures.
pub use crate::breaker::SharedBreaker as VoiceBreaker;

/// How a [`FallbackTts`] behaves.
#[derive(Clone)]
pub struct FallbackOptions {
    /// The primary's breaker (default: its own, 3 failures, 60 s).
    pub breaker: Arc<VoiceBreaker>,
    /// Longest wait for the primary's first audio; then the fallback says
    /// the line alone.
    pub first_audio_timeout: Duration,
    /// When the primary is this late with its first audio, the fallback is
    /// asked too, and whichever speaks first says the line (a hedge: the
    /// caller's dead air stays short while a vendor is slow).
    pub hedge_after: Duration,
    /// A gap this long in the primary's stream after its first audio is a
    /// stall: the fallback says the rest of the line.
    pub stall_after: Duration,
    /// Who speaks when both vendors failed (the offline voice).
    pub last_resort: Option<Arc<dyn Tts>>,
}

impl Default for FallbackOptions {
    fn default() -> Self {
        FallbackOptions {
            breaker: VoiceBreaker::new(3, 60.0),
            first_audio_timeout: Duration::from_secs(5),
            hedge_after: Duration::from_millis(500),
            stall_after: Duration::from_secs(1),
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
    /// Asking the primary: events held until its first audio. Once it is
    /// late ([`FallbackOptions::hedge_after`]) the fallback is asked too
    /// (`hedge`, with its own held events): whichever speaks first says the
    /// line, the other request is dropped.
    Primary {
        stream: TtsStream,
        held: Vec<TtsEvent>,
        started: Instant,
        hedge: Hedge,
    },
    /// The primary's audio is flowing; `said` counts what went out.
    Streaming {
        stream: TtsStream,
        said: Said,
    },
    /// The fallback (`last == false`) or the last resort is speaking;
    /// `spoke` once it produced anything. Its word timings are moved by
    /// `shift` (the audio the primary said of this line before it stalled).
    Other {
        stream: TtsStream,
        spoke: bool,
        last: bool,
        shift: Duration,
    },
    Done,
}

/// The fallback asked beside a late primary.
enum Hedge {
    /// Not asked yet.
    No,
    /// Asked; what it sent before its first audio is held.
    Asked(TtsStream, Vec<TtsEvent>),
    /// Asked and failed: the primary alone may still speak.
    Failed,
}

/// What the primary voice has sent of one line: its audio's length and the
/// word timings, so a stall can hand the unsaid rest to the fallback.
#[derive(Default)]
struct Said {
    audio: Duration,
    words: Vec<Duration>,
}

impl Said {
    fn note(&mut self, e: &TtsEvent) {
        match e {
            TtsEvent::Audio(a) => self.audio += a.duration(),
            TtsEvent::Word(w) => self.words.push(w.start),
            TtsEvent::Cut => {}
        }
    }

    /// The words of `text` the caller will not hear: those after the last
    /// word whose audio went out whole (the next word started within the
    /// audio sent; the last word known, when its estimated length fits).
    /// Without word timings the audio's length is read at 15 characters a
    /// second (SPEC §4.2's estimate).
    fn rest(&self, text: &str) -> String {
        let words: Vec<&str> = text.split_whitespace().collect();
        let done = if self.words.is_empty() {
            let mut chars = 0.0;
            words
                .iter()
                .take_while(|w| {
                    chars += w.chars().count() as f64 + 1.0;
                    chars / CHARS_PER_SECOND <= self.audio.as_secs_f64()
                })
                .count()
        } else {
            (0..self.words.len().min(words.len()))
                .take_while(|&i| {
                    let end = match self.words.get(i + 1) {
                        Some(next) => *next,
                        None => {
                            let len = words[i].chars().count() as f64 + 1.0;
                            self.words[i] + Duration::from_secs_f64(len / CHARS_PER_SECOND)
                        }
                    };
                    end <= self.audio
                })
                .count()
        };
        words[done..].join(" ")
    }
}

/// Speaking rate assumed where a voice gives no word timings.
const CHARS_PER_SECOND: f64 = 15.0;

/// One line being said.
struct Line {
    shared: Arc<Shared>,
    /// What is left to say (the whole line, or the rest after a stall).
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
            self.shared.opts.breaker.abandon_probe();
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
            shift: Duration::ZERO,
        };
    }

    /// The primary's first audio: what it held goes out, its audio flows.
    fn primary_speaks(&mut self, stream: TtsStream, held: Vec<TtsEvent>, first: TtsEvent) {
        self.probe = false;
        self.shared.opts.breaker.record_success();
        let mut said = Said::default();
        for e in held.into_iter().chain(std::iter::once(first)) {
            said.note(&e);
            self.out.push_back(Ok(e));
        }
        self.phase = Phase::Streaming { stream, said };
    }

    /// The hedge spoke first: the primary was too late for this line.
    fn hedge_speaks(&mut self, stream: TtsStream, held: Vec<TtsEvent>, first: TtsEvent) {
        self.probe = false;
        self.shared.opts.breaker.record_failure();
        tracing::warn!("the primary voice was late; the fallback said the line");
        self.out.extend(held.into_iter().map(Ok));
        self.out.push_back(Ok(first));
        self.phase = Phase::Other {
            stream,
            spoke: true,
            last: false,
            shift: Duration::ZERO,
        };
    }

    /// The primary is out of the race (failed, or past its first-audio
    /// deadline): the hedge keeps the line alone.
    fn hedge_alone(&mut self, stream: TtsStream, held: Vec<TtsEvent>) {
        self.probe = false;
        self.shared.opts.breaker.record_failure();
        self.out.extend(held.into_iter().map(Ok));
        self.phase = Phase::Other {
            stream,
            spoke: false,
            last: false,
            shift: Duration::ZERO,
        };
    }

    /// Advance by one event of whichever voice is speaking.
    async fn step(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Primary {
                stream,
                held,
                started,
                hedge,
            } => self.step_primary(stream, held, started, hedge).await,
            Phase::Streaming {
                mut stream,
                mut said,
            } => {
                let stall = self.shared.opts.stall_after;
                match tokio::time::timeout(stall, stream.next()).await {
                    Ok(Some(Ok(e))) => {
                        said.note(&e);
                        self.out.push_back(Ok(e));
                        self.phase = Phase::Streaming { stream, said };
                    }
                    Ok(Some(Err(e))) => {
                        // D-23: the line ends where it is, but a vendor that
                        // cuts lines is failing.
                        self.shared.opts.breaker.record_failure();
                        tracing::warn!(error = %e.0, "the primary voice failed mid-line; the line ends there");
                        // The listener learns the rest was never spoken
                        // (the accountant drops it).
                        self.out.push_back(Ok(TtsEvent::Cut));
                    }
                    Ok(None) => {}
                    Err(_) => {
                        // A stall: the caller would hear silence. The
                        // fallback says what the primary has not.
                        self.shared.opts.breaker.record_failure();
                        drop(stream);
                        let rest = said.rest(&self.text);
                        if rest.is_empty() {
                            return;
                        }
                        tracing::warn!(
                            rest = %rest,
                            "the primary voice stalled mid-line; the fallback says the rest"
                        );
                        metrics::counter!(crate::metrics::TTS_FALLBACKS, "voice" => "fallback_rest")
                            .increment(1);
                        self.text = Arc::from(rest);
                        let tts = self.shared.fallback();
                        self.phase = Phase::Other {
                            stream: tts.synthesize(&self.text),
                            spoke: false,
                            last: false,
                            shift: said.audio,
                        };
                    }
                }
            }
            Phase::Other {
                mut stream,
                spoke,
                last,
                shift,
            } => match stream.next().await {
                Some(Ok(e)) => {
                    let e = match e {
                        TtsEvent::Word(mut w) => {
                            w.start += shift;
                            TtsEvent::Word(w)
                        }
                        e => e,
                    };
                    self.out.push_back(Ok(e));
                    self.phase = Phase::Other {
                        stream,
                        spoke: true,
                        last,
                        shift,
                    };
                }
                Some(Err(e)) if spoke => {
                    tracing::warn!(error = %e.0, "the fallback voice failed mid-line; the line ends there");
                    self.out.push_back(Ok(TtsEvent::Cut));
                }
                Some(Err(e)) => self.other_failed(&e.0, last, shift),
                // Ended without a word: as good as an error.
                None if !spoke => self.other_failed("the voice ended without audio", last, shift),
                None => {}
            },
            Phase::Done => {}
        }
    }

    /// One event of the primary before its first audio, or of the hedge
    /// racing it.
    async fn step_primary(
        &mut self,
        mut stream: TtsStream,
        mut held: Vec<TtsEvent>,
        started: Instant,
        hedge: Hedge,
    ) {
        let opts = &self.shared.opts;
        let give_up = started + opts.first_audio_timeout;
        match hedge {
            Hedge::No | Hedge::Failed => {
                let hedge_at = started + opts.hedge_after;
                let hedging = matches!(hedge, Hedge::No) && hedge_at < give_up;
                let until = if hedging { hedge_at } else { give_up };
                match tokio::time::timeout_at(until, stream.next()).await {
                    Ok(Some(Ok(TtsEvent::Audio(a)))) => {
                        self.primary_speaks(stream, held, TtsEvent::Audio(a))
                    }
                    Ok(Some(Ok(e))) => {
                        held.push(e);
                        self.phase = Phase::Primary {
                            stream,
                            held,
                            started,
                            hedge,
                        };
                    }
                    Ok(Some(Err(e))) => self.primary_failed(&e.0),
                    Ok(None) => self.primary_failed("the primary voice ended without audio"),
                    Err(_) if hedging => {
                        tracing::info!("the primary voice is late; asking the fallback too");
                        metrics::counter!(crate::metrics::TTS_FALLBACKS, "voice" => "hedge")
                            .increment(1);
                        let fallback = self.shared.fallback().synthesize(&self.text);
                        self.phase = Phase::Primary {
                            stream,
                            held,
                            started,
                            hedge: Hedge::Asked(fallback, Vec::new()),
                        };
                    }
                    Err(_) => self.primary_failed("no audio from the primary voice in time"),
                }
            }
            Hedge::Asked(mut other, mut other_held) => {
                tokio::select! {
                    biased;
                    e = stream.next() => match e {
                        Some(Ok(TtsEvent::Audio(a))) => {
                            drop(other);
                            self.primary_speaks(stream, held, TtsEvent::Audio(a));
                        }
                        Some(Ok(e)) => {
                            held.push(e);
                            self.phase = Phase::Primary {
                                stream,
                                held,
                                started,
                                hedge: Hedge::Asked(other, other_held),
                            };
                        }
                        // The primary is out: the hedge goes on alone.
                        Some(Err(_)) | None => self.hedge_alone(other, other_held),
                    },
                    e = other.next() => match e {
                        Some(Ok(TtsEvent::Audio(a))) => {
                            drop(stream);
                            self.hedge_speaks(other, other_held, TtsEvent::Audio(a));
                        }
                        Some(Ok(e)) => {
                            other_held.push(e);
                            self.phase = Phase::Primary {
                                stream,
                                held,
                                started,
                                hedge: Hedge::Asked(other, other_held),
                            };
                        }
                        // The fallback failed: the primary may still speak
                        // (until its first-audio deadline; then the last
                        // resort).
                        Some(Err(_)) | None => {
                            self.phase = Phase::Primary {
                                stream,
                                held,
                                started,
                                hedge: Hedge::Failed,
                            };
                        }
                    },
                    _ = tokio::time::sleep_until(give_up) => {
                        // Both late: the primary has had its chance; the
                        // fallback keeps the line.
                        drop(stream);
                        self.hedge_alone(other, other_held);
                    }
                }
            }
        }
    }
}

impl Line {
    /// The fallback (or the last resort) failed before saying anything.
    fn other_failed(&mut self, why: &str, last: bool, shift: Duration) {
        match (&self.shared.opts.last_resort, last) {
            (Some(tts), false) => {
                tracing::error!(error = %why, "both voices failed; the offline voice speaks");
                metrics::counter!(crate::metrics::TTS_FALLBACKS, "voice" => "last_resort")
                    .increment(1);
                self.phase = Phase::Other {
                    stream: tts.synthesize(&self.text),
                    spoke: false,
                    last: true,
                    shift,
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
                started: Instant::now(),
                hedge: Hedge::No,
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
                Ok(TtsEvent::Cut) => -3,
                Err(_) => -1,
            })
            .collect()
    }

    /// A voice that says one chunk of audio, then fails (D-23).
    struct BreaksOff;
    impl Tts for BreaksOff {
        fn synthesize(&self, _text: &str) -> TtsStream {
            Box::pin(futures_util::stream::iter([
                Ok(TtsEvent::Audio(Audio::pcm16(vec![1, 0], 8000))),
                Err(TtsError("resource exhausted".into())),
            ]))
        }
    }

    /// D-23 and issue 24 row 6: an error after the first audio ends the
    /// line there — no fallback, a failure for the breaker — and says so
    /// with a `Cut`, so the rest of the line is not counted as said.
    #[tokio::test(start_paused = true)]
    async fn a_primary_failing_mid_line_ends_it_with_a_cut() {
        let fallback = Voice::new(2, false, Duration::ZERO);
        let f2 = fallback.clone();
        let tts = FallbackTts::new(
            Arc::new(BreaksOff),
            Box::new(move || f2.clone() as Arc<dyn Tts>),
            unhedged(&VoiceBreaker::new(3, 60.0)),
        );
        assert_eq!(tag(&say(&tts).await), vec![1, -3]);
        assert_eq!(fallback.calls.load(Ordering::SeqCst), 0);
        assert_eq!(tts.breaker().consecutive_failures(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_primary_is_replaced_after_the_first_audio_timeout() {
        let primary = Voice::new(1, false, Duration::from_secs(30));
        let fallback = Voice::new(2, false, Duration::ZERO);
        let f2 = fallback.clone();
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(move || f2.clone() as Arc<dyn Tts>),
            unhedged(&VoiceBreaker::new(3, 60.0)),
        );
        let t0 = Instant::now();
        assert_eq!(tag(&say(&tts).await), vec![2]);
        assert_eq!(t0.elapsed(), Duration::from_secs(5));
        assert_eq!(primary.dropped.load(Ordering::SeqCst), 1, "request dropped");
        assert_eq!(tts.breaker().consecutive_failures(), 1);
    }

    /// Issue 24 row 1: a primary that accepts the request and says nothing
    /// costs the caller the hedge's wait, not the vendor's timeout.
    #[tokio::test(start_paused = true)]
    async fn a_late_primary_is_hedged_and_whichever_speaks_first_says_the_line() {
        // The primary is silent: the fallback, asked at the hedge, speaks.
        let primary = Voice::new(1, false, Duration::from_secs(30));
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(|| Voice::new(2, false, Duration::from_millis(200)) as Arc<dyn Tts>),
            FallbackOptions::default(),
        );
        let t0 = Instant::now();
        assert_eq!(tag(&say(&tts).await), vec![2]);
        assert_eq!(
            t0.elapsed(),
            Duration::from_millis(700),
            "hedge 0.5 s + 0.2 s"
        );
        assert_eq!(
            primary.dropped.load(Ordering::SeqCst),
            1,
            "the late request is dropped"
        );
        assert_eq!(tts.breaker().consecutive_failures(), 1);

        // The primary is late but still first: it says the line, the
        // fallback's request is dropped, and the breaker counts a success.
        let fallback = Voice::new(2, false, Duration::from_secs(2));
        let f2 = fallback.clone();
        let tts = FallbackTts::new(
            Voice::new(1, false, Duration::from_millis(1100)),
            Box::new(move || f2.clone() as Arc<dyn Tts>),
            FallbackOptions::default(),
        );
        let t0 = Instant::now();
        assert_eq!(tag(&say(&tts).await), vec![1]);
        assert_eq!(t0.elapsed(), Duration::from_millis(1100));
        assert_eq!(
            fallback.calls.load(Ordering::SeqCst),
            1,
            "asked at the hedge"
        );
        assert_eq!(fallback.dropped.load(Ordering::SeqCst), 1, "and dropped");
        assert_eq!(tts.breaker().consecutive_failures(), 0);
    }

    /// A voice that sends `events` (each after its delay), then hangs.
    struct Stalls(Vec<(Duration, TtsEvent)>);

    impl Tts for Stalls {
        fn synthesize(&self, _text: &str) -> TtsStream {
            let events = self.0.clone();
            Box::pin(
                futures_util::stream::iter(events)
                    .then(|(d, e)| async move {
                        tokio::time::sleep(d).await;
                        Ok(e)
                    })
                    .chain(futures_util::stream::pending()),
            )
        }
    }

    /// A voice that says what it is asked as one word timing per word
    /// (0.3 s apart) and one audio chunk.
    struct Echo(Arc<Mutex<Vec<String>>>);

    impl Tts for Echo {
        fn synthesize(&self, text: &str) -> TtsStream {
            self.0.lock().unwrap().push(text.to_string());
            let mut events: Vec<Result<TtsEvent, TtsError>> = text
                .split_whitespace()
                .enumerate()
                .map(|(i, w)| {
                    Ok(TtsEvent::Word(voice::accountant::WordTiming {
                        word: w.to_string(),
                        start: Duration::from_millis(300 * i as u64),
                    }))
                })
                .collect();
            events.push(Ok(TtsEvent::Audio(Audio::pcm16(vec![2, 0], 8000))));
            Box::pin(futures_util::stream::iter(events))
        }
    }

    fn word(w: &str, ms: u64) -> TtsEvent {
        TtsEvent::Word(voice::accountant::WordTiming {
            word: w.to_string(),
            start: Duration::from_millis(ms),
        })
    }

    /// 0.5 s of 8 kHz audio.
    fn half_second() -> TtsEvent {
        TtsEvent::Audio(Audio::pcm16(vec![1u8; 8000], 8000))
    }

    /// Issue 24 row 2: a primary that stalls after its first chunk: the
    /// fallback says the words the caller has not heard, at once.
    #[tokio::test(start_paused = true)]
    async fn a_stall_after_the_first_audio_hands_the_rest_to_the_fallback() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let a2 = asked.clone();
        let primary = Stalls(vec![
            (Duration::ZERO, word("Thanks", 0)),
            (Duration::ZERO, word("for", 250)),
            (Duration::ZERO, word("calling", 400)),
            (Duration::from_millis(100), half_second()),
        ]);
        let tts = FallbackTts::new(
            Arc::new(primary),
            Box::new(move || Arc::new(Echo(a2.clone())) as Arc<dyn Tts>),
            FallbackOptions::default(),
        );
        let t0 = Instant::now();
        let got = tts
            .synthesize("Thanks for calling ACE Cooling today.")
            .collect::<Vec<_>>()
            .await;
        assert_eq!(
            t0.elapsed(),
            Duration::from_millis(1100),
            "stall found after 1 s"
        );
        // "calling" started at 0.4 s in 0.5 s of audio: its end is not
        // proven, so the fallback says it again with the rest.
        assert_eq!(
            *asked.lock().unwrap(),
            vec!["calling ACE Cooling today.".to_string()]
        );
        // The fallback's word timings follow the primary's audio.
        let starts: Vec<u64> = got
            .iter()
            .filter_map(|e| match e {
                Ok(TtsEvent::Word(w)) => Some(w.start.as_millis() as u64),
                _ => None,
            })
            .collect();
        assert_eq!(starts, vec![0, 250, 400, 500, 800, 1100, 1400]);
        assert_eq!(
            tts.breaker().consecutive_failures(),
            1,
            "a stall is a failure (D-23)"
        );
    }

    #[test]
    fn the_rest_of_a_line_is_the_words_not_sent_whole() {
        let said = |audio_ms: u64, words: &[u64]| Said {
            audio: Duration::from_millis(audio_ms),
            words: words.iter().map(|ms| Duration::from_millis(*ms)).collect(),
        };
        let text = "my AC is broken";
        assert_eq!(said(0, &[]).rest(text), "my AC is broken");
        assert_eq!(said(700, &[0, 300, 600]).rest(text), "is broken");
        // Past the last word timing: the word fits its estimated length.
        assert_eq!(said(2000, &[0, 300, 600, 800]).rest(text), "");
        // No timings: 15 characters a second ("my " = 3, "AC " = 6).
        assert_eq!(said(450, &[]).rest(text), "is broken");
        assert_eq!(said(0, &[0]).rest(""), "");
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

    /// Options without the hedge (these tests are about the breaker).
    fn unhedged(breaker: &Arc<VoiceBreaker>) -> FallbackOptions {
        FallbackOptions {
            breaker: breaker.clone(),
            hedge_after: Duration::from_secs(60),
            ..FallbackOptions::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_lets_one_line_probe_and_the_rest_use_the_fallback() {
        let breaker = VoiceBreaker::new(1, 60.0);
        let primary = Voice::new(1, false, Duration::from_secs(2));
        let tts = FallbackTts::new(
            primary.clone(),
            Box::new(|| Voice::new(2, false, Duration::ZERO) as Arc<dyn Tts>),
            unhedged(&breaker),
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
