//! The caller's name: "my name is …", "this is …", a bare name answer.

use super::*;

pub(super) const NAME_STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "my",
    "your",
    "our",
    "his",
    "her",
    "their",
    "is",
    "am",
    "are",
    "was",
    "were",
    "be",
    "been",
    "calling",
    "call",
    "called",
    "having",
    "have",
    "has",
    "had",
    "just",
    "not",
    "about",
    "from",
    "with",
    "here",
    "there",
    "so",
    "and",
    "but",
    "or",
    "because",
    "yes",
    "yeah",
    "yep",
    "no",
    "nope",
    "ok",
    "okay",
    "um",
    "uh",
    "umm",
    "uhh",
    "hmm",
    "well",
    "hi",
    "hello",
    "hey",
    "sure",
    "going",
    "gonna",
    "trying",
    "looking",
    "wondering",
    "still",
    "also",
    "really",
    "very",
    "actually",
    "ac",
    "a/c",
    "heat",
    "heater",
    "furnace",
    "unit",
    "system",
    "thermostat",
    "it",
    "its",
    "it's",
    "that",
    "that's",
    "this",
    "what",
    "who",
    "why",
    "how",
    "when",
    "where",
    "i",
    "i'm",
    "me",
    "we",
    "you",
    "they",
    "he",
    "she",
    "in",
    "on",
    "at",
    "to",
    "for",
    "of",
    "by",
    "urgent",
    "ridiculous",
    "crazy",
    "terrible",
    "bad",
    "awful",
    "annoying",
    "frustrating",
    "important",
    "serious",
    "weird",
    "strange",
    "great",
    "good",
    "fine",
    "perfect",
    "correct",
    "right",
    "wrong",
    "broken",
    "hot",
    "cold",
    "warm",
    "second",
    "third",
    "first",
    "last",
    "again",
    "regarding",
    "concerning",
    "like",
    "kind",
    "sort",
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "new",
    "old",
    "all",
    "some",
    "any",
    "an",
    "emergency",
    "probably",
    "definitely",
    "maybe",
    "sorry",
    "thanks",
    "thank",
    "please",
    "speaking",
    "customer",
    "homeowner",
    "owner",
    "tenant",
    "landlord",
    "someone",
    "somebody",
    "needing",
    "need",
    "wanting",
    "want",
    "getting",
    "trane",
    "carrier",
    "lennox",
    "rheem",
    "goodman",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "zero",
    "oh",
    "gas",
    "smoke",
    "burning",
    "fire",
    "nothing",
    "none",
    "nobody",
    "totally",
    "completely",
    "kinda",
];

/// Everyday one-word answers and time words that are never a name.
pub(super) const NOT_A_NAME: &[&str] = &[
    "absolutely",
    "exactly",
    "awesome",
    "cool",
    "alright",
    "morning",
    "afternoon",
    "evening",
    "tonight",
    "today",
    "tomorrow",
    "yesterday",
    "whenever",
    "anytime",
    "weekdays",
    "weekend",
    "asap",
    "soon",
    "soonest",
    "later",
    "never",
    "nah",
    "yup",
    "uh-huh",
    "mhm",
    "true",
    "bye",
    "goodbye",
    "nothing",
    "everything",
    "anything",
    "something",
    "same",
    "week",
    "month",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "cooling",
    "heating",
    "leaking",
    "noise",
    "water",
    "air",
    "fan",
    "repair",
    "service",
    "maintenance",
    "quote",
    "estimate",
    "billing",
    "warranty",
    "cancel",
    "reschedule",
    "appointment",
    "following",
    "follow",
    "checking",
    "callback",
    "correct",
    "sounds",
    "great",
    "done",
    "street",
    "road",
    "avenue",
    "lane",
    "drive",
    "zip",
    "code",
    "address",
    "phone",
    "number",
    "help",
    "hold",
    "wait",
    "what",
    "huh",
    "pardon",
    "sorry",
    "repeat",
    "again",
    "it's",
    "outside",
    "inside",
    "home",
    "house",
    "upstairs",
    "downstairs",
    "attic",
    "basement",
    "both",
    "either",
    "neither",
    "none",
    "sure",
    "yes",
    "no",
    "ok",
    "okay",
    "fine",
    "gotcha",
    "understood",
    "excellent",
    "wonderful",
    "lovely",
    "cheers",
    "wow",
    "oops",
    "seriously",
    "what's",
    "ah",
    "ahh",
    "mm",
    "mmm",
    "hmm",
    "right",
    "yup",
    "affirmative",
    "negative",
];

