//! The symmetric speech codec: text carried in the audio itself.
//!
//! A word is spoken as whole 20 ms frames: its first frame starts with a
//! word mark, its length and its UTF-8 bytes; the rest of the word's frames
//! are loud filler (so a VAD hears speech for as long as a person would take
//! to say it); silence is all zeros. [`decode`] reads one frame back.
//!
//! **µ-law exact.** Every sample the encoder writes is a G.711 µ-law
//! reconstruction level — the decoded value of a chosen code byte — and
//! the decoder reads each sample back as its µ-law code. So codec audio
//! survives the telephone path unchanged: PCM → µ-law (Twilio Media
//! Streams) → PCM decodes to the same words. (µ-law codes 0x7F and 0xFF
//! both decode to 0; neither is a length or a marker, 0xFF never occurs in
//! UTF-8, and a DEL byte 0x7F in the text is sent as `?`.)
//!
//! Used by `calllock serve`/`dial`/`voice` as the offline speech vendor, and
//! by the test kit.

use crate::accountant::WordTiming;
use audio::mulaw::{decode_sample, encode_sample};
use std::time::Duration;

/// Samples per 20 ms frame at 8 kHz.
pub const FRAME_SAMPLES_8K: usize = 160;
/// µ-law code of the first sample of a word's first frame (+32124).
const WORD_CODE: u8 = 0x80;
/// µ-law code of the first sample of a word's other frames (+30076).
const FILL_MARK_CODE: u8 = 0x81;
/// µ-law code of the filler samples (+7932: clearly voiced).
const FILL_CODE: u8 = 0xA0;
/// First sample of a word's first frame.
pub const WORD_MARK: i16 = decode_sample(WORD_CODE);
/// First sample of a word's other frames.
pub const FILL_MARK: i16 = decode_sample(FILL_MARK_CODE);
/// Loudness of filler samples.
pub const FILL: i16 = decode_sample(FILL_CODE);
/// Samples quieter than this (in magnitude) are silence.
pub const QUIET: u16 = 100;
/// Longest word a frame carries, in bytes (longer words are cut, and a cut
/// inside a character decodes as U+FFFD). Kept below 0x7F so the length is
/// itself an exact µ-law code.
pub const MAX_WORD_BYTES: usize = 120;

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
    let mut samples = Vec::new();
    let mut words = Vec::new();
    for word in text.split_whitespace() {
        let start =
            Duration::from_micros(samples.len() as u64 * 1_000_000 / u64::from(rate.max(1)));
        words.push(WordTiming {
            word: word.to_string(),
            start,
        });
        encode_word(word, rate, chars_per_second, &mut samples);
    }
    (samples, words)
}

