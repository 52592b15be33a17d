//! Value validators and caller-text predicates (SPEC §2.1–§2.2 with
//! DECISIONS D-8, D-9, D-11, D-12, D-13).
//!
//! Everything here is pure, allocation-light and total: any `&str` input —
//! empty, emoji, control characters, megabytes — gives an answer, never a
//! panic.

use crate::keywords::{
    is_word_char, lowercase, match_any, word_to_digit, LowerText, CALLBACK_REQUEST_KEYWORDS,
    FOLLOW_UP_KEYWORDS, HIGH_TICKET_NEGATIVE, HIGH_TICKET_POSITIVE, MANAGE_BOOKING_KEYWORDS,
    NON_SERVICE_KEYWORDS, PROPERTY_MANAGER_KEYWORDS, SENTINEL_VALUES, TIME_PATTERNS,
    URGENT_SIGNALS,
};
use crate::profile::BusinessProfile;
pub use crate::safety::{detect_safety_emergency, safety_answer, SafetyAnswer};

// ---------------------------------------------------------------------------
// Value validators
// ---------------------------------------------------------------------------

/// Whether the trimmed, lower-cased value is a placeholder ("n/a", "tbd", …).
pub fn is_sentinel(value: &str) -> bool {
    let l = lowercase(value.trim());
    SENTINEL_VALUES.contains(&l.as_ref())
}

/// SPEC §2.2: the trimmed value if it is exactly five ASCII digits, else "".
pub fn validate_zip(value: &str) -> String {
    let t = value.trim();
    if t.len() == 5 && t.bytes().all(|b| b.is_ascii_digit()) {
        t.to_string()
    } else {
        String::new()
    }
}

/// SPEC §2.2: a valid ZIP that starts with one of the profile's prefixes.
pub fn is_service_area(zip: &str, profile: &BusinessProfile) -> bool {
    let z = validate_zip(zip);
    !z.is_empty() && profile.zip_in_area(&z)
}

/// SPEC §2.2: the trimmed name, or "" for sentinels, phone numbers (≥ 7
/// characters of digits, `+`, `-`, `(`, `)`, spaces) and template
/// placeholders (`{{` / `}}`).
pub fn validate_name(value: &str) -> String {
    let t = value.trim();
    if t.is_empty() || is_sentinel(t) {
        return String::new();
    }
    let phone_like = t.len() >= 7
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'(' | b')' | b' '));
    if phone_like || t.contains("{{") || t.contains("}}") {
        return String::new();
    }
    t.to_string()
}

fn is_lone_o(token: &str) -> bool {
    token.eq_ignore_ascii_case("o") || token.eq_ignore_ascii_case("oh")
}

fn digit_form(token: &str) -> Option<&str> {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
        Some(token)
    } else {
        word_to_digit(token)
    }
}

/// SPEC §2.2 with D-13: trimmed address with a spoken street number turned
/// into digits ("53 Eleven Izzical Road" → "5311 Izzical Road"), or "" when
/// it is a sentinel, offers alternatives ("… or …"), has no ASCII letter or
/// is shorter than 5 characters. A lone "o"/"oh" is a digit only inside a
/// run with another digit token ("O Street" stays "O Street").
pub fn validate_address(value: &str) -> String {
    let t = value.trim();
    if t.is_empty() || is_sentinel(t) || match_any(t, &["or"]) {
        return String::new();
    }
    let tokens: Vec<&str> = t.split_whitespace().collect();
    let run = tokens
        .iter()
        .take_while(|tok| digit_form(tok).is_some())
        .count();
    let has_real_digit = tokens[..run].iter().any(|tok| !is_lone_o(tok));
    let normalized = if run > 0 && has_real_digit {
        let mut out: String = tokens[..run]
            .iter()
            .filter_map(|tok| digit_form(tok))
            .collect();
        for tok in &tokens[run..] {
            out.push(' ');
            out.push_str(tok);
        }
        out
    } else {
        t.to_string()
    };
    if !normalized.bytes().any(|b| b.is_ascii_alphabetic()) || normalized.chars().count() < 5 {
        return String::new();
    }
    normalized
}

