//! Text to speech in the [codec](super::codec): one word event and one
//! audio chunk per word, the first after `first_audio`.

use super::codec::{encode, to_bytes};
use super::timed::TimedStream;
use crate::frames::Audio;
use crate::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};
use std::time::Duration;

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

/// The timed items of `text` spoken by `tts` (shared with the test kit's
/// mock, which adds a request log and failures).
pub fn speak(tts: &CodecTts, text: &str) -> Vec<(Duration, Result<TtsEvent, TtsError>)> {
    let (samples, words) = encode(text, tts.rate, tts.chars_per_second);
    let at = |i: usize| -> usize {
        words
            .get(i)
            .map(|w| (w.start.as_micros() as u64 * u64::from(tts.rate) / 1_000_000) as usize)
            .unwrap_or(samples.len())
    };
    let mut items = Vec::with_capacity(words.len() * 2);
    for (i, w) in words.iter().enumerate() {
        let delay = if i == 0 {
            tts.first_audio
        } else {
            Duration::ZERO
        };
        items.push((delay, Ok(TtsEvent::Word(w.clone()))));
        let chunk = &samples[at(i)..at(i + 1)];
        items.push((
            Duration::ZERO,
            Ok(TtsEvent::Audio(Audio::pcm16(to_bytes(chunk), tts.rate))),
        ));
    }
    items
}

impl Tts for CodecTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        Box::pin(TimedStream::new(speak(self, text), |_| {}))
    }
}
