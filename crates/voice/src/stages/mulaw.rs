//! Decode the caller's G.711 µ-law audio to 16-bit PCM (Twilio sends µ-law
//! at 8 kHz); PCM passes through untouched.

use crate::frames::{Data, Frame};
use crate::stage::{Ctx, Direction, Stage};

/// µ-law → PCM16 for caller audio.
#[derive(Debug, Default)]
pub struct MuLawDecode;

impl Stage for MuLawDecode {
    fn name(&self) -> &'static str {
        "mulaw_decode"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::Data(d) => match d.data {
                Data::InputAudio(a) => {
                    ctx.push(Frame::data(d.epoch, Data::InputAudio(a.into_pcm16())));
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}
