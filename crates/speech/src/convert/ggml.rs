//! whisper.cpp's model file ("ggml", the legacy single-file format) and its
//! writer.
//!
//! Everything is little endian, with 32-bit signed integers:
//!
//! ```text
//! u32   magic 0x67676d6c ("ggml")
//! i32 × 11  n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
//!           n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
//! i32   n_mels, i32 n_bins, f32 × n_mels·n_bins   the mel filter bank
//! i32   token count, then per token: i32 length, bytes
//! per tensor, until the end of the file:
//!   i32 n_dims, i32 name length, i32 type (0 f32, 1 f16, 8 q8_0)
//!   i32 × n_dims   dimensions, innermost first
//!   name bytes (no NUL), then the data
//! ```
//!
//! `ftype` says which type the big matrices have: 1 for f16, and for q8_0
//! 7 + 1000 × the quantisation format version (2), i.e. 2007. There is no
//! padding or alignment anywhere: the loader reads the records one after
//! the other and finds tensors by name, so their order does not matter.

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use super::layout::HParams;
use super::mel::MelFilters;
use super::q8_0;

/// `"ggml"` read as a little-endian u32.
pub const GGML_MAGIC: u32 = 0x6767_6d6c;
/// ggml's quantisation format version, encoded into `ftype`.
pub const QNT_VERSION: i32 = 2;
/// `ftype = base + QNT_VERSION_FACTOR × QNT_VERSION` for quantised models.
pub const QNT_VERSION_FACTOR: i32 = 1000;

/// The type of a model's big matrices: what the converter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    /// IEEE half floats: the weights exactly as packaged (77.7 MB for tiny).
    F16,
    /// 8-bit blocks with an f16 scale: about 0.4 % error, 43.6 MB for tiny.
    Q8_0,
}

impl GgmlType {
    /// The `ftype` header value.
    pub fn ftype(self) -> i32 {
        match self {
            GgmlType::F16 => 1,
            GgmlType::Q8_0 => 7 + QNT_VERSION_FACTOR * QNT_VERSION,
        }
    }

    /// The type for an `ftype` header value (any quantisation version).
    pub fn from_ftype(ftype: i32) -> Option<GgmlType> {
        match ftype.rem_euclid(QNT_VERSION_FACTOR) {
            1 => Some(GgmlType::F16),
            7 => Some(GgmlType::Q8_0),
            _ => None,
        }
    }

    /// The tensor type of the big matrices.
    pub fn weight_type(self) -> TensorType {
        match self {
            GgmlType::F16 => TensorType::F16,
            GgmlType::Q8_0 => TensorType::Q8_0,
        }
    }

    /// `"f16"` or `"q8_0"`.
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F16 => "f16",
            GgmlType::Q8_0 => "q8_0",
        }
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GgmlType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f16" | "fp16" | "float16" => Ok(GgmlType::F16),
            "q8_0" | "q8" => Ok(GgmlType::Q8_0),
            other => Err(format!(
                "unknown model type {other:?} (expected q8_0 or f16)"
            )),
        }
    }
}

/// The type of one tensor in a ggml file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorType {
    F32,
    F16,
    Q8_0,
}

impl TensorType {
    /// ggml's type code.
    pub fn code(self) -> i32 {
        match self {
            TensorType::F32 => 0,
            TensorType::F16 => 1,
            TensorType::Q8_0 => 8,
        }
    }

    /// The type for a ggml type code we know.
    pub fn from_code(code: i32) -> Option<TensorType> {
        match code {
            0 => Some(TensorType::F32),
            1 => Some(TensorType::F16),
            8 => Some(TensorType::Q8_0),
            _ => None,
        }
    }

    /// Bytes taken by a tensor of `n_values` values whose innermost
    /// dimension is `row_len`; `None` if q8_0 rows do not split into blocks.
    pub fn data_len(self, n_values: usize, row_len: usize) -> Option<usize> {
        match self {
            TensorType::F32 => n_values.checked_mul(4),
            TensorType::F16 => n_values.checked_mul(2),
            TensorType::Q8_0 if row_len.is_multiple_of(q8_0::BLOCK_VALUES) => {
                q8_0::encoded_len(n_values)
            }
            TensorType::Q8_0 => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TensorType::F32 => "f32",
            TensorType::F16 => "f16",
            TensorType::Q8_0 => "q8_0",
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn too_big(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} does not fit a 32-bit field"),
    )
}

fn i32_of(v: usize, what: &str) -> io::Result<i32> {
    i32::try_from(v).map_err(|_| too_big(what))
}

/// Writes a ggml file record by record, counting bytes.
#[derive(Debug)]
pub struct GgmlWriter<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> GgmlWriter<W> {
    pub fn new(out: W) -> Self {
        GgmlWriter { out, written: 0 }
    }

    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn i32(&mut self, v: i32) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    /// The magic and the hyper-parameters.
    pub fn header(&mut self, hp: &HParams, kind: GgmlType) -> io::Result<()> {
        self.bytes(&GGML_MAGIC.to_le_bytes())?;
        for v in hp.in_file_order().into_iter().chain([kind.ftype()]) {
            self.i32(v)?;
        }
        Ok(())
    }

    /// The mel filter bank.
    pub fn mel_filters(&mut self, f: &MelFilters) -> io::Result<()> {
        self.i32(i32_of(f.n_mels, "the mel band count")?)?;
        self.i32(i32_of(f.n_bins, "the FFT bin count")?)?;
        let mut buf = Vec::new();
        super::f16::push_f32(&f.data, &mut buf);
        self.bytes(&buf)
    }

    /// The ordinary tokens, as raw bytes.
    pub fn vocabulary(&mut self, tokens: &[Vec<u8>]) -> io::Result<()> {
        self.i32(i32_of(tokens.len(), "the token count")?)?;
        for t in tokens {
            self.i32(i32_of(t.len(), "a token length")?)?;
            self.bytes(t)?;
        }
        Ok(())
    }

    /// One tensor: `shape` outermost first (it is written reversed), `data`
    /// already encoded as `ty`.
    pub fn tensor(
        &mut self,
        name: &str,
        shape: &[usize],
        ty: TensorType,
        data: &[u8],
    ) -> io::Result<()> {
        let n: usize = shape.iter().product();
        let row = shape.last().copied().unwrap_or(1);
        if ty.data_len(n, row) != Some(data.len()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "tensor {name}: {} bytes of data for {ty} shape {shape:?}",
                    data.len()
                ),
            ));
        }
        self.i32(i32_of(shape.len(), "a rank")?)?;
        self.i32(i32_of(name.len(), "a tensor name length")?)?;
        self.i32(ty.code())?;
        for &d in shape.iter().rev() {
            self.i32(i32_of(d, "a dimension")?)?;
        }
        self.bytes(name.as_bytes())?;
        self.bytes(data)
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The underlying writer (flush it yourself).
    pub fn into_inner(self) -> W {
        self.out
    }
}
