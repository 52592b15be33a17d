//! Splitting an utterance into sentences of words, the way triage reads it.

use super::words::{in_list, FILLERS, FILLER_PAIRS};
use crate::keywords::is_word_char;
use crate::validate::is_clause_punct;

/// A word and whether a comma came right before it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Word<'a> {
    pub(super) text: &'a str,
    pub(super) after_comma: bool,
}

/// One sentence: its words (fillers removed) and whether it is a question.
#[derive(Debug, Default)]
pub(super) struct Sentence<'a> {
    pub(super) words: Vec<Word<'a>>,
    pub(super) question: bool,
}

/// Split a lower-cased utterance into sentences (at clause punctuation
/// other than commas and quotes: `. ! ? ; :`, newlines, dashes, brackets);
/// words keep inner apostrophes ("don't"), a comma before a word is
/// remembered, fillers ("uh", "you know") are dropped.
pub(super) fn sentences(text: &str) -> Vec<Sentence<'_>> {
    let mut out = Vec::new();
    let mut cur = Sentence::default();
    let mut comma = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if is_word_char(c) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                let inner_apostrophe =
                    d == '\'' && text[j + 1..].chars().next().is_some_and(is_word_char);
                if is_word_char(d) || inner_apostrophe {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            cur.words.push(Word {
                text: &text[i..end],
                after_comma: comma,
            });
            comma = false;
        } else if c == ',' {
            comma = true;
        } else if is_clause_punct(c) && c != '"' {
            if !cur.words.is_empty() {
                cur.question = c == '?' || asks(&cur);
                out.push(finish(std::mem::take(&mut cur)));
            }
            comma = false;
        }
    }
    if !cur.words.is_empty() {
        cur.question = asks(&cur);
        out.push(finish(cur));
    }
    out
}

/// Drop fillers, keeping the comma mark on the word that follows them.
pub(super) fn finish(mut s: Sentence<'_>) -> Sentence<'_> {
    let mut words: Vec<Word<'_>> = Vec::with_capacity(s.words.len());
    let mut carry_comma = false;
    let mut i = 0;
    while i < s.words.len() {
        let w = s.words[i];
        // "you know", "I mean", "kind of": never "don't know".
        let pair = s
            .words
            .get(i + 1)
            .is_some_and(|n| FILLER_PAIRS.contains(&(w.text, n.text)));
        if pair {
            carry_comma |= w.after_comma;
            i += 2;
            continue;
        }
        if in_list(FILLERS, w.text) {
            carry_comma |= w.after_comma;
            i += 1;
            continue;
        }
        words.push(Word {
            text: w.text,
            after_comma: w.after_comma || carry_comma,
        });
        carry_comma = false;
        i += 1;
    }
    s.words = words;
    s
}

/// A sentence that opens like a yes/no question ("is the flame supposed to
/// be blue", "should I worry about smoke") is one, question mark or not.
/// ("Why is there smoke…" reports smoke: not counted.)
fn asks(s: &Sentence<'_>) -> bool {
    s.words.first().is_some_and(|w| {
        matches!(
            w.text,
            "is" | "are" | "does" | "do" | "should" | "could" | "can"
        )
    })
}
