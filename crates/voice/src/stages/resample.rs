//! Output resampling (SPEC §8.6): every agent audio frame whose rate is not
//! the output rate is converted with a streaming resampler whose state is
//! kept across the chunks of an utterance (seamless boundaries) and flushed
//! at its end. Audio already at the output rate passes through untouched,
//! in its own encoding: 8 kHz µ-law from a voice that speaks it (Deepgram
//! Aura) reaches the sink as the voice made it, never decoded and encoded
//! again. µ-law at another rate is decoded to be resampled (PCM16 out).

use crate::frames::{Audio, ControlFrame, Data, Frame, SystemFrame, UtteranceId};
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
                Data::OutputAudio { id, audio } if audio.rate != self.out_rate => {
                    let audio = audio.into_pcm16();
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
                Data::OutputAudio { id, audio } => {
                    // At the output rate already: on as it is. What a
                    // resampler still holds was said before it.
                    self.flush(d.epoch, ctx);
                    ctx.push(Frame::data(d.epoch, Data::OutputAudio { id, audio }));
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

/// Input resampling: the caller's audio to the rate the STT and VAD want
/// (e.g. 8 kHz telephone audio to 16 kHz), state kept across frames. Audio
/// at that rate already goes on as it is (µ-law included); µ-law at
/// another rate is decoded to be resampled (PCM16 out).
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
                Data::InputAudio(a) if a.rate != self.out_rate => {
                    let a = a.into_pcm16();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::Encoding;
    use crate::Pipeline;
    use std::time::Duration;

    /// `frames` of utterance 1 (then its end) through a resample stage to
    /// 8 kHz: the audio that came out, in order.
    async fn resampled(frames: Vec<Audio>) -> Vec<Audio> {
        let mut p = Pipeline::builder()
            .stage(ResampleStage::new(8000))
            .tail(1024)
            .build();
        let tx = p.input().unwrap().clone();
        for audio in frames {
            tx.send(Frame::data(0, Data::OutputAudio { id: 1, audio }))
                .await
                .unwrap();
        }
        tx.send(Frame::data(0, Data::SpeakEnd { id: 1 }))
            .await
            .unwrap();
        drop(tx);
        p.end(Duration::from_secs(5)).await;
        let tail = p.tail().unwrap();
        let mut out = Vec::new();
        while let Some(f) = tail.recv().await {
            match f {
                Frame::Data(d) => {
                    if let Data::OutputAudio { audio, .. } = d.data {
                        out.push(audio);
                    }
                }
                Frame::Control(ControlFrame::End) => break,
                _ => {}
            }
        }
        out
    }

    fn tone(n: usize) -> Vec<i16> {
        (0..n).map(|i| ((i % 40) as i16 - 20) * 500).collect()
    }

    fn pcm_bytes(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[tokio::test]
    async fn mulaw_at_the_output_rate_passes_untouched() {
        let frames: Vec<Audio> = (0..4u8)
            .map(|k| Audio::mulaw((0..=255u8).map(|b| b ^ k).collect::<Vec<_>>(), 8000))
            .collect();
        let out = resampled(frames.clone()).await;
        assert_eq!(out, frames, "the same bytes, still µ-law, in order");
    }

    #[tokio::test]
    async fn pcm16_at_the_output_rate_passes_untouched() {
        let frames = vec![Audio::pcm16(pcm_bytes(&tone(160)), 8000)];
        assert_eq!(resampled(frames.clone()).await, frames);
    }

    #[tokio::test]
    async fn other_rates_are_resampled_to_pcm16_whatever_their_encoding() {
        for enc in [Encoding::Pcm16, Encoding::MuLaw] {
            // One second at 16 kHz, in 20 ms frames.
            let frames: Vec<Audio> = tone(16_000)
                .chunks(320)
                .map(|c| {
                    let a = Audio::pcm16(pcm_bytes(c), 16_000);
                    match enc {
                        Encoding::Pcm16 => a,
                        Encoding::MuLaw => {
                            let mut ulaw = Vec::new();
                            audio::mulaw::encode(c, &mut ulaw);
                            Audio::mulaw(ulaw, 16_000)
                        }
                    }
                })
                .collect();
            let out = resampled(frames).await;
            assert!(out
                .iter()
                .all(|a| a.encoding == Encoding::Pcm16 && a.rate == 8000));
            let total: Duration = out.iter().map(Audio::duration).sum();
            assert!(
                total.abs_diff(Duration::from_secs(1)) < Duration::from_millis(20),
                "{enc:?}: {total:?}"
            );
        }
    }

    #[tokio::test]
    async fn what_a_resampler_holds_plays_before_audio_that_needs_none() {
        // A voice switch mid-utterance (24 kHz PCM16, then 8 kHz µ-law):
        // the resampled audio, tail included, comes first.
        let first = Audio::pcm16(pcm_bytes(&tone(2400)), 24_000);
        let second = Audio::mulaw(vec![0x55u8; 160], 8000);
        let out = resampled(vec![first, second.clone()]).await;
        assert_eq!(out.last(), Some(&second), "{out:?}");
        let before: Duration = out[..out.len() - 1].iter().map(Audio::duration).sum();
        assert!(
            before.abs_diff(Duration::from_millis(100)) < Duration::from_millis(10),
            "{before:?}"
        );
    }
}