/// SPEC §2.2: the digits spoken or written in `text`, concatenated
/// (letter runs mapped through WORD_TO_DIGIT, unknown words dropped, single
/// ASCII digits kept): "seven 8 seven 0 one" → "78701".
pub fn words_to_digits(text: &str) -> String {
    let mut out = String::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphabetic() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            if let Some(d) = word_to_digit(&text[start..i]) {
                out.push_str(d);
            }
        } else {
            if b.is_ascii_digit() {
                out.push(b as char);
            }
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Tokenizer shared by ZIP extraction and safety triage
// ---------------------------------------------------------------------------

/// A word of a (lower-cased) utterance with facts about the gap before it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tok<'a> {
    pub(crate) text: &'a str,
    /// The gap before this token contains clause punctuation.
    pub(crate) clause_break: bool,
    /// The gap before this token is only spaces, commas and hyphens (digit
    /// tokens separated like this belong to one spoken number).
    pub(crate) joinable: bool,
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// Punctuation that ends a clause (commas included).
pub(crate) fn is_clause_punct(c: char) -> bool {
    matches!(
        c,
        ',' | '.'
            | ';'
            | ':'
            | '!'
            | '?'
            | '\n'
            | '\r'
            | '('
            | ')'
            | '['
            | ']'
            | '"'
            | '\u{2014}'
            | '\u{2013}'
            | '\u{2026}'
    )
}

/// Words are runs of word characters, with inner apostrophes kept ("don't").
pub(crate) fn tokenize(text: &str) -> Vec<Tok<'_>> {
    let mut toks = Vec::new();
    let mut gap_start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if !is_word_char(c) {
            continue;
        }
        let start = i;
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = iter.peek() {
            if is_word_char(d) {
                end = j + d.len_utf8();
                iter.next();
            } else if is_apostrophe(d) {
                // Keep the apostrophe only if a word character follows it.
                let after = j + d.len_utf8();
                if text[after..].chars().next().is_some_and(is_word_char) {
                    iter.next();
                    end = after;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        let gap = &text[gap_start..start];
        toks.push(Tok {
            text: &text[start..end],
            clause_break: gap.chars().any(is_clause_punct),
            joinable: gap
                .chars()
                .all(|g| g.is_whitespace() || g == ',' || g == '-'),
        });
        gap_start = end;
    }
    toks
}

// ---------------------------------------------------------------------------
// ZIP extraction (D-12, D-13)
// ---------------------------------------------------------------------------

/// A ZIP candidate: token index where it starts, its digits, and whether
/// it was written as digits ("78702") rather than spoken ("seven eight …").
struct ZipCandidate {
    start: usize,
    /// The token index just after it.
    end: usize,
    zip: String,
    written: bool,
}

/// Words after which the caller corrects what they said ("actually it's
/// 78702", "sorry, I mean …", "no wait, …").
const ZIP_CORRECTIONS: &[&str] = &[
    "actually",
    "sorry",
    "mean",
    "meant",
    "correction",
    "wait",
    "rather",
    "instead",
    "scratch",
    "oops",
    "wrong",
];
/// Words right before a candidate that reject it ("not seven eight …").
const ZIP_REJECTIONS: &[&str] = &["not", "isn't", "isnt", "wasn't", "wasnt"];

/// The tens digit of a spoken tens word ("seventy" → '7').
fn tens_digit(w: &str) -> Option<char> {
    Some(match w {
        "twenty" => '2',
        "thirty" => '3',
        "forty" | "fourty" => '4',
        "fifty" => '5',
        "sixty" => '6',
        "seventy" => '7',
        "eighty" => '8',
        "ninety" => '9',
        _ => return None,
    })
}

/// The digit of a unit word or a written single digit, 1 to 9.
fn unit_digit(w: &str) -> Option<char> {
    let d = digit_form(w)?;
    let mut cs = d.chars();
    match (cs.next(), cs.next()) {
        (Some(c @ '1'..='9'), None) => Some(c),
        _ => None,
    }
}

fn run_candidates(toks: &[Tok<'_>], run: &[usize], out: &mut Vec<ZipCandidate>) {
    if run.is_empty() || run.iter().all(|&i| is_lone_o(toks[i].text)) {
        return;
    }
    let digits_of = |idx: &[usize]| -> String {
        let mut out = String::new();
        let mut k = 0;
        while let Some(&i) = idx.get(k) {
            k += 1;
            if let Some(t) = tens_digit(toks[i].text) {
                // "seventy eight" → "78", "seventy" → "70".
                out.push(t);
                match idx.get(k).and_then(|&n| unit_digit(toks[n].text)) {
                    Some(u) => {
                        out.push(u);
                        k += 1;
                    }
                    None => out.push('0'),
                }
            } else if let Some(d) = digit_form(toks[i].text) {
                out.push_str(d);
            }
        }
        out
    };
    let written = |idx: &[usize]| {
        idx.iter()
            .all(|&i| toks[i].text.as_bytes()[0].is_ascii_digit())
    };
    let end = run.last().map_or(0, |&i| i + 1);
    let all = digits_of(run);
    if all.len() == 5 {
        out.push(ZipCandidate {
            start: run[0],
            end,
            zip: all,
            written: written(run),
        });
        return;
    }
    // Leading "oh" / "o" as an interjection ("oh, seven eight seven zero one").
    let lead = run.iter().take_while(|&&i| is_lone_o(toks[i].text)).count();
    if lead > 0 {
        let rest = digits_of(&run[lead..]);
        if rest.len() == 5 {
            out.push(ZipCandidate {
                start: run[lead],
                end,
                zip: rest,
                written: written(&run[lead..]),
            });
            return;
        }
    }
    // A written five-digit number is a ZIP on its own ("78745-1234").
    for &i in run {
        let t = toks[i].text;
        if t.len() == 5 && t.bytes().all(|b| b.is_ascii_digit()) {
            out.push(ZipCandidate {
                start: i,
                end: i + 1,
                zip: t.to_string(),
                written: true,
            });
        }
    }
}

/// D-12: the ZIP the service-area step takes from a caller utterance: a run
/// of consecutive digit tokens (spoken number words, "oh", written digits;
/// separated only by spaces, commas or hyphens) that makes exactly five
/// digits. Among several candidates, in this order:
///
/// 1. a candidate right after "not" is rejected ("78702, not seven eight
///    seven zero one");
/// 2. a correction wins: only candidates after the last "actually", "sorry",
///    "I mean", "wait", … count ("78701, actually 78702");
/// 3. the first candidate after the word "zip" (house numbers come before
///    it);
/// 4. a written five-digit number wins over spoken digit words;
/// 5. otherwise the last one (house numbers come first).
///
/// A number followed by a street ("10400 Research Blvd", "seven one two
/// three four Oak Lane") is a house number, never a ZIP ("10400 Research
/// Blvd, 78759" has ZIP 78759), unless right after "zip". `None` if there is
/// none. Pure, total.
pub fn zip_in(text: &str) -> Option<String> {
    let lower = lowercase(text);
    let toks = tokenize(&lower);
    let mut cands = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if digit_form(t.text).is_some() || tens_digit(t.text).is_some() {
            if !run.is_empty() && !t.joinable {
                run_candidates(&toks, &run, &mut cands);
                run.clear();
            }
            run.push(i);
        } else if !run.is_empty() {
            run_candidates(&toks, &run, &mut cands);
            run.clear();
        }
    }
    run_candidates(&toks, &run, &mut cands);
    let zip_word_before = |c: &ZipCandidate| {
        c.start
            .checked_sub(1)
            .is_some_and(|p| matches!(toks[p].text, "zip" | "zipcode" | "code" | "postal"))
    };
    cands.retain(|c| {
        !c.start
            .checked_sub(1)
            .is_some_and(|p| ZIP_REJECTIONS.contains(&toks[p].text))
            && (zip_word_before(c)
                || !(street_follows(&toks, c.end) || measure_follows(&toks, c.end)))
    });
    // Keep only the candidates that pass `keep`, unless none would.
    let narrow = |cands: &mut Vec<ZipCandidate>, keep: &dyn Fn(&ZipCandidate) -> bool| {
        if cands.iter().any(keep) {
            cands.retain(keep);
        }
    };
    let correction = toks.iter().rposition(|t| ZIP_CORRECTIONS.contains(&t.text));
    if let Some(c) = correction {
        narrow(&mut cands, &|z| z.start > c);
    }
    let zip_word = toks
        .iter()
        .position(|t| matches!(t.text, "zip" | "zipcode" | "postal"));
    if let Some(z) = zip_word {
        if let Some(pos) = cands.iter().position(|c| c.start > z) {
            return Some(cands.swap_remove(pos).zip);
        }
    }
    narrow(&mut cands, &|z| z.written);
    cands.pop().map(|c| c.zip)
}

/// [`zip_in`] as a string ("" when there is none): the ZIP the
/// service-area step takes from a caller utterance (D-12).
pub fn extract_zip(text: &str) -> String {
    zip_in(text).unwrap_or_default()
}

/// Whether a measure follows token `at` ("30000 BTU", "12000 dollars").
fn measure_follows(toks: &[Tok<'_>], at: usize) -> bool {
    toks.get(at).is_some_and(|t| {
        matches!(
            t.text,
            "btu"
                | "btus"
                | "dollars"
                | "bucks"
                | "miles"
                | "square"
                | "sq"
                | "feet"
                | "ft"
                | "degrees"
                | "pounds"
                | "lbs"
                | "hours"
                | "minutes"
                | "seconds"
                | "watts"
                | "volts"
                | "amps"
                | "cfm"
                | "tons"
                | "calls"
                | "times"
        )
    })
}

/// Whether a street name follows token `at`: up to four words in the same
/// clause ending in a street suffix after at least one name word ("Research
/// Blvd", "Oak Hollow Drive", "5th Street").
fn street_follows(toks: &[Tok<'_>], at: usize) -> bool {
    let mut k = at;
    while k < toks.len() && k < at + 5 {
        let t = toks[k];
        if t.clause_break {
            return false;
        }
        let ordinal = t.text.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && t.text.len() <= 6
            && ["st", "nd", "rd", "th"].iter().any(|s| t.text.ends_with(s));
        if !ordinal && !t.text.chars().all(char::is_alphabetic) {
            return false;
        }
        if k > at && crate::extract::STREET_SUFFIXES.contains(&t.text) {
            return true;
        }
        k += 1;
    }
    false
}

/// A later utterance that corrects the ZIP ("actually my zip is 78702",
/// "sorry, it's 78610, not 78701"): the new ZIP when the utterance names the
/// ZIP or corrects itself and holds a valid ZIP different from `current`.
/// A plain five-digit number without such words (a house number being
/// dictated) is no correction.
pub fn zip_correction(text: &str, current: &str) -> Option<String> {
    let t = LowerText::new(text);
    let cued =
        t.matches_any(&["zip", "zipcode", "zip code", "postal"]) || t.matches_any(ZIP_CORRECTIONS);
    if !cued {
        return None;
    }
    let zip = validate_zip(&extract_zip(text));
    (!zip.is_empty() && zip != current).then_some(zip)
}

// ---------------------------------------------------------------------------
// Phone numbers
// ---------------------------------------------------------------------------

/// A US phone number the caller says ("call my cell 512 555 0199", "(512)
/// 555-0199", "five one two, five five five, oh one nine nine", "+1 512 …"):
/// ten digits in one run of digit tokens (written or spoken; any
/// separators), or eleven starting with 1. Returned as `+1XXXXXXXXXX`.
pub fn extract_phone(text: &str) -> Option<String> {
    let lower = lowercase(text);
    let toks = tokenize(&lower);
    let mut found = None;
    let mut digits = String::new();
    let mut flush = |digits: &mut String| {
        let d = match digits.len() {
            10 => Some(digits.clone()),
            11 if digits.starts_with('1') => Some(digits[1..].to_string()),
            _ => None,
        };
        if let Some(d) = d {
            found = Some(format!("+1{d}"));
        }
        digits.clear();
    };
    for t in &toks {
        match digit_form(t.text) {
            Some(d) if d.len() <= 11 => digits.push_str(d),
            _ => flush(&mut digits),
        }
    }
    flush(&mut digits);
    found
}

/// `+15125550199` → "512-555-0199" (as said back to a caller); anything
/// else as given.
pub fn say_phone(phone: &str) -> String {
    let d: String = phone.chars().filter(char::is_ascii_digit).collect();
    let d = d.strip_prefix('1').filter(|r| r.len() == 10).unwrap_or(&d);
    if d.len() == 10 {
        format!("{}-{}-{}", &d[..3], &d[3..6], &d[6..])
    } else {
        phone.to_string()
    }
}

// ---------------------------------------------------------------------------
// Duration
// ---------------------------------------------------------------------------

const DURATION_ACUTE: &[&str] = &[
    "hour",
    "hours",
    "minute",
    "minutes",
    "today",
    "tonight",
    "this morning",
    "this afternoon",
    "this evening",
    "just",
];
const DURATION_RECENT: &[&str] = &[
    "yesterday",
    "last night",
    "day",
    "days",
    "this week",
    "weekend",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const DURATION_ONGOING: &[&str] = &[
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "a while",
    "awhile",
    "some time",
    "long time",
    "ages",
];

/// Bucket a problem duration: "acute" (< 24 h: hours, today, "just …"),
/// "recent" (days, yesterday, this week), "ongoing" (weeks, months, years,
/// "a while"), or "" when nothing is recognised. First bucket that matches
/// wins (so "just a couple weeks" is acute).
pub fn categorize_duration(value: &str) -> &'static str {
    let t = LowerText::new(value);
    if t.matches_any(DURATION_ACUTE) {
        "acute"
    } else if t.matches_any(DURATION_RECENT) {
        "recent"
    } else if t.matches_any(DURATION_ONGOING) {
        "ongoing"
    } else {
        ""
    }
}

// ---------------------------------------------------------------------------
// Intent
// ---------------------------------------------------------------------------

/// Why the caller is calling (SPEC §2.1 `classify_intent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Service,
    NonService,
    FollowUp,
    ManageBooking,
}

impl Intent {
    /// The session / conformance name of the intent.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Service => "service",
            Intent::NonService => "non_service",
            Intent::FollowUp => "follow_up",
            Intent::ManageBooking => "manage_booking",
        }
    }
}

/// First match wins: manage-booking words, follow-up words, non-service
/// words (D-11: applicant phrases, not "job" alone); otherwise service.
pub fn classify_intent(text: &str) -> Intent {
    let t = LowerText::new(text);
    if t.matches_any(MANAGE_BOOKING_KEYWORDS) {
        Intent::ManageBooking
    } else if t.matches_any(FOLLOW_UP_KEYWORDS) {
        Intent::FollowUp
    } else if t.matches_any(NON_SERVICE_KEYWORDS) {
        Intent::NonService
    } else {
        Intent::Service
    }
}

const WARRANTY_WORDS: &[&str] = &["warranty", "warranties", "guarantee"];
const BILLING_WORDS: &[&str] = &[
    "billing",
    "bill",
    "bills",
    "billed",
    "charge",
    "charges",
    "charged",
    "overcharged",
    "payment",
    "payments",
    "pay",
    "paid",
    "invoice",
    "invoices",
    "refund",
    "receipt",
];

/// D-6/D-7: the callback type for a non-service caller: `billing` for
/// billing / charge / payment / invoice questions, `warranty` for warranty
/// questions (checked first), `None` for vendors, job seekers and wrong
/// numbers (no callback is promised to them).
pub fn non_service_callback_type(text: &str) -> Option<&'static str> {
    let t = LowerText::new(text);
    if t.matches_any(WARRANTY_WORDS) {
        Some("warranty")
    } else if t.matches_any(BILLING_WORDS) {
        Some("billing")
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// Other predicates
// ---------------------------------------------------------------------------

/// Replacement / estimate interest without repair words (SPEC §2.1).
pub fn detect_high_ticket(text: &str) -> bool {
    let t = LowerText::new(text);
    t.matches_any(HIGH_TICKET_POSITIVE) && !t.matches_any(HIGH_TICKET_NEGATIVE)
}

/// The caller asks to be called back (SPEC §2.1).
pub fn detect_callback_request(text: &str) -> bool {
    match_any(text, CALLBACK_REQUEST_KEYWORDS)
}

/// The caller is a property manager / calls for someone else (SPEC §2.1).
pub fn detect_property_manager(text: &str) -> bool {
    match_any(text, PROPERTY_MANAGER_KEYWORDS)
}

const WRAP_UP_PHRASES: &[&str] = &[
    "bye",
    "goodbye",
    "good bye",
    "bye-bye",
    "that's all",
    "that is all",
    "that'll be all",
    "that's it",
    "that's everything",
    "no thanks",
    "no, thanks",
    "no thank you",
    "no, thank you",
    "thank you",
    "thanks",
    "all set",
    "have a good one",
    "have a good day",
    "have a nice day",
    "have a great day",
    "nothing else",
];
const GOODBYES: &[&str] = &["bye", "goodbye", "good bye", "bye-bye"];
const QUESTION_STARTERS: &[&str] = &[
    "what", "when", "where", "why", "who", "which", "how", "can", "could", "will", "would", "is",
    "are", "do", "does", "did", "should", "may", "whats", "what's", "when's", "how's",
];
const BARE_NO: &[&str] = &["no", "nope", "nah", "no thanks", "nothing"];

/// A "no" with nothing else useful: "no", "nope, not that one", "not
/// really", "no it isn't" — no digits (a number given is more than a no).
pub fn is_bare_no(text: &str) -> bool {
    let t = LowerText::new(text);
    let first = t
        .as_str()
        .split(|c: char| !is_word_char(c) && c != '\'')
        .find(|w| !w.is_empty())
        .unwrap_or("");
    let no = matches!(first, "no" | "nope" | "nah" | "naw")
        || t.matches_any(&["not really", "it's not", "it isn't", "that's not"]);
    no && !t.as_str().bytes().any(|b| b.is_ascii_digit())
}

/// A caller owed a callback saying so in other words than the reference's
/// FOLLOW_UP_KEYWORDS ("nobody called me back", "I was promised a call").
pub const MISSED_CALLBACK_PHRASES: &[&str] = &[
    "nobody called",
    "no one called",
    "nobody's called",
    "never called",
    "didn't call",
    "did not call",
    "haven't heard back",
    "never heard back",
    "promised a call",
    "promised me a call",
    "supposed to call",
    "said they would call",
    "said someone would call",
    "was told someone would call",
];

/// D-9: the caller signals they are done (bye, that's all, no thanks, thank
/// you, all set, have a good one). A question ("how much will the visit
/// cost?", "thanks, what time will they come?") is not a wrap-up unless it
/// also says goodbye.
pub fn is_wrap_up(text: &str) -> bool {
    let t = LowerText::new(text);
    if t.matches_any(GOODBYES) {
        return true;
    }
    let lower = t.as_str();
    let trimmed = lower.trim_matches(|c: char| !is_word_char(c));
    if BARE_NO.contains(&trimmed) {
        return true;
    }
    if !t.matches_any(WRAP_UP_PHRASES) {
        return false;
    }
    // A question keeps the conversation open.
    if lower.contains('?') {
        return false;
    }
    let norm = lower.replace('\u{2019}', "'");
    let toks = tokenize(&norm);
    let asks = toks
        .iter()
        .enumerate()
        .any(|(i, tk)| (i == 0 || tk.clause_break) && QUESTION_STARTERS.contains(&tk.text));
    !asks
}

/// D-8: what the caller wants done with an existing appointment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManageRequest {
    Cancel,
    Reschedule,
    Status,
}

impl ManageRequest {
    /// The `manage_action` / tool `action` name.
    pub fn as_str(self) -> &'static str {
        match self {
            ManageRequest::Cancel => "cancel",
            ManageRequest::Reschedule => "reschedule",
            ManageRequest::Status => "status",
        }
    }
}

