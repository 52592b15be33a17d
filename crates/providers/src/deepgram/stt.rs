//! Deepgram as the pipeline's speech-to-text ([`voice::stages::stt::Stt`]).
//!
//! The socket carries 8 kHz µ-law and says so (`encoding=mulaw`,
//! `sample_rate=8000`: [`super::listen::ENCODING`]). Caller audio from a
//! phone line reaches the STT stage as it left Twilio's socket, 8 kHz
//! µ-law, and is forwarded as Deepgram's binary frames byte for byte —
//! nothing decoded, nothing re-encoded. Other audio is made into 8 kHz
//! µ-law first (PCM16 encoded; another rate resampled). Utterances
//! and interim text come back from the socket task and enter the pipeline
//! as transcripts; the VAD's "caller stopped" asks Deepgram to `Finalize`.
//! When Deepgram becomes unusable for the call (a refused key, every
//! reconnect failed, three stalls), the failure is logged,
//! [`DeepgramStt::failed`] says so, and [`Stt::lost`] hands the caller
//! audio Deepgram never answered to whoever hears the call next (a
//! [`voice::stages::stt_fallback::FallbackStt`]); the call itself goes on.

use super::listen::SAMPLE_RATE;
use super::live::{self, LiveConfig, LiveEvent, LiveHandle};
use super::utterances::Heard;
use audio::resample::Resampler;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use voice::frames::{Audio, Encoding};
use voice::stages::stt::{Lost, Stt, Transcript, TranscriptOut};

/// At most this much late audio is kept (10 s of 8 kHz µ-law; the switch
/// comes within a frame or two).
const LATE_LIMIT: usize = 80_000;

/// Deepgram live STT for one call.
pub struct DeepgramStt {
    cfg: LiveConfig,
    handle: Option<LiveHandle>,
    failed: Arc<AtomicBool>,
    /// Filled by the event task when Deepgram fails; taken by `lost`.
    lost: Arc<Mutex<Option<Lost>>>,
    /// Caller audio that arrived after the socket task was gone (before
    /// the failure was noticed): handed on after the task's own.
    late: Vec<u8>,
    /// For caller audio at another rate than the socket's (not a phone
    /// line's): its rate and the resampler that brings it to 8 kHz.
    resampler: Option<(u32, Resampler)>,
    /// An unusable rate was already logged.
    warned: bool,
}

impl DeepgramStt {
    /// A call's STT on Deepgram (the socket opens when the pipeline starts).
    pub fn new(cfg: LiveConfig) -> Self {
        DeepgramStt {
            cfg,
            handle: None,
            failed: Arc::default(),
            lost: Arc::default(),
            late: Vec::new(),
            resampler: None,
            warned: false,
        }
    }

    /// `audio` as the socket carries it: 8 kHz µ-law. A phone line's audio
    /// is that already and comes back as it is (the same bytes, not a
    /// copy); PCM16 is encoded, another rate resampled (state kept across
    /// frames). Audio at a rate the resampler does not take (not 8, 16 or
    /// 24 kHz) is left out, and said once in the log.
    fn for_the_socket(&mut self, audio: &Audio) -> Bytes {
        match (audio.encoding, audio.rate) {
            (Encoding::MuLaw, SAMPLE_RATE) => return audio.bytes.clone(),
            (Encoding::Pcm16, SAMPLE_RATE) => {
                return Bytes::from(audio::mulaw::encode_pcm16le(&audio.bytes))
            }
            _ => {}
        }
        if !matches!(&self.resampler, Some((rate, _)) if *rate == audio.rate) {
            match Resampler::new(audio.rate, SAMPLE_RATE) {
                Ok(r) => self.resampler = Some((audio.rate, r)),
                Err(e) => {
                    if !std::mem::replace(&mut self.warned, true) {
                        tracing::warn!(rate = audio.rate, error = %e, "caller audio Deepgram cannot take; left out");
                    }
                    return Bytes::new();
                }
            }
        }
        let Some((_, r)) = self.resampler.as_mut() else {
            return Bytes::new();
        };
        let pcm = audio.clone().into_pcm16();
        let mut at8k = Vec::new();
        r.process_pcm16le(&pcm.bytes, &mut at8k);
        Bytes::from(audio::mulaw::encode_pcm16le(&at8k))
    }

    /// Set once Deepgram is unusable for this call.
    pub fn failed(&self) -> Arc<AtomicBool> {
        self.failed.clone()
    }
}

impl Stt for DeepgramStt {
    fn start(&mut self, out: TranscriptOut) {
        let (handle, mut events) = live::spawn(self.cfg.clone());
        self.handle = Some(handle);
        let failed = self.failed.clone();
        let lost = self.lost.clone();
        tokio::spawn(tracing::Instrument::in_current_span(async move {
            while let Some(e) = events.recv().await {
                let t = match e {
                    LiveEvent::Heard(Heard::Final(text)) => Transcript {
                        text,
                        is_final: true,
                    },
                    LiveEvent::Heard(Heard::Interim(text)) => Transcript {
                        text,
                        is_final: false,
                    },
                    LiveEvent::Heard(Heard::SpeechStarted) => continue,
                    LiveEvent::Reconnected { attempt } => {
                        metrics::counter!(crate::metrics::STT_RECONNECTS).increment(1);
                        tracing::info!(attempt, "Deepgram socket reopened");
                        continue;
                    }
                    LiveEvent::NotHeard => {
                        metrics::counter!(crate::metrics::STT_NOT_HEARD, "ears" => "deepgram")
                            .increment(1);
                        if !out.not_heard().await {
                            return;
                        }
                        continue;
                    }
                    LiveEvent::Failed { why, unheard } => {
                        metrics::counter!(crate::metrics::STT_LOST).increment(1);
                        tracing::error!(error = %why, "Deepgram speech recognition lost for this call");
                        *lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(Lost {
                            why,
                            unheard: Audio::mulaw(unheard, 8000),
                        });
                        failed.store(true, Ordering::Release);
                        continue;
                    }
                };
                if !out.send(t).await {
                    return; // the call is over
                }
            }
        }));
    }

    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
        if self.handle.is_none() {
            return Vec::new();
        }
        let ulaw = self.for_the_socket(audio);
        if let Some(h) = &self.handle {
            if !h.audio(ulaw.clone()) && self.late.len() < LATE_LIMIT {
                self.late.extend_from_slice(&ulaw);
            }
        }
        Vec::new()
    }

    fn finish(&mut self) -> Vec<Transcript> {
        // Dropping the handle closes the stream (`CloseStream`).
        self.handle = None;
        Vec::new()
    }

    fn user_stopped_speaking(&mut self) {
        if let Some(h) = &self.handle {
            h.finalize();
        }
    }

    fn lost(&mut self) -> Option<Lost> {
        // One atomic load per audio frame until Deepgram fails.
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        let mut lost = self.lost.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        if !self.late.is_empty() {
            let mut all = Vec::with_capacity(lost.unheard.bytes.len() + self.late.len());
            all.extend_from_slice(&lost.unheard.bytes);
            all.append(&mut self.late);
            lost.unheard = Audio::mulaw(all, 8000);
        }
        Some(lost)
    }
}