pub(super) fn name_word_ok(t: &Tok) -> bool {
    !NOT_A_NAME.contains(&t.low.as_str())
        && !t.low.is_empty()
        && t.low
            .chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-')
        && t.low.chars().next().is_some_and(char::is_alphabetic)
        && !NAME_STOP.contains(&t.low.as_str())
        && t.raw.chars().count() <= 30
}

/// Name candidate after a pattern ending at `i` (exclusive) in `line`.
pub(super) fn name_after(line: &[Tok], i: usize, strong: bool) -> Option<String> {
    let first = line.get(i)?;
    if !name_word_ok(first) {
        return None;
    }
    let prev_ends = i > 0 && line.get(i - 1).is_some_and(|t| t.ends_clause);
    let next = line.get(i + 1);
    if !strong {
        // "this is X" / "i'm X": X must look like a name.
        let capital = starts_upper(&first.raw) && !prev_ends;
        let clause_end = first.ends_clause
            || match next {
                None => true,
                Some(t) => ["speaking", "calling", "here", "from"].contains(&t.low.as_str()),
            };
        if !(capital || clause_end) {
            return None;
        }
    }
    let mut name = capitalize(&first.raw);
    if !first.ends_clause {
        if let Some(second) = next {
            let last_of_line = i + 2 == line.len();
            let second_ok = name_word_ok(second)
                && (starts_upper(&second.raw) && starts_upper(&first.raw)
                    || (strong && last_of_line));
            if second_ok {
                name.push(' ');
                name.push_str(&capitalize(&second.raw));
            }
        }
    }
    Some(name)
}

pub(super) fn low_seq_at(line: &[Tok], i: usize, seq: &[&str]) -> bool {
    seq.iter()
        .enumerate()
        .all(|(k, w)| line.get(i + k).is_some_and(|t| t.low == *w))
}

pub(super) fn find_name(lines: &[Vec<Tok>]) -> String {
    // (pattern, strong, requires "speaking" after the name)
    const PATTERNS: &[(&[&str], bool, bool)] = &[
        (&["my", "name", "is"], true, false),
        (&["my", "name's"], true, false),
        (&["name", "is"], true, false),
        (&["name's"], true, false),
        (&["it's"], true, true),
        (&["it", "is"], true, true),
        (&["this", "is"], false, false),
        (&["i'm"], false, false),
        (&["i", "am"], false, false),
    ];
    for line in lines {
        for i in 0..line.len() {
            for (pat, strong, needs_speaking) in PATTERNS {
                if !low_seq_at(line, i, pat) {
                    continue;
                }
                let at = i + pat.len();
                let speaking_follows = line.get(at + 1).is_some_and(|t| t.low == "speaking");
                if *needs_speaking && !speaking_follows {
                    continue;
                }
                // "i'm" / "i am": capitalised name only, never a clause end alone.
                if pat.first() == Some(&"i'm") || pat.first() == Some(&"i") {
                    let capital = line
                        .get(at)
                        .is_some_and(|t| starts_upper(&t.raw) && name_word_ok(t));
                    if !capital {
                        continue;
                    }
                }
                if let Some(n) = name_after(line, at, *strong) {
                    let v = validate_name(&n);
                    if !v.is_empty() {
                        return v;
                    }
                }
            }
        }
    }
    // A short answer that is just a name ("Jonas", "It's Jonas Berg"),
    // never the opening line (that is the reason for calling).
    lines
        .iter()
        .skip(1)
        .rev()
        .find_map(|l| bare_name(l))
        .unwrap_or_default()
}

pub(super) const NAME_LEAD_FILLER: &[&str] = &[
    "yeah", "yes", "sure", "it's", "its", "it", "is", "this", "i'm", "um", "uh", "oh", "ok",
    "okay", "name", "my", "name's", "the", "so", "well",
];

pub(super) fn bare_name(line: &[Tok]) -> Option<String> {
    let start = line
        .iter()
        .position(|t| !NAME_LEAD_FILLER.contains(&t.low.as_str()))?;
    let rest = line.get(start..)?;
    if rest.is_empty() || rest.len() > 3 || !rest.iter().all(name_word_ok) {
        return None;
    }
    if rest.iter().any(|t| t.raw.chars().count() < 2) {
        return None;
    }
    let name = rest
        .iter()
        .map(|t| capitalize(&t.raw))
        .collect::<Vec<_>>()
        .join(" ");
    let v = validate_name(&name);
    (!v.is_empty()).then_some(v)
}