const RESCHEDULE_PHRASES: &[&str] = &[
    "reschedule",
    "rescheduling",
    "move it",
    "move my appointment",
    "move the appointment",
    "change my appointment",
    "change the appointment",
    "change the time",
    "change the date",
    "different time",
    "different day",
    "another time",
    "another day",
    "push it",
    "push my appointment",
];
const CANCEL_PHRASES: &[&str] = &["cancel", "cancelling", "canceling", "cancellation"];
const STATUS_PHRASES: &[&str] = &[
    "when is",
    "when's",
    "what time is",
    "what day is",
    "status",
    "still on",
    "still scheduled",
    "confirm my appointment",
    "check on it",
    "checking on it",
    "check on my appointment",
    "checking on my appointment",
    "just checking",
    "make sure it's still",
    "is it still",
    "still coming",
    "still happening",
];

/// D-8: recognise a cancel, reschedule or status request (reschedule wins
/// over cancel, cancel over status); `None` if none is recognised.
pub fn manage_request(text: &str) -> Option<ManageRequest> {
    let t = LowerText::new(text);
    if t.matches_any(RESCHEDULE_PHRASES) {
        Some(ManageRequest::Reschedule)
    } else if t.matches_any(CANCEL_PHRASES) {
        Some(ManageRequest::Cancel)
    } else if t.matches_any(STATUS_PHRASES) {
        Some(ManageRequest::Status)
    } else {
        None
    }
}

