//! Sentence aggregation: streamed LLM text becomes whole sentences for TTS
//! (so speech starts after the first sentence, not after the whole reply).
//! Canned lines ([`Data::Speak`]) pass through untouched.

use crate::frames::{Data, Frame, SystemFrame, UtteranceId, UtteranceText};
use crate::stage::{Ctx, Direction, Stage};
use std::sync::Arc;

/// Splits streamed text at sentence ends.
#[derive(Debug, Default)]
pub struct SentenceAggregator {
    buf: String,
    id: Option<UtteranceId>,
}

/// Byte index just past the first sentence end in `s` (a `.`, `!` or `?`
/// — with closing quotes/brackets — followed by whitespace, or a newline).
pub fn sentence_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            return Some(i + 1);
        }
        if matches!(b, b'.' | b'!' | b'?') {
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b'"' | b'\'' | b')' | b']') {
                j += 1;
            }
            if j < bytes.len() && bytes[j].is_ascii_whitespace() {
                return Some(j);
            }
        }
    }
    None
}

impl SentenceAggregator {
    fn emit(&mut self, epoch: u64, id: UtteranceId, text: &str, ctx: &mut Ctx<'_>) {
        let t = text.trim();
        if !t.is_empty() {
            ctx.push(Frame::data(
                epoch,
                Data::Speak(UtteranceText {
                    id,
                    text: Arc::from(t),
                }),
            ));
        }
    }
}

impl Stage for SentenceAggregator {
    fn name(&self) -> &'static str {
        "sentences"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Interrupt { .. }) => {
                self.buf.clear();
                self.id = None;
            }
            Frame::Data(d) => match d.data {
                Data::LlmText(t) => {
                    if self.id != Some(t.id) {
                        self.buf.clear();
                        self.id = Some(t.id);
                    }
                    self.buf.push_str(&t.text);
                    while let Some(end) = sentence_end(&self.buf) {
                        let sentence: String = self.buf.drain(..end).collect();
                        self.emit(d.epoch, t.id, &sentence, ctx);
                    }
                }
                Data::LlmEnd { id } => {
                    if self.id == Some(id) {
                        let rest = std::mem::take(&mut self.buf);
                        self.emit(d.epoch, id, &rest, ctx);
                        self.id = None;
                    }
                    ctx.push(Frame::data(d.epoch, Data::SpeakEnd { id }));
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sentence_end;

    #[test]
    fn sentence_ends() {
        assert_eq!(sentence_end("Hi there. How"), Some(9));
        assert_eq!(sentence_end("Is it 3.5 tons"), None);
        assert_eq!(sentence_end("Really?\" Yes"), Some(8));
        assert_eq!(sentence_end("line\nnext"), Some(5));
        assert_eq!(sentence_end("no end"), None);
        assert_eq!(sentence_end("end."), None, "may continue: wait for more");
        assert_eq!(sentence_end("¿Qué? Sí"), Some("¿Qué?".len()));
    }
}
