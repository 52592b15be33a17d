//! Cutting a long line of speech into text-to-speech requests (sans-IO),
//! for every voice that limits the text of one request.
//!
//! Both of our voices take at most 2,000 characters a request — Inworld
//! ([`crate::inworld::MAX_CHARS`]) and Deepgram Aura
//! ([`crate::deepgram::aura::MAX_TEXT_CHARS`]) — and both speak a longer
//! line as several requests in order. [`split_text`] makes the pieces: each
//! within the limit, cut preferably at the end of a sentence in the second
//! half of the window (so no piece is needlessly short), else at the last
//! space, and inside a word only when one word alone is longer than the
//! limit. Cuts fall on `char` boundaries; pieces are trimmed and never
//! empty, so the words of the pieces, in order, are the words of the text
//! (except a word longer than the limit, which is cut into pieces of at
//! most the limit). Nothing but whitespace is lost.
//!
//! A sentence ends at `.`, `!`, `?`, `…`, `;` or `:` before whitespace,
//! also with a closing quote or bracket after the stop (`"Stop." Then`).
//! A line break is whitespace like any other: a word boundary, not by
//! itself the end of a sentence.

/// Characters that end a sentence (a cut after one, before whitespace, is
/// preferred).
fn ends_sentence(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | ';' | ':')
}

/// Characters that may close a sentence after its stop (`"Stop."` then a
/// quote or bracket).
fn closes(c: char) -> bool {
    matches!(c, '"' | '\'' | '”' | '’' | ')' | ']' | '»')
}

/// Split `text` into trimmed, non-empty pieces of at most `max_chars`
/// characters each (`max_chars` of 0 counts as 1). Whitespace-only text
/// gives no piece.
pub fn split_text(text: &str, max_chars: usize) -> Vec<String> {
    let max = max_chars.max(1);
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        // Byte index just after the first `max` characters, if the rest is
        // longer than that.
        let Some((limit, _)) = rest.char_indices().nth(max) else {
            pieces.push(rest.to_string());
            break;
        };
        let cut = cut_point(rest, limit, max);
        let (piece, tail) = rest.split_at(cut);
        let piece = piece.trim_end();
        if !piece.is_empty() {
            pieces.push(piece.to_string());
        }
        rest = tail.trim_start();
    }
    pieces
}

