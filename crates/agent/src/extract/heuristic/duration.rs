//! How long the problem has lasted ("since yesterday", "for three days").

use super::*;

pub(super) const QUANTITIES: &[&str] = &[
    "a",
    "an",
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
    "eleven",
    "twelve",
    "few",
    "couple",
    "several",
    "a few",
    "a couple",
    "a couple of",
    "couple of",
    "about a",
    "about two",
    "like a",
    "like two",
    "over a",
    "almost a",
    "a whole",
];

pub(super) const DURATION_UNITS: &[&str] = &[
    "minute", "minutes", "hour", "hours", "day", "days", "night", "nights", "week", "weeks",
    "month", "months", "year", "years",
];

pub(super) const SINCE_WORDS: &[&str] = &[
    "yesterday",
    "last",
    "this",
    "the",
    "night",
    "morning",
    "afternoon",
    "evening",
    "week",
    "weekend",
    "month",
    "year",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "summer",
    "winter",
    "christmas",
];

pub(super) fn quantity_unit_at(words: &[&str], i: usize) -> Option<(String, usize)> {
    // Longest quantity phrase (1-3 words) followed by a unit.
    for qlen in (1..=3).rev() {
        let Some(q) = words.get(i..i + qlen) else {
            continue;
        };
        let qs = q.join(" ");
        let is_q = QUANTITIES.contains(&qs.as_str())
            || (qlen == 1
                && !qs.is_empty()
                && qs.len() <= 3
                && qs.bytes().all(|b| b.is_ascii_digit()));
        if !is_q {
            continue;
        }
        if let Some(u) = words.get(i + qlen) {
            if DURATION_UNITS.contains(u) {
                return Some((format!("{qs} {u}"), i + qlen + 1));
            }
        }
    }
    None
}

pub(super) fn duration_in_clause(low: &str) -> Option<String> {
    let words: Vec<&str> = low
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
        .filter(|w| !w.is_empty())
        .collect();
    for i in 0..words.len() {
        let w = words.get(i).copied().unwrap_or("");
        match w {
            "since" => {
                let mut tail = Vec::new();
                for x in words.iter().skip(i + 1).take(3) {
                    if SINCE_WORDS.contains(x) {
                        tail.push(*x);
                    } else {
                        break;
                    }
                }
                if tail.iter().any(|x| !["the", "this", "last"].contains(x)) {
                    return Some(format!("since {}", tail.join(" ")));
                }
            }
            "for" | "been" | "about" | "over" => {
                if let Some((q, _)) = quantity_unit_at(&words, i + 1) {
                    return Some(if w == "for" { format!("for {q}") } else { q });
                }
            }
            "all" => {
                if let Some(u) = words.get(i + 1) {
                    if ["day", "night", "week", "weekend", "morning"].contains(u) {
                        return Some(format!("all {u}"));
                    }
                }
            }
            _ => {
                if let Some((q, next)) = quantity_unit_at(&words, i) {
                    if let Some(a) = words.get(next) {
                        if *a == "ago" || *a == "now" {
                            return Some(format!("{q} {a}"));
                        }
                    }
                }
            }
        }
    }
    // "it stopped working yesterday" → since yesterday.
    let broke = has_any(
        low,
        &[
            "stopped",
            "started",
            "broke",
            "went out",
            "quit",
            "died",
            "began",
            "happened",
            "went down",
        ],
    );
    if broke {
        for when in [
            "last night",
            "yesterday",
            "this morning",
            "this afternoon",
            "today",
        ] {
            if find_phrase(low, when).is_some() {
                return Some(format!("since {when}"));
            }
        }
    }
    None
}

pub(super) fn find_duration(lines: &[&str]) -> String {
    for line in lines {
        for clause in split_clauses(line) {
            if let Some(d) = duration_in_clause(&normalize_lower(&clause)) {
                return d;
            }
        }
    }
    String::new()
}
