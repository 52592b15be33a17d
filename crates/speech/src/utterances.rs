//! Speech to text one utterance at a time, for recognisers that hear a
//! whole clip (Whisper) rather than a stream.
//!
//! The VAD already decides where the caller's turns begin and end
//! ([`ControlFrame::UserStartedSpeaking`] / `UserStoppedSpeaking`), so
//! [`UtteranceStt`] cuts the caller's audio into clips there and hands
//! each, at 16 kHz, to a [`Recogniser`]. The text comes back as a final
//! transcript, in the order the caller spoke, through the pipeline's
//! [`TranscriptOut`].
//!
//! Where a clip begins and ends is [`UtteranceOptions`], one rule for the
//! live call and for `calllock transcribe` (the same audio must be heard
//! the same way live and from a recording):
//!
//! - it begins [`pre_roll`](UtteranceOptions::pre_roll) before the VAD's
//!   start (the VAD says "started" only after `start_secs` of speech, and
//!   the first syllable must not be cut) — always the audio just before
//!   it, even where that audio also ended the previous clip: a caller
//!   reading digits starts the next word inside the VAD's stop wait;
//! - it ends [`post_roll`](UtteranceOptions::post_roll) after the speech,
//!   not at the VAD's stop: the stop comes after
//!   [`stop_wait`](UtteranceOptions::stop_wait) of silence, which Whisper
//!   would decode for nothing (and in which it hears words that are not
//!   there: "seven eight seven oh one" heard live as "It's M8 M1").
//!
//! When the recogniser is overloaded ([`Busy`]) or fails, the caller hears
//! "Sorry, I didn't catch that" ([`TranscriptOut::not_heard`]) rather than
//! silence. A clip longer than [`UtteranceOptions::max`] (Whisper hears 30 s
//! at most) is sent as it fills and the rest continues as a new clip.
//! A sound that holds no words (a click, a cough, "[BLANK_AUDIO]") ends
//! with an empty final transcript, as speech vendors send one: it tells the
//! conversation the caller's words are not coming, so its idle wait starts
//! again instead of waiting on them.
//!
//! [`ControlFrame::UserStartedSpeaking`]: voice::frames::ControlFrame::UserStartedSpeaking

use crate::pool::Busy;
use audio::vad::VadParams;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use voice::frames::{Audio, Encoding};
use voice::stages::stt::{Stt, Transcript, TranscriptOut};

/// The sample rate recognisers hear.
pub const RECOGNISER_RATE: u32 = 16_000;

/// What a recogniser hands back for one clip: the text, or why not.
pub type Heard = oneshot::Receiver<Result<String, String>>;

/// Something that turns a clip of speech into words.
pub trait Recogniser: Send + Sync + 'static {
    /// Queue one clip (16 kHz mono, samples in −1…1); the text later.
    fn recognise(&self, clip: Vec<f32>) -> Result<Heard, Busy>;
}

/// How clips are cut (see the module's notes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UtteranceOptions {
    /// Audio kept from before the VAD's start.
    pub pre_roll: Duration,
    /// How long the VAD waits in silence before it says the caller
    /// stopped: the end of every clip that is silence.
    pub stop_wait: Duration,
    /// Audio kept after the speech's end (of the stop wait's silence).
    pub post_roll: Duration,
    /// The longest clip sent at once.
    pub max: Duration,
    /// Clips shorter than this are noise, not words (not sent).
    pub min: Duration,
}

impl UtteranceOptions {
    /// Clips cut at the turns of a VAD tuned with `vad`.
    pub fn for_vad(vad: &VadParams) -> Self {
        UtteranceOptions {
            // The VAD's start can come ~0.9 s after the first sound (a
            // short first word, then a pause): keep a second.
            pre_roll: Duration::from_millis(1000),
            stop_wait: Duration::from_secs_f32(vad.stop_secs.max(0.0)),
            post_roll: Duration::from_millis(200),
            max: Duration::from_secs(28),
            min: Duration::from_millis(200),
        }
    }

