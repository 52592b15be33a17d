//! The scan of one sentence: negation scopes, and how each hazard mention
//! is read.

use super::hazard::{hazard_at, Hazard};
use super::sentence::Sentence;
use super::words::*;
use super::{Mention, Reading};
use crate::keywords::NO_SIGNALS;

/// An open negation.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Scope {
    /// The scope has negated a hazard already.
    pub(super) covered: bool,
    /// Just after "don't think": the next subject stays inside the scope.
    pub(super) raised: bool,
}

#[derive(Debug, Default)]
pub(super) struct Scan {
    pub(super) mentions: Vec<Mention>,
    pub(super) general_no: bool,
    /// A one-word NO signal in answer position.
    pub(super) answered_no: bool,
    /// A statement with a negation and no hazard of its own ("there weren't
    /// any"): the answer to an echoed question ("sparks?").
    pub(super) bare_negation: bool,
}

impl Scan {
    pub(super) fn sentence(&mut self, s: &Sentence<'_>) {
        let mentions_before = self.mentions.len();
        let mut negated_somewhere = false;
        self.words(s, &mut negated_somewhere);
        if negated_somewhere && !s.question && self.mentions.len() == mentions_before {
            self.bare_negation = true;
        }
    }

    fn words(&mut self, s: &Sentence<'_>, negated_somewhere: &mut bool) {
        let w: Vec<&str> = s.words.iter().map(|w| w.text).collect();
        let mut scope: Option<Scope> = None;
        // A negator earlier in the sentence (for "any smoke").
        let mut negative_context = false;
        let mut i = 0;
        while i < w.len() {
            let word = w[i];
            let next = w.get(i + 1).copied();
            let before_pause = s.words.get(i + 1).is_none_or(|n| n.after_comma);
            if (i == 0 || before_pause) && NO_SIGNALS.contains(&word) && !(i == 0 && s.question) {
                self.answered_no = true;
            }

            // Commas and "and": the list goes on only with another hazard,
            // negator or "any…".
            if s.words[i].after_comma && scope.is_some() && !continues_list(&w, i, false) {
                scope = None;
            }
            if word == "and" || word == "&" {
                if scope.is_some() && !continues_list(&w, i + 1, false) {
                    scope = None;
                }
                i += 1;
                continue;
            }
            if word == "or" {
                if scope.is_some() && !continues_list(&w, i + 1, true) {
                    scope = None;
                }
                i += 1;
                continue;
            }
            // "not smoke exactly, more like a burning smell": a correction.
            if in_list(CONTRAST_WORDS, word) || (word == "more" && next == Some("like")) {
                scope = None;
                negative_context = false;
                i += 1;
                continue;
            }
            if in_list(DOUBT_WORDS, word) {
                scope = None;
                negative_context = false;
                i += 1;
                continue;
            }
            if in_list(ANSWER_PARTICLES, word) && before_pause {
                // "No, smoke is coming out": an answer, then a statement.
                scope = None;
                i += 1;
                continue;
            }
            if is_negator(word) {
                // "I don't (even / really) know": doubt.
                let doubt_at = if matches!(next, Some("even" | "really")) {
                    i + 2
                } else {
                    i + 1
                };
                if w.get(doubt_at)
                    .is_some_and(|n| in_list(DOUBT_AFTER_NEGATOR, n))
                {
                    // "I don't know", "not sure": doubt, not negation.
                    scope = None;
                    negative_context = false;
                    i = doubt_at + 1;
                    continue;
                }
                if minimizes(&w, i + 1) {
                    // "not a lot of smoke", "not much": less, not none.
                    i += 1;
                    continue;
                }
                let raised = next.is_some_and(|n| in_list(NEG_RAISERS, n));
                *negated_somewhere = true;
                scope = Some(Scope {
                    covered: false,
                    raised,
                });
                negative_context = true;
                i += if raised { 2 } else { 1 };
                continue;
            }
            if in_list(SUBJECTS, word) {
                match scope.as_mut() {
                    Some(sc) if sc.raised => sc.raised = false,
                    _ => scope = None,
                }
                i += 1;
                continue;
            }
            if in_list(DETERMINERS, word)
                && scope.is_some_and(|sc| sc.covered)
                && !i
                    .checked_sub(1)
                    .is_some_and(|p| in_list(PREPOSITIONS, w[p]))
            {
                scope = None;
                i += 1;
                continue;
            }
            if let Some(sc) = scope.as_mut() {
                sc.raised = false;
                if in_list(SMELL_CUES, word)
                    || (in_list(PERCEPTION, word) && mentions_anything(&w, i + 1))
                {
                    // "I don't smell anything", "haven't noticed anything".
                    self.general_no = true;
                }
            }
            if (word == "nothing" || word == "none") && follows_general(next) {
                self.general_no = true;
            }

            let Some(hazard) = hazard_at(&w, i) else {
                i += 1;
                continue;
            };
            let (reading, len) = match hazard {
                Hazard::Equipment => (Reading::Equipment, 1),
                Hazard::BareGas if s.question => (Reading::Questioned, 1),
                Hazard::BareGas if scope.is_some() => (Reading::Negated, 1),
                Hazard::BareGas => (Reading::Equipment, 1),
                Hazard::Danger { len } => {
                    let reading = if s.question {
                        Reading::Questioned
                    } else if scope.is_some()
                        || (negative_context && npi_near(&w, i, len))
                        || negated_after(s, i + len)
                    {
                        Reading::Negated
                    } else {
                        Reading::Asserted
                    };
                    (reading, len)
                }
            };
            if reading == Reading::Negated {
                if let Some(sc) = scope.as_mut() {
                    sc.covered = true;
                }
            }
            self.mentions.push(Mention {
                word: w[i..i + len].join(" "),
                reading,
            });
            i += len;
        }
    }
}

