//! Every phrase list of [`super::acts`] matched in one pass over the words
//! of an utterance.
//!
//! Testing twenty lists of phrases one `contains` at a time costs tens of
//! microseconds per utterance; the engine's budget for a whole utterance is
//! 20 µs at p99. So the lists are compiled once into one table keyed by a
//! phrase's first word, and an utterance is read word by word: at each word
//! only the phrases that start with it are compared. The result is the set
//! of lists that matched, and where.
//!
//! Words are split the same way for phrases and utterances: letters, digits
//! and apostrophes make a word ("don't", "i'll"); anything else — spaces,
//! commas, hyphens — separates words, so "bye-bye" matches "bye bye" and
//! "never mind, bye" matches "never mind bye".

use std::collections::HashMap;
use std::sync::OnceLock;

/// One phrase list (see [`super::acts`] for what each holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum List {
    Yes,
    FirmYes,
    Softener,
    No,
    Correction,
    Goodbye,
    TalkTo,
    Person,
    Boss,
    Decline,
    CallMe,
    Repeat,
    Reschedule,
    Cancel,
    Status,
    Appointment,
    MissedCallback,
    Sales,
    Billing,
    Job,
    WrongNumber,
    HasAppointment,
    MoveTo,
}

/// The lists, each with its phrases.
pub(super) type Source = &'static [(List, &'static [&'static str])];

/// The words of a text as phrases are split.
pub(super) fn words(lower: &str) -> impl Iterator<Item = &str> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
}

/// The compiled table: first word → (the rest of the phrase, its list).
pub(super) struct Lexicon {
    by_first: HashMap<&'static str, Vec<(Vec<&'static str>, List)>>,
}

impl Lexicon {
    pub(super) fn new(source: Source) -> Self {
        let mut by_first: HashMap<&'static str, Vec<(Vec<&'static str>, List)>> = HashMap::new();
        for (list, phrases) in source {
            for phrase in *phrases {
                let mut w = words(phrase);
                let Some(first) = w.next() else { continue };
                by_first
                    .entry(first)
                    .or_default()
                    .push((w.collect(), *list));
            }
        }
        Lexicon { by_first }
    }

    /// The table of `source`, compiled on first use.
    pub(super) fn get(cell: &'static OnceLock<Lexicon>, source: Source) -> &'static Lexicon {
        cell.get_or_init(|| Lexicon::new(source))
    }

    /// Every list that has a phrase in `words`, with where it starts.
    pub(super) fn scan(&self, words: &[&str]) -> Hits {
        let mut hits = Hits::default();
        for (i, w) in words.iter().enumerate() {
            let Some(cands) = self.by_first.get(w) else {
                continue;
            };
            for (rest, list) in cands {
                if words[i + 1..].starts_with(rest) {
                    hits.add(*list, i);
                }
            }
        }
        hits
    }
}

/// Which lists matched (a bit each), and at which word each match starts
/// (for the few rules that need it).
#[derive(Debug, Clone, Default)]
pub(super) struct Hits {
    lists: u32,
    starts: Vec<(List, usize)>,
}

impl Hits {
    fn add(&mut self, list: List, at: usize) {
        self.lists |= 1 << list as u8;
        self.starts.push((list, at));
    }

    /// A phrase of `list` was said.
    pub(super) fn has(&self, list: List) -> bool {
        self.lists & (1 << list as u8) != 0
    }

    /// Where phrases of `list` start.
    pub(super) fn at(&self, list: List) -> impl Iterator<Item = usize> + '_ {
        self.starts
            .iter()
            .filter(move |(l, _)| *l == list)
            .map(|(_, i)| *i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: Source = &[
        (List::Goodbye, &["bye", "never mind, bye", "gotta go"]),
        (List::Yes, &["yes", "sounds good"]),
    ];

    #[test]
    fn phrases_match_as_whole_words() {
        static CELL: OnceLock<Lexicon> = OnceLock::new();
        let lex = Lexicon::get(&CELL, SOURCE);
        let scan = |s: &str| lex.scan(&words(s).collect::<Vec<_>>());
        assert!(scan("ok bye-bye").has(List::Goodbye));
        assert!(scan("never mind bye").has(List::Goodbye));
        assert!(!scan("the bypass valve").has(List::Goodbye));
        assert!(!scan("eyes").has(List::Yes));
        let h = scan("that sounds good, gotta go");
        assert!(h.has(List::Yes) && h.has(List::Goodbye));
        assert_eq!(h.at(List::Goodbye).collect::<Vec<_>>(), vec![3]);
    }
}
