//! Recorded audio for `calllock dial`: caller lines from WAV files
//! (`--wav FILE` or a folder of them), and the call's two-channel
//! recording (`--record`).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// One recorded caller line: its file name and 8 kHz µ-law audio.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    pub name: String,
    pub ulaw: Vec<u8>,
}

/// A WAV file's audio as 8 kHz mono µ-law (the phone line's audio): the
/// channels mixed down, resampled from any rate.
pub fn wav_to_ulaw(bytes: &[u8]) -> Result<Vec<u8>> {
    let wav = audio::wav::read_wav(bytes)?;
    let ch = usize::from(wav.channels.max(1));
    let mono: Vec<i16> = wav
        .samples
        .chunks(ch)
        .map(|f| (f.iter().map(|&s| i32::from(s)).sum::<i32>() / f.len() as i32) as i16)
        .collect();
    let pcm: Vec<u8> = mono.iter().flat_map(|s| s.to_le_bytes()).collect();
    let at8k = audio::resample::resample_all(wav.sample_rate, 8000, &pcm)
        .with_context(|| format!("cannot resample {} Hz audio to 8 kHz", wav.sample_rate))?;
    Ok(audio::mulaw::encode_pcm16le(&at8k))
}

/// The caller lines at `path`: one WAV file, or every `.wav` in a folder
/// in name order (a scripted call, one file per line).
pub fn load_clips(path: &Path) -> Result<Vec<Clip>> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read the folder {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("wav")))
            .collect();
        f.sort();
        f
    } else {
        vec![path.to_path_buf()]
    };
    if files.is_empty() {
        bail!("no .wav files in {}", path.display());
    }
    files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).with_context(|| format!("cannot read {}", f.display()))?;
            let ulaw = wav_to_ulaw(&bytes).with_context(|| format!("{}", f.display()))?;
            Ok(Clip {
                name: f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                ulaw,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_16khz_stereo_file_becomes_8khz_mono_ulaw() {
        // 1 s of a 440 Hz tone at 16 kHz on both channels.
        let mut s = Vec::new();
        for i in 0..16_000 {
            let v = ((i as f64 * 440.0 * std::f64::consts::TAU / 16_000.0).sin() * 8000.0) as i16;
            s.push(v);
            s.push(v);
        }
        let wav = audio::wav::write_wav_pcm16(16_000, 2, &s);
        let ulaw = wav_to_ulaw(&wav).unwrap();
        assert!((7_900..=8_100).contains(&ulaw.len()), "{}", ulaw.len());
        let mut back = Vec::new();
        audio::mulaw::decode(&ulaw, &mut back);
        let peak = back.iter().map(|v| v.unsigned_abs()).max().unwrap();
        assert!((7_000..=9_000).contains(&peak), "{peak}");
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let e = wav_to_ulaw(b"not a wav").unwrap_err().to_string();
        assert!(e.contains("WAV"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = load_clips(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no .wav files"), "{e}");
    }
}