    /// What is left out of a clip's end: the stop wait but the post-roll.
    pub fn trailing_silence(&self) -> Duration {
        self.stop_wait.saturating_sub(self.post_roll)
    }
}

impl Default for UtteranceOptions {
    /// For a phone call's VAD ([`VadParams::telephone`], what `serve`
    /// hears callers with).
    fn default() -> Self {
        UtteranceOptions::for_vad(&VadParams::telephone())
    }
}

enum Pending {
    Words(Heard),
    NotHeard(&'static str),
    /// A sound too short to hold words (a click): nothing to hear.
    Nothing,
}

/// A call's speech to text through a shared [`Recogniser`].
pub struct UtteranceStt<R: ?Sized> {
    recogniser: Arc<R>,
    options: UtteranceOptions,
    /// The caller's audio rate (learned from the audio).
    rate: u32,
    /// The last `pre_roll` of audio, speaking or not (the next clip's
    /// beginning).
    pre: VecDeque<i16>,
    /// The clip being heard.
    clip: Vec<i16>,
    speaking: bool,
    /// Clips in the order spoken, to the task that reports their words.
    pending: Option<mpsc::UnboundedSender<Pending>>,
}

impl<R: Recogniser + ?Sized> UtteranceStt<R> {
    /// A call's STT through `recogniser`.
    pub fn new(recogniser: Arc<R>, options: UtteranceOptions) -> Self {
        UtteranceStt {
            recogniser,
            options,
            rate: 8000,
            pre: VecDeque::new(),
            clip: Vec::new(),
            speaking: false,
            pending: None,
        }
    }

    fn samples_of(&self, d: Duration) -> usize {
        (u128::from(self.rate) * d.as_micros() / 1_000_000) as usize
    }

