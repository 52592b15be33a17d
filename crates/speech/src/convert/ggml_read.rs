//! Reading a whisper.cpp ggml model back, and checking it is what
//! whisper.cpp's loader accepts.
//!
//! The converter uses this to verify its own output before installing it;
//! tests use it to look inside; and `calllock doctor` can use
//! [`GgmlModel::open`] + [`GgmlModel::validate`] to tell a good model file
//! from a truncated download or a file of the wrong kind — without loading
//! whisper.cpp.
//!
//! Like the CTranslate2 parser, it reads untrusted bytes: every length is
//! checked against what is left of the file before it is used.

use std::collections::HashMap;
use std::path::Path;

use super::bytes::{fixed, Cursor};
use super::error::ConvertError;
use super::ggml::{GgmlType, TensorType, GGML_MAGIC};
use super::layout::{whisper_tensors, HParams};
use super::mel::MelFilters;

const FILE: &str = "ggml model";
/// whisper.cpp computes spectrograms with a 400-point FFT: 201 bins.
const WHISPER_BINS: usize = 201;

/// Where one tensor is in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgmlTensorInfo {
    pub name: String,
    /// Dimensions as stored: innermost first (`[in, out]` for a linear).
    pub ne: Vec<usize>,
    pub ty: TensorType,
    /// Byte offset of the data in the file.
    pub offset: usize,
    /// Byte length of the data.
    pub len: usize,
}

impl GgmlTensorInfo {
    /// Dimensions outermost first (PyTorch order).
    pub fn shape(&self) -> Vec<usize> {
        self.ne.iter().rev().copied().collect()
    }
}

/// A parsed ggml model file (the bytes are kept, tensors point into them).
#[derive(Debug, Clone)]
pub struct GgmlModel {
    pub hparams: HParams,
    /// The raw `ftype` header value (1 for f16, 2007 for q8_0).
    pub ftype: i32,
    pub mel_filters: MelFilters,
    /// The ordinary tokens, as bytes.
    pub vocab: Vec<Vec<u8>>,
    /// Tensors in file order.
    pub tensors: Vec<GgmlTensorInfo>,
    bytes: Vec<u8>,
}

