//! Keyword / signal lists (SPEC §2.1, D-11) and the whole-word matcher of
//! SPEC §2.0.
//!
//! [`match_any`] lower-cases the text once and looks for each keyword with a
//! Python-`re` style `\b` on both sides: a word character is an alphanumeric
//! character or `_`; apostrophes and hyphens are *not* word characters, so
//! "no" matches "no-name" and "no," but not "not", "know" or "don't".
//! Keywords are taken literally (they are expected to be lower case already).
//!
//! Callers that test several lists against one utterance should build a
//! [`LowerText`] once and call [`LowerText::matches_any`] for each list.

use std::borrow::Cow;

// ---------------------------------------------------------------------------
// State-machine lists
// ---------------------------------------------------------------------------

/// The caller agrees to schedule (non_service / follow_up → safety).
pub const SCHEDULE_SIGNALS: &[&str] = &["yes", "yeah", "schedule", "book", "sure", "go ahead"];

/// The caller raises a new problem (follow_up / manage_booking → safety).
pub const NEW_ISSUE_SIGNALS: &[&str] = &[
    "new issue",
    "something else",
    "different problem",
    "also",
    "another",
];

/// A "no" to the safety question.
pub const NO_SIGNALS: &[&str] = &[
    "no",
    "nope",
    "nah",
    "nothing like that",
    "we're fine",
    "all good",
    "just not cooling",
    "just not heating",
];

/// The caller wants the soonest visit.
pub const URGENT_SIGNALS: &[&str] = &[
    "today",
    "asap",
    "right away",
    "as soon as",
    "emergency",
    "right now",
    "soonest",
];

/// The caller is flexible.
pub const ROUTINE_SIGNALS: &[&str] = &[
    "whenever",
    "this week",
    "next few days",
    "no rush",
    "not urgent",
];

/// Words that name a day or part of a day.
pub const TIME_PATTERNS: &[&str] = &[
    "tomorrow",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "morning",
    "afternoon",
    "evening",
    "following day",
    "next day",
];

/// A "yes" to the pre-confirm read-back.
pub const YES_SIGNALS: &[&str] = &[
    "yes",
    "yeah",
    "yep",
    "sounds right",
    "sounds good",
    "correct",
    "that's right",
    "go ahead",
];

/// Booking language that a terminal state's scoped reply must not contain.
pub const BOOKING_LANGUAGE: &[&str] = &[
    "appointment",
    "schedule",
    "book",
    "tech out",
    "available",
    "slot",
    "open",
];

// ---------------------------------------------------------------------------
// Validation lists
// ---------------------------------------------------------------------------

/// Service words (defined, not used for routing: "service" is the default).
pub const SERVICE_KEYWORDS: &[&str] = &[
    "ac",
    "heat",
    "furnace",
    "cooling",
    "heating",
    "broken",
    "noise",
    "leak",
    "thermostat",
    "unit",
    "system",
    "not working",
    "appointment",
    "booking",
    "schedule",
    "service",
    "someone to come out",
    "repair",
    "maintenance",
    "hvac",
    "air conditioning",
    "compressor",
    "duct",
    "not cooling",
    "not heating",
    "won't turn on",
    "stopped working",
];

/// Non-service callers (billing, warranty, vendors, job seekers, wrong
/// numbers). D-11: "job" and "apply" alone are replaced by applicant phrases.
pub const NON_SERVICE_KEYWORDS: &[&str] = &[
    "billing",
    "bill",
    "charge",
    "payment",
    "warranty",
    "invoice",
    "vendor",
    "supplier",
    "selling",
    "partnership",
    "parts supplier",
    "hiring",
    "job opening",
    "looking for a job",
    "apply for",
    "job application",
    "position",
    "employment",
    "wrong number",
];

/// Follow-up callers.
pub const FOLLOW_UP_KEYWORDS: &[&str] = &[
    "following up",
    "called before",
    "waiting for callback",
    "checking on",
    "any update",
    "called earlier",
    "still waiting",
];

