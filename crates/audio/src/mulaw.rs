//! G.711 µ-law (the 8 kHz telephone codec of Twilio Media Streams).
//!
//! Decoding is a 256-entry table; encoding is the standard segment search
//! with bias 0x84 and clip at 32635. Every input is valid: any byte decodes,
//! any `i16` encodes, odd-length PCM byte buffers ignore the dangling byte.

/// Bias added before segment search (G.711).
const BIAS: i32 = 0x84;
/// Largest magnitude that survives the bias without overflow.
const CLIP: i32 = 32635;

/// Decode one µ-law byte to a 16-bit linear sample (G.711 formula).
pub const fn decode_sample(byte: u8) -> i16 {
    let u = !byte;
    let mantissa = (u & 0x0F) as i32;
    let exponent = ((u & 0x70) >> 4) as i32;
    let magnitude = ((mantissa << 3) + BIAS) << exponent;
    if u & 0x80 != 0 {
        (BIAS - magnitude) as i16
    } else {
        (magnitude - BIAS) as i16
    }
}

const fn build_table() -> [i16; 256] {
    let mut t = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode_sample(i as u8);
        i += 1;
    }
    t
}

/// The decode table, built at compile time.
pub static DECODE_TABLE: [i16; 256] = build_table();

/// Encode one 16-bit linear sample to µ-law.
pub fn encode_sample(sample: i16) -> u8 {
    let s = sample as i32;
    let (sign, mag) = if s < 0 { (0x80u8, -s) } else { (0u8, s) };
    let mag = mag.min(CLIP) + BIAS;
    // Segment: position of the highest set bit above bit 7 (0..=7).
    let exponent = (31 - (mag as u32).leading_zeros()).saturating_sub(7).min(7);
    let mantissa = ((mag >> (exponent + 3)) & 0x0F) as u8;
    !(sign | ((exponent as u8) << 4) | mantissa)
}

/// Decode µ-law bytes to 16-bit samples.
pub fn decode(input: &[u8], out: &mut Vec<i16>) {
    out.reserve(input.len());
    out.extend(input.iter().map(|b| DECODE_TABLE[*b as usize]));
}

/// Decode µ-law bytes to 16-bit little-endian PCM bytes.
pub fn decode_to_pcm16le(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() * 2);
    for b in input {
        out.extend_from_slice(&DECODE_TABLE[*b as usize].to_le_bytes());
    }
    out
}

/// Encode 16-bit samples to µ-law bytes.
pub fn encode(samples: &[i16], out: &mut Vec<u8>) {
    out.reserve(samples.len());
    out.extend(samples.iter().map(|s| encode_sample(*s)));
}

/// Encode 16-bit little-endian PCM bytes to µ-law. A dangling odd byte (a
/// torn sample) is ignored rather than guessed.
pub fn encode_pcm16le(pcm: &[u8]) -> Vec<u8> {
    pcm.chunks_exact(2)
        .map(|c| encode_sample(i16::from_le_bytes([c[0], c[1]])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Anchors from the G.711 µ-law table (ITU-T G.711, Table 2a/2b values
    /// as 16-bit linear), every 16th code plus the extremes.
    const GOLDEN: &[(u8, i16)] = &[
        (0x00, -32124),
        (0x10, -15996),
        (0x20, -7932),
        (0x30, -3900),
        (0x40, -1884),
        (0x50, -876),
        (0x60, -372),
        (0x70, -120),
        (0x7E, -8),
        (0x7F, 0),
        (0x80, 32124),
        (0x90, 15996),
        (0xA0, 7932),
        (0xB0, 3900),
        (0xC0, 1884),
        (0xD0, 876),
        (0xE0, 372),
        (0xF0, 120),
        (0xFE, 8),
        (0xFF, 0),
    ];

    #[test]
    fn golden_decode_values() {
        for (code, linear) in GOLDEN {
            assert_eq!(DECODE_TABLE[*code as usize], *linear, "code {code:#04x}");
        }
    }

    #[test]
    fn table_is_antisymmetric_and_monotonic() {
        for c in 0..128usize {
            assert_eq!(DECODE_TABLE[c], -DECODE_TABLE[c + 128], "code {c:#04x}");
        }
        // Within a half, larger codes mean smaller magnitude.
        for c in 128..255usize {
            assert!(DECODE_TABLE[c] > DECODE_TABLE[c + 1], "code {c:#04x}");
        }
    }

    #[test]
    fn every_code_round_trips() {
        for c in 0..=255u8 {
            let back = encode_sample(decode_sample(c));
            // 0x7F is "negative zero"; it re-encodes as positive zero.
            let want = if c == 0x7F { 0xFF } else { c };
            assert_eq!(back, want, "code {c:#04x}");
        }
    }

    #[test]
    fn extremes_and_zero() {
        assert_eq!(encode_sample(0), 0xFF);
        assert_eq!(encode_sample(i16::MAX), 0x80);
        assert_eq!(encode_sample(i16::MIN), 0x00);
        assert_eq!(encode_sample(-1), 0x7F);
    }

    #[test]
    fn buffers_of_any_length() {
        assert!(encode_pcm16le(&[]).is_empty());
        assert_eq!(encode_pcm16le(&[0x00]), Vec::<u8>::new());
        assert_eq!(encode_pcm16le(&[0, 0, 7]), vec![0xFF]);
        let mut v = Vec::new();
        decode(&[], &mut v);
        assert!(v.is_empty());
        assert_eq!(decode_to_pcm16le(&[0xFF, 0x80]), vec![0, 0, 0x7C, 0x7D]);
    }

    proptest! {
        /// Quantisation error stays within half a step of the segment.
        #[test]
        fn encode_error_is_bounded(s in any::<i16>()) {
            let back = decode_sample(encode_sample(s)) as i32;
            let s = (s as i32).clamp(-CLIP, CLIP);
            let step = if s.abs() < 256 { 8 } else { 1 << ((32 - (s.unsigned_abs() + BIAS as u32).leading_zeros()) - 5) };
            prop_assert!((back - s).abs() <= step, "{s} -> {back} (step {step})");
        }

        #[test]
        fn any_bytes_decode_and_reencode(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let pcm = decode_to_pcm16le(&bytes);
            prop_assert_eq!(pcm.len(), bytes.len() * 2);
            let again = encode_pcm16le(&pcm);
            prop_assert_eq!(again.len(), bytes.len());
            for (a, b) in bytes.iter().zip(&again) {
                prop_assert!(*a == *b || (*a == 0x7F && *b == 0xFF));
            }
        }
    }
}