impl GgmlModel {
    /// Reads and parses the file at `path`.
    pub fn open(path: &Path) -> Result<GgmlModel, ConvertError> {
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ConvertError::MissingFile {
                what: "ggml model",
                path: path.to_path_buf(),
                source: e,
            },
            _ => ConvertError::Io {
                action: "read",
                path: path.to_path_buf(),
                source: e,
            },
        })?;
        GgmlModel::parse(bytes)
    }

    /// Parses the bytes of a ggml model file. Never panics.
    pub fn parse(bytes: Vec<u8>) -> Result<GgmlModel, ConvertError> {
        let mut c = Cursor::new(&bytes, FILE);
        let magic = c.u32(&fixed("the magic"))?;
        if magic != GGML_MAGIC {
            return Err(ConvertError::BadMagic {
                found: magic,
                expected: GGML_MAGIC,
            });
        }
        let mut h = [0i32; 11];
        for v in &mut h {
            *v = c.i32(&fixed("the hyper-parameters"))?;
        }
        let hparams = HParams {
            n_vocab: h[0],
            n_audio_ctx: h[1],
            n_audio_state: h[2],
            n_audio_head: h[3],
            n_audio_layer: h[4],
            n_text_ctx: h[5],
            n_text_state: h[6],
            n_text_head: h[7],
            n_text_layer: h[8],
            n_mels: h[9],
        };
        let ftype = h[10];
        let mel_filters = read_mel(&mut c)?;
        let vocab = read_vocab(&mut c)?;
        let mut tensors = Vec::new();
        while c.remaining() > 0 {
            tensors.push(read_tensor(&mut c)?);
        }
        Ok(GgmlModel {
            hparams,
            ftype,
            mel_filters,
            vocab,
            tensors,
            bytes,
        })
    }

    /// The weight type `ftype` names, if it is one we write.
    pub fn kind(&self) -> Option<GgmlType> {
        GgmlType::from_ftype(self.ftype)
    }

    /// Size of the file in bytes.
    pub fn file_len(&self) -> usize {
        self.bytes.len()
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&GgmlTensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The raw data of a tensor of this file.
    pub fn data(&self, t: &GgmlTensorInfo) -> &[u8] {
        self.bytes.get(t.offset..t.offset + t.len).unwrap_or(&[])
    }

    /// The values of tensor `name` as f32 (dequantised if q8_0).
    pub fn values(&self, name: &str) -> Result<Vec<f32>, ConvertError> {
        let t = self
            .tensor(name)
            .ok_or_else(|| ConvertError::Layout(format!("no tensor {name:?}")))?;
        let data = self.data(t);
        Ok(match t.ty {
            TensorType::F32 => super::f16::le_f32(data),
            TensorType::F16 => super::f16::f16_to_f32(data),
            // The parser checked the length is whole blocks.
            TensorType::Q8_0 => super::q8_0::dequantize(data).unwrap_or_default(),
        })
    }

    /// Checks the file is a model whisper.cpp loads: a weight type we know,
    /// consistent hyper-parameters, Whisper's mel bank size, and exactly the
    /// tensors the loader asks for, with their shapes and types.
    pub fn validate(&self) -> Result<(), ConvertError> {
        let bad = |m: String| Err(ConvertError::Layout(m));
        let Some(kind) = self.kind() else {
            return bad(format!(
                "ftype {} is neither f16 (1) nor q8_0 (2007)",
                self.ftype
            ));
        };
        let hp = &self.hparams;
        let all = hp.in_file_order();
        if all.iter().any(|&v| v <= 0) {
            return bad(format!("a hyper-parameter is not positive: {hp:?}"));
        }
        if hp.n_audio_state != hp.n_text_state {
            return bad(format!(
                "encoder width {} differs from decoder width {}",
                hp.n_audio_state, hp.n_text_state
            ));
        }
        if hp.n_audio_state % hp.n_audio_head != 0 || hp.n_text_state % hp.n_text_head != 0 {
            return bad("a head count does not divide the width".into());
        }
        let mel = &self.mel_filters;
        if i64::try_from(mel.n_mels).ok() != Some(i64::from(hp.n_mels))
            || mel.n_bins != WHISPER_BINS
        {
            return bad(format!(
                "mel filters are {}×{}, expected {}×{WHISPER_BINS}",
                mel.n_mels, mel.n_bins, hp.n_mels
            ));
        }
        if self.vocab.len() > usize::try_from(hp.n_vocab).unwrap_or(0) {
            return bad(format!(
                "{} tokens for a vocabulary of {}",
                self.vocab.len(),
                hp.n_vocab
            ));
        }

        // The layer counts are untrusted: listing the tensors they imply
        // must not cost much more than the file itself. Small differences
        // are left to the name-by-name check, which says what is missing.
        let want = 7 + 15 * i64::from(hp.n_audio_layer) + 4 + 24 * i64::from(hp.n_text_layer);
        if want > self.tensors.len() as i64 + 1024 {
            return bad(format!(
                "{} tensors, but {} encoder and {} decoder layers need {want}",
                self.tensors.len(),
                hp.n_audio_layer,
                hp.n_text_layer
            ));
        }
        let mut seen: HashMap<&str, &GgmlTensorInfo> = HashMap::new();
        for t in &self.tensors {
            if seen.insert(t.name.as_str(), t).is_some() {
                return bad(format!("tensor {:?} appears twice", t.name));
            }
        }
        let expected = whisper_tensors(hp, kind);
        for spec in &expected {
            let Some(t) = seen.remove(spec.name.as_str()) else {
                return bad(format!("tensor {:?} is missing", spec.name));
            };
            if t.shape() != spec.shape || t.ty != spec.ty {
                return bad(format!(
                    "tensor {:?} is {} {:?}, whisper.cpp expects {} {:?}",
                    spec.name,
                    t.ty,
                    t.shape(),
                    spec.ty,
                    spec.shape
                ));
            }
        }
        if let Some(name) = seen.keys().next() {
            return bad(format!("unknown tensor {name:?}"));
        }
        Ok(())
    }
}