/// Callers about an existing appointment.
pub const MANAGE_BOOKING_KEYWORDS: &[&str] = &[
    "my appointment",
    "reschedule",
    "cancel my",
    "cancel the",
    "change my appointment",
    "move my appointment",
];

/// Hazard words of the reference (D-3 refines how they are judged, see
/// [`crate::validate::safety_answer`]).
pub const SAFETY_KEYWORDS: &[&str] = &[
    "gas",
    "burning",
    "smoke",
    "co detector",
    "carbon monoxide",
    "sparks",
    "fire",
];

/// The caller takes back a hazard statement.
pub const SAFETY_RETRACTION_KEYWORDS: &[&str] = &[
    "never mind",
    "but don't worry",
    "actually no",
    "not the issue",
    "forget i said",
    "i'm fine",
    "we're okay",
    "no emergency",
    "that's not it",
    "not really",
];

/// Replacement / estimate words (high-ticket lead).
pub const HIGH_TICKET_POSITIVE: &[&str] = &[
    "new system",
    "new unit",
    "new ac",
    "new furnace",
    "replacement",
    "replace",
    "quote",
    "estimate",
    "how much for a new",
    "cost of a new",
    "upgrade",
    "whole new",
    "brand new",
    "installing a new",
];

/// Repair words that cancel a high-ticket match.
pub const HIGH_TICKET_NEGATIVE: &[&str] = &[
    "broken",
    "not working",
    "stopped working",
    "won't turn on",
    "cover",
    "part",
    "piece",
    "component",
    "noise",
    "leak",
    "smell",
    "drip",
    "tune-up",
    "check",
    "maintenance",
    "filter",
];

/// The caller asks to be called back instead of booking.
pub const CALLBACK_REQUEST_KEYWORDS: &[&str] = &[
    "call me back",
    "callback",
    "just call",
    "have someone call",
    "have the owner call",
    "don't want to schedule",
];

/// Third-party / property-manager callers (defined, unused by the flow).
pub const PROPERTY_MANAGER_KEYWORDS: &[&str] = &[
    "property manager",
    "property management",
    "landlord",
    "i manage",
    "managing properties",
    "rental property",
    "tenant",
    "calling on behalf",
    "the unit is at",
];

/// Placeholder values that mean "no value" (compared case-insensitively
/// after trimming).
pub const SENTINEL_VALUES: &[&str] = &[
    "not provided",
    "n/a",
    "na",
    "unknown",
    "none",
    "tbd",
    "{{customer_name}}",
    "{{zip_code}}",
    "{{service_address}}",
    "auto",
    "customer_name",
    "service_address",
];

/// The call-type enum of the LLM classification (SPEC §7.7).
pub const CALL_TYPE_ENUM: &[&str] = &[
    "SERVICE",
    "ESTIMATE",
    "MAINTENANCE",
    "EXISTING_CUSTOMER",
    "RETURNING_CONTACT",
    "COMPLAINT",
    "JOB_SEEKER",
    "VENDOR_SUPPLIER",
    "SPAM_JUNK",
    "WRONG_NUMBER",
    "HANGUP_NO_MESSAGE",
    "UNKNOWN",
];

/// Spoken number words and their digits.
pub const WORD_TO_DIGIT: &[(&str, &str)] = &[
    ("zero", "0"),
    ("oh", "0"),
    ("o", "0"),
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("thirteen", "13"),
    ("fourteen", "14"),
    ("fifteen", "15"),
    ("sixteen", "16"),
    ("seventeen", "17"),
    ("eighteen", "18"),
    ("nineteen", "19"),
];

/// The digits of a spoken number word (`"seven"` → `"7"`), case-insensitive.
pub fn word_to_digit(word: &str) -> Option<&'static str> {
    WORD_TO_DIGIT
        .iter()
        .find(|(w, _)| w.eq_ignore_ascii_case(word))
        .map(|(_, d)| *d)
}

