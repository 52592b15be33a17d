//! The mel filter bank whisper.cpp needs inside the model file.
//!
//! Whisper does not listen to raw samples: it listens to a *log-mel
//! spectrogram*. Every 10 ms, a 25 ms window of 16 kHz audio (400 samples)
//! goes through an FFT, giving the power of 201 frequency bins from 0 Hz to
//! 8 kHz, 40 Hz apart. Those 201 numbers are then squeezed into 80 "mel"
//! bands by 80 triangular filters: each band is a weighted sum of the bins
//! under its triangle. whisper.cpp reads that 80 × 201 weight matrix from
//! the model file; the CTranslate2 package does not ship it, so we compute
//! it.
//!
//! Whisper was trained with `librosa.filters.mel(sr=16000, n_fft=400,
//! n_mels=80)`, i.e. the *Slaney* flavour (librosa's default, `htk=False`,
//! `norm="slaney"`):
//!
//! - **Mel scale.** Linear below 1 kHz (`mel = hz / (200/3)`, so 1 kHz is
//!   mel 15) and logarithmic above, with 27 mels per factor 6.4 of
//!   frequency. Equal steps in mel are roughly equal steps in perceived
//!   pitch.
//! - **Band edges.** `n_mels + 2` points equally spaced in mel from 0 Hz to
//!   the Nyquist frequency (8 kHz), turned back into Hz. Filter `m` rises
//!   from point `m` to a peak of 1 at point `m + 1` and falls back to 0 at
//!   point `m + 2`, evaluated at each bin's frequency `k · sr / n_fft`.
//! - **Slaney normalisation.** Each triangle is scaled by
//!   `2 / (upper edge − lower edge)` (in Hz), so every filter has the same
//!   area: wide high-frequency bands do not dominate narrow low ones.
//!
//! We compute in f64 in the same order of operations as librosa, rounding to
//! f32 where librosa does; the result equals Whisper's own `mel_filters.npz`
//! (see the test constants in `tests/convert.rs`).

/// Hz per mel in the linear part of the Slaney scale.
const F_SP: f64 = 200.0 / 3.0;
/// Where the Slaney scale turns logarithmic.
const MIN_LOG_HZ: f64 = 1000.0;

/// Slaney mels per natural-log unit of frequency above 1 kHz.
fn log_step() -> f64 {
    6.4f64.ln() / 27.0
}

/// The mel at which the scale turns logarithmic (15).
fn min_log_mel() -> f64 {
    MIN_LOG_HZ / F_SP
}

/// Frequency in Hz to Slaney mel.
pub fn hz_to_mel(hz: f64) -> f64 {
    if hz >= MIN_LOG_HZ {
        min_log_mel() + (hz / MIN_LOG_HZ).ln() / log_step()
    } else {
        hz / F_SP
    }
}

/// Slaney mel to frequency in Hz.
pub fn mel_to_hz(mel: f64) -> f64 {
    if mel >= min_log_mel() {
        MIN_LOG_HZ * (log_step() * (mel - min_log_mel())).exp()
    } else {
        F_SP * mel
    }
}

/// A mel filter bank: `n_mels` rows of `n_bins` weights, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct MelFilters {
    /// Number of mel bands (rows): 80 for Whisper up to large-v2.
    pub n_mels: usize,
    /// Number of FFT bins (columns): `n_fft / 2 + 1`, 201 for Whisper.
    pub n_bins: usize,
    /// `n_mels * n_bins` weights; row `m` is filter `m`.
    pub data: Vec<f32>,
}

impl MelFilters {
    /// The Slaney filter bank for `sample_rate` Hz, an `n_fft`-point FFT and
    /// `n_mels` bands, from 0 Hz to the Nyquist frequency.
    pub fn slaney(sample_rate: u32, n_fft: usize, n_mels: usize) -> MelFilters {
        let n_bins = n_fft / 2 + 1;
        let sr = f64::from(sample_rate);
        // `numpy.fft.rfftfreq(n_fft, 1 / sr)`: bin k is at k · sr / n_fft Hz.
        let bin_step = 1.0 / (n_fft as f64 * (1.0 / sr));
        let bin_hz: Vec<f64> = (0..n_bins).map(|k| k as f64 * bin_step).collect();
        let edges = band_edges(n_mels + 2, 0.0, sr / 2.0);

        let mut data = Vec::with_capacity(n_mels * n_bins);
        for m in 0..n_mels {
            let (lo, peak, hi) = (edges[m], edges[m + 1], edges[m + 2]);
            let norm = 2.0 / (hi - lo);
            for &f in &bin_hz {
                // Written as librosa does, down to the sign of zero: at
                // bin 0 of band 0 the rising edge is -(0 - 0) = -0.0, and
                // numpy's `maximum(0, -0.0)` keeps the -0.0.
                let rising = -(lo - f) / (peak - lo);
                let falling = (hi - f) / (hi - peak);
                let tri = numpy_max(0.0, numpy_min(rising, falling));
                // librosa stores the triangle in an f32 array first, then
                // scales it (in f64) and stores again: two roundings, which
                // we repeat to get its numbers bit for bit.
                data.push((f64::from(tri as f32) * norm) as f32);
            }
        }
        MelFilters {
            n_mels,
            n_bins,
            data,
        }
    }

    /// Whisper's bank: 16 kHz, 400-point FFT, `n_mels` bands (80, or 128
    /// for large-v3).
    pub fn whisper(n_mels: usize) -> MelFilters {
        MelFilters::slaney(16_000, 400, n_mels)
    }

    /// Row `m` (filter `m`), or `None` past the end.
    pub fn row(&self, m: usize) -> Option<&[f32]> {
        self.data.get(m * self.n_bins..(m + 1) * self.n_bins)
    }
}

/// `numpy.minimum` for non-NaN values: on a tie it returns `b`.
fn numpy_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// `numpy.maximum` for non-NaN values: on a tie it returns `b`.
fn numpy_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// `n` frequencies equally spaced in mel between `f_min` and `f_max` Hz
/// (`numpy.linspace` semantics: `start + i·step`, last point exact).
fn band_edges(n: usize, f_min: f64, f_max: f64) -> Vec<f64> {
    let (lo, hi) = (hz_to_mel(f_min), hz_to_mel(f_max));
    let step = (hi - lo) / (n.max(2) - 1) as f64;
    (0..n)
        .map(|i| {
            let mel = if i + 1 == n { hi } else { lo + i as f64 * step };
            mel_to_hz(mel)
        })
        .collect()
}
