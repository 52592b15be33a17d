//! Output resampling (SPEC §8.6): every agent audio frame whose rate is not
//! the output rate is converted with a streaming resampler whose state is
//! kept across the chunks of an utterance (seamless boundaries) and flushed
//! at its end. Audio already at the output rate passes through untouched.

use crate::frames::{Audio, ControlFrame, Data, Encoding, Frame, SystemFrame, UtteranceId};
use crate::stage::{Ctx, Direction, Stage};
use audio::resample::Resampler;
use std::sync::Arc;

/// The resampling stage.
pub struct ResampleStage {
    out_rate: u32,
    current: Option<(UtteranceId, u32, Resampler)>,
    buf: Vec<u8>,
}

impl ResampleStage {
    pub fn new(out_rate: u32) -> Self {
        ResampleStage {
            out_rate,
            current: None,
            buf: Vec::new(),
        }
    }

    fn flush(&mut self, epoch: u64, ctx: &mut Ctx<'_>) {
        if let Some((id, _, mut r)) = self.current.take() {
            self.buf.clear();
            r.flush(&mut self.buf);
            if !self.buf.is_empty() {
                let audio = Audio::pcm16(bytes::Bytes::copy_from_slice(&self.buf), self.out_rate);
                ctx.push(Frame::data(epoch, Data::OutputAudio { id, audio }));
            }
        }
    }
}

impl Stage for ResampleStage {
    fn name(&self) -> &'static str {
        "resample"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Interrupt { .. }) => self.current = None,
            Frame::Data(d) => match d.data {
                Data::OutputAudio { id, audio }
                    if audio.encoding == Encoding::Pcm16 && audio.rate != self.out_rate =>
                {
                    let fresh = !matches!(&self.current, Some((cid, rate, _)) if *cid == id && *rate == audio.rate);
                    if fresh {
                        self.flush(d.epoch, ctx);
                        match Resampler::new(audio.rate, self.out_rate) {
                            Ok(r) => self.current = Some((id, audio.rate, r)),
                            Err(e) => {
                                ctx.push_up(Frame::Control(ControlFrame::Error {
                                    stage: "resample",
                                    message: Arc::from(e.to_string()),
                                }));
                                return;
                            }
                        }
                    }
                    if let Some((_, _, r)) = self.current.as_mut() {
                        self.buf.clear();
                        r.process_pcm16le(&audio.bytes, &mut self.buf);
                        if !self.buf.is_empty() {
                            let out = Audio::pcm16(
                                bytes::Bytes::copy_from_slice(&self.buf),
                                self.out_rate,
                            );
                            ctx.push(Frame::data(d.epoch, Data::OutputAudio { id, audio: out }));
                        }
                    }
                }
                Data::SpeakEnd { id } => {
                    if matches!(&self.current, Some((cid, _, _)) if *cid == id) {
                        self.flush(d.epoch, ctx);
                    }
                    ctx.push(Frame::data(d.epoch, Data::SpeakEnd { id }));
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}

/// Input resampling: the caller's PCM16 audio to the rate the STT and VAD
/// want (e.g. 8 kHz telephone audio to 16 kHz), state kept across frames.
pub struct InputResample {
    out_rate: u32,
    current: Option<(u32, Resampler)>,
    buf: Vec<u8>,
}

impl InputResample {
    pub fn new(out_rate: u32) -> Self {
        InputResample {
            out_rate,
            current: None,
            buf: Vec::new(),
        }
    }
}

impl Stage for InputResample {
    fn name(&self) -> &'static str {
        "input_resample"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::Data(d) => match d.data {
                Data::InputAudio(a) if a.encoding == Encoding::Pcm16 && a.rate != self.out_rate => {
                    if !matches!(&self.current, Some((rate, _)) if *rate == a.rate) {
                        match Resampler::new(a.rate, self.out_rate) {
                            Ok(r) => self.current = Some((a.rate, r)),
                            Err(e) => {
                                ctx.push_up(Frame::Control(ControlFrame::Error {
                                    stage: "input_resample",
                                    message: Arc::from(e.to_string()),
                                }));
                                return;
                            }
                        }
                    }
                    if let Some((_, r)) = self.current.as_mut() {
                        self.buf.clear();
                        r.process_pcm16le(&a.bytes, &mut self.buf);
                        if !self.buf.is_empty() {
                            let out = Audio::pcm16(
                                bytes::Bytes::copy_from_slice(&self.buf),
                                self.out_rate,
                            );
                            ctx.push(Frame::data(d.epoch, Data::InputAudio(out)));
                        }
                    }
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}
