//! `calllock transcribe`: what a WAV file says, utterance by utterance, as
//! Whisper hears it — for listening to a call without listening: a `dial
//! --record` file (channel 0 the caller, channel 1 the agent), a caller
//! line recorded for `dial --wav`, any mono or stereo PCM16/µ-law WAV.
//!
//! Each channel is cut into utterances by the call's own voice activity
//! detector (`VadParams::telephone`, as a served call hears the caller, at
//! the line's own 8 kHz for a phone recording) and the live call's rule for where a clip begins and ends
//! ([`UtteranceOptions`]), and each utterance is recognised on its own;
//! the lines are printed in the order spoken.

use crate::local_speech::{LocalSpeech, HOW_TO_INSTALL};
use anyhow::{bail, Context, Result};
use audio::vad::{Vad, VadEvent, VadParams};
use speech::utterances::{
    clean_transcript, to_recogniser_rate, Recogniser, UtteranceOptions, RECOGNISER_RATE,
};
use std::time::Duration;

/// One utterance heard in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    /// Seconds from the start of the file.
    pub start: f64,
    pub end: f64,
    /// The WAV channel (0-based).
    pub channel: usize,
    pub text: String,
}

/// Where speech is in `samples` (at `rate`, 8 or 16 kHz): `(start, end)`
/// sample ranges, cut as a live call cuts them
/// ([`UtteranceOptions::for_vad`]: the pre-roll before the VAD's start,
/// the speech's end rather than the VAD's stop, nothing shorter than
/// [`UtteranceOptions::min`]), at most [`UtteranceOptions::max`] each
/// (Whisper hears 30 s at most; longer speech is cut into pieces).
pub fn utterances(samples: &[i16], rate: u32) -> Result<Vec<(usize, usize)>> {
    let mut vad = Vad::new(VadParams::telephone(), rate)?;
    let cut = UtteranceOptions::for_vad(vad.params());
    let rate = rate as usize;
    let at = |d: Duration| (d.as_secs_f64() * rate as f64) as usize;
    let mut spans = Vec::new();
    let mut open: Option<usize> = None;
    // 20 ms at a time, as a call feeds it.
    let step = rate / 50;
    for (i, chunk) in samples.chunks(step).enumerate() {
        let bytes: Vec<u8> = chunk.iter().flat_map(|s| s.to_le_bytes()).collect();
        let now = i * step + chunk.len();
        for e in vad.process_pcm16le(&bytes) {
            match e {
                VadEvent::SpeechStarted => {
                    open = Some(now.saturating_sub(at(cut.pre_roll)));
                }
                VadEvent::SpeechStopped => {
                    if let Some(s) = open.take() {
                        let end = now.saturating_sub(at(cut.trailing_silence()));
                        spans.push((s, end.max(s)));
                    }
                }
            }
        }
    }
    if let Some(s) = open {
        spans.push((s, samples.len()));
    }
    // Cut what Whisper cannot hear at once.
    let max = at(cut.max);
    Ok(spans
        .into_iter()
        .filter(|(s, e)| e - s >= at(cut.min))
        .flat_map(|(s, e)| {
            (s..e)
                .step_by(max)
                .map(move |a| (a, (a + max).min(e)))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// One channel of `wav` and its rate: a phone line's 8 kHz as it is (its
/// VAD hears it as a served call's does), any other rate at 16 kHz.
fn channel_of(wav: &audio::wav::Wav, channel: usize) -> Result<(Vec<i16>, u32)> {
    let ch = usize::from(wav.channels.max(1));
    let samples = wav.samples.iter().skip(channel).step_by(ch).copied();
    if matches!(wav.sample_rate, 8_000 | RECOGNISER_RATE) {
        return Ok((samples.collect(), wav.sample_rate));
    }
    let pcm: Vec<u8> = samples.flat_map(|s| s.to_le_bytes()).collect();
    let at16 = audio::resample::resample_all(wav.sample_rate, RECOGNISER_RATE, &pcm)
        .with_context(|| format!("cannot resample {} Hz audio", wav.sample_rate))?;
    let at16 = at16
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    Ok((at16, RECOGNISER_RATE))
}

/// Everything said in the WAV file `bytes`, in the order spoken.
pub async fn transcribe(ear: &dyn Recogniser, bytes: &[u8]) -> Result<Vec<Said>> {
    let wav = audio::wav::read_wav(bytes)?;
    let mut all = Vec::new();
    for channel in 0..usize::from(wav.channels.max(1)) {
        let (samples, rate) = channel_of(&wav, channel)?;
        for (a, b) in utterances(&samples, rate)? {
            // Resampled clip by clip, as a live call's are.
            let clip = to_recogniser_rate(&samples[a..b], rate);
            // One at a time: the workers' queue is never overrun.
            let heard = ear
                .recognise(clip)
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .await
                .context("the recogniser stopped")?
                .map_err(|e| anyhow::anyhow!("cannot recognise speech: {e}"))?;
            let text = clean_transcript(&heard);
            if !text.is_empty() {
                let secs = |n: usize| n as f64 / f64::from(rate);
                all.push(Said {
                    start: secs(a),
                    end: secs(b),
                    channel,
                    text,
                });
            }
        }
    }
    all.sort_by(|x, y| x.start.total_cmp(&y.start));
    Ok(all)
}

/// Who a channel is, for a file of `channels`: a `dial --record` file is
/// the caller on the left and the agent on the right.
pub fn speaker(channel: usize, channels: usize) -> &'static str {
    match (channels, channel) {
        (1, _) => "speech",
        (2, 0) => "caller",
        (2, 1) => "agent",
        _ => "channel",
    }
}

/// The recogniser of local speech, or what to run to get one.
pub fn recogniser(local: &LocalSpeech) -> Result<std::sync::Arc<dyn Recogniser>> {
    match (local.recogniser(), &local.note) {
        (Some(r), _) => Ok(r),
        (None, Some(why)) => bail!("transcribing needs local speech: {why}"),
        (None, None) => bail!("transcribing needs local speech ({HOW_TO_INSTALL})"),
    }
}

/// `calllock transcribe FILE`: print what `file` says, a line per
/// utterance (`--json`: an array of `{start, end, channel, speaker, text}`).
pub async fn run(cfg: &crate::config::Config, file: &std::path::Path, json: bool) -> Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let wav = audio::wav::read_wav(&bytes)
        .with_context(|| format!("{} is not a WAV file we read", file.display()))?;
    let channels = usize::from(wav.channels.max(1));
    // Whisper is the only way to transcribe: ask for it, so a missing
    // install says what to run.
    let mut cfg = cfg.clone();
    cfg.speech.local = "on".into();
    let local = LocalSpeech::start(&cfg)?;
    let ear = recogniser(&local)?;
    eprintln!(
        "transcribing {} ({:.1} s, {} channel{}, {} Hz) with Whisper…",
        file.display(),
        wav.frames() as f64 / f64::from(wav.sample_rate.max(1)),
        channels,
        if channels == 1 { "" } else { "s" },
        wav.sample_rate
    );
    let said = transcribe(ear.as_ref(), &bytes).await?;
    if json {
        let rows: Vec<serde_json::Value> = said
            .iter()
            .map(|s| {
                serde_json::json!({
                    "start": (s.start * 100.0).round() / 100.0,
                    "end": (s.end * 100.0).round() / 100.0,
                    "channel": s.channel,
                    "speaker": speaker(s.channel, channels),
                    "text": s.text,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if said.is_empty() {
        eprintln!("no speech heard");
    } else {
        for s in &said {
            println!(
                "{:>7.1}s  {:<6}  {}",
                s.start,
                speaker(s.channel, channels),
                s.text
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `secs` of a 300 Hz tone with a little noise (voice-like enough for
    /// the volume gate, but the model decides what is speech).
    fn tone(secs: f64) -> Vec<i16> {
        let n = (secs * 16_000.0) as usize;
        (0..n)
            .map(|i| ((i as f64 * 300.0 * std::f64::consts::TAU / 16_000.0).sin() * 8000.0) as i16)
            .collect()
    }

    #[test]
    fn silence_has_no_utterances_and_long_spans_are_cut() {
        assert!(utterances(&vec![0i16; 16_000 * 3], 16_000)
            .unwrap()
            .is_empty());
        assert!(utterances(&vec![0i16; 8_000 * 3], 8_000)
            .unwrap()
            .is_empty());
        // Whatever the model makes of a tone, no span is longer than
        // Whisper hears, and spans stay inside the audio.
        let audio = tone(65.0);
        for (a, b) in utterances(&audio, 16_000).unwrap() {
            assert!(a < b && b <= audio.len());
            assert!(b - a <= 28 * 16_000);
        }
    }

    #[test]
    fn the_speakers_of_a_recording_are_named() {
        assert_eq!(speaker(0, 2), "caller");
        assert_eq!(speaker(1, 2), "agent");
        assert_eq!(speaker(0, 1), "speech");
        assert_eq!(speaker(2, 3), "channel");
    }
}
