//! The heuristic extractor: the offline stand-in for the LLM extractor.
//! It reads the caller's lines only, with one finder per field; the finders
//! of name, address and problem also read one utterance at a time
//! ([`name_in`], [`address_in`], [`problem_in`]), with `asked` saying the
//! agent's last question asked for that slot (a bare "Dev Raman" is a name
//! only then).

mod address;
mod duration;
mod equipment;
mod name;
mod problem;
mod time;

pub(crate) use address::STREET_SUFFIXES;
use address::*;
use duration::*;
use equipment::*;
use name::*;
use problem::*;
use time::*;

use super::ExtractedFields;
use crate::keywords::is_word_char;
use crate::session::HistoryMessage;
use crate::validate::{validate_address, validate_name};
use std::borrow::Cow;

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
/// long the problem has lasted, with the same finders as the one-utterance
/// [`name_in`], [`address_in`] and [`problem_in`]. A line counts as an
/// answer to the agent's question just before it; in a history of caller
/// lines only, every line after the first answers the name question and
/// every line the address and problem questions. The ZIP code is left empty
/// (it is owned by the service-area step). Never panics.
pub fn heuristic_extract(history: &[HistoryMessage]) -> ExtractedFields {
    let agent_speaks = history
        .iter()
        .any(|m| m.role == "assistant" || m.role == "agent");
    let mut lines: Vec<&str> = Vec::new();
    let (mut name_asked, mut address_asked, mut problem_asked) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut last_agent: Option<String> = None;
    for m in history {
        match m.role.as_str() {
            "assistant" | "agent" => last_agent = Some(normalize_lower(&m.content)),
            "user" => {
                let first = lines.is_empty();
                lines.push(m.content.as_str());
                match (&last_agent, agent_speaks) {
                    (Some(q), true) => {
                        name_asked.push(asks_for_name(q));
                        address_asked.push(asks_for_address(q));
                        problem_asked.push(first || asks_for_problem(q));
                    }
                    (None, true) => {
                        name_asked.push(false);
                        address_asked.push(false);
                        problem_asked.push(true);
                    }
                    (_, false) => {
                        name_asked.push(!first);
                        address_asked.push(true);
                        problem_asked.push(true);
                    }
                }
                last_agent = None;
            }
            _ => {}
        }
    }
    let toks: Vec<Vec<Tok>> = lines.iter().map(|l| tokenize(l)).collect();
    ExtractedFields {
        customer_name: find_name(&toks, &name_asked),
        problem_description: find_problem(&lines, &problem_asked),
        service_address: find_address(&toks, &address_asked),
        zip_code: String::new(),
        preferred_time: find_preferred_time(&lines),
        problem_duration: find_duration(&lines),
        equipment_type: find_equipment(&lines),
    }
}

/// Whether the agent's (lower-cased) line asks for the caller's name.
pub(crate) fn asks_for_name(q: &str) -> bool {
    has_any(
        q,
        &[
            "name",
            "who am i speaking",
            "who's calling",
            "who is calling",
        ],
    )
}

/// Whether the agent's (lower-cased) line asks for the service address.
pub(crate) fn asks_for_address(q: &str) -> bool {
    has_any(
        q,
        &[
            "address",
            "street",
            "where is the",
            "where are you",
            "located",
        ],
    )
}

/// Whether the agent's (lower-cased) line asks what is going on.
pub(crate) fn asks_for_problem(q: &str) -> bool {
    has_any(
        q,
        &[
            "going on",
            "help you",
            "help with",
            "what's wrong",
            "what is wrong",
            "problem",
            "issue",
            "describe",
            "happening",
            "tell me",
            "what seems",
        ],
    )
}

/// The caller's name said in this one utterance ("my name's Jo Chen", "uh
/// yeah this is Maria", "you can put it under Sam Ortiz", "Priya Nair, with
/// Lakeline Pediatrics" → "Priya Nair"). `asked`: the agent's last question
/// asked for the name; only then does a bare "Dev Raman" or "it's dev"
/// count. Never a street, a day, an HVAC word or a filler. Pure, total.
pub fn name_in(text: &str, asked: bool) -> Option<String> {
    name_in_line(&tokenize(text), asked)
}

