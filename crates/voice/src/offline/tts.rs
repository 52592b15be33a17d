//! Text to speech in the [codec](super::codec): one word event and one
//! audio chunk per word, the first after `first_audio`.
//!
//! The audio is made a word at a time, when the stream is polled — like a
//! streaming vendor, and so a long line never sits in memory whole: the
//! TTS stage pulls only as far ahead of playback as it needs.

use super::codec::encode_word;
use crate::accountant::WordTiming;
use crate::frames::Audio;
use crate::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};
use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// The offline voice.
#[derive(Clone, Debug)]
pub struct CodecTts {
    /// Output sample rate (8000: the telephone rate, no resampling).
    pub rate: u32,
    /// Speaking rate.
    pub chars_per_second: f64,
    /// Latency to the first audio.
    pub first_audio: Duration,
}

impl Default for CodecTts {
    fn default() -> Self {
        CodecTts {
            rate: 8000,
            chars_per_second: 15.0,
            first_audio: Duration::from_millis(150),
        }
    }
}

impl Tts for CodecTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        Box::pin(CodecSpeech::new(self, text))
    }
}

type OnEnd = Box<dyn FnOnce(bool) + Send>;

/// One synthesis in the codec, made lazily: `Word` then `Audio` for each
/// word of the text, the first after the voice's `first_audio` (tokio
/// time, so it runs in virtual time under a paused clock).
pub struct CodecSpeech {
    voice: CodecTts,
    text: String,
    /// Byte offset of the rest of the text.
    pos: usize,
    /// Audio of the words before the next one.
    spoken: Duration,
    /// The first audio's latency, until it has passed.
    latency: Option<Pin<Box<Sleep>>>,
    /// The audio of the word just announced.
    audio: Option<Audio>,
    on_end: Option<OnEnd>,
}

impl CodecSpeech {
    /// `text` spoken by `voice`.
    pub fn new(voice: &CodecTts, text: &str) -> Self {
        CodecSpeech {
            voice: voice.clone(),
            text: text.to_string(),
            pos: 0,
            spoken: Duration::ZERO,
            latency: (!voice.first_audio.is_zero())
                .then(|| Box::pin(tokio::time::sleep(voice.first_audio))),
            audio: None,
            on_end: None,
        }
    }

    /// Call `f(true)` when every word was taken, `f(false)` when the
    /// stream is dropped before that (a cancelled request).
    pub fn on_end(mut self, f: impl FnOnce(bool) + Send + 'static) -> Self {
        self.on_end = Some(Box::new(f));
        self
    }

    /// The next word of the text, if any.
    fn next_word(&mut self) -> Option<(usize, usize)> {
        let rest = &self.text[self.pos..];
        let start = self.pos + rest.find(|c: char| !c.is_whitespace())?;
        let len = self.text[start..]
            .find(char::is_whitespace)
            .unwrap_or(self.text.len() - start);
        self.pos = start + len;
        Some((start, start + len))
    }
}

impl Stream for CodecSpeech {
    type Item = Result<TtsEvent, TtsError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(sleep) = this.latency.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.latency = None;
        }
        if let Some(audio) = this.audio.take() {
            return Poll::Ready(Some(Ok(TtsEvent::Audio(audio))));
        }
        let Some((a, b)) = this.next_word() else {
            if let Some(f) = this.on_end.take() {
                f(true);
            }
            return Poll::Ready(None);
        };
        let word = &this.text[a..b];
        let rate = this.voice.rate;
        let mut samples = Vec::new();
        encode_word(word, rate, this.voice.chars_per_second, &mut samples);
        let timing = WordTiming {
            word: word.to_string(),
            start: this.spoken,
        };
        let audio = Audio::pcm16(super::codec::to_bytes(&samples), rate);
        this.spoken += audio.duration();
        this.audio = Some(audio);
        Poll::Ready(Some(Ok(TtsEvent::Word(timing))))
    }
}

impl Drop for CodecSpeech {
    fn drop(&mut self) {
        if let Some(f) = self.on_end.take() {
            f(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::codec;
    use std::future::poll_fn;

    async fn all(mut s: CodecSpeech) -> Vec<TtsEvent> {
        let mut out = Vec::new();
        while let Some(e) = poll_fn(|cx| Pin::new(&mut s).poll_next(cx)).await {
            out.push(e.unwrap());
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn words_and_audio_match_the_whole_line_encoded_at_once() {
        let voice = CodecTts::default();
        let text = "  Hello there,\tthis is  ACE Cooling. ";
        let t0 = tokio::time::Instant::now();
        let events = all(CodecSpeech::new(&voice, text)).await;
        assert_eq!(t0.elapsed(), voice.first_audio);
        let (samples, words) = codec::encode(text, 8000, voice.chars_per_second);
        let got_words: Vec<WordTiming> = events
            .iter()
            .filter_map(|e| match e {
                TtsEvent::Word(w) => Some(w.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(got_words, words);
        let bytes: Vec<u8> = events
            .iter()
            .filter_map(|e| match e {
                TtsEvent::Audio(a) => Some(a.bytes.to_vec()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(bytes, codec::to_bytes(&samples));
        assert!(matches!(events[0], TtsEvent::Word(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn on_end_says_whether_every_word_was_taken() {
        let done = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let voice = CodecTts::default();
        let d = done.clone();
        let s = CodecSpeech::new(&voice, "one two").on_end(move |b| d.lock().unwrap().push(b));
        assert_eq!(all(s).await.len(), 4);
        let d = done.clone();
        drop(CodecSpeech::new(&voice, "one two").on_end(move |b| d.lock().unwrap().push(b)));
        assert_eq!(*done.lock().unwrap(), [true, false]);
        assert!(all(CodecSpeech::new(&voice, " \n ")).await.is_empty());
    }
}
