//! The heuristic extractor: the offline stand-in for the LLM extractor.
//! It reads the caller's lines only, with one finder per field.

mod address;
mod duration;
mod equipment;
mod name;
mod problem;
mod time;

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
pub(super) struct Tok {
    /// As typed, edge punctuation removed.
    raw: String,
    /// Lower case, typographic apostrophes straightened.
    low: String,
    /// The original piece ended a clause (`.`, `,`, `;`, `!`, `?`).
    ends_clause: bool,
}

pub(super) fn tokenize(text: &str) -> Vec<Tok> {
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
