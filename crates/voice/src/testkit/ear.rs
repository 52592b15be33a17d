//! The caller's ear: an [`AudioSink`] that records every frame played (with
//! its time, utterance and epoch) and decodes the words heard.

use crate::frames::{Audio, Encoding, Epoch, UtteranceId};
use crate::offline::codec::{decode, from_bytes, Decoded};
use crate::stages::output::AudioSink;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// One frame that reached the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct HeardFrame {
    pub at: Instant,
    pub id: UtteranceId,
    pub epoch: Epoch,
    pub duration: Duration,
    /// The word this frame starts, if any.
    pub word: Option<String>,
}

/// Everything the caller heard.
#[derive(Clone, Debug, Default)]
pub struct EarLog {
    pub frames: Vec<HeardFrame>,
    /// When the output was told to clear (barge-in), and how many frames
    /// had been heard by then.
    pub clears: Vec<(Instant, usize)>,
}

impl EarLog {
    /// The words of utterance `id` that reached the caller, joined.
    pub fn heard_text(&self, id: UtteranceId) -> String {
        self.frames
            .iter()
            .filter(|f| f.id == id)
            .filter_map(|f| f.word.clone())
            .collect::<Vec<_>>()
            .join(" ")
    }
    /// Utterance ids in the order they were first heard.
    pub fn utterances(&self) -> Vec<UtteranceId> {
        let mut ids = Vec::new();
        for f in &self.frames {
            if ids.last() != Some(&f.id) && !ids.contains(&f.id) {
                ids.push(f.id);
            }
        }
        ids
    }
    /// When utterance `id` was first / last heard.
    pub fn span(&self, id: UtteranceId) -> Option<(Instant, Instant)> {
        let first = self.frames.iter().find(|f| f.id == id)?;
        let last = self.frames.iter().rfind(|f| f.id == id).unwrap_or(first);
        Some((first.at, last.at + last.duration))
    }
}

/// The sink side (clone it to keep reading while the call runs).
#[derive(Clone, Default)]
pub struct Ear {
    pub log: Arc<Mutex<EarLog>>,
}

impl Ear {
    /// A copy of what was heard so far.
    pub fn snapshot(&self) -> EarLog {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl AudioSink for Ear {
    fn play(&mut self, audio: &Audio, id: UtteranceId, epoch: Epoch) {
        // A µ-law voice's audio reaches the sink as µ-law: decoded here.
        let samples = match audio.encoding {
            Encoding::Pcm16 => from_bytes(&audio.bytes),
            Encoding::MuLaw => {
                let mut s = Vec::with_capacity(audio.bytes.len());
                audio::mulaw::decode(&audio.bytes, &mut s);
                s
            }
        };
        let word = match decode(&samples) {
            Decoded::Word(w) => Some(w),
            _ => None,
        };
        let f = HeardFrame {
            at: Instant::now(),
            id,
            epoch,
            duration: audio.duration(),
            word,
        };
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .frames
            .push(f);
    }
    fn clear(&mut self) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let n = log.frames.len();
        log.clears.push((Instant::now(), n));
    }
}
