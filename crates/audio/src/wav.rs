//! Minimal WAV (RIFF/WAVE) reading and writing, in memory.
//!
//! Enough for test fixtures, call recordings and debugging dumps: write
//! 16-bit PCM (or raw µ-law bytes), read 16-bit PCM and G.711 µ-law (format
//! tag 7, decoded with [`crate::mulaw`]), including both in
//! `WAVE_FORMAT_EXTENSIBLE` form. Everything else is a clear
//! [`WavError`]; no input panics.
//!
//! # Reading rules
//!
//! * The file must start with `RIFF`, its size, `WAVE`. Chunks follow, each
//!   `id (4) | size (u32 LE) | body`, padded to an even length.
//! * The first `fmt ` and the first `data` chunk are used; all other chunks
//!   (`LIST`, `fact`, `cue `, …) are skipped.
//! * The RIFF size is honoured when it fits inside the buffer (trailing bytes
//!   after it are ignored); a streaming writer's placeholder (0 or
//!   `0xFFFFFFFF`) means "to the end of the buffer".
//! * A `data` chunk that claims more bytes than the buffer holds is read up to
//!   the end of the buffer (streamed recordings are written before their size
//!   is known). A truncated header or `fmt ` chunk is an error.
//! * `byte_rate` and `block_align` are redundant and not checked; channels
//!   and sample rate must be non-zero.
//! * Samples are returned interleaved, cut to whole frames (a torn trailing
//!   sample or frame is dropped).
//!
//! # Writing
//!
//! [`write_wav_pcm16`] writes the canonical 44-byte header and the samples.
//! Sizes saturate at `u32::MAX` (a WAV file cannot describe more than
//! 4 GiB); a channel count of 0 is written as 1.

use crate::mulaw;

/// `wFormatTag` of integer PCM.
pub const FORMAT_PCM: u16 = 1;
/// `wFormatTag` of G.711 µ-law.
pub const FORMAT_MULAW: u16 = 7;
/// `wFormatTag` announcing a `WAVE_FORMAT_EXTENSIBLE` sub-format GUID.
pub const FORMAT_EXTENSIBLE: u16 = 0xFFFE;

/// Why a buffer is not a WAV file this module can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    /// The buffer does not start with `RIFF`.
    #[error("not a WAV file: missing RIFF magic")]
    NotRiff,
    /// A RIFF file of another type (AVI, WebP, …).
    #[error("not a WAV file: RIFF type is not WAVE")]
    NotWave,
    /// The buffer ends inside a header.
    #[error("truncated WAV: the buffer ends inside the {0}")]
    Truncated(&'static str),
    /// No `fmt ` chunk before the end.
    #[error("malformed WAV: no fmt chunk")]
    MissingFmt,
    /// No `data` chunk before the end.
    #[error("malformed WAV: no data chunk")]
    MissingData,
    /// A `fmt ` chunk with impossible values.
    #[error("malformed WAV: {0}")]
    InvalidFormat(&'static str),
    /// A well-formed file in an encoding this module does not decode.
    #[error(
        "unsupported WAV encoding: format tag {format_tag:#06x} with {bits_per_sample} bits \
         per sample (supported: PCM 16-bit, µ-law 8-bit)"
    )]
    UnsupportedFormat {
        /// `wFormatTag` (the sub-format's for extensible files).
        format_tag: u16,
        /// `wBitsPerSample`.
        bits_per_sample: u16,
    },
}

/// A decoded WAV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wav {
    /// Frames per second.
    pub sample_rate: u32,
    /// Interleaved channels per frame (≥ 1).
    pub channels: u16,
    /// Interleaved 16-bit samples (µ-law files are decoded).
    pub samples: Vec<i16>,
}

impl Wav {
    /// Number of frames (samples per channel).
    pub fn frames(&self) -> usize {
        self.samples.len() / usize::from(self.channels.max(1))
    }
}

fn sat_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The 44-byte canonical header for `data_len` bytes of `format_tag` audio.
fn header(format_tag: u16, sample_rate: u32, channels: u16, bits: u16, data_len: usize) -> Vec<u8> {
    let channels = channels.max(1);
    let bytes_per_sample = u32::from(bits / 8);
    let block_align = u16::try_from(u32::from(channels) * bytes_per_sample).unwrap_or(u16::MAX);
    let byte_rate = sample_rate.saturating_mul(u32::from(block_align));
    let data_len = sat_u32(data_len);
    let pad = data_len & 1;
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&data_len.saturating_add(36 + pad).to_le_bytes());
    h.extend_from_slice(b"WAVE");
    h.extend_from_slice(b"fmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&format_tag.to_le_bytes());
    h.extend_from_slice(&channels.to_le_bytes());
    h.extend_from_slice(&sample_rate.to_le_bytes());
    h.extend_from_slice(&byte_rate.to_le_bytes());
    h.extend_from_slice(&block_align.to_le_bytes());
    h.extend_from_slice(&bits.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data_len.to_le_bytes());
    h
}