const EXTRA_TIME_WORDS: &[&str] = &["next week", "noon", "tonight", "weekend", "o'clock"];

fn is_clock_token(tok: &str) -> bool {
    let digits = tok.bytes().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && digits <= 2 && matches!(&tok[digits..], "am" | "pm")
}

/// D-8: whether the text names a time usable for a reschedule (a day or
/// part of day, an ASAP word, "next week", "noon", "3pm", "3 o'clock").
pub fn names_a_time(text: &str) -> bool {
    let t = LowerText::new(text);
    if t.matches_any(TIME_PATTERNS)
        || t.matches_any(URGENT_SIGNALS)
        || t.matches_any(EXTRA_TIME_WORDS)
    {
        return true;
    }
    let toks = tokenize(t.as_str());
    toks.iter().enumerate().any(|(i, tk)| {
        is_clock_token(tk.text)
            || (tk.text.len() <= 2
                && tk.text.bytes().all(|b| b.is_ascii_digit())
                && toks
                    .get(i + 1)
                    .is_some_and(|n| matches!(n.text, "am" | "pm" | "a" | "p")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_validate_zip() {
        assert_eq!(validate_zip("78701"), "78701"); // val.zip.test_valid_zip_787_prefix
        assert_eq!(validate_zip("787"), ""); // val.zip.test_rejects_partial_zip
        assert_eq!(validate_zip("abcde"), ""); // val.zip.test_rejects_non_numeric
        assert_eq!(validate_zip("787456"), ""); // val.zip.test_rejects_six_digits
        assert_eq!(validate_zip(""), ""); // val.zip.test_rejects_empty / _none
        assert_eq!(validate_zip(" 78745 "), "78745"); // val.zip.test_strips_whitespace
        assert_eq!(validate_zip("78745-1234"), ""); // val.zip.zip_plus4_rejected
        assert_eq!(validate_zip("７８７０１"), ""); // full-width digits
    }

    #[test]
    fn conformance_is_service_area() {
        let p = BusinessProfile::default();
        assert!(!is_service_area("", &p)); // val.service_area.test_empty_zip_not_in_area
        assert!(!is_service_area("7870", &p)); // val.service_area.invalid_format
        assert!(is_service_area(" 78799 ", &p)); // val.service_area.whitespace
        assert!(!is_service_area("90210", &p));
    }

    #[test]
    fn conformance_validate_name() {
        for (input, want) in [
            ("+15125551234", ""),         // val.name.test_rejects_phone_number
            ("5125551234", ""),           // val.name.test_rejects_phone_digits_only
            ("Not provided", ""),         // val.name.test_rejects_not_provided
            ("N/A", ""),                  // val.name.test_rejects_na
            ("unknown", ""),              // val.name.test_rejects_unknown
            ("", ""),                     // val.name.test_rejects_empty / _none
            ("{{customer_name}}", ""),    // val.name.test_rejects_placeholder_template
            ("  Jonas  ", "Jonas"),       // val.name.derived_1
            ("(512) 555-1234", ""),       // val.name.derived_2
            ("TBD", ""),                  // val.name.derived_4
            ("Hi {{name}}", ""),          // val.name.derived_5
            ("customer_name", ""),        // val.name.derived_6
            ("Bob or Jim", "Bob or Jim"), // val.name.derived_7
            ("auto", ""),                 // val.name.derived_8
            ("123456", "123456"),         // SPEC: 6 digits pass
            ("José 🔥", "José 🔥"),
        ] {
            assert_eq!(validate_name(input), want, "{input:?}");
        }
    }

    #[test]
    fn conformance_validate_address() {
        for (input, want) in [
            ("123 Main Street", "123 Main Street"), // test_valid_street_address
            ("42 Elm St", "42 Elm St"),             // test_valid_short_address
            ("78001", ""),                          // test_rejects_pure_digits_5
            ("1 Rk", ""),                           // test_rejects_too_short_4_chars
            ("1 Elm", "1 Elm"),                     // test_accepts_5_chars_with_letters
            ("", ""),                               // test_rejects_empty / _none
            ("53 Eleven Izzical Road", "5311 Izzical Road"), // test_normalizes_mixed_…
            ("4 Two Six Elm St", "426 Elm St"),     // test_normalizes_digit_then_word
            ("5311 Main St", "5311 Main St"),       // test_leaves_already_numeric_alone
            ("Five Oak Lane", "5 Oak Lane"),        // test_stops_at_non_number_word
            ("5 Oh Three Main St", "503 Main St"),  // test_oh_as_zero_in_address
            ("Twelve Oak Lane", "12 Oak Lane"),     // derived_1
            ("O Street", "O Street"),               // derived_2 (D-13)
            ("one two three", ""),                  // derived_3
            ("  5 oh 3 main st  ", "503 main st"),  // derived_4
            ("Orchard Lane", "Orchard Lane"),       // derived_6
            ("TBD", ""),                            // derived_7
            (
                "4210 South Lamar Blvd, 78745",
                "4210 South Lamar Blvd, 78745",
            ), // derived_8
            ("Oh Henry Road", "Oh Henry Road"),     // d13_oh_henry_road
            ("O Connor Avenue", "O Connor Avenue"), // d13_o_connor_avenue
            ("One O One Main St", "101 Main St"),   // d13_o_inside_run
            ("Four Oh Two Elm Street", "402 Elm Street"), // d13_oh_inside_run
            ("123 Main or 456 Oak", ""),
            ("Oak", ""),
            ("7801", ""),
            ("12   Main    St", "12 Main St"),
            ("Main    St", "Main    St"),
        ] {
            assert_eq!(validate_address(input), want, "{input:?}");
        }
    }

    #[test]
    fn conformance_words_to_digits() {
        assert_eq!(words_to_digits("seven eight seven zero one"), "78701"); // .1
        assert_eq!(words_to_digits("seven eight seven oh one"), "78701"); // .2
        assert_eq!(words_to_digits("seven 8 seven 0 one"), "78701"); // .3
        assert_eq!(words_to_digits("hello world"), ""); // .4
        assert_eq!(words_to_digits("seven eight zero one"), "7801"); // .6
        assert_eq!(words_to_digits("ten"), "10"); // .8
        assert_eq!(words_to_digits("someone"), "");
        assert_eq!(words_to_digits("SEVEN,eight-9"), "789");
        assert_eq!(words_to_digits("é7🔥٣"), "7");
    }

    #[test]
    fn a_written_zip_wins_and_a_correction_replaces() {
        for (input, want) in [
            // A written ZIP wins over spoken digit words.
            ("it's 78702, not seven eight seven zero one", "78702"),
            ("seven eight seven zero one, or 78702 on the mail", "78702"),
            ("78702 seven eight seven zero one", "78702"),
            // "not" rejects what follows it, written or spoken.
            ("not 78701, it's 78702", "78702"),
            (
                "seven eight seven four five not seven eight seven zero one",
                "78745",
            ),
            ("it isn't 78701", ""),
            // A correction replaces what came before it.
            ("78701, actually it's 78702", "78702"),
            (
                "seven eight seven zero one, sorry, I mean seven eight seven zero two",
                "78702",
            ),
            ("78701 no wait 78745", "78745"),
            ("zip 78701, oops, 78702", "78702"),
            ("actually it's 78702, not 78701", "78702"),
            // Still: after "zip" beats an earlier written house number.
            ("12345 Main Street, zip seven eight seven zero one", "78701"),
        ] {
            assert_eq!(extract_zip(input), want, "{input:?}");
        }
    }

    #[test]
    fn phone_numbers_as_callers_say_them() {
        for (said, want) in [
            ("call my cell 512 555 0199", Some("+15125550199")),
            ("it's (512) 555-0199", Some("+15125550199")),
            ("5125550199", Some("+15125550199")),
            ("+1 512 555 0199", Some("+15125550199")),
            (
                "five one two five five five oh one nine nine",
                Some("+15125550199"),
            ),
            (
                "five one two, five five five, zero one nine nine please",
                Some("+15125550199"),
            ),
            ("my zip is 78745", None),
            ("555 0199", None),
            ("yes that number is fine", None),
            ("", None),
        ] {
            assert_eq!(extract_phone(said).as_deref(), want, "{said:?}");
        }
        assert_eq!(say_phone("+15125550199"), "512-555-0199");
        assert_eq!(say_phone("+44 20 7946 0958"), "+44 20 7946 0958");
    }

    #[test]
    fn later_zip_corrections() {
        assert_eq!(
            zip_correction("actually my zip is 78702", "78701").as_deref(),
            Some("78702")
        );
        assert_eq!(
            zip_correction("sorry, it's seven eight six one zero", "78701").as_deref(),
            Some("78610")
        );
        assert_eq!(zip_correction("zip is 78701", "78701"), None); // the same
        assert_eq!(zip_correction("it's 12345 Oak Lane", "78701"), None); // a house number
        assert_eq!(zip_correction("actually it's Oak Lane", "78701"), None); // no ZIP
    }

    #[test]
    fn conformance_extract_zip() {
        for (input, want) in [
            // val.extract_zip.house_number_ignored
            (
                "I am at 4329 Franklin, zip seven eight seven zero one",
                "78701",
            ),
            // val.extract_zip.d12_prefers_after_zip
            (
                "my house is seven one two three four Oak Lane and the zip code is seven eight seven four five",
                "78745",
            ),
            ("seven eight seven zero one", "78701"), // d12_plain_spoken
            ("seven eight zero one", ""),            // d12_four_tokens_is_not_a_zip
            ("7 8 7 0 1", "78701"),                  // d12_single_written_digits
            ("seven 8 seven 0 one", "78701"),        // d12_mixed_tokens
            ("five oh three Main Street", ""),       // d12_three_digit_house_number_only
            ("I don't know my zip code", ""),        // d12_no_digits
            ("oh I think it's seven eight seven four five", "78745"), // d13_leading_oh
            // sm.service_area.* utterances
            ("my ZIP is 78701", "78701"),
            ("my ZIP is 90210", "90210"),
            ("it's 787", ""),
            ("my zip is seven eight seven four five", "78745"),
            ("I'm at 4329 Franklin, zip seven eight seven zero one", "78701"),
            ("12345 Main Street, zip 78701", "78701"),
            ("4329 Franklin Avenue, zip nine oh two one oh", "90210"),
            ("oh, it's seven eight seven zero one", "78701"),
            // more
            ("oh seven eight seven zero one", "78701"),
            ("oh oh oh oh oh", ""),
            ("78745-1234", "78745"),
            ("call 512 555 1234", ""),
            ("seven, eight, seven, zero, one.", "78701"),
            ("4329 Franklin Ave 78701", "78701"),
            ("", ""),
            ("🔥🔥", ""),
        ] {
            assert_eq!(extract_zip(input), want, "{input:?}");
        }
    }

    #[test]
    fn zip_in_never_takes_a_house_number() {
        let mut bad = Vec::new();
        for (said, want) in [
            ("10400 Research Blvd", None),
            ("10400 Research Blvd, 78759", Some("78759")),
            ("it's 10400 Research Boulevard zip 78759", Some("78759")),
            ("12345 Oak Hollow Drive", None),
            ("12345 Oak Hollow Drive apartment 4", None),
            ("one zero four zero zero Research Blvd", None),
            ("seven one two three four Oak Lane", None),
            (
                "seven one two three four Oak Lane, seven eight seven four five",
                Some("78745"),
            ),
            ("12345 N Lamar Blvd 78758", Some("78758")),
            ("10400 5th Street", None),
            ("I'm at 11200 Parmer Ln, Austin 78729", Some("78729")),
            ("78701", Some("78701")),
            ("my zip is seven eight seven zero one", Some("78701")),
            ("zip 78701 Main Street", Some("78701")),
            ("78701, Oak Street is where I live", Some("78701")),
            ("seventy-eight seven oh one", Some("78701")),
            ("seventy eight seven four five", Some("78745")),
            ("my zip is seventy-eight, seven, fifty-nine", Some("78759")),
            ("twenty minutes", None),
            ("fifty one twenty Oak Street", None),
            ("7 8 7 4 5", Some("78745")),
            ("it's 78745. Oak Street.", Some("78745")),
            ("not 78701, 78702", Some("78702")),
            ("it's a 30000 BTU unit", None),
            (
                "the quote was 12000 dollars, my zip is 78745",
                Some("78745"),
            ),
            ("about 20000 square feet", None),
            ("", None),
        ] {
            if zip_in(said).as_deref() != want {
                bad.push(format!("{said:?}: got {:?}, want {want:?}", zip_in(said)));
            }
            let old = extract_zip(said);
            if old != want.unwrap_or("") {
                bad.push(format!("extract_zip {said:?}: got {old:?}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn conformance_categorize_duration() {
        assert_eq!(categorize_duration("since yesterday"), "recent"); // val.duration.2
        assert_eq!(categorize_duration("2 days"), "recent"); // val.duration.4
        assert_eq!(categorize_duration(""), ""); // val.duration.5
        assert_eq!(categorize_duration("forever"), ""); // val.duration.6
        assert_eq!(categorize_duration("just a couple weeks"), "acute"); // val.duration.7
        assert_eq!(categorize_duration("this morning"), "acute");
        assert_eq!(categorize_duration("about a month"), "ongoing");
    }

    #[test]
    fn conformance_classify_intent() {
        for (input, want) in [
            ("my AC is broken", "service"), // val.intent.test_ac_is_service
            ("I have a billing question", "non_service"), // test_billing_is_non_service
            ("I'm a parts supplier", "non_service"), // test_vendor_is_non_service
            ("hello", "service"),           // test_ambiguous_defaults_to_service
            (
                "I want to cancel my appointment and ask about my bill",
                "manage_booking",
            ), // derived_1
            ("I'm following up about my bill", "follow_up"), // derived_2
            ("I need a job done on my AC", "service"), // derived_3 / d11_job_done_on_ac
            ("wrong number sorry", "non_service"), // derived_4
            ("I want to book a repair", "service"), // derived_5
            ("is this about my appointment", "manage_booking"), // derived_6
            ("do you have a job opening for technicians?", "non_service"), // d11_job_opening
            (
                "I'd like to apply for the technician position",
                "non_service",
            ), // d11_apply_for_position
            ("I'm calling about a job application", "non_service"), // d11_job_application
            // sm.welcome.*
            ("I'm following up on a previous call", "follow_up"),
            ("I need to reschedule my appointment", "manage_booking"),
            ("I'm at home and need a job done on my AC", "service"),
            (
                "the last job your tech did on my furnace isn't holding up",
                "service",
            ),
            ("", "service"),
        ] {
            assert_eq!(classify_intent(input).as_str(), want, "{input:?}");
        }
    }

    #[test]
    fn non_service_types() {
        assert_eq!(
            non_service_callback_type("I have a billing question"),
            Some("billing")
        );
        assert_eq!(
            non_service_callback_type("can you have someone call me back about the charge"),
            Some("billing")
        );
        assert_eq!(
            non_service_callback_type("I have a warranty question about my unit"),
            Some("warranty")
        );
        assert_eq!(non_service_callback_type("I'm a parts supplier"), None);
        assert_eq!(non_service_callback_type("do you have a job opening"), None);
        assert_eq!(non_service_callback_type("wrong number sorry"), None);
    }

    #[test]
    fn conformance_high_ticket_callback_property() {
        assert!(detect_high_ticket("I want a new AC system")); // val.high_ticket.test_replacement
        assert!(detect_high_ticket("can I get a quote for a new unit")); // test_quote
        assert!(detect_high_ticket("thinking about an upgrade")); // derived_2
        assert!(!detect_high_ticket("need a replacement part")); // derived_3
        assert!(!detect_high_ticket("")); // derived_4
        assert!(detect_callback_request("just have someone call me back")); // val.callback_request.1
        assert!(!detect_callback_request("can you call back later")); // .2
        assert!(detect_callback_request("I'd prefer a callback")); // .3
        assert!(detect_property_manager("I'm the landlord for that house")); // val.property_manager.1
        assert!(detect_property_manager("calling on behalf of my mom")); // .2
        assert!(!detect_property_manager("I own the home")); // .3
    }

    #[test]
    fn wrap_up() {
        for (input, want) in [
            ("great, thanks, bye", true),      // sm.confirm.d9_goodbye_ends
            ("that's all", true),              // sm.confirm.d9_thats_all_ends
            ("no, thanks", true),              // sm.confirm.d9_no_thanks_ends
            ("thank you", true),               // sm.confirm.d9_thank_you_ends
            ("Thanks bye", true),              // proc.end_call_after_llm_speech
            ("perfect, thank you, bye", true), // proc.d9.booked_caller_asks_then_leaves
            ("thanks, bye", true),             // proc.d10.ceiling_without_speech_end
            ("ok great, bye", true),           // proc.d10.earlier_speech_end_does_not_count
            ("that's it", true),
            ("no thanks", true),
            ("all set", true),
            ("have a good one", true),
            ("no", true),
            ("how much will the visit cost?", false),
            ("what time will they come?", false),
            ("what should I do until the technician arrives?", false),
            ("thanks, what time will they come", false),
            ("thanks, how much is it?", false),
            ("yes that sounds right", false),
            ("", false),
            ("🔥", false),
        ] {
            assert_eq!(is_wrap_up(input), want, "{input:?}");
        }
    }

    #[test]
    fn manage_requests() {
        use ManageRequest::*;
        for (input, want) in [
            ("please cancel my appointment", Some(Cancel)),
            ("can I move it to Friday?", Some(Reschedule)),
            ("I might need to reschedule", Some(Reschedule)),
            ("I need to reschedule", Some(Reschedule)),
            ("can I reschedule to Friday morning?", Some(Reschedule)),
            ("can we do a different day", Some(Reschedule)),
            ("when is my appointment?", Some(Status)),
            ("is it still on?", Some(Status)),
            ("Friday afternoon works", None),
            ("", None),
        ] {
            assert_eq!(manage_request(input), want, "{input:?}");
        }
        assert_eq!(Reschedule.as_str(), "reschedule");
    }

    #[test]
    fn time_naming() {
        assert!(names_a_time("Friday afternoon works"));
        assert!(names_a_time("can I move it to Friday?"));
        assert!(names_a_time("can I reschedule to Friday morning?"));
        assert!(names_a_time("how about 3pm"));
        assert!(names_a_time("3 pm please"));
        assert!(names_a_time("as soon as possible"));
        assert!(!names_a_time("I might need to reschedule"));
        assert!(!names_a_time("I need to reschedule"));
        assert!(!names_a_time(""));
    }

    #[test]
    fn hostile_inputs_never_panic() {
        let big = "seven oh 🔥 don't smell gas, é\u{0} no ".repeat(300); // ~10 KB
        assert!(big.len() > 10_000);
        let inputs = [
            big.as_str(),
            "",
            "'",
            "’",
            "''''",
            "a'",
            "'a",
            "\u{feff}",
            "İstanbul",
            "ǅ",
            "\u{7f}\u{80}",
            "0",
            "o",
            "oh",
        ];
        let p = BusinessProfile::default();
        for s in inputs {
            let _ = validate_zip(s);
            let _ = validate_name(s);
            let _ = validate_address(s);
            let _ = is_service_area(s, &p);
            let _ = words_to_digits(s);
            let _ = extract_zip(s);
            let _ = extract_phone(s);
            let _ = say_phone(s);
            let _ = categorize_duration(s);
            let _ = classify_intent(s);
            let _ = non_service_callback_type(s);
            let _ = safety_answer(s);
            let _ = detect_high_ticket(s);
            let _ = detect_callback_request(s);
            let _ = detect_property_manager(s);
            let _ = is_wrap_up(s);
            let _ = manage_request(s);
            let _ = names_a_time(s);
        }
    }
}
