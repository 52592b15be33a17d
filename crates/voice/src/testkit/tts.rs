//! Mock TTS that speaks the [codec](super::codec).

use crate::offline::timed::TimedStream as ScriptedStream;
use crate::offline::{CodecSpeech, CodecTts};
use crate::stages::tts::{Tts, TtsError, TtsStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One synthesis request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtsCall {
    pub text: String,
    /// False when the request was dropped (cancelled) before it finished.
    pub completed: Option<bool>,
}

/// Codec speech at `rate`, first audio after `first_audio`, one audio chunk
/// per word.
#[derive(Clone)]
pub struct MockTts {
    pub rate: u32,
    pub chars_per_second: f64,
    pub first_audio: Duration,
    /// Requests whose text contains this fail.
    pub fail_when: Option<String>,
    pub log: Arc<Mutex<Vec<TtsCall>>>,
}

impl Default for MockTts {
    fn default() -> Self {
        MockTts {
            rate: 8000,
            chars_per_second: 15.0,
            first_audio: Duration::from_millis(150),
            fail_when: None,
            log: Arc::default(),
        }
    }
}

impl Tts for MockTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        let idx = {
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(TtsCall {
                text: text.to_string(),
                completed: None,
            });
            log.len() - 1
        };
        let log = self.log.clone();
        let on_end = move |done: bool| {
            if let Some(c) = log.lock().unwrap_or_else(|e| e.into_inner()).get_mut(idx) {
                c.completed = Some(done);
            }
        };
        if self.fail_when.as_deref().is_some_and(|f| text.contains(f)) {
            let items = vec![(self.first_audio, Err(TtsError("mock failure".into())))];
            return Box::pin(ScriptedStream::new(items, on_end));
        }
        let voice = CodecTts {
            rate: self.rate,
            chars_per_second: self.chars_per_second,
            first_audio: self.first_audio,
        };
        Box::pin(CodecSpeech::new(&voice, text).on_end(on_end))
    }
}