/// A non-negative i32 as usize.
fn count(c: &Cursor<'_>, v: i32, what: &str) -> Result<usize, ConvertError> {
    usize::try_from(v).map_err(|_| c.malformed(format!("{what} is negative ({v})")))
}

fn read_mel(c: &mut Cursor<'_>) -> Result<MelFilters, ConvertError> {
    let n_mels = c.i32(&fixed("the mel band count"))?;
    let n_bins = c.i32(&fixed("the FFT bin count"))?;
    let n_mels = count(c, n_mels, "the mel band count")?;
    let n_bins = count(c, n_bins, "the FFT bin count")?;
    let len = n_mels
        .checked_mul(n_bins)
        .and_then(|n| n.checked_mul(4))
        .ok_or_else(|| c.malformed("the mel filter bank size overflows"))?;
    let data = super::f16::le_f32(c.take(len, &fixed("the mel filter bank"))?);
    Ok(MelFilters {
        n_mels,
        n_bins,
        data,
    })
}

fn read_vocab(c: &mut Cursor<'_>) -> Result<Vec<Vec<u8>>, ConvertError> {
    let n = c.i32(&fixed("the token count"))?;
    let n = count(c, n, "the token count")?;
    // Not `with_capacity(n)`: each token takes at least 4 bytes of the
    // file, so growing as we go bounds memory by the file length.
    let mut tokens = Vec::new();
    for i in 0..n {
        let len = c.u32(&|| format!("the length of token {i}"))?;
        let len =
            usize::try_from(len).map_err(|_| c.malformed("token length does not fit in memory"))?;
        tokens.push(c.take(len, &|| format!("token {i}"))?.to_vec());
    }
    Ok(tokens)
}

fn read_tensor(c: &mut Cursor<'_>) -> Result<GgmlTensorInfo, ConvertError> {
    let n_dims = c.i32(&fixed("a tensor's rank"))?;
    let name_len = c.i32(&fixed("a tensor's name length"))?;
    let code = c.i32(&fixed("a tensor's type"))?;
    if !(1..=4).contains(&n_dims) {
        return Err(c.malformed(format!("tensor rank {n_dims} is not between 1 and 4")));
    }
    let ty = TensorType::from_code(code)
        .ok_or_else(|| c.malformed(format!("unknown tensor type {code}")))?;
    let mut ne = Vec::with_capacity(4);
    for _ in 0..n_dims {
        let d = c.i32(&fixed("a tensor's dimensions"))?;
        match usize::try_from(d) {
            Ok(d) if d > 0 => ne.push(d),
            _ => return Err(c.malformed(format!("tensor dimension {d} is not positive"))),
        }
    }
    let name_len = count(c, name_len, "a tensor name length")?;
    let name = c.take(name_len, &fixed("a tensor's name"))?;
    let name =
        String::from_utf8(name.to_vec()).map_err(|_| c.malformed("a tensor name is not UTF-8"))?;
    let n = ne
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| c.malformed(format!("tensor {name:?} is too large")))?;
    let row = ne.first().copied().unwrap_or(1);
    let len = ty.data_len(n, row).ok_or_else(|| {
        c.malformed(format!(
            "tensor {name:?}: {ty} needs rows that are a multiple of 32 values, not {row}"
        ))
    })?;
    let offset = c.pos();
    c.take(len, &|| format!("the data of tensor {name:?}"))?;
    Ok(GgmlTensorInfo {
        name,
        ne,
        ty,
        offset,
        len,
    })
}
