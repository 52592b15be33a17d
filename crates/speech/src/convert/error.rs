//! Everything that can go wrong while converting or checking a model.
//!
//! Each variant says which file and which piece was at fault, so the CLI can
//! print the error as is and a person can act on it.

use std::io;
use std::path::PathBuf;

/// Why a conversion (or a ggml check) failed.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// An input file (`model.bin`, `vocabulary.txt`) or directory is not there.
    #[error("{what} not found at {}: {source}", path.display())]
    MissingFile {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// Reading or writing a file failed for another reason.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// `model.bin` was written by a CTranslate2 format we do not read.
    #[error(
        "unsupported CTranslate2 binary version {found} (this converter reads versions {min} to {max}); \
         is this really a CTranslate2 model.bin?"
    )]
    UnsupportedVersion { found: u32, min: u32, max: u32 },

    /// `model.bin` is a CTranslate2 model of something other than Whisper.
    #[error("not a Whisper model: the CTranslate2 spec is {found:?}, expected \"WhisperSpec\"")]
    NotWhisper { found: String },

    /// A ggml file does not start with the `ggml` magic number.
    #[error("not a ggml model: magic is {found:#010x}, expected {expected:#010x} (\"ggml\")")]
    BadMagic { found: u32, expected: u32 },

    /// The file ended in the middle of something.
    #[error("{file} is truncated: {what} needs {needed} bytes at offset {offset}, only {available} left")]
    Truncated {
        file: &'static str,
        what: String,
        offset: u64,
        needed: u64,
        available: u64,
    },

    /// The bytes are there but make no sense (bad length, duplicate name...).
    #[error("{file} is malformed at offset {offset}: {reason}")]
    Malformed {
        file: &'static str,
        offset: u64,
        reason: String,
    },

    /// A CTranslate2 variable has a data type code we do not know.
    #[error("variable {name:?} has unknown data type code {code}")]
    UnknownDtype { name: String, code: u8 },

    /// A CTranslate2 variable has a known data type we cannot use there
    /// (for example an int8-quantised weight).
    #[error("variable {name:?} is {dtype}; expected {expected}")]
    UnsupportedDtype {
        name: String,
        dtype: &'static str,
        expected: &'static str,
    },

    /// A variable the name mapping needs is not in `model.bin`.
    #[error("variable {name:?} is missing from model.bin")]
    MissingVariable { name: String },

    /// A variable has a different shape from the one the model needs.
    #[error("variable {name:?} has shape {found:?}, expected {expected:?}")]
    ShapeMismatch {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },

    /// The hyper-parameters read from the shapes are unusable.
    #[error("invalid hyper-parameters: {0}")]
    HyperParameters(String),

    /// A line of `vocabulary.txt` is not a byte-level BPE token.
    #[error("vocabulary.txt line {line}: {reason}")]
    Vocabulary { line: usize, reason: String },

    /// A weight cannot be stored as q8_0 (blocks of 32 along each row).
    #[error("tensor {name:?} cannot be stored as q8_0: its rows have {row_len} values, not a multiple of 32")]
    NotQuantizable { name: String, row_len: usize },

    /// A ggml file parses, but is not the model whisper.cpp expects.
    #[error("the ggml model does not match what whisper.cpp loads: {0}")]
    Layout(String),
}
