//! The Flite voice as the pipeline's [`Tts`]: the line is synthesized
//! whole on the Flite worker (a sentence takes tens of milliseconds), then
//! streamed out in short chunks with estimated word timings in between, so
//! the TTS stage paces it like any streaming vendor.

use super::{Flite, FLITE_RATE};
use crate::timing::estimate_words;
use bytes::Bytes;
use futures_core::Stream;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::oneshot;
use voice::frames::Audio;
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

/// Audio per streamed chunk.
const CHUNK: Duration = Duration::from_millis(100);

/// The Flite voice for calls.
#[derive(Clone)]
pub struct FliteTts {
    flite: Arc<Flite>,
    /// Output sample rate (8000: the telephone rate).
    rate: u32,
}

impl FliteTts {
    /// Speak through `flite` at `rate` Hz.
    pub fn new(flite: Arc<Flite>, rate: u32) -> Self {
        FliteTts { flite, rate }
    }
}

type Spoken = oneshot::Receiver<Result<Vec<i16>, String>>;

enum State {
    Waiting(Spoken),
    Streaming(VecDeque<TtsEvent>),
    Failed(String),
}

/// One line being spoken.
struct FliteSpeech {
    text: String,
    rate: u32,
    state: State,
}

/// `samples` at 16 kHz as `rate` Hz, as events: each word's timing just
/// before the chunk it starts in.
fn events(text: &str, samples: Vec<i16>, rate: u32) -> Result<VecDeque<TtsEvent>, String> {
    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    let bytes = if rate == FLITE_RATE {
        bytes
    } else {
        audio::resample::resample_all(FLITE_RATE, rate, &bytes).map_err(|e| e.to_string())?
    };
    let out: Vec<i16> = bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let mut words: VecDeque<_> = estimate_words(text, &out, rate).into();
    let bytes = Bytes::from(bytes);
    let per_chunk = (u128::from(rate) * CHUNK.as_micros() / 1_000_000) as usize * 2;
    let mut q = VecDeque::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let end = (pos + per_chunk).min(bytes.len());
        let chunk_end = Duration::from_secs_f64((end / 2) as f64 / f64::from(rate));
        while words.front().is_some_and(|w| w.start < chunk_end) {
            q.push_back(TtsEvent::Word(words.pop_front().expect("front")));
        }
        q.push_back(TtsEvent::Audio(Audio::pcm16(bytes.slice(pos..end), rate)));
        pos = end;
    }
    Ok(q)
}

impl Stream for FliteSpeech {
    type Item = Result<TtsEvent, TtsError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Waiting(rx) => {
                    let spoken = match Pin::new(rx).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(r)) => r,
                        Poll::Ready(Err(_)) => Err("the Flite worker stopped".into()),
                    };
                    this.state = match spoken.and_then(|s| events(&this.text, s, this.rate)) {
                        Ok(q) => State::Streaming(q),
                        Err(e) => State::Failed(e),
                    };
                }
                State::Streaming(q) => return Poll::Ready(q.pop_front().map(Ok)),
                State::Failed(e) => {
                    let e = std::mem::take(e);
                    this.state = State::Streaming(VecDeque::new());
                    return Poll::Ready(Some(Err(TtsError(format!("Flite: {e}")))));
                }
            }
        }
    }
}

impl Tts for FliteTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        let state = match self.flite.speak(text) {
            Ok(rx) => State::Waiting(rx),
            Err(busy) => State::Failed(busy.to_string()),
        };
        Box::pin(FliteSpeech {
            text: text.to_string(),
            rate: self.rate,
            state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(s: TtsStream) -> Vec<TtsEvent> {
        let mut s = s;
        let mut out = Vec::new();
        while let Some(e) = std::future::poll_fn(|cx| s.as_mut().poll_next(cx)).await {
            out.push(e.expect("no error"));
        }
        out
    }

    #[tokio::test]
    async fn a_line_streams_as_8khz_chunks_with_every_word_timed() {
        let tts = FliteTts::new(Flite::start().unwrap(), 8000);
        let text = "Thanks for calling ACE Cooling, how can I help you?";
        let ev = collect(tts.synthesize(text)).await;
        let words: Vec<String> = ev
            .iter()
            .filter_map(|e| match e {
                TtsEvent::Word(w) => Some(w.word.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(words.join(" "), text);
        let audio: Vec<&Audio> = ev
            .iter()
            .filter_map(|e| match e {
                TtsEvent::Audio(a) => Some(a),
                _ => None,
            })
            .collect();
        assert!(audio
            .iter()
            .all(|a| a.rate == 8000 && a.duration() <= CHUNK));
        let total: Duration = audio.iter().map(|a| a.duration()).sum();
        assert!(total > Duration::from_secs(2), "{total:?}");
        // Each word's event comes just before the chunk it starts in.
        let mut played = Duration::ZERO;
        for (i, e) in ev.iter().enumerate() {
            match e {
                TtsEvent::Audio(a) => played += a.duration(),
                TtsEvent::Word(w) => {
                    let next = ev[i..].iter().find_map(|e| match e {
                        TtsEvent::Audio(a) => Some(a.duration()),
                        _ => None,
                    });
                    assert!(w.start >= played, "{w:?} starts in audio already sent");
                    assert!(w.start < played + next.unwrap(), "{w:?} is early");
                }
                TtsEvent::Cut => panic!("Flite never cuts a line"),
            }
        }
    }
}
