//! From Inworld's audio chunks to a clean PCM16 byte stream (sans-IO).
//!
//! With `LINEAR16` Inworld documents that **every chunk carries its own WAV
//! header** (each chunk is playable on its own); with `PCM` it has been
//! seen both with and without. [`PcmAssembler`] therefore looks at the
//! start of every chunk: one that starts `RIFF….WAVE` has its header
//! removed. The header is parsed chunk by chunk (`fmt `, `LIST`, `fact`, …)
//! up to the `data` chunk rather than assumed to be 44 bytes, and a header
//! cut across two audio chunks is completed from the next one. The `data`
//! size is ignored (streamed WAVs carry 0 or a guess there); everything
//! after the `data` chunk's header is audio.
//!
//! The `fmt ` chunk is checked: 16-bit mono PCM passes and its sample rate
//! is reported ([`PcmAssembler::header_rate`]); any other format is an
//! error rather than noise on the line.
//!
//! PCM16 samples are two bytes, and nothing promises a chunk holds whole
//! samples. An odd trailing byte is carried over and put in front of the
//! next chunk's audio, so the output never splits a sample.

/// The longest WAV header accepted (larger is an error).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The audio cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    /// The header does not reach a `data` chunk within [`MAX_HEADER_BYTES`].
    #[error("the WAV header is longer than {MAX_HEADER_BYTES} bytes")]
    HeaderTooLong,
    /// The `fmt ` chunk describes audio other than 16-bit mono PCM.
    #[error(
        "the audio is not 16-bit mono PCM (format {format}, {channels} channels, {bits} bits)"
    )]
    Unsupported {
        format: u16,
        channels: u16,
        bits: u16,
    },
}

/// What a `fmt ` chunk says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavFormat {
    pub format: u16,
    pub channels: u16,
    pub rate: u32,
    pub bits: u16,
}

/// How far a header parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Header {
    /// Not a WAV header: the bytes are audio.
    NotWav,
    /// A header, not complete yet.
    Incomplete,
    /// A whole header: the audio starts at `audio_at`.
    Complete {
        audio_at: usize,
        format: Option<WavFormat>,
    },
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Parse a WAV header at the start of `b` (which may be only its start).
pub fn parse_header(b: &[u8]) -> Result<Header, WavError> {
    const RIFF: &[u8] = b"RIFF";
    if b.len() < 4 {
        return Ok(if RIFF.starts_with(b) && !b.is_empty() {
            Header::Incomplete
        } else {
            Header::NotWav
        });
    }
    if &b[..4] != RIFF {
        return Ok(Header::NotWav);
    }
    match b.get(8..12) {
        None => {
            // "RIFF" + size, "WAVE" not seen yet.
            let seen = b.get(8..).unwrap_or_default();
            return Ok(if b"WAVE".starts_with(seen) {
                Header::Incomplete
            } else {
                Header::NotWav
            });
        }
        Some(id) if id != b"WAVE" => return Ok(Header::NotWav),
        Some(_) => {}
    }
    let mut at = 12usize;
    let mut format = None;
    loop {
        if at.saturating_add(8) > MAX_HEADER_BYTES {
            return Err(WavError::HeaderTooLong);
        }
        let (Some(id), Some(size)) = (b.get(at..at + 4), u32_at(b, at + 4)) else {
            return Ok(Header::Incomplete);
        };
        if id == b"data" {
            return Ok(Header::Complete {
                audio_at: at + 8,
                format,
            });
        }
        let size = size as usize;
        let body = at + 8;
        if id == b"fmt " && size >= 16 {
            if let (Some(f), Some(c), Some(r), Some(bits)) = (
                u16_at(b, body),
                u16_at(b, body + 2),
                u32_at(b, body + 4),
                u16_at(b, body + 14),
            ) {
                format = Some(WavFormat {
                    format: f,
                    channels: c,
                    rate: r,
                    bits,
                });
            }
        }
        // Chunks are padded to an even size.
        at = body.saturating_add(size).saturating_add(size & 1);
    }
}

/// Turns audio chunks into whole PCM16 samples; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct PcmAssembler {
    /// An odd byte left from the previous chunk.
    carry: Option<u8>,
    /// A WAV header cut at the end of a chunk, to be completed.
    header: Option<Vec<u8>>,
    rate: Option<u32>,
}