// ---------------------------------------------------------------------------
// Named access (conformance `keyword_list`)
// ---------------------------------------------------------------------------

/// A named keyword list as the conformance `keyword_list` function returns
/// it: a sorted word list, or the WORD_TO_DIGIT map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeywordList {
    /// The list's entries, sorted ascending.
    Words(Vec<&'static str>),
    /// The word → digits map (declaration order).
    Map(&'static [(&'static str, &'static str)]),
}

/// The raw (declaration-order) list called `name`, if any.
pub fn list_by_name(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "SCHEDULE_SIGNALS" => SCHEDULE_SIGNALS,
        "NEW_ISSUE_SIGNALS" => NEW_ISSUE_SIGNALS,
        "NO_SIGNALS" => NO_SIGNALS,
        "URGENT_SIGNALS" => URGENT_SIGNALS,
        "ROUTINE_SIGNALS" => ROUTINE_SIGNALS,
        "TIME_PATTERNS" => TIME_PATTERNS,
        "YES_SIGNALS" => YES_SIGNALS,
        "BOOKING_LANGUAGE" => BOOKING_LANGUAGE,
        "SERVICE_KEYWORDS" => SERVICE_KEYWORDS,
        "NON_SERVICE_KEYWORDS" => NON_SERVICE_KEYWORDS,
        "FOLLOW_UP_KEYWORDS" => FOLLOW_UP_KEYWORDS,
        "MANAGE_BOOKING_KEYWORDS" => MANAGE_BOOKING_KEYWORDS,
        "SAFETY_KEYWORDS" => SAFETY_KEYWORDS,
        "SAFETY_RETRACTION_KEYWORDS" => SAFETY_RETRACTION_KEYWORDS,
        "HIGH_TICKET_POSITIVE" => HIGH_TICKET_POSITIVE,
        "HIGH_TICKET_NEGATIVE" => HIGH_TICKET_NEGATIVE,
        "CALLBACK_REQUEST_KEYWORDS" => CALLBACK_REQUEST_KEYWORDS,
        "PROPERTY_MANAGER_KEYWORDS" => PROPERTY_MANAGER_KEYWORDS,
        "SENTINEL_VALUES" => SENTINEL_VALUES,
        "CALL_TYPE_ENUM" => CALL_TYPE_ENUM,
        _ => return None,
    })
}

/// The list called `name` (sorted ascending), or the WORD_TO_DIGIT map.
pub fn keyword_list(name: &str) -> Option<KeywordList> {
    if name == "WORD_TO_DIGIT" {
        return Some(KeywordList::Map(WORD_TO_DIGIT));
    }
    let mut v = list_by_name(name)?.to_vec();
    v.sort_unstable();
    Some(KeywordList::Words(v))
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

/// Whether `c` is a word character in the sense of Python's Unicode `\w`.
#[inline]
pub fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        c.is_alphanumeric()
    }
}

/// Lower-case `text` the way the matcher does, borrowing when it already is.
pub fn lowercase(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else if text.chars().any(|c| c.is_uppercase()) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// An utterance lower-cased once, for testing many keyword lists.
#[derive(Debug, Clone)]
pub struct LowerText<'a> {
    text: Cow<'a, str>,
}

impl<'a> LowerText<'a> {
    /// Lower-case `text` (no allocation if it is already lower case).
    pub fn new(text: &'a str) -> Self {
        LowerText {
            text: lowercase(text),
        }
    }

    /// The lower-cased text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `keyword` occurs as a whole word / phrase.
    pub fn matches(&self, keyword: &str) -> bool {
        contains_word(&self.text, keyword)
    }

    /// Whether any of `keywords` occurs as a whole word / phrase.
    pub fn matches_any(&self, keywords: &[&str]) -> bool {
        match_any_lower(&self.text, keywords)
    }