/// Where to cut `rest` (longer than `max` characters; `limit` is the byte
/// index after the first `max` characters): a byte index in `1..=limit` on
/// a `char` boundary.
fn cut_point(rest: &str, limit: usize, max: usize) -> usize {
    let window = &rest[..limit];
    let mut last_space = None;
    let mut last_sentence = None;
    // The last two non-space characters before the current position.
    let mut prev: [Option<char>; 2] = [None, None];
    let mut consider = |at: usize, chars: usize, prev: &[Option<char>; 2]| {
        if at == 0 {
            return;
        }
        last_space = Some(at);
        let stop = match prev {
            [Some(p), Some(q)] if closes(*q) => ends_sentence(*p),
            [_, Some(q)] => ends_sentence(*q),
            _ => false,
        };
        if stop && chars >= max / 2 {
            last_sentence = Some(at);
        }
    };
    for (chars, (i, c)) in window.char_indices().enumerate() {
        if c.is_whitespace() {
            consider(i, chars, &prev);
            prev = [None, None];
        } else {
            prev = [prev[1], Some(c)];
        }
    }
    // The window ends right before whitespace: its end is a word boundary.
    if rest[limit..].starts_with(char::is_whitespace) {
        consider(limit, max, &prev);
    }
    last_sentence.or(last_space).unwrap_or(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inworld's and Aura's limit (the same 2,000 characters).
    const MAX_CHARS: usize = crate::inworld::MAX_CHARS;

    #[test]
    fn both_voices_limit_requests_to_2000_characters() {
        assert_eq!(crate::inworld::MAX_CHARS, 2000);
        assert_eq!(crate::deepgram::aura::MAX_TEXT_CHARS, 2000);
    }

    fn words(pieces: &[String]) -> Vec<&str> {
        pieces.iter().flat_map(|p| p.split_whitespace()).collect()
    }

    #[test]
    fn short_text_is_one_trimmed_piece_and_blank_text_none() {
        assert_eq!(split_text("  Hello there.  ", 2000), ["Hello there."]);
        assert!(split_text("", 2000).is_empty());
        assert!(split_text(" \n\t ", 2000).is_empty());
        assert!(split_text("  \n ", 10).is_empty());
        assert_eq!(split_text("exactly", 7), ["exactly"]);
    }

    #[test]
    fn prefers_a_sentence_end_in_the_second_half() {
        let text = "One two three four. Five six seven. Eight nine.";
        let p = split_text(text, 30);
        assert_eq!(p, ["One two three four.", "Five six seven. Eight nine."]);
        assert_eq!(
            split_text("One two three. Four five six seven.", 20),
            ["One two three.", "Four five six seven."]
        );
        // A sentence end in the first half is not worth a short piece.
        let p = split_text("Hi. one two three four five six seven", 20);
        assert_eq!(p[0], "Hi. one two three");
        assert_eq!(
            words(&p),
            text_words("Hi. one two three four five six seven")
        );
        assert_eq!(
            split_text("Hi. aaaa bbbb cccc", 14),
            ["Hi. aaaa bbbb", "cccc"]
        );
        // Closing quotes count with their stop.
        let p = split_text("He said \"stop.\" Then we left the house", 24);
        assert_eq!(p[0], "He said \"stop.\"");
    }

    fn text_words(t: &str) -> Vec<&str> {
        t.split_whitespace().collect()
    }

    #[test]
    fn cuts_at_words_and_inside_only_overlong_words() {
        let p = split_text("aaaa bbbb cccc", 9);
        assert_eq!(p, ["aaaa bbbb", "cccc"]);
        assert_eq!(split_text("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        let p = split_text("abcdefghij kl", 4);
        assert_eq!(p, ["abcd", "efgh", "ij", "kl"]);
        for piece in &p {
            assert!(piece.chars().count() <= 4);
        }
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        assert_eq!(split_text("héllo wörld", 6), ["héllo", "wörld"]);
        let text = "温度温度温度 ééééé 😀😀😀😀😀😀😀";
        for max in 1..12 {
            let p = split_text(text, max);
            for piece in &p {
                assert!(!piece.is_empty());
                assert!(piece.chars().count() <= max, "{max}: {piece:?}");
            }
            assert_eq!(p.concat().replace(' ', ""), text.replace(' ', ""));
        }
    }

    #[test]
    fn a_long_line_splits_under_the_limit_keeping_every_word() {
        let sentence = "The technician will arrive between eight and ten tomorrow morning. ";
        let text = sentence.repeat(70);
        assert!(text.chars().count() > MAX_CHARS * 2);
        let p = split_text(&text, MAX_CHARS);
        assert!(p.len() >= 3, "{}", p.len());
        for piece in &p {
            assert!(piece.chars().count() <= MAX_CHARS);
            assert!(piece.ends_with('.'), "cut at a sentence end: {piece:?}");
        }
        assert_eq!(words(&p), text_words(&text));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 3000,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Word-shaped text (quotes, emoji) and character soup (CJK, `…`,
        /// `;`, line breaks), with limits from 1 to 59 characters.
        #[test]
        fn pieces_are_bounded_nonempty_and_keep_the_words(
            text in proptest::prop_oneof![
                "([a-zé😀.!?\"]{0,12}[ \n\t]{0,3}){0,40}",
                "[a-zé温 .!?;…\n\t]{0,300}",
            ],
            max in 1usize..60,
        ) {
            let p = split_text(&text, max);
            for piece in &p {
                proptest::prop_assert!(!piece.is_empty());
                proptest::prop_assert!(piece.chars().count() <= max);
                proptest::prop_assert_eq!(piece.trim(), piece.as_str());
            }
            // Joined, the pieces are the text's words (overlong words are
            // cut, so compare without spaces too).
            let original: String = text.split_whitespace().collect();
            let joined: String = words(&p).concat();
            proptest::prop_assert_eq!(joined, original);
            if text.split_whitespace().all(|w| w.chars().count() <= max) {
                proptest::prop_assert_eq!(words(&p), text_words(&text));
            }
        }
    }
}