/// A street address said in this utterance: house number (written, spoken
/// or five digits) + street [+ suffix] [+ unit], normalized as
/// [`heuristic_extract`] does ("fifty one twenty Oak Street" → "5120 Oak
/// Street", "… Drive apt 4" → "… Drive, Apt 4"). Without a street suffix
/// only when `asked` (the agent asked for the address) or after "I'm at" /
/// "my address is". A candidate right after "not" is ignored; of several,
/// the last. Pure, total.
pub fn address_in(text: &str, asked: bool) -> Option<String> {
    let toks = tokenize(text);
    let refs: Vec<&Tok> = toks.iter().collect();
    address_in_toks(&refs, asked)
}

/// When the utterance re-says only the house number ("no wait, it's 5120,
/// not 5210"), `current_address` with its number replaced ("5210 Oak St" →
/// "5120 Oak St"). `None` when the utterance holds a whole street address
/// (read it with [`address_in`]), no other number, or a number that is not
/// a house number (a ZIP after "zip", "5 pm", "3 days", a five-digit number
/// for a shorter house number). Unless the number has as many digits as the
/// current one, the utterance must correct ("no", "not", "wait",
/// "actually", "it's", "number", …).
pub fn house_number_correction(text: &str, current_address: &str) -> Option<String> {
    let toks = tokenize(text);
    let refs: Vec<&Tok> = toks.iter().collect();
    house_number_correction_toks(&refs, current_address)
}

/// The fault described in this utterance (what is wrong with the system),
/// keeping its negation ("no air's coming out", "the heat won't turn on"),
/// the fault rather than the request around it ("I need someone to look at
/// my furnace, it's making a banging noise" → "Furnace is making a banging
/// noise"); a hazard said ("I smell gas near the furnace") is one, a
/// hazard denied ("no gas smell") is not. Failing a fault, a service need
/// ("a tune-up") or a named trouble ("a problem with my AC" → "AC
/// problem"). `None` when the utterance describes none. `asked`: the agent
/// asked what is going on (then "it's really hot" alone counts). Pure, total.
pub fn problem_in(text: &str, asked: bool) -> Option<String> {
    problem_in_text(text, asked)
}

#[derive(Debug, Clone)]
pub(super) struct Tok<'a> {
    /// As typed, edge punctuation removed.
    raw: &'a str,
    /// Lower case, typographic apostrophes straightened (borrowed when the
    /// word is that already).
    low: Cow<'a, str>,
    /// The original piece ended a clause (`.`, `,`, `;`, `!`, `?`).
    ends_clause: bool,
}

impl Tok<'_> {
    /// The lower-cased word.
    pub(super) fn lw(&self) -> &str {
        &self.low
    }
}

pub(super) fn tokenize(text: &str) -> Vec<Tok<'_>> {
    let mut out: Vec<Tok> = Vec::with_capacity(text.len() / 4 + 1);
    for piece in text.split_whitespace() {
        // "#5" (a unit number) is two words: "#" and "5".
        let piece = match piece.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphanumeric()) => {
                out.push(Tok {
                    raw: "#",
                    low: Cow::Borrowed("#"),
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
        let low = if raw.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
            Cow::Borrowed(raw)
        } else {
            Cow::Owned(raw.replace('’', "'").to_lowercase())
        };
        out.push(Tok {
            raw,
            low,
            ends_clause,
        });
    }
    out
}

/// The words of `lists` sorted and deduplicated, for `binary_search`.
pub(super) fn sorted_set(lists: &[&[&'static str]]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// True at the start/end of text or next to a non-word character.
pub(super) fn is_boundary(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => !is_word_char(c),
    }
}

/// Whole-word phrase search on lower-cased text; returns the byte position.
pub(super) fn find_phrase(lower: &str, phrase: &str) -> Option<usize> {
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

pub(super) fn has_any(lower: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| find_phrase(lower, p).is_some())
}

pub(super) fn normalize_lower(s: &str) -> String {
    s.replace('’', "'").to_lowercase()
}

pub(super) fn capitalize(word: &str) -> String {
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

pub(super) fn starts_upper(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
}