    /// Send the clip heard so far to the recogniser.
    fn send_clip(&mut self) {
        let clip = std::mem::take(&mut self.clip);
        let Some(pending) = &self.pending else { return };
        if clip.len() < self.samples_of(self.options.min) {
            let _ = pending.send(Pending::Nothing);
            return;
        }
        let clip = to_recogniser_rate(&clip, self.rate);
        let p = match self.recogniser.recognise(clip) {
            Ok(heard) => Pending::Words(heard),
            Err(Busy) => Pending::NotHeard("every recogniser is busy"),
        };
        let _ = pending.send(p);
    }
}

/// `samples` at `rate` as 16 kHz floats in −1…1.
pub fn to_recogniser_rate(samples: &[i16], rate: u32) -> Vec<f32> {
    let resampled;
    let at16 = if rate == RECOGNISER_RATE {
        samples
    } else {
        match audio::resample::Resampler::new(rate, RECOGNISER_RATE) {
            Ok(mut r) => {
                let mut out = Vec::with_capacity(samples.len() * 2 + 64);
                r.process_i16(samples, &mut out);
                r.flush_i16(&mut out);
                resampled = out;
                &resampled
            }
            Err(e) => {
                tracing::warn!(error = %e, rate, "caller audio cannot be resampled for the recogniser");
                return Vec::new();
            }
        }
    };
    at16.iter().map(|&s| f32::from(s) / 32768.0).collect()
}

/// What a recogniser's text says, without its notes on the sound
/// (`[BLANK_AUDIO]`, `(music)`, `*coughs*`) and extra spaces.
pub fn clean_transcript(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth: Option<char> = None;
    for c in text.chars() {
        match (depth, c) {
            (None, '[') => depth = Some(']'),
            (None, '(') => depth = Some(')'),
            (None, '*') => depth = Some('*'),
            (Some(close), c) if c == close => depth = None,
            (Some(_), _) => {}
            (None, c) => out.push(c),
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let text = words.join(" ");
    // Nothing but punctuation is nothing.
    if text.chars().any(char::is_alphanumeric) {
        text
    } else {
        String::new()
    }
}

async fn report(mut rx: mpsc::UnboundedReceiver<Pending>, out: TranscriptOut) {
    while let Some(p) = rx.recv().await {
        let words = match p {
            Pending::Words(heard) => match heard.await {
                Ok(Ok(text)) => Ok(clean_transcript(&text)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err("the recogniser stopped".to_string()),
            },
            Pending::NotHeard(why) => Err(why.to_string()),
            Pending::Nothing => Ok(String::new()),
        };
        let sent = match words {
            // Breath, a cough: no words, no turn. The empty final result
            // says the recogniser is done with it (the conversation's idle
            // wait starts again; it does not wait for words).
            Ok(text) => {
                out.send(Transcript {
                    text,
                    is_final: true,
                })
                .await
            }
            Err(why) => {
                tracing::warn!(why, "a caller utterance went unheard");
                // providers::metrics::STT_NOT_HEARD (described by calllock::metrics).
                metrics::counter!("calllock_stt_not_heard_total", "ears" => "whisper").increment(1);
                out.not_heard().await
            }
        };
        if !sent {
            return;
        }
    }
}

impl<R: Recogniser + ?Sized> Stt for UtteranceStt<R> {
    fn start(&mut self, out: TranscriptOut) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.pending = Some(tx);
        tokio::spawn(tracing::Instrument::in_current_span(report(rx, out)));
    }

    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
        let samples: Vec<i16> = match audio.encoding {
            Encoding::Pcm16 => audio
                .bytes
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect(),
            Encoding::MuLaw => {
                let mut out = Vec::with_capacity(audio.bytes.len());
                audio::mulaw::decode(&audio.bytes, &mut out);
                out
            }
        };
        if audio.rate != self.rate && audio.rate > 0 {
            self.rate = audio.rate;
            self.pre.clear();
        }
        if self.speaking {
            self.clip.extend_from_slice(&samples);
            if self.clip.len() >= self.samples_of(self.options.max) {
                self.send_clip();
            }
        }
        self.pre.extend(samples);
        let keep = self.samples_of(self.options.pre_roll);
        let extra = self.pre.len().saturating_sub(keep);
        self.pre.drain(..extra);
        Vec::new()
    }

    fn user_started_speaking(&mut self) {
        if !self.speaking {
            self.speaking = true;
            self.clip.clear();
            self.clip.extend(self.pre.iter());
        }
    }

    fn user_stopped_speaking(&mut self) {
        if self.speaking {
            self.speaking = false;
            let silence = self.samples_of(self.options.trailing_silence());
            self.clip.truncate(self.clip.len().saturating_sub(silence));
            self.send_clip();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use voice::frames::{Data, Frame};

    /// Hears a clip as its length in tenths of a second (so tests can tell
    /// clips apart), after `delay`; busy after `capacity` clips.
    struct Counting {
        clips: Mutex<Vec<usize>>,
        capacity: usize,
        delays: Mutex<Vec<Duration>>,
    }

    impl Recogniser for Counting {
        fn recognise(&self, clip: Vec<f32>) -> Result<Heard, Busy> {
            let mut clips = self.clips.lock().unwrap();
            if clips.len() >= self.capacity {
                return Err(Busy);
            }
            clips.push(clip.len());
            let delay = self.delays.lock().unwrap().pop().unwrap_or_default();
            let (tx, rx) = oneshot::channel();
            let text = format!("clip of {} tenths", clip.len() / 1600);
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(Ok(text));
            });
            Ok(rx)
        }
    }

    fn pcm(ms: u64, value: i16) -> Audio {
        let n = (8 * ms) as usize;
        let bytes: Vec<u8> = std::iter::repeat_n(value.to_le_bytes(), n)
            .flatten()
            .collect();
        Audio::pcm16(bytes, 8000)
    }

    async fn heard(rx: &mut voice::inbox::Receiver) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(Some(f)) = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
            if let Frame::Data(d) = f {
                match d.data {
                    Data::Transcript { text, .. } => out.push(text.to_string()),
                    Data::NotHeard => out.push("<not heard>".into()),
                    _ => {}
                }
            }
        }
        out
    }

