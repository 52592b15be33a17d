//! A checked little-endian reader over a byte slice.
//!
//! Both input formats we parse (CTranslate2's `model.bin` and, for
//! verification, whisper.cpp's ggml file) are untrusted bytes: a file can be
//! truncated, corrupted or simply something else. Every read here checks the
//! remaining length first and returns [`ConvertError::Truncated`] instead of
//! panicking, and nothing is ever allocated from a length field without first
//! checking that the bytes it describes are really there — so a corrupt
//! "4 billion variables" count costs nothing.

use super::error::ConvertError;

/// A position in a byte slice, advancing as values are read.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Which file this is, for error messages ("model.bin", "ggml model").
    file: &'static str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], file: &'static str) -> Self {
        Cursor {
            bytes,
            pos: 0,
            file,
        }
    }

    /// Offset of the next byte to read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, or `Truncated` naming `what` was being read.
    pub(crate) fn take(
        &mut self,
        n: usize,
        what: &dyn Fn() -> String,
    ) -> Result<&'a [u8], ConvertError> {
        if n > self.remaining() {
            return Err(ConvertError::Truncated {
                file: self.file,
                what: what(),
                offset: self.pos as u64,
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(
        &mut self,
        what: &dyn Fn() -> String,
    ) -> Result<[u8; N], ConvertError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &dyn Fn() -> String) -> Result<u8, ConvertError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &dyn Fn() -> String) -> Result<u16, ConvertError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, ConvertError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &dyn Fn() -> String) -> Result<i32, ConvertError> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    /// A `Malformed` error at the current offset.
    pub(crate) fn malformed(&self, reason: impl Into<String>) -> ConvertError {
        ConvertError::Malformed {
            file: self.file,
            offset: self.pos as u64,
            reason: reason.into(),
        }
    }
}

/// `what` for reads whose description is a fixed string.
pub(crate) fn fixed(s: &'static str) -> impl Fn() -> String {
    move || s.to_string()
}
