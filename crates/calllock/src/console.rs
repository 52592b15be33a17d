//! `calllock voice`: a whole voice call in real time on the console.
//!
//! Every stage of the production pipeline runs (turn detection, STT stage,
//! barge-in, the conversation engine, LLM stage, sentence aggregation, TTS
//! stage, output resampling, the paced player); only the vendors are the
//! test kit's symmetric mocks: what you type is "spoken" into the line as
//! audio, the agent's words are printed as they play. Type while the agent
//! is talking to barge in.

use std::io::Write;
use tokio::time::Instant;
use voice::frames::{Audio, Epoch, UtteranceId};
use voice::stages::output::AudioSink;
use voice::testkit::codec::{decode, from_bytes, Decoded};

/// Prints the agent's words as they reach the caller.
pub struct ConsoleEar {
    current: Option<UtteranceId>,
    start: Instant,
    color: bool,
}

impl ConsoleEar {
    pub fn new(color: bool) -> Self {
        ConsoleEar {
            current: None,
            start: Instant::now(),
            color,
        }
    }

    fn end_line(&mut self) {
        if self.current.take().is_some() {
            println!();
        }
    }
}

impl AudioSink for ConsoleEar {
    fn play(&mut self, audio: &Audio, id: UtteranceId, _epoch: Epoch) {
        let Decoded::Word(word) = decode(&from_bytes(&audio.bytes)) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        if self.current != Some(id) {
            if self.current.is_some() {
                let _ = writeln!(out);
            }
            self.current = Some(id);
            let t = self.start.elapsed().as_secs_f64();
            let label = crate::display::dim(&format!("{t:6.2}s agent:"), self.color);
            let _ = write!(out, "{label}");
        }
        let _ = write!(out, " {word}");
        let _ = out.flush();
    }

    fn clear(&mut self) {
        if self.current.is_some() {
            print!("{}", crate::display::dim(" — [cut off]", self.color));
        }
        self.end_line();
    }
}

impl Drop for ConsoleEar {
    fn drop(&mut self) {
        self.end_line();
    }
}