/// A 16-bit PCM WAV file holding `samples` (interleaved if `channels > 1`).
pub fn write_wav_pcm16(sample_rate: u32, channels: u16, samples: &[i16]) -> Vec<u8> {
    let data_len = samples.len().saturating_mul(2);
    let mut out = header(FORMAT_PCM, sample_rate, channels, 16, data_len);
    out.reserve(data_len);
    for s in samples {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// A G.711 µ-law WAV file (format tag 7, 8 bits) holding already-encoded
/// bytes, e.g. a Twilio media stream as received.
pub fn write_wav_mulaw(sample_rate: u32, channels: u16, mulaw_bytes: &[u8]) -> Vec<u8> {
    let mut out = header(FORMAT_MULAW, sample_rate, channels, 8, mulaw_bytes.len());
    out.extend_from_slice(mulaw_bytes);
    if mulaw_bytes.len() % 2 == 1 {
        out.push(0); // RIFF pad byte
    }
    out
}

/// The 44-byte header of a G.711 µ-law WAV file whose `data_len` bytes
/// of audio follow it, for a writer that streams the data itself (an odd
/// `data_len` needs a pad byte after the data).
pub fn mulaw_header(sample_rate: u32, channels: u16, data_len: usize) -> Vec<u8> {
    header(FORMAT_MULAW, sample_rate, channels, 8, data_len)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The parts of a `fmt ` chunk we use.
struct Format {
    tag: u16,
    channels: u16,
    sample_rate: u32,
    bits: u16,
}

fn parse_fmt(body: &[u8]) -> Result<Format, WavError> {
    if body.len() < 16 {
        return Err(WavError::Truncated("fmt chunk"));
    }
    let mut tag = u16_at(body, 0);
    let channels = u16_at(body, 2);
    let sample_rate = u32_at(body, 4);
    let bits = u16_at(body, 14);
    if tag == FORMAT_EXTENSIBLE {
        // cbSize (2) validBits (2) channelMask (4) subFormat GUID (16): the
        // GUID's first two bytes are the real format tag.
        if body.len() < 40 {
            return Err(WavError::Truncated("fmt chunk (WAVE_FORMAT_EXTENSIBLE)"));
        }
        tag = u16_at(body, 24);
    }
    if channels == 0 {
        return Err(WavError::InvalidFormat("fmt chunk declares 0 channels"));
    }
    if sample_rate == 0 {
        return Err(WavError::InvalidFormat(
            "fmt chunk declares a sample rate of 0",
        ));
    }
    match (tag, bits) {
        (FORMAT_PCM, 16) | (FORMAT_MULAW, 8) => Ok(Format {
            tag,
            channels,
            sample_rate,
            bits,
        }),
        _ => Err(WavError::UnsupportedFormat {
            format_tag: tag,
            bits_per_sample: bits,
        }),
    }
}

/// Parse a WAV file held in memory (rules in the [module docs](self)).
pub fn read_wav(bytes: &[u8]) -> Result<Wav, WavError> {
    if bytes.len() >= 4 && &bytes[..4] != b"RIFF" {
        return Err(WavError::NotRiff);
    }
    if bytes.len() < 12 {
        return Err(WavError::Truncated("RIFF header"));
    }
    if &bytes[8..12] != b"WAVE" {
        return Err(WavError::NotWave);
    }
    let riff_end = (u32_at(bytes, 4) as usize).saturating_add(8);
    let end = if riff_end >= 12 && riff_end <= bytes.len() {
        riff_end
    } else {
        bytes.len()
    };
    let bytes = &bytes[..end];

    let mut format: Option<Format> = None;
    let mut data: Option<&[u8]> = None;
    let mut at = 12;
    while at < bytes.len() && (format.is_none() || data.is_none()) {
        if bytes.len() - at < 8 {
            return Err(WavError::Truncated("chunk header"));
        }
        let id = &bytes[at..at + 4];
        let size = u32_at(bytes, at + 4) as usize;
        let body_start = at + 8;
        let available = bytes.len() - body_start;
        match id {
            b"fmt " if format.is_none() => {
                if size > available {
                    return Err(WavError::Truncated("fmt chunk"));
                }
                format = Some(parse_fmt(&bytes[body_start..body_start + size])?);
            }
            b"data" if data.is_none() => {
                data = Some(&bytes[body_start..body_start + size.min(available)]);
            }
            _ => {}
        }
        // Next chunk: body plus the pad byte of an odd size.
        at = body_start
            .saturating_add(size)
            .saturating_add(size & 1)
            .min(bytes.len());
    }
    let format = format.ok_or(WavError::MissingFmt)?;
    let data = data.ok_or(WavError::MissingData)?;

    let channels = usize::from(format.channels);
    let bytes_per_sample = usize::from(format.bits / 8);
    let frame_bytes = channels * bytes_per_sample;
    let whole = data.len() / frame_bytes * frame_bytes;
    let data = &data[..whole];
    let samples = match format.tag {
        FORMAT_MULAW => {
            let mut v = Vec::with_capacity(data.len());
            mulaw::decode(data, &mut v);
            v
        }
        _ => data
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect(),
    };
    Ok(Wav {
        sample_rate: format.sample_rate,
        channels: format.channels,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A chunk with its pad byte.
    fn chunk(id: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut c = id.to_vec();
        c.extend_from_slice(&(body.len() as u32).to_le_bytes());
        c.extend_from_slice(body);
        if body.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    fn riff(chunks: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = chunks.concat();
        let mut f = b"RIFF".to_vec();
        f.extend_from_slice(&(body.len() as u32 + 4).to_le_bytes());
        f.extend_from_slice(b"WAVE");
        f.extend_from_slice(&body);
        f
    }

    fn fmt(tag: u16, channels: u16, rate: u32, bits: u16) -> Vec<u8> {
        let align = channels * bits / 8;
        let mut b = Vec::new();
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&channels.to_le_bytes());
        b.extend_from_slice(&rate.to_le_bytes());
        b.extend_from_slice(&(rate * u32::from(align)).to_le_bytes());
        b.extend_from_slice(&align.to_le_bytes());
        b.extend_from_slice(&bits.to_le_bytes());
        b
    }

    fn extensible(sub: u16, channels: u16, rate: u32, bits: u16) -> Vec<u8> {
        let mut b = fmt(FORMAT_EXTENSIBLE, channels, rate, bits);
        b.extend_from_slice(&22u16.to_le_bytes()); // cbSize
        b.extend_from_slice(&bits.to_le_bytes()); // valid bits
        b.extend_from_slice(&4u32.to_le_bytes()); // channel mask
        b.extend_from_slice(&sub.to_le_bytes());
        b.extend_from_slice(&[
            0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71,
        ]);
        b
    }

    #[test]
    fn canonical_header_bytes() {
        let f = write_wav_pcm16(8_000, 1, &[1, -1]);
        assert_eq!(f.len(), 48);
        assert_eq!(&f[0..4], b"RIFF");
        assert_eq!(u32_at(&f, 4), 40);
        assert_eq!(&f[8..16], b"WAVEfmt ");
        assert_eq!(u32_at(&f, 16), 16);
        assert_eq!(u16_at(&f, 20), FORMAT_PCM);
        assert_eq!(u16_at(&f, 22), 1);
        assert_eq!(u32_at(&f, 24), 8_000);
        assert_eq!(u32_at(&f, 28), 16_000); // byte rate
        assert_eq!(u16_at(&f, 32), 2); // block align
        assert_eq!(u16_at(&f, 34), 16);
        assert_eq!(&f[36..40], b"data");
        assert_eq!(u32_at(&f, 40), 4);
        assert_eq!(&f[44..], &[1, 0, 0xFF, 0xFF]);
    }

    #[test]
    fn pcm16_round_trips() {
        let samples: Vec<i16> = (0..1000).map(|i| (i * 37 - 18_000) as i16).collect();
        for (rate, ch) in [(8_000, 1), (16_000, 2), (24_000, 1), (44_100, 4)] {
            let w = read_wav(&write_wav_pcm16(rate, ch, &samples)).unwrap();
            assert_eq!(w.sample_rate, rate);
            assert_eq!(w.channels, ch);
            assert_eq!(w.samples, samples);
            assert_eq!(w.frames(), 1000 / usize::from(ch));
        }
        let empty = read_wav(&write_wav_pcm16(8_000, 1, &[])).unwrap();
        assert!(empty.samples.is_empty());
        // 0 channels is written as 1, so the file stays readable.
        assert_eq!(
            read_wav(&write_wav_pcm16(8_000, 0, &[5])).unwrap().channels,
            1
        );
    }

    #[test]
    fn mulaw_files_are_decoded() {
        let codes: Vec<u8> = (0..=255).collect();
        let odd = &codes[..255];
        let w = read_wav(&write_wav_mulaw(8_000, 1, odd)).unwrap();
        assert_eq!(w.sample_rate, 8_000);
        let mut want = Vec::new();
        mulaw::decode(odd, &mut want);
        assert_eq!(w.samples, want);
        // Encode → WAV → decode is the codec round trip.
        let pcm: Vec<i16> = (0..160).map(|i| (i * 200 - 16_000) as i16).collect();
        let mut enc = Vec::new();
        mulaw::encode(&pcm, &mut enc);
        let back = read_wav(&write_wav_mulaw(8_000, 1, &enc)).unwrap();
        for (a, b) in pcm.iter().zip(&back.samples) {
            assert!((i32::from(*a) - i32::from(*b)).abs() <= 512, "{a} vs {b}");
        }
    }

    #[test]
    fn extensible_format_is_understood() {
        let f = riff(&[
            chunk(b"fmt ", &extensible(FORMAT_PCM, 1, 16_000, 16)),
            chunk(b"data", &[7, 0, 9, 0]),
        ]);
        assert_eq!(read_wav(&f).unwrap().samples, vec![7, 9]);
        let f = riff(&[
            chunk(b"fmt ", &extensible(FORMAT_MULAW, 1, 8_000, 8)),
            chunk(b"data", &[0xFF]),
        ]);
        assert_eq!(read_wav(&f).unwrap().samples, vec![0]);
        let float = riff(&[
            chunk(b"fmt ", &extensible(3, 1, 8_000, 32)),
            chunk(b"data", &[]),
        ]);
        assert_eq!(
            read_wav(&float).unwrap_err(),
            WavError::UnsupportedFormat {
                format_tag: 3,
                bits_per_sample: 32
            }
        );
        let short = riff(&[
            chunk(b"fmt ", &extensible(FORMAT_PCM, 1, 8_000, 16)[..30]),
            chunk(b"data", &[]),
        ]);
        assert!(matches!(read_wav(&short), Err(WavError::Truncated(_))));
    }

    #[test]
    fn unknown_chunks_are_skipped() {
        let f = riff(&[
            chunk(b"LIST", b"INFOISFT\x05\x00\x00\x00odd!!"), // odd size: padded
            chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 16)),
            chunk(b"fact", &[1, 2, 3]),
            chunk(b"data", &[1, 0, 2, 0, 3]), // odd data: torn sample dropped
            chunk(b"cue ", &[0; 4]),
        ]);
        let w = read_wav(&f).unwrap();
        assert_eq!(w.samples, vec![1, 2]);
        // data before fmt is legal too.
        let f = riff(&[
            chunk(b"data", &[4, 0]),
            chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 16)),
        ]);
        assert_eq!(read_wav(&f).unwrap().samples, vec![4]);
        // Trailing bytes after the RIFF size are ignored.
        let mut f = write_wav_pcm16(8_000, 1, &[1]);
        f.extend_from_slice(b"junk");
        assert_eq!(read_wav(&f).unwrap().samples, vec![1]);
    }

    #[test]
    fn streamed_sizes_read_to_the_end() {
        for placeholder in [0u32, u32::MAX] {
            let mut f = write_wav_pcm16(16_000, 1, &[1, 2, 3]);
            f[4..8].copy_from_slice(&placeholder.to_le_bytes());
            f[40..44].copy_from_slice(&placeholder.to_le_bytes());
            if placeholder == 0 {
                // A zero data size means zero samples.
                assert_eq!(read_wav(&f).unwrap().samples, Vec::<i16>::new());
            } else {
                assert_eq!(read_wav(&f).unwrap().samples, vec![1, 2, 3]);
            }
        }
        // Stereo: a torn frame is dropped.
        let f = riff(&[
            chunk(b"fmt ", &fmt(FORMAT_PCM, 2, 8_000, 16)),
            chunk(b"data", &[1, 0, 2, 0, 3, 0]),
        ]);
        assert_eq!(read_wav(&f).unwrap().samples, vec![1, 2]);
    }

    #[test]
    fn clear_errors() {
        use WavError::*;
        let fmt_pcm = chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 16));
        let cases: Vec<(Vec<u8>, WavError)> = vec![
            (vec![], Truncated("RIFF header")),
            (b"RIF".to_vec(), Truncated("RIFF header")),
            (
                b"RIFF\x04\x00\x00\x00WAV".to_vec(),
                Truncated("RIFF header"),
            ),
            (b"OggS\x00\x00\x00\x00WAVE".to_vec(), NotRiff),
            (b"RIFF\x04\x00\x00\x00AVI ".to_vec(), NotWave),
            (riff(&[]), MissingFmt),
            (riff(std::slice::from_ref(&fmt_pcm)), MissingData),
            (riff(&[chunk(b"data", &[0, 0])]), MissingFmt),
            (
                riff(&[chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 16)[..10])]),
                Truncated("fmt chunk"),
            ),
            (
                riff(&[chunk(b"fmt ", &fmt(3, 1, 8_000, 32)), chunk(b"data", &[])]),
                UnsupportedFormat {
                    format_tag: 3,
                    bits_per_sample: 32,
                },
            ),
            (
                riff(&[
                    chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 8)),
                    chunk(b"data", &[]),
                ]),
                UnsupportedFormat {
                    format_tag: 1,
                    bits_per_sample: 8,
                },
            ),
            (
                riff(&[
                    chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 24)),
                    chunk(b"data", &[]),
                ]),
                UnsupportedFormat {
                    format_tag: 1,
                    bits_per_sample: 24,
                },
            ),
            (
                riff(&[
                    chunk(b"fmt ", &fmt(FORMAT_PCM, 0, 8_000, 16)),
                    chunk(b"data", &[]),
                ]),
                InvalidFormat("fmt chunk declares 0 channels"),
            ),
            (
                riff(&[
                    chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 0, 16)),
                    chunk(b"data", &[]),
                ]),
                InvalidFormat("fmt chunk declares a sample rate of 0"),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(read_wav(&bytes), Err(want.clone()), "{bytes:?}");
            assert!(!want.to_string().is_empty());
        }
        // A fmt chunk whose size runs past the end.
        let mut f = riff(&[fmt_pcm]);
        let n = f.len();
        f[16..20].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(read_wav(&f[..n]), Err(Truncated("fmt chunk")));
        // A chunk header cut short.
        let mut f = riff(&[chunk(b"fmt ", &fmt(FORMAT_PCM, 1, 8_000, 16))]);
        f.extend_from_slice(b"dat");
        f[4..8].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(read_wav(&f), Err(Truncated("chunk header")));
        let msg = UnsupportedFormat {
            format_tag: 3,
            bits_per_sample: 32,
        }
        .to_string();
        assert!(msg.contains("0x0003") && msg.contains("32"), "{msg}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn round_trip_any_samples(
            rate in 1u32..200_000,
            channels in 1u16..9,
            samples in prop::collection::vec(any::<i16>(), 0..2_000),
        ) {
            let w = read_wav(&write_wav_pcm16(rate, channels, &samples)).unwrap();
            prop_assert_eq!(w.sample_rate, rate);
            prop_assert_eq!(w.channels, channels);
            let whole = samples.len() / usize::from(channels) * usize::from(channels);
            prop_assert_eq!(&w.samples[..], &samples[..whole]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = read_wav(&bytes);
            let mut riffed = b"RIFF\x00\x00\x00\x00WAVE".to_vec();
            riffed.extend_from_slice(&bytes);
            let _ = read_wav(&riffed);
        }

        /// Valid files with bytes overwritten and/or cut short.
        #[test]
        fn mutated_files_never_panic(
            mulaw in any::<bool>(),
            len in 0usize..300,
            edits in prop::collection::vec((0usize..400, any::<u8>()), 0..8),
            cut in 0usize..700,
        ) {
            let mut f = if mulaw {
                write_wav_mulaw(8_000, 1, &vec![0x55; len])
            } else {
                write_wav_pcm16(16_000, 1, &vec![1234; len])
            };
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            f.truncate(cut);
            if let Ok(w) = read_wav(&f) {
                prop_assert!(w.channels >= 1 && w.sample_rate >= 1);
                prop_assert!(w.samples.len() <= f.len());
            }
        }
    }
}