impl PcmAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// The sample rate of the last WAV header seen, if any.
    pub fn header_rate(&self) -> Option<u32> {
        self.rate
    }

    /// The next audio chunk (one decoded `audioContent`); returns the
    /// whole samples now available (possibly none).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, WavError> {
        let joined;
        let bytes: &[u8] = match self.header.take() {
            Some(start) => {
                let mut both = start.clone();
                both.extend_from_slice(chunk);
                if parse_header(&both)? == Header::NotWav {
                    // What was held only looked like a header: it is audio,
                    // and this chunk stands on its own (it may start with a
                    // header of its own).
                    let mut out = self.whole_samples(&start);
                    out.extend(self.push(chunk)?);
                    return Ok(out);
                }
                joined = both;
                &joined
            }
            None => chunk,
        };
        let audio = match parse_header(bytes)? {
            Header::NotWav => bytes,
            Header::Incomplete => {
                self.header = Some(bytes.to_vec());
                return Ok(Vec::new());
            }
            Header::Complete { audio_at, format } => {
                if let Some(f) = format {
                    // 0xFFFE: WAVE_FORMAT_EXTENSIBLE (PCM inside).
                    if !matches!(f.format, 1 | 0xFFFE) || f.channels != 1 || f.bits != 16 {
                        return Err(WavError::Unsupported {
                            format: f.format,
                            channels: f.channels,
                            bits: f.bits,
                        });
                    }
                    if f.rate > 0 {
                        self.rate = Some(f.rate);
                    }
                }
                bytes.get(audio_at..).unwrap_or_default()
            }
        };
        Ok(self.whole_samples(audio))
    }

    fn whole_samples(&mut self, audio: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(audio.len() + 1);
        out.extend(self.carry.take());
        out.extend_from_slice(audio);
        if out.len() % 2 == 1 {
            self.carry = out.pop();
        }
        out
    }

    /// The audio ended: the last whole samples, and how many bytes were
    /// dropped (a torn last sample, or a WAV header that never reached its
    /// `data` chunk). A few bytes that only looked like the start of a
    /// header (`RIFF` without `WAVE` seen yet) are audio after all.
    pub fn finish(&mut self) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut dropped = 0;
        match self.header.take() {
            Some(h) if h.len() < 12 => out = self.whole_samples(&h),
            Some(h) => dropped += h.len(),
            None => {}
        }
        dropped += usize::from(self.carry.take().is_some());
        (out, dropped)
    }
}

/// A 44-byte canonical WAV header for PCM16 mono at `rate` with `data_len`
/// bytes of audio (tests and the fake).
pub fn canonical_header(rate: u32, data_len: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&data_len.saturating_add(36).to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&rate.to_le_bytes());
    h.extend_from_slice(&rate.saturating_mul(2).to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&16u16.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data_len.to_le_bytes());
    h
}