    fn setup(
        capacity: usize,
        delays: Vec<Duration>,
    ) -> (
        UtteranceStt<Counting>,
        voice::inbox::Receiver,
        Arc<Counting>,
    ) {
        let rec = Arc::new(Counting {
            clips: Mutex::new(Vec::new()),
            capacity,
            delays: Mutex::new(delays),
        });
        let mut stt = UtteranceStt::new(rec.clone(), UtteranceOptions::default());
        let (tx, rx) = voice::inbox::inbox(16);
        stt.start(TranscriptOut::new(tx));
        (stt, rx, rec)
    }

    #[tokio::test]
    async fn a_clip_runs_from_the_pre_roll_to_the_speech_s_end() {
        let (mut stt, mut rx, rec) = setup(10, vec![]);
        stt.push_audio(&pcm(3000, 0)); // quiet: only the last second kept
        stt.user_started_speaking();
        // 1.5 s of words, then the VAD's half second wait in silence.
        stt.push_audio(&pcm(1500, 1000));
        stt.push_audio(&pcm(500, 0));
        stt.user_stopped_speaking();
        stt.push_audio(&pcm(300, 0)); // after the stop: not in the clip
                                      // The second before, the words, 0.2 s of the wait's silence.
        assert_eq!(heard(&mut rx).await, vec!["clip of 27 tenths"]);
        let clips = rec.clips.lock().unwrap().clone();
        // 2.7 s at 16 kHz, give or take the resampler's edges.
        assert!((43_100..=43_300).contains(&clips[0]), "{clips:?}");
    }

    #[tokio::test]
    async fn words_come_back_in_the_order_spoken() {
        // The first clip takes longer than the second; each ends 0.2 s
        // into the VAD's stop wait, and the second begins with the second
        // of audio before it (0.3 s of the first clip's end, 0.7 s quiet).
        let (mut stt, mut rx, _) = setup(10, vec![Duration::ZERO, Duration::from_millis(80)]);
        stt.user_started_speaking();
        stt.push_audio(&pcm(1000, 500));
        stt.push_audio(&pcm(500, 0));
        stt.user_stopped_speaking();
        stt.push_audio(&pcm(200, 0));
        stt.user_started_speaking();
        stt.push_audio(&pcm(2000, 500));
        stt.push_audio(&pcm(500, 0));
        stt.user_stopped_speaking();
        assert_eq!(
            heard(&mut rx).await,
            vec!["clip of 12 tenths", "clip of 32 tenths"]
        );
    }

    #[tokio::test]
    async fn a_word_begun_in_the_stop_wait_is_whole_in_the_next_clip() {
        // A caller reading digits: "seven", a short pause, "eight" starts
        // before the VAD has said "stopped" for "seven".
        let rec = Arc::new(Keeping::default());
        let mut stt = UtteranceStt::new(rec.clone(), UtteranceOptions::default());
        let (tx, _rx) = voice::inbox::inbox(16);
        stt.start(TranscriptOut::new(tx));
        let (seven, eight) = (600, 1200);
        stt.user_started_speaking();
        stt.push_audio(&pcm(400, seven));
        stt.push_audio(&pcm(250, 0));
        stt.push_audio(&pcm(250, eight)); // "eight" begins
        stt.user_stopped_speaking(); // the stop for "seven", late
        stt.push_audio(&pcm(100, eight));
        stt.user_started_speaking(); // the start for "eight", late too
        stt.push_audio(&pcm(300, eight));
        stt.push_audio(&pcm(500, 0));
        stt.user_stopped_speaking();
        let clips = rec.0.lock().unwrap().clone();
        assert_eq!(clips.len(), 2);
        let count = |clip: &[f32], value: i16| {
            let v = f32::from(value) / 32768.0;
            clip.iter().filter(|s| (**s - v).abs() < 0.002).count()
        };
        // 16 samples a millisecond at 16 kHz; the resampler smears a few
        // at each edge.
        let ms = |n: usize| n / 16;
        // The first clip: "seven", not the wait's silence after 0.2 s.
        assert!((390..=400).contains(&ms(count(&clips[0], seven))));
        assert!(
            ms(clips[0].len()) <= 400 + 250 + 250 - 300 + 5,
            "{}",
            clips[0].len()
        );
        // The second: all 650 ms of "eight", its first 250 ms included.
        assert!(
            (640..=650).contains(&ms(count(&clips[1], eight))),
            "{} ms of eight",
            ms(count(&clips[1], eight))
        );
    }

