//! ggml's `q8_0` quantisation: 8-bit integers with one scale per 32 values.
//!
//! A q8_0 tensor is a run of *blocks*, each covering 32 consecutive values of
//! one row (so a row's length must be a multiple of 32):
//!
//! ```text
//! offset 0   f16  d       the scale: max |x| over the 32 values, divided by 127
//! offset 2   i8   q[32]   round(x / d), so each x ≈ d · q
//! ```
//!
//! 34 bytes for 32 values instead of 64 for f16: the model shrinks by almost
//! half. The error per value is at most half a step (`d / 2`, 0.39 % of the
//! block's largest magnitude) plus what rounding `d` to f16 costs (up to
//! 127 × 2⁻¹¹ of a step). Whisper's weight matrices tolerate that with no
//! change in transcripts.
//!
//! This follows ggml's reference quantiser exactly (`d` is computed in f32,
//! the integers are rounded half away from zero with the unrounded `d`, and
//! only then is `d` stored as f16), so our files match those whisper.cpp's
//! own `quantize` tool writes.

use super::f16::{f16_bits, f16_value};

/// Values per block.
pub const BLOCK_VALUES: usize = 32;
/// Bytes per block: an f16 scale then 32 signed bytes.
pub const BLOCK_BYTES: usize = 2 + BLOCK_VALUES;

/// Bytes needed for `n` values, or `None` if `n` is not a whole number of
/// blocks.
pub fn encoded_len(n: usize) -> Option<usize> {
    n.is_multiple_of(BLOCK_VALUES)
        .then(|| n / BLOCK_VALUES * BLOCK_BYTES)
}

/// Appends the q8_0 encoding of `values` to `out`. Returns `false` (and
/// appends nothing) if `values.len()` is not a multiple of 32.
pub fn quantize(values: &[f32], out: &mut Vec<u8>) -> bool {
    let Some(len) = encoded_len(values.len()) else {
        return false;
    };
    out.reserve(len);
    for block in values.chunks_exact(BLOCK_VALUES) {
        let amax = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let inv = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f16_bits(d));
        // `as i8` saturates (and maps NaN to 0), so odd inputs cannot wrap.
        out.extend(block.iter().map(|v| (v * inv).round() as i8 as u8));
    }
    true
}

/// Decodes q8_0 blocks back to f32, or `None` if `bytes` is not a whole
/// number of blocks.
pub fn dequantize(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(BLOCK_BYTES) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / BLOCK_BYTES * BLOCK_VALUES);
    for block in bytes.chunks_exact(BLOCK_BYTES) {
        let d = f16_value([block[0], block[1]]);
        out.extend(block[2..].iter().map(|&q| d * f32::from(q as i8)));
    }
    Some(out)
}
