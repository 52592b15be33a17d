//! The preferred time: when the caller wants the visit.

use super::*;

pub(super) const TIME_PHRASES: &[&str] = &[
    "as soon as possible",
    "as soon as you can",
    "day after tomorrow",
    "tomorrow morning",
    "tomorrow afternoon",
    "tomorrow evening",
    "later this week",
    "early next week",
    "sometime next week",
    "later today",
    "this morning",
    "this afternoon",
    "this evening",
    "this week",
    "next week",
    "this weekend",
    "the weekend",
    "right away",
    "right now",
    "same day",
    "first thing",
    "no rush",
    "any time",
    "asap",
    "soonest",
    "today",
    "tonight",
    "tomorrow",
    "whenever",
    "anytime",
    "weekend",
    "morning",
    "afternoon",
    "evening",
    "mornings",
    "afternoons",
];

pub(super) const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Words that make a clause about the past (duration), not a preference.
pub(super) const PAST_MARKERS: &[&str] = &[
    "since",
    "ago",
    "started",
    "stopped",
    "broke",
    "began",
    "been",
    "went",
    "quit",
    "died",
    "was",
    "happened",
    "yesterday",
    "gas",
    "smoke",
    "smell",
    "burning",
];

pub(super) fn time_in_clause(low: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    let mut consider = |pos: usize, text: String| {
        let better = match &best {
            None => true,
            Some((p, t)) => pos < *p || (pos == *p && text.len() > t.len()),
        };
        if better {
            best = Some((pos, text));
        }
    };
    // Only weekdays that occur at all are expanded into phrases.
    for d in WEEKDAYS.iter().filter(|d| low.contains(*d)) {
        for q in ["next ", "this ", ""] {
            for part in [" morning", " afternoon", " evening", ""] {
                let phrase = format!("{q}{d}{part}");
                if let Some(p) = find_phrase(low, &phrase) {
                    consider(p, phrase);
                }
            }
        }
    }
    for ph in TIME_PHRASES.iter().filter(|ph| low.contains(*ph)) {
        if let Some(p) = find_phrase(low, ph) {
            consider(p, (*ph).to_string());
        }
    }
    let (pos, text) = best?;
    // "not today", "not right now": not a preference.
    let before_word = low
        .get(..pos)
        .and_then(|b| b.split_whitespace().next_back())
        .unwrap_or("");
    if ["not", "nothing", "no"].contains(&before_word) {
        return None;
    }
    Some(if text == "asap" {
        "ASAP".to_string()
    } else {
        text
    })
}

pub(super) fn find_preferred_time(lines: &[&str]) -> String {
    for line in lines.iter().rev() {
        for clause in split_clauses(line) {
            let low = normalize_lower(&clause);
            if has_any(&low, PAST_MARKERS) {
                continue;
            }
            if let Some(t) = time_in_clause(&low) {
                return t;
            }
        }
    }
    String::new()
}
