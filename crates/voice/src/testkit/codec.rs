//! The symmetric speech codec (see the [module docs](super)).

use crate::accountant::WordTiming;
use std::time::Duration;

/// Samples per 20 ms frame at 8 kHz.
pub const FRAME_SAMPLES_8K: usize = 160;
/// First sample of a word's first frame.
pub const WORD_MARK: i16 = 0x2A2A;
/// First sample of a word's other frames.
pub const FILL_MARK: i16 = 0x1A1A;
/// Loudness of filler samples (clearly voiced).
pub const FILL: i16 = 9000;
/// Longest word a frame can carry (longer words are cut).
pub const MAX_WORD_BYTES: usize = FRAME_SAMPLES_8K - 3;

/// What one frame carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    Silence,
    /// Speech that is not the start of a word.
    Voice,
    /// The first frame of a word.
    Word(String),
}

/// Frames a word lasts when spoken at `chars_per_second` (at least one).
pub fn word_frames(word: &str, chars_per_second: f64) -> usize {
    let chars = word.chars().count() as f64 + 1.0;
    let secs = chars / chars_per_second.max(0.1);
    ((secs / 0.020).ceil() as usize).max(1)
}

/// Encode `text` as speech at `rate` (samples per frame scale with the
/// rate; the header sits in the first samples). Returns the samples and the
/// word timings.
pub fn encode(text: &str, rate: u32, chars_per_second: f64) -> (Vec<i16>, Vec<WordTiming>) {
    let per_frame = (rate as usize / 50).max(4);
    let mut samples = Vec::new();
    let mut words = Vec::new();
    for word in text.split_whitespace() {
        let start =
            Duration::from_micros(samples.len() as u64 * 1_000_000 / u64::from(rate.max(1)));
        words.push(WordTiming {
            word: word.to_string(),
            start,
        });
        let bytes = word.as_bytes();
        let n = bytes.len().min(MAX_WORD_BYTES).min(per_frame - 3);
        for f in 0..word_frames(word, chars_per_second) {
            let mut frame = vec![FILL; per_frame];
            if f == 0 {
                frame[0] = WORD_MARK;
                frame[1] = n as i16;
                for (i, b) in bytes[..n].iter().enumerate() {
                    frame[2 + i] = 1000 + i16::from(*b);
                }
            } else {
                frame[0] = FILL_MARK;
            }
            samples.extend_from_slice(&frame);
        }
    }
    (samples, words)
}

/// Little-endian bytes of samples.
pub fn to_bytes(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// Samples of little-endian bytes (a torn last byte is ignored).
pub fn from_bytes(bytes: &[u8]) -> Vec<i16> {
    bytes
        .chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// Decode one frame.
pub fn decode(frame: &[i16]) -> Decoded {
    match frame.first() {
        None => Decoded::Silence,
        Some(&WORD_MARK) if frame.len() >= 2 => {
            let n = (frame[1].max(0) as usize).min(frame.len().saturating_sub(2));
            let bytes: Vec<u8> = frame[2..2 + n]
                .iter()
                .map(|s| (i32::from(*s) - 1000).clamp(0, 255) as u8)
                .collect();
            Decoded::Word(String::from_utf8_lossy(&bytes).into_owned())
        }
        _ if frame.iter().all(|s| s.unsigned_abs() < 100) => Decoded::Silence,
        _ => Decoded::Voice,
    }
}

/// A frame of silence at `rate`.
pub fn silence(rate: u32) -> Vec<i16> {
    vec![0; (rate as usize / 50).max(4)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let (samples, words) = encode("My AC is broken.", 8000, 15.0);
        assert_eq!(words.len(), 4);
        let decoded: Vec<String> = samples
            .chunks(FRAME_SAMPLES_8K)
            .filter_map(|f| match decode(f) {
                Decoded::Word(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(decoded, ["My", "AC", "is", "broken."]);
        assert_eq!(decode(&silence(8000)), Decoded::Silence);
        assert_eq!(
            decode(&samples[FRAME_SAMPLES_8K..2 * FRAME_SAMPLES_8K]),
            Decoded::Voice
        );
        // "My" = 3 chars at 15/s = 0.2 s = 10 frames.
        assert_eq!(words[1].start, Duration::from_millis(200));
    }

    #[test]
    fn odd_frames_never_panic() {
        for f in [
            &[][..],
            &[WORD_MARK][..],
            &[WORD_MARK, 500, 1][..],
            &[WORD_MARK, -4][..],
        ] {
            let _ = decode(f);
        }
    }
}
