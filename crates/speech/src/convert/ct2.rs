//! Reading CTranslate2's `model.bin`.
//!
//! CTranslate2 (the engine behind faster-whisper) stores a model as one flat
//! list of named arrays ("variables"). The file, all little endian:
//!
//! ```text
//! u32     binary version          4 to 6 here (older ones sized items differently)
//! string  spec name               "WhisperSpec"
//! u32     spec revision
//! u32     number of variables
//! per variable:
//!   string  name                  e.g. "encoder/layer_0/ffn/linear_0/weight"
//!   u8      rank
//!   u32     × rank  shape         outermost first (row-major, like PyTorch)
//!   u8      dtype                 0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16
//!   u32     byte count
//!   bytes   data
//! u32     number of aliases       (version ≥ 3)
//! per alias: string alias, string target   e.g. the output projection
//!                                          is the token embedding
//!
//! string = u16 length (including a trailing NUL), then the bytes
//! ```
//!
//! Scalars (rank 0) carry settings, e.g. `encoder/num_heads` is an i16.
//! The parser borrows the data from the file's bytes (no copies) and
//! checks, for every variable, that shape × item size equals the byte count.

use std::collections::HashMap;

use super::bytes::{fixed, Cursor};
use super::error::ConvertError;

/// Oldest binary version whose variable records we read.
pub const MIN_BINARY_VERSION: u32 = 4;
/// Newest binary version we know (CTranslate2 4.x writes 6).
pub const MAX_BINARY_VERSION: u32 = 6;

const FILE: &str = "model.bin";

/// A CTranslate2 data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    BF16,
}

impl Ct2Dtype {
    /// The type for a code in `model.bin`.
    pub fn from_code(code: u8) -> Option<Ct2Dtype> {
        Some(match code {
            0 => Ct2Dtype::F32,
            1 => Ct2Dtype::I8,
            2 => Ct2Dtype::I16,
            3 => Ct2Dtype::I32,
            4 => Ct2Dtype::F16,
            5 => Ct2Dtype::BF16,
            _ => return None,
        })
    }

    /// Its code in `model.bin`.
    pub fn code(self) -> u8 {
        match self {
            Ct2Dtype::F32 => 0,
            Ct2Dtype::I8 => 1,
            Ct2Dtype::I16 => 2,
            Ct2Dtype::I32 => 3,
            Ct2Dtype::F16 => 4,
            Ct2Dtype::BF16 => 5,
        }
    }

    /// Bytes per item.
    pub fn size(self) -> usize {
        match self {
            Ct2Dtype::I8 => 1,
            Ct2Dtype::I16 | Ct2Dtype::F16 | Ct2Dtype::BF16 => 2,
            Ct2Dtype::F32 | Ct2Dtype::I32 => 4,
        }
    }

    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Ct2Dtype::F32 => "float32",
            Ct2Dtype::I8 => "int8",
            Ct2Dtype::I16 => "int16",
            Ct2Dtype::I32 => "int32",
            Ct2Dtype::F16 => "float16",
            Ct2Dtype::BF16 => "bfloat16",
        }
    }
}

/// One named array of `model.bin`, borrowing its data from the file.
#[derive(Debug, Clone)]
pub struct Ct2Variable<'a> {
    pub name: String,
    /// Outermost dimension first; empty for a scalar.
    pub shape: Vec<usize>,
    pub dtype: Ct2Dtype,
    /// Exactly `shape.product() * dtype.size()` bytes.
    pub data: &'a [u8],
}

impl<'a> Ct2Variable<'a> {
    /// Number of items (1 for a scalar).
    pub fn len(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    /// Whether it holds no items.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The values as f32 (from f32, f16 or bf16 data).
    pub fn to_f32(&self) -> Result<Vec<f32>, ConvertError> {
        match self.dtype {
            Ct2Dtype::F32 => Ok(super::f16::le_f32(self.data)),
            Ct2Dtype::F16 => Ok(super::f16::f16_to_f32(self.data)),
            Ct2Dtype::BF16 => Ok(super::f16::bf16_to_f32(self.data)),
            other => Err(ConvertError::UnsupportedDtype {
                name: self.name.clone(),
                dtype: other.name(),
                expected: "float32, float16 or bfloat16",
            }),
        }
    }

    /// Part `part` of `parts` equal slices along the outermost dimension,
    /// e.g. the key rows of a stacked query/key/value projection. `None` if
    /// the outermost dimension does not split evenly (or `part >= parts`).
    pub fn split(&self, part: usize, parts: usize) -> Option<Ct2Variable<'a>> {
        let rows = *self.shape.first()?;
        if parts == 0 || part >= parts || !rows.is_multiple_of(parts) {
            return None;
        }
        let len = self.data.len() / parts;
        let mut shape = self.shape.clone();
        shape[0] = rows / parts;
        Some(Ct2Variable {
            name: self.name.clone(),
            shape,
            dtype: self.dtype,
            data: self.data.get(part * len..(part + 1) * len)?,
        })
    }

    /// The value of an integer scalar (or one-item array).
    pub fn to_int(&self) -> Result<i64, ConvertError> {
        let d = self.data;
        let v = match (self.dtype, d.len()) {
            (Ct2Dtype::I8, 1) => i64::from(d[0] as i8),
            (Ct2Dtype::I16, 2) => i64::from(i16::from_le_bytes([d[0], d[1]])),
            (Ct2Dtype::I32, 4) => i64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]])),
            (Ct2Dtype::I8 | Ct2Dtype::I16 | Ct2Dtype::I32, _) => {
                return Err(ConvertError::ShapeMismatch {
                    name: self.name.clone(),
                    expected: vec![],
                    found: self.shape.clone(),
                })
            }
            (other, _) => {
                return Err(ConvertError::UnsupportedDtype {
                    name: self.name.clone(),
                    dtype: other.name(),
                    expected: "an integer",
                })
            }
        };
        Ok(v)
    }
}