/// Whether the list goes on at `w[i]` under a negation: another hazard, a
/// negator or "any…" (after "or" also "a", "some", "something", "like", a
/// smell word).
pub(super) fn continues_list(w: &[&str], i: usize, after_or: bool) -> bool {
    let Some(&next) = w.get(i) else {
        return true;
    };
    if next == "or" || next == "nor" || next == "and" {
        return continues_list(w, i + 1, true);
    }
    in_list(LIST_CONTINUERS, next)
        || is_negator(next)
        || hazard_at(w, i).is_some()
        || (after_or && in_list(OR_CONTINUERS, next))
}

/// A negated auxiliary within three words after a hazard, in the same
/// clause: "smoke isn't coming out", "the CO alarm never went off".
pub(super) fn negated_after(s: &Sentence<'_>, from: usize) -> bool {
    let w: Vec<&str> = s.words.iter().map(|w| w.text).collect();
    for k in from..(from + 3).min(w.len()) {
        let x = w[k];
        if s.words[k].after_comma
            || in_list(SUBJECTS, x)
            || in_list(CONTRAST_WORDS, x)
            || matches!(x, "and" | "or")
            || hazard_at(&w, k).is_some()
        {
            return false;
        }
        if is_negated_aux(&w, k) {
            return true;
        }
    }
    false
}

/// "anything", "a thing", "nothing" within the next three words.
pub(super) fn mentions_anything(w: &[&str], from: usize) -> bool {
    w.iter()
        .skip(from)
        .take(3)
        .any(|x| matches!(*x, "anything" | "nothing" | "thing" | "any"))
}

/// "nothing unusual", "none of that", "nothing at all".
pub(super) fn follows_general(next: Option<&str>) -> bool {
    matches!(
        next,
        None | Some(
            "unusual"
                | "weird"
                | "strange"
                | "odd"
                | "funny"
                | "like"
                | "of"
                | "at"
                | "whatsoever"
                | "wrong"
                | "dangerous"
                | "else"
                | "there"
                | "here"
        )
    )
}

/// "any smoke", "anything burning", "smoke at all", "smoke either".
pub(super) fn npi_near(w: &[&str], i: usize, len: usize) -> bool {
    let before = w[i.saturating_sub(2)..i]
        .iter()
        .any(|x| in_list(NPI_WORDS, x));
    let after = w
        .iter()
        .skip(i + len)
        .take(2)
        .any(|x| matches!(*x, "either" | "whatsoever" | "anywhere" | "at"));
    before || after
}
