//! Background field extraction and its firewall (SPEC §5.8).
//!
//! After a processed utterance in `service_area`, `discovery`, `urgency` or
//! `pre_confirm` the engine asks a responder to pull the caller's details out
//! of the last ten caller lines, then [`apply_extraction`] fills the session:
//! empty fields only, name and address validated, and the ZIP code never
//! (it drives routing and belongs to the deterministic service-area step).
//!
//! Two extractors produce an [`ExtractedFields`]: the LLM (prompt from
//! [`extraction_messages`], answer read by [`parse_extraction`]) and the
//! deterministic [`heuristic_extract`] used offline by the scripted responder.

use crate::responder::ChatMessage;
use crate::session::{HistoryMessage, Session};
use crate::validate::{validate_address, validate_name};
use serde::{Deserialize, Serialize};

/// The fields extraction may report ("" = not said).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedFields {
    #[serde(default)]
    pub customer_name: String,
    #[serde(default)]
    pub problem_description: String,
    #[serde(default)]
    pub service_address: String,
    #[serde(default)]
    pub zip_code: String,
    #[serde(default)]
    pub preferred_time: String,
    #[serde(default)]
    pub problem_duration: String,
    #[serde(default)]
    pub equipment_type: String,
}

/// The seven keys of an extraction answer, in order.
pub const EXTRACTION_KEYS: [&str; 7] = [
    "customer_name",
    "problem_description",
    "service_address",
    "zip_code",
    "preferred_time",
    "problem_duration",
    "equipment_type",
];

impl ExtractedFields {
    fn fields(&self) -> [(&'static str, &String); 7] {
        [
            ("customer_name", &self.customer_name),
            ("problem_description", &self.problem_description),
            ("service_address", &self.service_address),
            ("zip_code", &self.zip_code),
            ("preferred_time", &self.preferred_time),
            ("problem_duration", &self.problem_duration),
            ("equipment_type", &self.equipment_type),
        ]
    }

    fn field_mut(&mut self, key: &str) -> Option<&mut String> {
        Some(match key {
            "customer_name" => &mut self.customer_name,
            "problem_description" => &mut self.problem_description,
            "service_address" => &mut self.service_address,
            "zip_code" => &mut self.zip_code,
            "preferred_time" => &mut self.preferred_time,
            "problem_duration" => &mut self.problem_duration,
            "equipment_type" => &mut self.equipment_type,
            _ => return None,
        })
    }

    /// Whether nothing was extracted.
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|(_, v)| v.is_empty())
    }

    /// The extracted-fields object: the non-empty fields only, so a failed
    /// or empty extraction is `{}` (the `extract_fields` conformance shape).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in self.fields() {
            if !v.is_empty() {
                m.insert(k.to_string(), serde_json::Value::String(v.clone()));
            }
        }
        serde_json::Value::Object(m)
    }
}

/// The instruction given to the extraction LLM (our words).
pub fn extraction_instruction() -> String {
    format!(
        "You read the caller's side of a phone call to a heating and cooling company and pull \
out their details. Answer with one JSON object with exactly these string keys: {}. \
Fill a key only with what the caller explicitly said; use \"\" for anything they did not say, \
and never guess. customer_name is the caller's own name only. service_address is the street \
address of the visit only: never put the caller's name, the ZIP code or anything else in it. \
problem_description is a short, plain summary of what is wrong. preferred_time is when they \
want someone to come, in their words. problem_duration is how long the problem has been going \
on. equipment_type is the kind of equipment (for example AC, furnace, heat pump).",
        EXTRACTION_KEYS.join(", ")
    )
}

/// The LLM messages for one extraction pass: the instruction plus the last
/// ten history entries. `None` when those entries hold no caller line (no
/// LLM call is made then).
pub fn extraction_messages(history: &[HistoryMessage]) -> Option<Vec<ChatMessage>> {
    let start = history.len().saturating_sub(10);
    let recent = history.get(start..).unwrap_or(&[]);
    if !recent.iter().any(|m| m.role == "user") {
        return None;
    }
    let mut out = vec![ChatMessage::system(extraction_instruction())];
    for m in recent {
        match m.role.as_str() {
            "user" => out.push(ChatMessage::user(m.content.clone())),
            "assistant" | "agent" => out.push(ChatMessage::assistant(m.content.clone())),
            _ => {}
        }
    }
    Some(out)
}

/// Read the extraction LLM's answer leniently: code fences and text around
/// the object are ignored, non-string values are ignored, garbage gives the
/// empty result.
pub fn parse_extraction(content: &str) -> ExtractedFields {
    let mut f = ExtractedFields::default();
    let obj = match serde_json::from_str::<serde_json::Value>(content.trim()) {
        Ok(v) => v,
        Err(_) => {
            let (Some(a), Some(b)) = (content.find('{'), content.rfind('}')) else {
                return f;
            };
            match content
                .get(a..=b)
                .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            {
                Some(v) => v,
                None => return f,
            }
        }
    };
    let Some(map) = obj.as_object() else {
        return f;
    };
    for key in EXTRACTION_KEYS {
        if let (Some(serde_json::Value::String(v)), Some(slot)) = (map.get(key), f.field_mut(key)) {
            *slot = v.trim().to_string();
        }
    }
    f
}

/// Whether an extraction pass should run (SPEC §5.8 step 1).
pub fn should_extract(session: &Session) -> bool {
    session.conversation_history.len() >= 2
}

/// Apply an extraction to the session: fill empty fields only, validate name
/// and address, and never touch the ZIP code (the extraction firewall).
pub fn apply_extraction(session: &mut Session, f: &ExtractedFields) {
    fn fill(slot: &mut String, value: &str) {
        if slot.trim().is_empty() && !value.trim().is_empty() {
            *slot = value.trim().to_string();
        }
    }
    fill(&mut session.problem_description, &f.problem_description);
    fill(&mut session.preferred_time, &f.preferred_time);
    fill(&mut session.equipment_type, &f.equipment_type);
    fill(&mut session.problem_duration, &f.problem_duration);
    if session.service_address.trim().is_empty() && !f.service_address.trim().is_empty() {
        session.service_address = validate_address(&f.service_address);
    }
    if session.customer_name.trim().is_empty() && !f.customer_name.trim().is_empty() {
        session.customer_name = validate_name(&f.customer_name);
    }
    // zip_code: never written here.
}