/// A parsed `model.bin`.
#[derive(Debug, Clone)]
pub struct Ct2Model<'a> {
    pub binary_version: u32,
    /// The model kind, e.g. `"WhisperSpec"`.
    pub spec: String,
    pub spec_revision: u32,
    variables: Vec<Ct2Variable<'a>>,
    index: HashMap<String, usize>,
    /// Alias name → variable name.
    aliases: HashMap<String, String>,
}

impl<'a> Ct2Model<'a> {
    /// Parses the bytes of a `model.bin`. Never panics; every inconsistency
    /// is an error.
    pub fn parse(bytes: &'a [u8]) -> Result<Ct2Model<'a>, ConvertError> {
        let mut c = Cursor::new(bytes, FILE);
        let binary_version = c.u32(&fixed("the binary version"))?;
        if !(MIN_BINARY_VERSION..=MAX_BINARY_VERSION).contains(&binary_version) {
            return Err(ConvertError::UnsupportedVersion {
                found: binary_version,
                min: MIN_BINARY_VERSION,
                max: MAX_BINARY_VERSION,
            });
        }
        let spec = read_string(&mut c, "the spec name")?;
        let spec_revision = c.u32(&fixed("the spec revision"))?;
        let count = c.u32(&fixed("the variable count"))?;

        // No `with_capacity(count)`: the count is untrusted. Each record
        // takes at least 8 bytes, so the loop is bounded by the file length.
        let mut variables = Vec::new();
        let mut index = HashMap::new();
        for i in 0..count {
            let var = read_variable(&mut c, i)?;
            if index.insert(var.name.clone(), variables.len()).is_some() {
                return Err(c.malformed(format!("variable {:?} appears twice", var.name)));
            }
            variables.push(var);
        }

        // Versions 3 and up end with the alias table.
        let mut aliases = HashMap::new();
        let n = c.u32(&fixed("the alias count"))?;
        for _ in 0..n {
            let alias = read_string(&mut c, "an alias name")?;
            let target = read_string(&mut c, "an alias target")?;
            aliases.insert(alias, target);
        }
        Ok(Ct2Model {
            binary_version,
            spec,
            spec_revision,
            variables,
            index,
            aliases,
        })
    }

    /// All variables, in file order.
    pub fn variables(&self) -> &[Ct2Variable<'a>] {
        &self.variables
    }

    /// The variable called `name` (or that `name` is an alias of).
    pub fn get(&self, name: &str) -> Option<&Ct2Variable<'a>> {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => *self.index.get(self.aliases.get(name)?)?,
        };
        self.variables.get(i)
    }

    /// Like [`get`](Self::get), but a missing variable is an error.
    pub fn require(&self, name: &str) -> Result<&Ct2Variable<'a>, ConvertError> {
        self.get(name).ok_or_else(|| ConvertError::MissingVariable {
            name: name.to_string(),
        })
    }

    /// `require` plus a check of the shape.
    pub fn require_shape(
        &self,
        name: &str,
        shape: &[usize],
    ) -> Result<&Ct2Variable<'a>, ConvertError> {
        let v = self.require(name)?;
        if v.shape != shape {
            return Err(ConvertError::ShapeMismatch {
                name: name.to_string(),
                expected: shape.to_vec(),
                found: v.shape.clone(),
            });
        }
        Ok(v)
    }
}

/// A CTranslate2 string: u16 length including the trailing NUL, then bytes.
fn read_string(c: &mut Cursor<'_>, what: &'static str) -> Result<String, ConvertError> {
    let len = c.u16(&|| format!("the length of {what}"))?;
    let raw = c.take(usize::from(len), &|| what.to_string())?;
    let raw = raw.split(|&b| b == 0).next().unwrap_or(raw);
    String::from_utf8(raw.to_vec()).map_err(|_| c.malformed(format!("{what} is not UTF-8")))
}

fn read_variable<'a>(c: &mut Cursor<'a>, i: u32) -> Result<Ct2Variable<'a>, ConvertError> {
    let name = read_string(c, "a variable name")?;
    let at = |what: &'static str| {
        let name = name.clone();
        move || format!("{what} of variable {name:?} (#{i})")
    };
    let rank = c.u8(&at("the rank"))?;
    let mut shape = Vec::with_capacity(usize::from(rank));
    for _ in 0..rank {
        let d = c.u32(&at("the shape"))?;
        shape
            .push(usize::try_from(d).map_err(|_| c.malformed("dimension does not fit in memory"))?);
    }
    let code = c.u8(&at("the data type"))?;
    let dtype = Ct2Dtype::from_code(code).ok_or_else(|| ConvertError::UnknownDtype {
        name: name.clone(),
        code,
    })?;
    let n_bytes = c.u32(&at("the byte count"))?;
    let n_bytes =
        usize::try_from(n_bytes).map_err(|_| c.malformed("byte count does not fit in memory"))?;
    let expected = shape
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| c.malformed(format!("shape {shape:?} of variable {name:?} overflows")))?;
    if expected != n_bytes {
        return Err(c.malformed(format!(
            "variable {name:?} has shape {shape:?} of {} ({expected} bytes) but declares {n_bytes} bytes",
            dtype.name()
        )));
    }
    let data = c.take(n_bytes, &at("the data"))?;
    Ok(Ct2Variable {
        name,
        shape,
        dtype,
        data,
    })
}
