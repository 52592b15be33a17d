//! Half-precision floats: decoding the weights we read, encoding the ones we
//! write.
//!
//! Three 16- and 32-bit float encodings meet in a conversion, all little
//! endian:
//!
//! - **f32** — IEEE binary32, 4 bytes. whisper.cpp keeps small tensors
//!   (biases, layer norms, positional embeddings) in f32.
//! - **f16** — IEEE binary16 (1 sign, 5 exponent, 10 fraction bits), 2 bytes.
//!   The packaged Whisper weights are f16, and so are whisper.cpp's weight
//!   matrices in an f16 model. Going f32 → f16 rounds to nearest, ties to
//!   even; f16 → f32 is exact.
//! - **bf16** — the top half of an f32 (8 exponent bits, 7 fraction bits).
//!   CTranslate2 can store models in it; we only ever read it.
//!
//! The bit twiddling is done by the `half` crate.

use half::{bf16, f16};

/// Decodes little-endian f16 values. A trailing odd byte is ignored (the
/// parser has already checked lengths).
pub fn f16_to_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// Decodes little-endian bf16 values.
pub fn bf16_to_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// Decodes little-endian f32 values.
pub fn le_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Appends `values` as little-endian f16 (rounded to nearest, ties to even).
pub fn push_f16(values: &[f32], out: &mut Vec<u8>) {
    out.reserve(values.len() * 2);
    for &v in values {
        out.extend_from_slice(&f16::from_f32(v).to_le_bytes());
    }
}

/// Appends `values` as little-endian f32.
pub fn push_f32(values: &[f32], out: &mut Vec<u8>) {
    out.reserve(values.len() * 4);
    for &v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// The f16 bits of `v` (for the q8_0 scale).
pub(crate) fn f16_bits(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

/// The f32 value of two little-endian f16 bytes.
pub(crate) fn f16_value(bytes: [u8; 2]) -> f32 {
    f16::from_le_bytes(bytes).to_f32()
}