// ---------------------------------------------------------------------------
// Heuristic extractor.

/// Deterministic, offline extractor over the caller's lines (what the
/// scripted responder uses instead of an LLM).
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicExtractor;

impl HeuristicExtractor {
    /// Same as [`heuristic_extract`].
    pub fn extract(&self, history: &[HistoryMessage]) -> ExtractedFields {
        heuristic_extract(history)
    }
}

/// Extract what the caller said from their lines (`role == "user"`), without
/// an LLM: name, street address, problem, preferred time, equipment and how
/// long the problem has lasted. The ZIP code is left empty (it is owned by
/// the service-area step). Never panics.
pub fn heuristic_extract(history: &[HistoryMessage]) -> ExtractedFields {
    let lines: Vec<&str> = history
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| m.content.as_str())
        .collect();
    let toks: Vec<Vec<Tok>> = lines.iter().map(|l| tokenize(l)).collect();
    ExtractedFields {
        customer_name: find_name(&toks),
        problem_description: find_problem(&lines),
        service_address: find_address(&toks),
        zip_code: String::new(),
        preferred_time: find_preferred_time(&lines),
        problem_duration: find_duration(&lines),
        equipment_type: find_equipment(&lines),
    }
}

#[derive(Debug, Clone)]
struct Tok {
    /// As typed, edge punctuation removed.
    raw: String,
    /// Lower case, typographic apostrophes straightened.
    low: String,
    /// The original piece ended a clause (`.`, `,`, `;`, `!`, `?`).
    ends_clause: bool,
}

fn tokenize(text: &str) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::new();
    for piece in text.split_whitespace() {
        // "#5" (a unit number) is two words: "#" and "5".
        let piece = match piece.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphanumeric()) => {
                out.push(Tok {
                    raw: "#".into(),
                    low: "#".into(),
                    ends_clause: false,
                });
                rest
            }
            _ => piece,
        };
        let trimmed_end = piece.trim_end_matches(['"', '\'', ')', '’', '”']);
        let ends_clause = trimmed_end.ends_with(['.', ',', ';', '!', '?', ':', '…']);
        let raw = piece.trim_matches(|c: char| !c.is_alphanumeric());
        if raw.is_empty() {
            if ends_clause || piece.contains(['-', '—', '–']) {
                if let Some(last) = out.last_mut() {
                    last.ends_clause = true;
                }
            }
            continue;
        }
        let low = raw.replace('’', "'").to_lowercase();
        out.push(Tok {
            raw: raw.to_string(),
            low,
            ends_clause,
        });
    }
    out
}

use crate::keywords::is_word_char;

/// True at the start/end of text or next to a non-word character.
fn is_boundary(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => !is_word_char(c),
    }
}

/// Whole-word phrase search on lower-cased text; returns the byte position.
fn find_phrase(lower: &str, phrase: &str) -> Option<usize> {
    if phrase.is_empty() {
        return None;
    }
    let mut start = 0;
    while let Some(pos) = lower.get(start..).and_then(|h| h.find(phrase)) {
        let at = start + pos;
        let end = at + phrase.len();
        let before = lower.get(..at).and_then(|s| s.chars().next_back());
        let after = lower.get(end..).and_then(|s| s.chars().next());
        if is_boundary(before) && is_boundary(after) {
            return Some(at);
        }
        start = at
            + lower
                .get(at..)
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
    }
    None
}

fn has_any(lower: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| find_phrase(lower, p).is_some())
}

fn normalize_lower(s: &str) -> String {
    s.replace('’', "'").to_lowercase()
}

fn capitalize(word: &str) -> String {
    let all_lower = !word.chars().any(char::is_uppercase);
    let all_upper = !word.chars().any(char::is_lowercase);
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let rest: String = chars.collect();
    let rest = if all_lower || all_upper {
        rest.to_lowercase()
    } else {
        rest
    };
    first.to_uppercase().collect::<String>() + &rest
}

fn starts_upper(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
}

// --- name -------------------------------------------------------------------