    /// The first of `keywords` (in list order) that occurs, if any.
    pub fn first_match<'k>(&self, keywords: &[&'k str]) -> Option<&'k str> {
        keywords
            .iter()
            .copied()
            .find(|k| contains_word(&self.text, k))
    }
}

/// SPEC §2.0 `match_any`: case-insensitive whole-word match of any keyword.
/// Empty text (and an empty keyword) never matches.
pub fn match_any(text: &str, keywords: &[&str]) -> bool {
    if text.is_empty() || keywords.is_empty() {
        return false;
    }
    match_any_lower(&lowercase(text), keywords)
}

/// [`match_any`] for a text that is already lower-cased.
pub fn match_any_lower(lower: &str, keywords: &[&str]) -> bool {
    keywords.iter().any(|k| contains_word(lower, k))
}

/// Whether `keyword` occurs in `hay` with a `\b` word boundary on both sides
/// (Python `re` semantics: the boundary test depends on the characters on
/// each side, so a keyword that starts or ends with a non-word character
/// needs a word character next to it). Case-sensitive; an empty keyword
/// never matches.
pub fn contains_word(hay: &str, keyword: &str) -> bool {
    find_word(hay, keyword).is_some()
}

/// Where [`contains_word`] finds `keyword` first (byte offset), if anywhere.
///
/// Runs for every keyword of every list on every utterance, so it scans
/// for the keyword's first byte and compares in place (a `str::find`
/// builds a two-way searcher per call, which costs more than the search on
/// a one-sentence haystack).
pub fn find_word(hay: &str, keyword: &str) -> Option<usize> {
    let (Some(first), Some(last)) = (keyword.chars().next(), keyword.chars().next_back()) else {
        return None;
    };
    let first_w = is_word_char(first);
    let last_w = is_word_char(last);
    let (h, k) = (hay.as_bytes(), keyword.as_bytes());
    let lead = k[0];
    let mut from = 0;
    while from + k.len() <= h.len() {
        let rel = h[from..=h.len() - k.len()]
            .iter()
            .position(|&b| b == lead)?;
        let start = from + rel;
        let end = start + k.len();
        // `lead` starts a character (it is the first byte of a `str`), so
        // `start` and `end` are character boundaries when the bytes match.
        if &h[start..end] == k {
            let before = hay[..start].chars().next_back().is_some_and(is_word_char);
            let after = hay[end..].chars().next().is_some_and(is_word_char);
            if before != first_w && after != last_w {
                return Some(start);
            }
        }
        from = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_match_any_keyword() {
        // val.match.*
        assert!(match_any("no", &["no"])); // test_exact_word_matches
        assert!(match_any("no I don't", &["no"])); // test_word_at_start
        assert!(!match_any("it's not working", &["no"])); // test_substring_does_not_match
        assert!(!match_any("how do you know my name", &["no"])); // test_substring_know_does_not_match
        assert!(!match_any("", &["no"])); // test_empty_text
        assert!(!match_any("I don't think so", &["no"])); // test_contraction_dont_no_match
        assert!(match_any("no-name brand", &["no"])); // test_hyphenated_no_match
        assert!(match_any("I said no.", &["no"])); // test_keyword_followed_by_period
        assert!(!match_any("call me on monday", &["mon"])); // keyword_inside_word_not_matched
    }

    #[test]
    fn spec_matching_examples() {
        assert!(!match_any("noticed", &["no"]));
        assert!(match_any("no,", &["no"]));
        assert!(match_any("NO way", &["no"]));
        assert!(match_any("oh, nothing like that", &["nothing like that"]));
        assert!(match_any("We're fine", &["we're fine"]));
        // Typographic apostrophes are not normalized (reference behaviour).
        assert!(!match_any("we’re fine", &["we're fine"]));
        assert!(match_any("tune-up please", &["tune-up"]));
        assert!(!match_any("tune-ups", &["tune-up"]));
        assert!(!match_any("no_way", &["no"]));
        assert!(!match_any("no2", &["no"]));
        assert!(match_any("nono no", &["no"])); // later occurrence
        assert!(!match_any("anything", &[""]));
        assert!(!match_any("anything", &[]));
    }

    #[test]
    fn unicode_boundaries() {
        assert!(!match_any("noé", &["no"])); // é is a word character
        assert!(match_any("ÉTÉ no", &["no"]));
        assert!(match_any("🔥no🔥", &["no"]));
        assert!(match_any("ÄC is broken", &["äc"]));
        assert!(!match_any("\u{0}\u{1}\u{7f}", &["no"]));
        assert!(match_any("\u{0}no\u{1}", &["no"]));
    }

    #[test]
    fn non_word_keyword_edges() {
        // Python: re.search(r'\b\{\{x\}\}\b', ...) needs word chars around.
        assert!(!contains_word("{{x}}", "{{x}}"));
        assert!(contains_word("a{{x}}b", "{{x}}"));
    }

    #[test]
    fn long_input_does_not_panic() {
        let big = "é🔥 noth ".repeat(2000);
        assert!(!match_any(&big, NO_SIGNALS));
        let big2 = format!("{big} nope");
        assert!(match_any(&big2, NO_SIGNALS));
    }

    #[test]
    fn lower_text_reuse() {
        let t = LowerText::new("Yes, Go Ahead");
        assert!(t.matches_any(YES_SIGNALS));
        assert!(t.matches("go ahead"));
        assert_eq!(t.first_match(SCHEDULE_SIGNALS), Some("yes"));
        assert!(matches!(lowercase("already lower"), Cow::Borrowed(_)));
    }

    fn words(name: &str) -> Vec<&'static str> {
        match keyword_list(name) {
            Some(KeywordList::Words(v)) => v,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn conformance_keyword_lists() {
        // sm.booking_language.list
        assert_eq!(
            words("BOOKING_LANGUAGE"),
            [
                "appointment",
                "available",
                "book",
                "open",
                "schedule",
                "slot",
                "tech out"
            ]
        );
        // sm.keywords.schedule_signals
        assert_eq!(
            words("SCHEDULE_SIGNALS"),
            ["book", "go ahead", "schedule", "sure", "yeah", "yes"]
        );
        // sm.keywords.new_issue_signals
        assert_eq!(
            words("NEW_ISSUE_SIGNALS"),
            [
                "also",
                "another",
                "different problem",
                "new issue",
                "something else"
            ]
        );
        // sm.keywords.no_signals
        assert_eq!(
            words("NO_SIGNALS"),
            [
                "all good",
                "just not cooling",
                "just not heating",
                "nah",
                "no",
                "nope",
                "nothing like that",
                "we're fine"
            ]
        );
        // sm.keywords.routine_signals
        assert_eq!(
            words("ROUTINE_SIGNALS"),
            [
                "next few days",
                "no rush",
                "not urgent",
                "this week",
                "whenever"
            ]
        );
        // sm.keywords.time_patterns
        assert_eq!(
            words("TIME_PATTERNS"),
            [
                "afternoon",
                "evening",
                "following day",
                "friday",
                "monday",
                "morning",
                "next day",
                "saturday",
                "sunday",
                "thursday",
                "tomorrow",
                "tuesday",
                "wednesday"
            ]
        );
        // sm.keywords.yes_signals
        assert_eq!(
            words("YES_SIGNALS"),
            [
                "correct",
                "go ahead",
                "sounds good",
                "sounds right",
                "that's right",
                "yeah",
                "yep",
                "yes"
            ]
        );
        // val.keywords.service_keywords
        assert_eq!(
            words("SERVICE_KEYWORDS"),
            [
                "ac",
                "air conditioning",
                "appointment",
                "booking",
                "broken",
                "compressor",
                "cooling",
                "duct",
                "furnace",
                "heat",
                "heating",
                "hvac",
                "leak",
                "maintenance",
                "noise",
                "not cooling",
                "not heating",
                "not working",
                "repair",
                "schedule",
                "service",
                "someone to come out",
                "stopped working",
                "system",
                "thermostat",
                "unit",
                "won't turn on"
            ]
        );
        // val.keywords.non_service_keywords (D-11)
        assert_eq!(
            words("NON_SERVICE_KEYWORDS"),
            [
                "apply for",
                "bill",
                "billing",
                "charge",
                "employment",
                "hiring",
                "invoice",
                "job application",
                "job opening",
                "looking for a job",
                "partnership",
                "parts supplier",
                "payment",
                "position",
                "selling",
                "supplier",
                "vendor",
                "warranty",
                "wrong number"
            ]
        );
        // val.keywords.safety_retraction_keywords
        assert_eq!(
            words("SAFETY_RETRACTION_KEYWORDS"),
            [
                "actually no",
                "but don't worry",
                "forget i said",
                "i'm fine",
                "never mind",
                "no emergency",
                "not really",
                "not the issue",
                "that's not it",
                "we're okay"
            ]
        );
        // val.keywords.high_ticket_negative
        assert_eq!(
            words("HIGH_TICKET_NEGATIVE"),
            [
                "broken",
                "check",
                "component",
                "cover",
                "drip",
                "filter",
                "leak",
                "maintenance",
                "noise",
                "not working",
                "part",
                "piece",
                "smell",
                "stopped working",
                "tune-up",
                "won't turn on"
            ]
        );
        // val.keywords.callback_request_keywords
        assert_eq!(
            words("CALLBACK_REQUEST_KEYWORDS"),
            [
                "call me back",
                "callback",
                "don't want to schedule",
                "have someone call",
                "have the owner call",
                "just call"
            ]
        );
        // val.keywords.property_manager_keywords
        assert_eq!(
            words("PROPERTY_MANAGER_KEYWORDS"),
            [
                "calling on behalf",
                "i manage",
                "landlord",
                "managing properties",
                "property management",
                "property manager",
                "rental property",
                "tenant",
                "the unit is at"
            ]
        );
        // val.keywords.sentinel_values
        assert_eq!(
            words("SENTINEL_VALUES"),
            [
                "auto",
                "customer_name",
                "n/a",
                "na",
                "none",
                "not provided",
                "service_address",
                "tbd",
                "unknown",
                "{{customer_name}}",
                "{{service_address}}",
                "{{zip_code}}"
            ]
        );
        // cls.keywords.call_type_enum
        assert_eq!(
            words("CALL_TYPE_ENUM"),
            [
                "COMPLAINT",
                "ESTIMATE",
                "EXISTING_CUSTOMER",
                "HANGUP_NO_MESSAGE",
                "JOB_SEEKER",
                "MAINTENANCE",
                "RETURNING_CONTACT",
                "SERVICE",
                "SPAM_JUNK",
                "UNKNOWN",
                "VENDOR_SUPPLIER",
                "WRONG_NUMBER"
            ]
        );
        // val.keywords.word_to_digit
        let Some(KeywordList::Map(m)) = keyword_list("WORD_TO_DIGIT") else {
            panic!("WORD_TO_DIGIT");
        };
        assert_eq!(m.len(), 22);
        assert_eq!(m[0], ("zero", "0"));
        assert_eq!(m[1], ("oh", "0"));
        assert_eq!(m[2], ("o", "0"));
        assert_eq!(m[21], ("nineteen", "19"));
        assert_eq!(word_to_digit("Eleven"), Some("11"));
        assert_eq!(word_to_digit("someone"), None);
        assert!(keyword_list("NOPE").is_none());
        assert!(keyword_list("URGENT_SIGNALS").is_some());
    }
}