/// A WAV header with an odd-sized `LIST` chunk between `fmt ` and `data`
/// (so it is not 44 bytes long).
pub fn header_with_list(rate: u32, data_len: u32) -> Vec<u8> {
    let canonical = canonical_header(rate, data_len);
    let mut h = canonical[..36].to_vec();
    let info = b"INFOISFT\x05\x00\x00\x00fake\x00";
    h.extend_from_slice(b"LIST");
    h.extend_from_slice(&(info.len() as u32).to_le_bytes());
    h.extend_from_slice(info);
    h.push(0); // pad to even
    h.extend_from_slice(&canonical[36..]);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &mut PcmAssembler, chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in chunks {
            let got = a.push(c).unwrap();
            assert_eq!(got.len() % 2, 0, "whole samples only");
            out.extend(got);
        }
        out
    }

    #[test]
    fn headers_are_stripped_from_every_chunk_whatever_their_length() {
        let pcm: Vec<u8> = (0..200u8).collect();
        for header in [canonical_header(8000, 100), header_with_list(16000, 100)] {
            let mut a = PcmAssembler::new();
            let chunks = vec![
                [header.clone(), pcm[..100].to_vec()].concat(),
                [header.clone(), pcm[100..].to_vec()].concat(),
            ];
            assert_eq!(run(&mut a, &chunks), pcm);
            assert_eq!(a.finish(), (vec![], 0));
        }
        assert_eq!(header_with_list(8000, 0).len(), 44 + 8 + 17 + 1);
        let mut a = PcmAssembler::new();
        a.push(&header_with_list(16000, 0)).unwrap();
        assert_eq!(a.header_rate(), Some(16000));
    }

    #[test]
    fn a_header_cut_anywhere_is_completed_from_the_next_chunk() {
        let pcm: Vec<u8> = (10..60u8).collect();
        for header in [canonical_header(8000, 50), header_with_list(8000, 50)] {
            let whole = [header.clone(), pcm.clone()].concat();
            for cut in 1..whole.len() {
                let mut a = PcmAssembler::new();
                let chunks = vec![whole[..cut].to_vec(), whole[cut..].to_vec()];
                assert_eq!(run(&mut a, &chunks), pcm, "cut at {cut}");
            }
        }
    }

    #[test]
    fn riff_that_is_not_wave_is_audio() {
        let mut a = PcmAssembler::new();
        let chunk = b"RIFF\x04\x00\x00\x00ABCDxy".to_vec();
        assert_eq!(a.push(&chunk).unwrap(), chunk);
        // Too short to tell at first; then it turns out not to be a header.
        let mut a = PcmAssembler::new();
        assert_eq!(a.push(b"RI").unwrap(), b"");
        assert_eq!(a.push(b"Fx").unwrap(), b"RIFx");
        assert_eq!(a.push(b"").unwrap(), b"");
    }

    #[test]
    fn odd_bytes_carry_over_and_never_split_a_sample() {
        let mut a = PcmAssembler::new();
        let chunks = vec![vec![1, 2, 3], vec![4], vec![5, 6], vec![7, 8, 9]];
        let out = run(&mut a, &chunks);
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(a.finish(), (vec![], 1), "the torn last sample is dropped");
        // A header after an odd chunk: the carried byte joins the audio.
        let mut a = PcmAssembler::new();
        let h = canonical_header(8000, 3);
        let out = run(
            &mut a,
            &[vec![1], [h.clone(), vec![2, 3, 4]].concat(), vec![5]],
        );
        assert_eq!(out, [1, 2, 3, 4]);
        assert_eq!(a.finish(), (vec![], 1));
        // Audio that ends looking like the start of a header is audio.
        let mut a = PcmAssembler::new();
        assert_eq!(a.push(b"xyRIF").unwrap(), b"xyRI");
        assert_eq!(a.push(b"RIF").unwrap(), b"");
        assert_eq!(a.finish(), (b"FRIF".to_vec(), 0));
        // Held bytes that were not a header, then a real header.
        let mut a = PcmAssembler::new();
        assert_eq!(a.push(b"R").unwrap(), b"");
        let h = canonical_header(8000, 2);
        assert_eq!(a.push(&[h, vec![7, 8]].concat()).unwrap(), [b'R', 7]);
        assert_eq!(a.finish(), (vec![], 1), "the header is gone, 8 is left");
        let mut a = PcmAssembler::new();
        assert_eq!(a.push(&canonical_header(8000, 0)[..20]).unwrap(), b"");
        assert_eq!(a.finish(), (vec![], 20), "a cut header is dropped");
    }

    #[test]
    fn unsupported_formats_and_endless_headers_are_errors() {
        let mut h = canonical_header(8000, 0);
        h[22] = 2; // stereo
        assert!(matches!(
            PcmAssembler::new().push(&h),
            Err(WavError::Unsupported { channels: 2, .. })
        ));
        let mut h = canonical_header(8000, 0);
        h[34] = 8; // 8-bit
        assert!(PcmAssembler::new().push(&h).is_err());
        // A chunk claiming 1 MiB before `data`.
        let mut h = canonical_header(8000, 0)[..12].to_vec();
        h.extend_from_slice(b"junk");
        h.extend_from_slice(&(1u32 << 20).to_le_bytes());
        h.extend_from_slice(&[0; 64]);
        assert_eq!(PcmAssembler::new().push(&h), Err(WavError::HeaderTooLong));
        // A header still growing past the limit.
        let mut h = canonical_header(8000, 0)[..12].to_vec();
        h.extend_from_slice(b"junk");
        h.extend_from_slice(&((MAX_HEADER_BYTES - 40) as u32).to_le_bytes());
        let mut a = PcmAssembler::new();
        assert_eq!(a.push(&h), Ok(vec![]), "still waiting for the rest");
        assert_eq!(
            a.push(&vec![0; MAX_HEADER_BYTES]),
            Err(WavError::HeaderTooLong)
        );
        assert_eq!(parse_header(&[0xFF; 3]), Ok(Header::NotWav));
        assert_eq!(parse_header(&[]), Ok(Header::NotWav));
        assert_eq!(
            parse_header(b"RIFF\xff\xff\xff\xffWA"),
            Ok(Header::Incomplete)
        );
    }
}