/// Append one word (no whitespace in it) spoken at `rate` to `samples`:
/// [`word_frames`] whole frames, the first carrying the word.
pub fn encode_word(word: &str, rate: u32, chars_per_second: f64, samples: &mut Vec<i16>) {
    let per_frame = (rate as usize / 50).max(4);
    let bytes = word.as_bytes();
    let n = bytes.len().min(MAX_WORD_BYTES).min(per_frame - 3);
    let frames = word_frames(word, chars_per_second);
    samples.reserve(frames * per_frame);
    for f in 0..frames {
        let at = samples.len();
        samples.resize(at + per_frame, FILL);
        let frame = &mut samples[at..];
        if f == 0 {
            frame[0] = WORD_MARK;
            frame[1] = decode_sample(n as u8);
            for (i, b) in bytes[..n].iter().enumerate() {
                let code = if *b == 0x7F { b'?' } else { *b };
                frame[2 + i] = decode_sample(code);
            }
        } else {
            frame[0] = FILL_MARK;
        }
    }
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

/// Decode one frame (PCM samples, possibly µ-law decoded on the way).
pub fn decode(frame: &[i16]) -> Decoded {
    match frame.first() {
        None => Decoded::Silence,
        Some(&first) if frame.len() >= 4 && encode_sample(first) == WORD_CODE => {
            match word_of(frame) {
                Some(word) => Decoded::Word(word),
                // Noise that happened to start like a word: not words.
                None => Decoded::Voice,
            }
        }
        _ if frame.iter().all(|s| s.unsigned_abs() < QUIET) => Decoded::Silence,
        _ => Decoded::Voice,
    }
}

/// The word a first frame carries, if it is one the encoder wrote: a
/// length from 1 to [`MAX_WORD_BYTES`] with at least one sample after the
/// bytes, and every sample after them exactly the filler. Line noise that
/// starts with the word mark (one frame in 256) fails the filler — at
/// least one exact sample, 38 in an 8 kHz frame of the longest word — so
/// noise is never taken for words.
fn word_of(frame: &[i16]) -> Option<String> {
    let n = usize::from(encode_sample(frame[1]));
    if n == 0 || n > MAX_WORD_BYTES || n > frame.len() - 3 {
        return None;
    }
    if !frame[2 + n..]
        .iter()
        .all(|s| encode_sample(*s) == FILL_CODE)
    {
        return None;
    }
    let bytes: Vec<u8> = frame[2..2 + n].iter().map(|s| encode_sample(*s)).collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Encode `text` as 8 kHz µ-law speech (what goes on a phone line).
pub fn encode_mulaw(text: &str, chars_per_second: f64) -> (Vec<u8>, Vec<WordTiming>) {
    let (samples, words) = encode(text, 8000, chars_per_second);
    let mut out = Vec::with_capacity(samples.len());
    audio::mulaw::encode(&samples, &mut out);
    (out, words)
}

/// Decode one frame of µ-law bytes.
pub fn decode_mulaw(frame: &[u8]) -> Decoded {
    let mut pcm = Vec::with_capacity(frame.len());
    audio::mulaw::decode(frame, &mut pcm);
    decode(&pcm)
}

/// A frame of silence at `rate`.
pub fn silence(rate: u32) -> Vec<i16> {
    vec![0; (rate as usize / 50).max(4)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_noise_is_never_taken_for_words() {
        // Seeded random µ-law at several levels, and noise frames that
        // start with the word mark (what used to decode as a word).
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for level in [1u64, 16, 64, 128] {
            for _ in 0..20_000 {
                let mut frame: Vec<u8> = (0..FRAME_SAMPLES_8K)
                    .map(|_| {
                        let r = next();
                        // A code near silence (0xFF / 0x7F) up to full scale.
                        let magnitude = (r % level) as u8 & 0x7F;
                        (0x7F - magnitude) | ((r >> 8) as u8 & 0x80)
                    })
                    .collect();
                if next() % 2 == 0 {
                    frame[0] = WORD_CODE;
                    frame[1] = (next() % 128) as u8;
                }
                assert!(
                    !matches!(decode_mulaw(&frame), Decoded::Word(_)),
                    "noise at level {level} decoded as a word: {frame:?}"
                );
            }
        }
        // A real word still decodes, at every rate the encoder writes.
        for rate in [8000, 16000, 200] {
            let (samples, _) = encode("heater", rate, 15.0);
            let per_frame = (rate as usize / 50).max(4);
            assert!(
                matches!(decode(&samples[..per_frame]), Decoded::Word(w) if w == "heater"[..(per_frame - 3).min(6)])
            );
        }
    }

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

    fn words_of_mulaw(ulaw: &[u8]) -> Vec<String> {
        ulaw.chunks(FRAME_SAMPLES_8K)
            .filter_map(|f| match decode_mulaw(f) {
                Decoded::Word(w) => Some(w),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn survives_mulaw() {
        let printable: String = (0x21u8..0x7F).map(char::from).collect();
        for text in [
            "My AC is broken.",
            printable.as_str(),
            "café Señor naïve 温度",
        ] {
            let (ulaw, _) = encode_mulaw(text, 15.0);
            let want: Vec<String> = text.split_whitespace().map(str::to_string).collect();
            assert_eq!(words_of_mulaw(&ulaw), want, "{text}");
        }
        let mut ulaw = Vec::new();
        audio::mulaw::encode(&silence(8000), &mut ulaw);
        assert_eq!(decode_mulaw(&ulaw), Decoded::Silence);
        // Every code but 0x7F (-0) round-trips: the codec's ground.
        for b in 0u8..=255 {
            if b != 0x7F {
                assert_eq!(encode_sample(decode_sample(b)), b);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_frame_decodes(frame in proptest::collection::vec(proptest::num::i16::ANY, 0..200)) {
            let _ = decode(&frame);
        }

        #[test]
        fn any_word_survives_mulaw(word in "[^\\s\u{7f}]{1,40}") {
            let (ulaw, _) = encode_mulaw(&word, 15.0);
            let got = words_of_mulaw(&ulaw);
            let bytes = word.as_bytes();
            let want = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_WORD_BYTES)]).into_owned();
            proptest::prop_assert_eq!(got, vec![want]);
        }
    }

    #[test]
    fn odd_frames_never_panic() {
        for f in [
            &[][..],
            &[WORD_MARK][..],
            &[WORD_MARK, 500, 1][..],
            &[WORD_MARK, -4][..],
            &[WORD_MARK, WORD_MARK][..],
        ] {
            let _ = decode(f);
        }
    }
}
