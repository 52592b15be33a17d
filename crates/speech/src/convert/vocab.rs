//! Whisper's vocabulary: from `vocabulary.txt` to the raw bytes whisper.cpp
//! wants.
//!
//! Whisper uses GPT-2's *byte-level BPE*: every token is a sequence of raw
//! bytes (usually UTF-8 text, but a token may hold half of a multi-byte
//! character). To store such tokens as printable text, GPT-2 maps each of
//! the 256 byte values to one visible Unicode character:
//!
//! - the 188 bytes that are already visible Latin-1 characters (`!`..`~`,
//!   `¡`..`¬`, `®`..`ÿ`) stand for themselves;
//! - the other 68 (control characters, space, DEL, the no-break space and
//!   the soft hyphen) are given the characters U+0100, U+0101, … in byte
//!   order. So a space (0x20, the 33rd such byte) is `Ġ` (U+0120) and a
//!   newline (0x0A) is `Ċ` (U+010A): `"Ġhello"` is the token `" hello"`.
//!
//! CTranslate2's `vocabulary.txt` holds one token per line in that
//! encoding, by token id. whisper.cpp wants the decoded bytes, but only the
//! *ordinary* tokens: it numbers the special tokens (`<|endoftext|>`,
//! `<|startoftranscript|>`, languages, timestamps…) itself, starting at the
//! id right after the last ordinary token. So we write the lines before
//! `<|endoftext|>` — 50256 for English-only models, 50257 for multilingual
//! ones.

use super::error::ConvertError;

/// The token that ends the ordinary vocabulary.
pub const END_OF_TEXT: &str = "<|endoftext|>";

/// The 68 bytes that GPT-2 maps to U+0100 and up, in that order.
fn is_remapped(b: u8) -> bool {
    !matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The byte a GPT-2 byte-level character stands for, or `None` if the
/// character is not one of the 256.
pub fn unicode_to_byte(c: char) -> Option<u8> {
    char_to_byte(&remapped_table(), c)
}

/// The character GPT-2 uses for byte `b`.
pub fn byte_to_unicode(b: u8) -> char {
    if !is_remapped(b) {
        return char::from(b);
    }
    let n = (0..b).filter(|&x| is_remapped(x)).count() as u32;
    char::from_u32(256 + n).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The 68 remapped bytes in order: entry `n` is the byte U+0100 + n stands for.
fn remapped_table() -> Vec<u8> {
    (0..=255u8).filter(|&b| is_remapped(b)).collect()
}

fn char_to_byte(table: &[u8], c: char) -> Option<u8> {
    let code = u32::from(c);
    match u8::try_from(code) {
        Ok(b) => (!is_remapped(b)).then_some(b),
        Err(_) => table.get(usize::try_from(code - 256).ok()?).copied(),
    }
}

/// Decodes one byte-level BPE token into its bytes, or `None` if it holds a
/// character outside the 256.
pub fn decode_token(token: &str) -> Option<Vec<u8>> {
    decode_with(&remapped_table(), token)
}

fn decode_with(table: &[u8], token: &str) -> Option<Vec<u8>> {
    token.chars().map(|c| char_to_byte(table, c)).collect()
}

/// The ordinary tokens of a vocabulary, decoded to bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    /// Token `i` is `tokens[i]`: ids 0 to `tokens.len() - 1`.
    pub tokens: Vec<Vec<u8>>,
    /// All lines in the file, special tokens included.
    pub total_lines: usize,
    /// Whether an `<|endoftext|>` line ended the ordinary tokens (if not,
    /// every line was taken as ordinary).
    pub found_end_of_text: bool,
}

/// Parses the text of CTranslate2's `vocabulary.txt`.
///
/// Lines are separated by `\n` (a `\r` before it is dropped; byte-level BPE
/// never contains a raw `\r`). An empty line is an empty token — the
/// multilingual vocabulary has one. The ordinary tokens end at the first
/// [`END_OF_TEXT`] line.
pub fn parse_vocabulary(text: &str) -> Result<Vocabulary, ConvertError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return Err(ConvertError::Vocabulary {
            line: 1,
            reason: "the file is empty".into(),
        });
    }
    let table = remapped_table();
    let mut tokens = Vec::new();
    let mut total_lines = 0;
    let mut found_end_of_text = false;
    for (i, line) in body.split('\n').enumerate() {
        total_lines += 1;
        if found_end_of_text {
            continue;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == END_OF_TEXT {
            found_end_of_text = true;
            continue;
        }
        let bytes = decode_with(&table, line).ok_or_else(|| {
            let bad = line.chars().find(|&c| char_to_byte(&table, c).is_none());
            ConvertError::Vocabulary {
                line: i + 1,
                reason: format!(
                    "{line:?} is not a byte-level BPE token (character {:?} stands for no byte)",
                    bad.unwrap_or('?')
                ),
            }
        })?;
        tokens.push(bytes);
    }
    Ok(Vocabulary {
        tokens,
        total_lines,
        found_end_of_text,
    })
}