const NAME_STOP: &[&str] = &[
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
const NOT_A_NAME: &[&str] = &[
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

fn name_word_ok(t: &Tok) -> bool {
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
fn name_after(line: &[Tok], i: usize, strong: bool) -> Option<String> {
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

fn low_seq_at(line: &[Tok], i: usize, seq: &[&str]) -> bool {
    seq.iter()
        .enumerate()
        .all(|(k, w)| line.get(i + k).is_some_and(|t| t.low == *w))
}

fn find_name(lines: &[Vec<Tok>]) -> String {
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

const NAME_LEAD_FILLER: &[&str] = &[
    "yeah", "yes", "sure", "it's", "its", "it", "is", "this", "i'm", "um", "uh", "oh", "ok",
    "okay", "name", "my", "name's", "the", "so", "well",
];

fn bare_name(line: &[Tok]) -> Option<String> {
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

// --- address ----------------------------------------------------------------

const STREET_SUFFIXES: &[&str] = &[
    "street",
    "st",
    "road",
    "rd",
    "avenue",
    "ave",
    "av",
    "lane",
    "ln",
    "drive",
    "dr",
    "boulevard",
    "blvd",
    "court",
    "ct",
    "way",
    "place",
    "pl",
    "circle",
    "cir",
    "parkway",
    "pkwy",
    "trail",
    "trl",
    "terrace",
    "ter",
    "highway",
    "hwy",
    "loop",
    "cove",
    "cv",
    "path",
    "pass",
    "run",
    "row",
    "square",
    "sq",
    "crossing",
    "xing",
    "bend",
    "point",
    "pt",
    "ridge",
    "hollow",
    "plaza",
    "alley",
    "expressway",
    "freeway",
];

const ADDRESS_STOP: &[&str] = &[
    "on", "at", "in", "the", "my", "is", "it's", "its", "and", "or", "near", "by", "off", "of",
    "to", "from", "a", "an", "i", "we", "our", "your", "it", "that", "this", "unit", "units",
    "system", "ac", "furnace", "zip", "code", "is", "was", "has", "have", "about", "for", "with",
    "yes", "yeah", "no", "okay", "ok", "um", "uh", "so", "but", "be", "been", "am", "are", "days",
    "day", "weeks", "week", "hours", "years", "months", "minutes", "times", "dollars",
];

fn unit_value(w: &str) -> Option<u64> {
    Some(match w {
        "zero" => 0,
        "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        "thirteen" => 13,
        "fourteen" => 14,
        "fifteen" => 15,
        "sixteen" => 16,
        "seventeen" => 17,
        "eighteen" => 18,
        "nineteen" => 19,
        _ => return None,
    })
}

fn tens_value(w: &str) -> Option<u64> {
    Some(match w {
        "twenty" => 20,
        "thirty" => 30,
        "forty" => 40,
        "fifty" => 50,
        "sixty" => 60,
        "seventy" => 70,
        "eighty" => 80,
        "ninety" => 90,
        _ => return None,
    })
}

/// One piece of a spoken or written house number.
struct Group {
    text: Option<String>,
    value: u64,
    /// 0 closed, 10 accepts a unit, 100 accepts anything below 100.
    open: u64,
    is_oh: bool,
}

impl Group {
    fn render(&self) -> String {
        self.text.clone().unwrap_or_else(|| self.value.to_string())
    }
}

/// Feed one word into the number run; false if it is not part of a number.
fn push_number_word(groups: &mut Vec<Group>, w: &str) -> bool {
    if !w.is_empty() && w.len() <= 6 && w.bytes().all(|b| b.is_ascii_digit()) {
        groups.push(Group {
            text: Some(w.to_string()),
            value: 0,
            open: 0,
            is_oh: false,
        });
        return true;
    }
    if w == "oh" || w == "o" {
        groups.push(Group {
            text: Some("0".into()),
            value: 0,
            open: 0,
            is_oh: true,
        });
        return true;
    }
    if let Some(v) = unit_value(w) {
        if let Some(last) = groups.last_mut() {
            if (last.open == 10 && v < 10 && v > 0) || (last.open == 100 && v > 0) {
                last.value += v;
                last.open = 0;
                return true;
            }
        }
        groups.push(Group {
            text: None,
            value: v,
            open: 0,
            is_oh: false,
        });
        return true;
    }
    if let Some(t) = tens_value(w) {
        if let Some(last) = groups.last_mut() {
            if last.open == 100 {
                last.value += t;
                last.open = 10;
                return true;
            }
        }
        groups.push(Group {
            text: None,
            value: t,
            open: 10,
            is_oh: false,
        });
        return true;
    }
    if w == "hundred" {
        if let Some(last) = groups.last_mut() {
            if last.text.is_none() && last.value > 0 && last.value < 100 && last.open != 100 {
                last.value *= 100;
                last.open = 100;
                return true;
            }
        }
        return false;
    }
    if w.contains('-') {
        let parts: Vec<&str> = w.split('-').collect();
        if parts
            .iter()
            .all(|p| unit_value(p).is_some() || tens_value(p).is_some())
        {
            return parts.into_iter().all(|p| push_number_word(groups, p));
        }
    }
    false
}

/// Try to read "<number> <name words> <suffix>" starting at `i`. Returns the
/// address and the index after it, or the index to resume scanning from.
fn address_at(toks: &[&Tok], i: usize) -> Result<(String, usize), usize> {
    let mut groups: Vec<Group> = Vec::new();
    let mut j = i;
    while let Some(t) = toks.get(j) {
        if !push_number_word(&mut groups, &t.low) {
            break;
        }
        j += 1;
        if t.ends_clause && !toks.get(j).is_some_and(|n| push_probe(&n.low)) {
            break;
        }
        if groups.len() > 12 {
            return Err(j);
        }
    }
    if j == i {
        return Err(i + 1);
    }
    let resume = j;
    if groups.iter().all(|g| g.is_oh) {
        return Err(resume);
    }
    // A ZIP code spoken as "zip ..." is not a house number.
    if i > 0
        && toks
            .get(i - 1)
            .is_some_and(|t| t.low == "zip" || t.low == "code" || t.low == "zipcode")
    {
        return Err(resume);
    }
    let number: String = groups.iter().map(Group::render).collect();
    if number.is_empty() || number.len() > 6 {
        return Err(resume);
    }
    // Street words up to the last suffix: "Oak Hollow Drive" keeps "Drive"
    // although "Hollow" is a suffix too.
    let mut words: Vec<String> = Vec::new();
    let mut street_end = None;
    let mut k = j;
    while let Some(t) = toks.get(k) {
        let ordinal = t.low.len() <= 6
            && t.low.chars().next().is_some_and(|c| c.is_ascii_digit())
            && ["st", "nd", "rd", "th"].iter().any(|s| t.low.ends_with(s));
        let wordy = t
            .low
            .chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-');
        if words.len() >= 6 || ADDRESS_STOP.contains(&t.low.as_str()) || !(wordy || ordinal) {
            break;
        }
        words.push(if ordinal {
            t.low.clone()
        } else {
            capitalize(&t.raw)
        });
        k += 1;
        if words.len() > 1 && STREET_SUFFIXES.contains(&t.low.as_str()) {
            street_end = Some((words.len(), k));
        }
        if t.ends_clause {
            break;
        }
    }
    let Some((n, after)) = street_end else {
        return Err(resume);
    };
    let mut addr = number;
    for w in &words[..n] {
        addr.push(' ');
        addr.push_str(w);
    }
    match unit_at(toks, after) {
        Some((unit, next)) => {
            addr.push_str(", ");
            addr.push_str(&unit);
            Ok((addr, next))
        }
        None => Ok((addr, after)),
    }
}

/// Words that introduce an apartment or unit number after a street.
const UNIT_WORDS: &[&str] = &[
    "apartment",
    "apt",
    "unit",
    "suite",
    "ste",
    "building",
    "bldg",
    "lot",
    "space",
    "number",
    "#",
];

/// "apartment 4B", "unit twelve", "suite 200", "apt. b" at `i`: the unit as
/// the caller said it (letters upper-cased) and the index after it.
fn unit_at(toks: &[&Tok], i: usize) -> Option<(String, usize)> {
    let word = toks.get(i)?;
    if !UNIT_WORDS.contains(&word.low.as_str()) {
        return None;
    }
    let value = toks.get(i + 1)?;
    let short_code = value.low.len() <= 5
        && value.low.chars().all(|c| c.is_ascii_alphanumeric())
        && (value.low.chars().any(|c| c.is_ascii_digit()) || value.low.len() == 1);
    let (label, next) = if short_code {
        (value.raw.to_uppercase(), i + 2)
    } else {
        // A spoken number ("unit twelve", "apartment four b").
        let mut groups = Vec::new();
        let mut k = i + 1;
        while toks
            .get(k)
            .is_some_and(|t| push_number_word(&mut groups, &t.low))
        {
            k += 1;
        }
        if groups.is_empty() || groups.iter().all(|g| g.is_oh) {
            return None;
        }
        let mut label: String = groups.iter().map(Group::render).collect();
        if let Some(letter) = toks
            .get(k)
            .filter(|t| t.low.len() == 1 && t.low.chars().all(|c| c.is_ascii_alphabetic()))
        {
            label.push_str(&letter.raw.to_uppercase());
            k += 1;
        }
        (label, k)
    };
    if word.low == "#" {
        return Some((format!("#{label}"), next));
    }
    Some((format!("{} {label}", capitalize(&word.raw)), next))
}

/// Whether a word continues a spoken number.
fn push_probe(w: &str) -> bool {
    let mut g = Vec::new();
    push_number_word(&mut g, w)
}

fn find_address(lines: &[Vec<Tok>]) -> String {
    let toks: Vec<&Tok> = lines.iter().flatten().collect();
    let mut found = String::new();
    let mut i = 0;
    while i < toks.len() {
        match address_at(&toks, i) {
            Ok((addr, next)) => {
                let v = validate_address(&addr);
                if !v.is_empty() {
                    found = v;
                }
                i = next.max(i + 1);
            }
            Err(next) => i = next.max(i + 1),
        }
    }
    if found.is_empty() {
        if let Some(v) = lines.iter().rev().find_map(|l| bare_address(l)) {
            found = v;
        }
    }
    found
}

const ADDRESS_LEAD_FILLER: &[&str] = &[
    "yeah",
    "yes",
    "sure",
    "it's",
    "its",
    "it",
    "is",
    "the",
    "address",
    "address's",
    "i'm",
    "we're",
    "at",
    "um",
    "uh",
    "ok",
    "okay",
    "so",
    "well",
    "we",
    "are",
    "i",
    "am",
    "that's",
];

/// Measure words that follow a number but never a street name.
const NOT_STREET: &[&str] = &[
    "ton",
    "tons",
    "degree",
    "degrees",
    "dollar",
    "dollars",
    "bucks",
    "percent",
    "unit",
    "units",
    "time",
    "times",
    "minute",
    "minutes",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "seer",
    "btu",
    "amps",
    "volts",
    "people",
    "kids",
    "floors",
    "stories",
    "bedrooms",
    "rooms",
    "square",
    "feet",
    "foot",
    "ft",
    "sq",
    "am",
    "pm",
    "o'clock",
    "thirty",
    "fifteen",
    "forty-five",
];

/// A line that is only "<number> <one to three name words>" (an answer to
/// "what's the street address?" without a suffix such as Street).
fn bare_address(line: &[Tok]) -> Option<String> {
    let start = line
        .iter()
        .position(|t| !ADDRESS_LEAD_FILLER.contains(&t.low.as_str()))?;
    let rest: Vec<&Tok> = line.get(start..)?.iter().collect();
    let mut groups = Vec::new();
    let mut j = 0;
    while let Some(t) = rest.get(j) {
        if !push_number_word(&mut groups, &t.low) {
            break;
        }
        j += 1;
    }
    if j == 0 || groups.iter().all(|g| g.is_oh) {
        return None;
    }
    let number: String = groups.iter().map(Group::render).collect();
    let names = rest.get(j..)?;
    if number.len() > 6 || names.is_empty() || names.len() > 3 {
        return None;
    }
    let ok = names.iter().all(|t| {
        t.low
            .chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-')
            && !ADDRESS_STOP.contains(&t.low.as_str())
            && !NOT_STREET.contains(&t.low.as_str())
            && !PROBLEM_CUES.contains(&t.low.as_str())
    });
    if !ok {
        return None;
    }
    let mut addr = number;
    for t in names {
        addr.push(' ');
        addr.push_str(&capitalize(&t.raw));
    }
    let v = validate_address(&addr);
    (!v.is_empty()).then_some(v)
}

// --- problem ----------------------------------------------------------------

const PROBLEM_CUES: &[&str] = &[
    "ac",
    "a/c",
    "air conditioner",
    "air conditioning",
    "air",
    "heat",
    "heater",
    "heating",
    "furnace",
    "cooling",
    "cool",
    "heat pump",
    "thermostat",
    "compressor",
    "condenser",
    "fan",
    "blower",
    "vent",
    "vents",
    "duct",
    "ducts",
    "unit",
    "system",
    "hvac",
    "mini split",
    "not working",
    "stopped working",
    "won't turn on",
    "won't turn off",
    "wont turn on",
    "broken",
    "broke",
    "leak",
    "leaking",
    "leaks",
    "dripping",
    "noise",
    "noises",
    "noisy",
    "loud",
    "rattling",
    "buzzing",
    "humming",
    "clicking",
    "squealing",
    "grinding",
    "frozen",
    "freezing",
    "ice",
    "iced",
    "blowing",
    "short cycling",
    "tripping",
    "breaker",
    "filter",
    "water heater",
    "tune-up",
    "tune up",
    "maintenance",
    "new system",
    "replacement",
    "replace",
    "quote",
    "estimate",
    "install",
    "installation",
    "hot",
    "warm",
    "cold",
    "water",
    "temperature",
    "humid",
    "humidity",
];

/// Leading filler phrases removed from a problem clause (longest first).
const PROBLEM_LEAD_FILLER: &[&str] = &[
    "i'm having a problem with",
    "i'm having an issue with",
    "i'm having problems with",
    "i'm having issues with",
    "i am having a problem with",
    "i am having an issue with",
    "i have a problem with",
    "i have an issue with",
    "i've got a problem with",
    "there's a problem with",
    "there is a problem with",
    "we're having a problem with",
    "we're having an issue with",
    "we have a problem with",
    "i need someone to come out and look at",
    "i need someone to look at",
    "i need somebody to look at",
    "i need someone to check",
    "i need help with",
    "i'm calling because",
    "i'm calling about",
    "i am calling because",
    "i am calling about",
    "calling because",
    "calling about",
    "the problem is",
    "the issue is",
    "my problem is",
    "i think",
    "it's just",
    "just",
    "yeah",
    "yes",
    "yep",
    "hi",
    "hello",
    "hey",
    "um",
    "uh",
    "umm",
    "so",
    "well",
    "okay",
    "ok",
    "and",
    "but",
    "oh",
    "hmm",
    "like",
    "basically",
    "actually",
    "no",
    "nope",
    "my",
    "our",
    "the",
];

const PROBLEM_TRAIL_FILLER: &[&str] = &["or something", "i guess", "i think", "please"];

/// Words that mark a clause as something other than a problem statement.
const NOT_PROBLEM: &[&str] = &[
    "smell", "smoke", "burning", "zip", "fire", "sparks", "gas leak",
];

fn split_clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(['.', ',', ';', '!', '?', '\n', '—']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let mut cur: Vec<&str> = Vec::new();
        for w in words {
            let lw = w.to_lowercase();
            if (lw == "but" || lw == "and") && !cur.is_empty() {
                out.push(cur.join(" "));
                cur.clear();
            }
            cur.push(w);
        }
        if !cur.is_empty() {
            out.push(cur.join(" "));
        }
    }
    out
}

fn strip_lead(words: &mut Vec<&str>, phrases: &[&str]) -> bool {
    for p in phrases {
        let pw: Vec<&str> = p.split(' ').collect();
        if pw.len() <= words.len()
            && pw.iter().zip(words.iter()).all(|(a, b)| {
                normalize_lower(b.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')) == *a
            })
        {
            words.drain(..pw.len());
            return true;
        }
    }
    false
}

fn strip_trail(words: &mut Vec<&str>, phrases: &[&str]) -> bool {
    for p in phrases {
        let pw: Vec<&str> = p.split(' ').collect();
        if pw.len() <= words.len() {
            let tail = words.len() - pw.len();
            let matches = pw.iter().zip(words.iter().skip(tail)).all(|(a, b)| {
                normalize_lower(b.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')) == *a
            });
            if matches {
                words.truncate(tail);
                return true;
            }
        }
    }
    false
}

fn clean_problem(clause: &str) -> String {
    let mut words: Vec<&str> = clause.split_whitespace().collect();
    let mut guard = 0;
    while guard < 64 && strip_lead(&mut words, PROBLEM_LEAD_FILLER) {
        guard += 1;
    }
    while guard < 128 && strip_trail(&mut words, PROBLEM_TRAIL_FILLER) {
        guard += 1;
    }
    let s = words.join(" ");
    s.trim_matches(|c: char| !c.is_alphanumeric() && c != ')' && c != '\'')
        .to_string()
}

fn capitalize_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(f) => f.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

fn find_problem(lines: &[&str]) -> String {
    for line in lines {
        let mut parts: Vec<String> = Vec::new();
        for clause in split_clauses(line) {
            let low = normalize_lower(&clause);
            if !has_any(&low, PROBLEM_CUES) || has_any(&low, NOT_PROBLEM) {
                continue;
            }
            let c = clean_problem(&clause);
            if !c.is_empty() && !parts.contains(&c) {
                parts.push(c);
            }
        }
        if !parts.is_empty() {
            let mut joined = capitalize_first(&parts.join(", "));
            if joined.chars().count() > 200 {
                joined = joined
                    .chars()
                    .take(200)
                    .collect::<String>()
                    .trim_end()
                    .to_string();
            }
            return joined;
        }
    }
    String::new()
}

// --- preferred time ---------------------------------------------------------

const TIME_PHRASES: &[&str] = &[
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

const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Words that make a clause about the past (duration), not a preference.
const PAST_MARKERS: &[&str] = &[
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

fn time_in_clause(low: &str) -> Option<String> {
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

fn find_preferred_time(lines: &[&str]) -> String {
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

// --- duration ---------------------------------------------------------------

const QUANTITIES: &[&str] = &[
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

const DURATION_UNITS: &[&str] = &[
    "minute", "minutes", "hour", "hours", "day", "days", "night", "nights", "week", "weeks",
    "month", "months", "year", "years",
];

const SINCE_WORDS: &[&str] = &[
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

fn quantity_unit_at(words: &[&str], i: usize) -> Option<(String, usize)> {
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

fn duration_in_clause(low: &str) -> Option<String> {
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

fn find_duration(lines: &[&str]) -> String {
    for line in lines {
        for clause in split_clauses(line) {
            if let Some(d) = duration_in_clause(&normalize_lower(&clause)) {
                return d;
            }
        }
    }
    String::new()
}

// --- equipment --------------------------------------------------------------

const EQUIPMENT: &[(&str, &str)] = &[
    ("heat pump", "heat pump"),
    ("mini split", "mini split"),
    ("mini-split", "mini split"),
    ("minisplit", "mini split"),
    ("ductless", "mini split"),
    ("water heater", "water heater"),
    ("air handler", "air handler"),
    ("air conditioner", "AC"),
    ("air conditioning", "AC"),
    ("central air", "AC"),
    ("a/c", "AC"),
    ("ac", "AC"),
    ("condenser", "AC"),
    ("thermostat", "thermostat"),
    ("furnace", "furnace"),
    ("boiler", "boiler"),
    ("heater", "heater"),
];

fn find_equipment(lines: &[&str]) -> String {
    for line in lines {
        let low = normalize_lower(line);
        let mut best: Option<(usize, usize, &str)> = None;
        for (phrase, name) in EQUIPMENT {
            if let Some(p) = find_phrase(&low, phrase) {
                let better = match best {
                    None => true,
                    Some((bp, bl, _)) => p < bp || (p == bp && phrase.len() > bl),
                };
                if better {
                    best = Some((p, phrase.len(), name));
                }
            }
        }
        if let Some((_, _, name)) = best {
            return name.to_string();
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(lines: &[&str]) -> Vec<HistoryMessage> {
        lines
            .iter()
            .map(|l| HistoryMessage {
                role: "user".into(),
                content: (*l).to_string(),
            })
            .collect()
    }

    fn hist(pairs: &[(&str, &str)]) -> Vec<HistoryMessage> {
        pairs
            .iter()
            .map(|(r, c)| HistoryMessage {
                role: (*r).to_string(),
                content: (*c).to_string(),
            })
            .collect()
    }

    // --- conformance: extract_fields (harness shape) ---------------------

    /// What the `extract_fields` conformance fn computes with a fake LLM.
    fn extract_fields(conversation: &[HistoryMessage], llm_result: &str, status: u16) -> String {
        match extraction_messages(conversation) {
            None => "{}".into(),
            Some(_) if status >= 400 => "{}".into(),
            Some(_) => parse_extraction(llm_result).to_json().to_string(),
        }
    }

    #[test]
    fn ext_returns_json() {
        let conv = hist(&[(
            "user",
            "This is Jonas, my AC is blowing warm at 4210 South Lamar 78745",
        )]);
        let llm = r#"{"customer_name":"Jonas","problem_description":"AC blowing warm air","service_address":"4210 South Lamar Blvd","zip_code":"78745","preferred_time":"morning"}"#;
        let v: serde_json::Value = serde_json::from_str(&extract_fields(&conv, llm, 200)).unwrap();
        assert_eq!(v["customer_name"], "Jonas");
        assert_eq!(v["zip_code"], "78745");
        assert_eq!(extract_fields(&conv, llm, 500), "{}");
    }

    #[test]
    fn ext_no_user_turns() {
        let conv = hist(&[("assistant", "hi")]);
        assert!(extraction_messages(&conv).is_none());
        assert_eq!(extract_fields(&conv, r#"{"customer_name":"X"}"#, 200), "{}");
        assert_eq!(ExtractedFields::default().to_json(), serde_json::json!({}));
    }

    #[test]
    fn extraction_messages_last_ten() {
        let mut h = user(&["one"]);
        for i in 0..12 {
            h.push(HistoryMessage {
                role: if i % 2 == 0 { "assistant" } else { "user" }.into(),
                content: format!("line {i}"),
            });
        }
        let m = extraction_messages(&h).unwrap();
        assert_eq!(m.len(), 11);
        assert_eq!(m[0].role, crate::responder::ChatRole::System);
        for k in EXTRACTION_KEYS {
            assert!(m[0].content.contains(k));
        }
        assert_eq!(m[1].content, "line 2");
        // The last ten entries hold only assistant lines → None.
        let mut h = user(&["early"]);
        h.extend(hist(&[("assistant", "x"); 10]));
        assert!(extraction_messages(&h).is_none());
    }

    #[test]
    fn parse_is_lenient() {
        let f = parse_extraction(
            "```json\n{\"customer_name\": \" Jonas \", \"zip_code\": 78745, \"equipment_type\": null}\n```",
        );
        assert_eq!(f.customer_name, "Jonas");
        assert_eq!(f.zip_code, "");
        assert_eq!(f.equipment_type, "");
        assert_eq!(parse_extraction("garbage"), ExtractedFields::default());
        assert_eq!(parse_extraction("[1,2]"), ExtractedFields::default());
        assert_eq!(parse_extraction("}{"), ExtractedFields::default());
        assert_eq!(parse_extraction(""), ExtractedFields::default());
        let f = parse_extraction(r#"{"problem_description":"fan issue","extra":"x"}"#);
        assert_eq!(f.problem_description, "fan issue");
    }

    // --- conformance: proc.extraction.* (apply step) ---------------------

    fn apply(session: serde_json::Value, llm: serde_json::Value) -> Session {
        let mut s: Session = serde_json::from_value(session).unwrap();
        if should_extract(&s) {
            let f = parse_extraction(&llm.to_string());
            apply_extraction(&mut s, &f);
        }
        s
    }

    #[test]
    fn proc_extraction_cases() {
        let two =
            serde_json::json!([{"role":"user","content":"a"},{"role":"assistant","content":"b"}]);
        // proc.extraction.zip_never_overwritten
        let s = apply(
            serde_json::json!({"zip_code":"78701","conversation_history":two}),
            serde_json::json!({"zip_code":"78001","problem_description":"fan issue"}),
        );
        assert_eq!(s.zip_code, "78701");
        assert_eq!(s.problem_description, "fan issue");
        // proc.extraction.zip_never_set
        let s = apply(
            serde_json::json!({"conversation_history":two}),
            serde_json::json!({"zip_code":"78701"}),
        );
        assert_eq!(s.zip_code, "");
        // proc.extraction.address_fills_empty
        let s = apply(
            serde_json::json!({"conversation_history":two}),
            serde_json::json!({"service_address":"123 Oak Street"}),
        );
        assert_eq!(s.service_address, "123 Oak Street");
        // proc.extraction.name_fills_empty / name_not_overwritten
        let s = apply(
            serde_json::json!({"conversation_history":two}),
            serde_json::json!({"customer_name":"Jonas"}),
        );
        assert_eq!(s.customer_name, "Jonas");
        let s = apply(
            serde_json::json!({"customer_name":"Jonas","conversation_history":two}),
            serde_json::json!({"customer_name":"Jon"}),
        );
        assert_eq!(s.customer_name, "Jonas");
        // proc.extraction.problem_set
        let s = apply(
            serde_json::json!({"conversation_history":two}),
            serde_json::json!({"problem_description":"AC fan is intermittent"}),
        );
        assert_eq!(s.problem_description, "AC fan is intermittent");
        // proc.extraction.validators_applied
        let s = apply(
            serde_json::json!({"conversation_history":two}),
            serde_json::json!({"customer_name":"unknown","service_address":"7801",
                "preferred_time":"ASAP","equipment_type":"heat pump","problem_duration":"2 days"}),
        );
        assert_eq!(s.customer_name, "");
        assert_eq!(s.service_address, "");
        assert_eq!(s.preferred_time, "ASAP");
        assert_eq!(s.equipment_type, "heat pump");
        assert_eq!(s.problem_duration, "2 days");
        // proc.extraction.needs_two_history_entries
        let s = apply(
            serde_json::json!({"conversation_history":[{"role":"user","content":"my AC is broken"}]}),
            serde_json::json!({"problem_description":"AC broken"}),
        );
        assert_eq!(s.problem_description, "");
    }

    #[test]
    fn validators() {
        assert_eq!(validate_name(" Jonas "), "Jonas");
        assert_eq!(validate_name("N/A"), "");
        assert_eq!(validate_name("512-555-1234"), "");
        assert_eq!(validate_name("123456"), "123456");
        assert_eq!(validate_name("{{customer_name}}"), "");
        assert_eq!(validate_name("Bob or Jim"), "Bob or Jim");
        assert_eq!(
            validate_address("53 Eleven Izzical Road"),
            "5311 Izzical Road"
        );
        assert_eq!(validate_address("4 Two Six Elm St"), "426 Elm St");
        assert_eq!(validate_address("Five Oak Lane"), "5 Oak Lane");
        assert_eq!(validate_address("5 Oh Three Main St"), "503 Main St");
        assert_eq!(validate_address("O Street"), "O Street"); // D-13
        assert_eq!(validate_address("123 Main or 456 Oak"), "");
        assert_eq!(validate_address("7801"), "");
        assert_eq!(validate_address("one two three"), "");
        assert_eq!(validate_address("Oak"), "");
        assert_eq!(validate_address("1 Rk"), "");
        assert_eq!(validate_address("1 Elm"), "1 Elm");
        assert_eq!(validate_address("unknown"), "");
    }

    // --- heuristic extractor --------------------------------------------

    #[test]
    fn names() {
        let n = |l: &[&str]| heuristic_extract(&user(l)).customer_name;
        assert_eq!(n(&["my name is jonas"]), "Jonas");
        assert_eq!(n(&["Yeah, my name is Maria Lopez."]), "Maria Lopez");
        assert_eq!(n(&["This is Jonas"]), "Jonas");
        assert_eq!(n(&["hi this is Jonas calling about my AC"]), "Jonas");
        assert_eq!(n(&["it's dave speaking"]), "Dave");
        assert_eq!(n(&["name's Bob"]), "Bob");
        assert_eq!(n(&["Hi, I'm Sarah and my heat is out"]), "Sarah");
        assert_eq!(n(&["this is ridiculous, my AC is broken again"]), "");
        assert_eq!(n(&["this is the third time I've called"]), "");
        assert_eq!(n(&["this is urgent"]), "");
        assert_eq!(n(&["I'm having a problem with my AC"]), "");
        assert_eq!(n(&["it's broken"]), "");
        assert_eq!(n(&["my AC is broken"]), "");
        // Bare answers to "can I get your name?" (never the opening line).
        assert_eq!(n(&["my AC is broken", "Jonas."]), "Jonas");
        assert_eq!(n(&["my AC is broken", "It's Jonas Berg"]), "Jonas Berg");
        assert_eq!(n(&["my AC is broken", "yeah sure"]), "");
        assert_eq!(n(&["my AC is broken", "Tomorrow."]), "");
        assert_eq!(n(&["my AC is broken", "No."]), "");
        assert_eq!(n(&["my AC is broken", "78701"]), "");
        assert_eq!(n(&["my AC is broken", "Franklin Street"]), "");
        assert_eq!(n(&["Jonas"]), "");
    }

    #[test]
    fn addresses() {
        let a = |l: &[&str]| heuristic_extract(&user(l)).service_address;
        assert_eq!(a(&["4329 Franklin Street"]), "4329 Franklin Street");
        assert_eq!(
            a(&["Okay it's", "four three two nine", "Franklin Street"]),
            "4329 Franklin Street"
        );
        assert_eq!(a(&["it's 123 oak st"]), "123 Oak St");
        assert_eq!(
            a(&["I'm at 4210 South Lamar Blvd, 78745"]),
            "4210 South Lamar Blvd"
        );
        assert_eq!(
            a(&["the address is forty two ten south lamar boulevard"]),
            "4210 South Lamar Boulevard"
        );
        assert_eq!(a(&["twelve hundred five elm drive"]), "1205 Elm Drive");
        assert_eq!(a(&["four two six elm st"]), "426 Elm St");
        assert_eq!(a(&["5 oh 3 Main Street please"]), "503 Main Street");
        assert_eq!(
            a(&["zip seven eight seven zero one", "Franklin Street"]),
            ""
        );
        assert_eq!(a(&["I have one unit on Oak Street"]), "");
        assert_eq!(a(&["it's been 3 days", "no way"]), "");
        assert_eq!(a(&["my AC is broken"]), "");
        assert_eq!(a(&["it's 100 1st street"]), "100 1st Street");
        // Whole-line answers without a suffix.
        assert_eq!(a(&["It's 4329 Franklin."]), "4329 Franklin");
        assert_eq!(a(&["four three two nine franklin"]), "4329 Franklin");
        assert_eq!(a(&["3 tons"]), "");
        assert_eq!(a(&["5 years"]), "");
        assert_eq!(a(&["78701"]), "");
        // A later correction wins.
        assert_eq!(
            a(&["123 Oak Street", "sorry, actually it's 456 Elm Avenue"]),
            "456 Elm Avenue"
        );
    }

    /// Issue 9, item 4: the address keeps what the caller said — the whole
    /// street name with its suffix, and the apartment or unit.
    #[test]
    fn addresses_keep_suffix_and_unit() {
        let a = |l: &[&str]| heuristic_extract(&user(l)).service_address;
        for (said, want) in [
            ("1207 Oak Hollow Drive", "1207 Oak Hollow Drive"),
            ("I'm at 1207 Oak Hollow Drive", "1207 Oak Hollow Drive"),
            ("1207 Oak Hollow Dr. in Austin", "1207 Oak Hollow Dr"),
            (
                "my address is twelve oh seven oak hollow drive",
                "1207 Oak Hollow Drive",
            ),
            (
                "it's 4500 Bluebonnet Ln apt 12",
                "4500 Bluebonnet Ln, Apt 12",
            ),
            (
                "the address is 88 Pecan Court, unit B",
                "88 Pecan Court, Unit B",
            ),
            (
                "1207 Oak Hollow Drive apartment 4b, zip 78745",
                "1207 Oak Hollow Drive, Apartment 4B",
            ),
            (
                "300 Congress Avenue suite 200",
                "300 Congress Avenue, Suite 200",
            ),
            ("42 Indian Run Court", "42 Indian Run Court"),
            ("915 Pecan Point Trail", "915 Pecan Point Trail"),
            ("7 Ridge Road", "7 Ridge Road"),
            ("2100 Hollow Ridge Road", "2100 Hollow Ridge Road"),
            ("5 Mesa Verde Circle", "5 Mesa Verde Circle"),
            (
                "118 Barton Springs Parkway unit twelve",
                "118 Barton Springs Parkway, Unit 12",
            ),
            ("2 Elm Way #5", "2 Elm Way, #5"),
            (
                "44 Stone Creek Pass apartment four b",
                "44 Stone Creek Pass, Apartment 4B",
            ),
            (
                "900 Shoal Creek Blvd and my name is Dana",
                "900 Shoal Creek Blvd",
            ),
            (
                "1207 Oak Hollow Drive Austin Texas",
                "1207 Oak Hollow Drive",
            ),
        ] {
            assert_eq!(a(&[said]), want, "{said:?}");
        }
    }

    #[test]
    fn problems() {
        let p = |l: &[&str]| heuristic_extract(&user(l)).problem_description;
        assert_eq!(p(&["hello", "my AC is broken"]), "AC is broken");
        assert_eq!(
            p(&["Yeah I'm having a problem with my AC, it's blowing warm air"]),
            "AC, it's blowing warm air"
        );
        assert_eq!(
            p(&["um so my furnace is making a loud banging noise"]),
            "Furnace is making a loud banging noise"
        );
        assert_eq!(
            p(&["no gas smell", "the thermostat is blank"]),
            "Thermostat is blank"
        );
        assert_eq!(p(&["This is Jonas", "78701"]), "");
        assert_eq!(p(&["gas furnace won't light"]), "Gas furnace won't light");
        assert_eq!(
            p(&["it's really hot in the house"]),
            "It's really hot in the house"
        );
        assert_eq!(
            p(&["water is leaking from the unit in the attic"]),
            "Water is leaking from the unit in the attic"
        );
    }

    #[test]
    fn times_durations_equipment() {
        let f = |l: &[&str]| heuristic_extract(&user(l));
        assert_eq!(f(&["today if possible"]).preferred_time, "today");
        assert_eq!(
            f(&["tomorrow morning works"]).preferred_time,
            "tomorrow morning"
        );
        assert_eq!(f(&["asap please"]).preferred_time, "ASAP");
        assert_eq!(
            f(&["how about next Tuesday afternoon"]).preferred_time,
            "next tuesday afternoon"
        );
        assert_eq!(f(&["whenever, no rush"]).preferred_time, "whenever");
        assert_eq!(
            f(&["it stopped working this morning and I need someone today"]).preferred_time,
            "today"
        );
        assert_eq!(f(&["no, not right now"]).preferred_time, "");
        assert_eq!(f(&["no gas smell right now"]).preferred_time, "");
        assert_eq!(f(&["nope, nothing right now"]).preferred_time, "");

        assert_eq!(
            f(&["it's been like this since yesterday"]).problem_duration,
            "since yesterday"
        );
        assert_eq!(
            f(&["it's been out for two days"]).problem_duration,
            "for two days"
        );
        assert_eq!(f(&["it's been a week"]).problem_duration, "a week");
        assert_eq!(f(&["started 3 days ago"]).problem_duration, "3 days ago");
        assert_eq!(
            f(&["it stopped working last night"]).problem_duration,
            "since last night"
        );
        assert_eq!(f(&["my AC is broken"]).problem_duration, "");

        assert_eq!(f(&["my AC is broken"]).equipment_type, "AC");
        assert_eq!(f(&["the heat pump is frozen"]).equipment_type, "heat pump");
        assert_eq!(f(&["our mini-split leaks"]).equipment_type, "mini split");
        assert_eq!(f(&["gas furnace won't light"]).equipment_type, "furnace");
        assert_eq!(
            f(&["the water heater is out"]).equipment_type,
            "water heater"
        );
        assert_eq!(f(&["the A/C's thermostat"]).equipment_type, "AC");
        assert_eq!(f(&["hello"]).equipment_type, "");
    }

    #[test]
    fn full_call_and_no_zip() {
        let h = hist(&[
            ("user", "Hi, my AC is blowing warm air"),
            ("assistant", "Quick safety check?"),
            ("user", "no nothing like that"),
            ("user", "seven eight seven zero one"),
            ("user", "my name is Jonas Berg"),
            ("user", "Okay it's"),
            ("user", "four three two nine"),
            ("user", "Franklin Street"),
            ("user", "today please"),
        ]);
        let f = heuristic_extract(&h);
        assert_eq!(f.customer_name, "Jonas Berg");
        assert_eq!(f.problem_description, "AC is blowing warm air");
        assert_eq!(f.service_address, "4329 Franklin Street");
        assert_eq!(f.preferred_time, "today");
        assert_eq!(f.equipment_type, "AC");
        assert_eq!(f.zip_code, "");
        assert_eq!(HeuristicExtractor.extract(&h), f);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_lines(a in "\\PC{0,200}", b in "[a-z0-9 .,'-]{0,80}") {
            let _ = heuristic_extract(&user(&[a.as_str(), b.as_str()]));
            let _ = parse_extraction(&a);
            let _ = validate_address(&b);
        }
    }

    #[test]
    fn never_panics() {
        let big = "héllo 🙂 4329 ".repeat(800);
        let inputs: Vec<String> = vec![
            String::new(),
            " ".into(),
            "\u{0}\u{1}\u{7f}\t\r\n".into(),
            "🙂🙂🙂 my name is 🙂".into(),
            "this is".into(),
            "my name is".into(),
            "since".into(),
            "for".into(),
            "hundred hundred hundred".into(),
            "one hundred".into(),
            "twenty-".into(),
            "-".into(),
            "' ' ' ,,, ...".into(),
            "İstanbul ǅ ß ﬁ straße 12 Straße".into(),
            "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 street".into(),
            "999999999999999999999999 Main Street".into(),
            big,
            "a".repeat(10_000),
            "one ".repeat(3000),
        ];
        for i in &inputs {
            let _ = heuristic_extract(&user(&[i.as_str()]));
            let _ = heuristic_extract(&user(&[i.as_str(), i.as_str()]));
            let _ = parse_extraction(i);
            let _ = validate_address(i);
            let _ = validate_name(i);
        }
    }
}