    #[tokio::test]
    async fn an_overloaded_recogniser_asks_the_caller_again() {
        let (mut stt, mut rx, _) = setup(1, vec![]);
        for _ in 0..2 {
            stt.user_started_speaking();
            stt.push_audio(&pcm(1000, 500));
            stt.push_audio(&pcm(500, 0));
            stt.user_stopped_speaking();
        }
        assert_eq!(
            heard(&mut rx).await,
            vec!["clip of 12 tenths", "<not heard>"]
        );
    }

    #[tokio::test]
    async fn a_click_is_not_a_clip_and_a_long_speech_is_cut() {
        let (mut stt, mut rx, rec) = setup(10, vec![]);
        stt.user_started_speaking();
        stt.push_audio(&pcm(100, 500));
        stt.user_stopped_speaking();
        stt.user_started_speaking();
        for _ in 0..30 {
            stt.push_audio(&pcm(1000, 500));
        }
        stt.user_stopped_speaking();
        let got = heard(&mut rx).await;
        // The click is no clip, but its end is reported (an empty final
        // result: the conversation stops waiting for words). The pre-roll
        // is the click's 0.1 s: 28.1 s sent as it filled, then the 2 s
        // left but the last 0.3 s (taken for the VAD's silence).
        assert_eq!(got, vec!["", "clip of 281 tenths", "clip of 17 tenths"]);
        assert_eq!(rec.clips.lock().unwrap().len(), 2);
    }

    /// Keeps every clip it is given; hears nothing.
    #[derive(Default)]
    struct Keeping(Mutex<Vec<Vec<f32>>>);

    impl Recogniser for Keeping {
        fn recognise(&self, clip: Vec<f32>) -> Result<Heard, Busy> {
            self.0.lock().unwrap().push(clip);
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Ok(String::new()));
            Ok(rx)
        }
    }

    #[tokio::test]
    async fn a_phone_lines_mulaw_is_heard_as_its_samples() {
        // The caller's audio reaches the STT as it left the socket (µ-law):
        // the clip is the same as from the decoded PCM16.
        let tone: Vec<i16> = (0..8000).map(|i| ((i % 50) as i16 - 25) * 400).collect();
        let mut ulaw = Vec::new();
        audio::mulaw::encode(&tone, &mut ulaw);
        let mut clips = Vec::new();
        for mulaw in [true, false] {
            let rec = Arc::new(Keeping::default());
            let mut stt = UtteranceStt::new(rec.clone(), UtteranceOptions::default());
            let (tx, _rx) = voice::inbox::inbox(16);
            stt.start(TranscriptOut::new(tx));
            stt.user_started_speaking();
            for chunk in ulaw.chunks(160) {
                let a = Audio::mulaw(chunk.to_vec(), 8000);
                stt.push_audio(&if mulaw { a } else { a.into_pcm16() });
            }
            stt.user_stopped_speaking();
            let kept = rec.0.lock().unwrap().clone();
            assert_eq!(kept.len(), 1);
            clips.push(kept[0].clone());
        }
        // A second, less the 0.3 s taken for the VAD's silence.
        assert!(clips[0].len() > 11_000, "{}", clips[0].len());
        assert_eq!(clips[0], clips[1]);
    }

    #[test]
    fn notes_on_the_sound_are_not_words() {
        assert_eq!(clean_transcript(" [BLANK_AUDIO] "), "");
        assert_eq!(clean_transcript("(music) *coughs*"), "");
        assert_eq!(clean_transcript(" ..."), "");
        assert_eq!(
            clean_transcript(" My AC is broken. [inaudible]  Please  help."),
            "My AC is broken. Please help."
        );
        assert_eq!(clean_transcript("78701."), "78701.");
        // An unclosed note drops the rest, never panics.
        assert_eq!(clean_transcript("yes [unclosed"), "yes");
    }
}
