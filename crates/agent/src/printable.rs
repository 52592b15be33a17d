//! Caller text made safe to keep and to show.
//!
//! What a recogniser hears, or a script says, goes into the call's log,
//! its record, the dashboard, the operator's terminal (`calls show`,
//! `transcript`, `agenda`) and the LLM. None of those may receive control
//! characters (an ESC starts a terminal escape sequence; a NUL or a
//! backspace rewrites what the operator sees) or bidirectional overrides
//! (text that displays in another order than it reads). So the engine
//! takes every caller line through [`printable`] before it keeps it: each
//! control character becomes a space, each bidi control is left out, and
//! the words stay as they were.

/// Unicode's bidirectional formatting characters: marks, embeddings,
/// overrides and isolates (UAX #9).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Whether `text` has nothing printable: [`printable`] of it is empty
/// (checked without building it: every interim transcript asks).
pub fn is_blank(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_control() || c.is_whitespace() || is_bidi_control(c))
}

/// `text` without control characters (C0, DEL, C1: each becomes a space)
/// and without bidirectional controls, every run of white space one space,
/// trimmed.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if is_bidi_control(c) {
            continue;
        }
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' {
            if !space && !out.is_empty() {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// `text` (many lines, laid out) made safe for a terminal: as
/// [`printable`], but line breaks kept and spacing left as it is (columns
/// stay aligned). For what prints stored text — a record written before
/// caller lines were cleaned on the way in, or a database edited by hand,
/// still cannot reach the operator's terminal as escapes. Borrowed when
/// there is nothing to change.
pub fn printable_text(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n') || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if unsafe_char(c) { ' ' } else { c })
        .collect::<String>()
        .into()
}

/// Whether a log line must not carry `c` as it is: a control character
/// other than a line break or a tab, a bidi control, or one of Unicode's
/// own line and paragraph separators (a log reader would split there).
fn unloggable(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || is_bidi_control(c)
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every character a log must not carry written out as a
/// `\uXXXX` escape, as JSON writes them — so nothing is lost (the log
/// still says what came in) and nothing reaches a terminal or a collector
/// as a control. Line breaks and tabs stay. Borrowed when there is nothing
/// to change.
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(unloggable) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out.into()
}

/// Push `c` onto `out`, as a `\uXXXX` escape when a log must not carry it.
pub fn push_escaped(out: &mut String, c: char) {
    if unloggable(c) {
        use std::fmt::Write;
        let _ = write!(out, "\\u{:04x}", c as u32);
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laid_out_text_keeps_its_lines_and_columns_and_loses_escapes() {
        let table = "call id    phone\nCA1        +1512\n";
        assert!(matches!(
            printable_text(table),
            std::borrow::Cow::Borrowed(_)
        ));
        let raw = "Caller: \u{1b}[2Jmy AC\u{7}  is \u{202E}out\nAgent: ok\r\n";
        assert_eq!(
            printable_text(raw),
            "Caller:  [2Jmy AC   is out\nAgent: ok \n"
        );
    }

    #[test]
    fn escapes_controls_and_bidi_overrides_never_survive() {
        let raw = "\u{1b}[31mmy AC\u{1b}[0m is\u{0}out \u{202E}evil\u{202C} \u{2066}x\u{2069}\u{7f}\u{9b}2J\r\nok";
        let clean = printable(raw);
        assert_eq!(clean, "[31mmy AC [0m is out evil x 2J ok");
        assert!(!clean.chars().any(|c| c.is_control() || is_bidi_control(c)));
    }

    #[test]
    fn a_log_gets_every_control_written_out() {
        assert!(matches!(
            escaped("a line\twith a tab\nand a break"),
            std::borrow::Cow::Borrowed(_)
        ));
        let raw = "\u{1b}[2Jmy AC\u{7}\r\u{0} \u{202E}out\u{9b}1m\u{2028}x";
        let out = escaped(raw);
        assert_eq!(
            out,
            "\\u001b[2Jmy AC\\u0007\\u000d\\u0000 \\u202eout\\u009b1m\\u2028x"
        );
        assert!(!out.chars().any(unloggable));
        // Inside a JSON string the escapes read back as what came in.
        let back: String = serde_json::from_str(&format!("\"{out}\"")).unwrap();
        assert_eq!(back, raw);
    }

    #[test]
    fn ordinary_speech_is_unchanged() {
        for s in [
            "my AC stopped cooling last night",
            "It's 78745.",
            "Señor Núñez — 2 p.m.?",
            "出租车",
        ] {
            assert_eq!(printable(s), s);
        }
        assert_eq!(printable("  spaced   out\t words "), "spaced out words");
        assert_eq!(printable("\u{1b}\u{7}"), "");
        assert_eq!(printable("no\u{a0}break\u{2003}em"), "no break em");
        for blank in ["", " \t", "\u{1b}\u{7}", "\u{a0}\u{202E}", "\r\n\u{9b}"] {
            assert!(is_blank(blank) && printable(blank).is_empty(), "{blank:?}");
        }
        for words in ["a", "\u{1b}[", " \u{202E}x "] {
            assert!(
                !is_blank(words) && !printable(words).is_empty(),
                "{words:?}"
            );
        }
    }
}
