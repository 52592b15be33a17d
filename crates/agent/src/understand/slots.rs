//! The slots of one utterance, each read by its own finder
//! ([`crate::extract`] for name, address and problem; [`crate::validate`]
//! for ZIP and phone; [`crate::booking_time`] for time talk).

use super::{Asked, Slots};

/// The slots of `text`, and whether a name came with a cue that makes it
/// a correction by itself ("put it under Luis Herrera").
pub(super) fn read(text: &str, asked: Asked, correcting: bool) -> (Slots, bool) {
    if text.trim().is_empty() {
        return (Slots::default(), false);
    }
    let digits = text.bytes().any(|b| b.is_ascii_digit());
    let mut slots = Slots {
        // At the read-back a correction may be a bare name ("actually it's
        // Rachel Stein"), as if the name had been asked.
        name: crate::extract::name_in(text, asked == Asked::Name),
        phone: if digits {
            crate::validate::extract_phone(text)
        } else {
            None
        },
        address: crate::extract::address_in(text, asked == Asked::Address),
        zip: crate::validate::zip_in(text),
        problem: crate::extract::problem_in(text, asked == Asked::Problem),
        time: crate::booking_time::time_ask(text),
    };
    // A name said with a cue ("the name should be …") is a correction.
    let cued = named(text, correcting);
    if cued.is_some() {
        slots.name = cued;
        return (slots, true);
    }
    // At the read-back a correction may be a bare name ("actually it's
    // Rachel Stein") when it is nothing else.
    let nothing_else = slots.address.is_none()
        && slots.zip.is_none()
        && slots.problem.is_none()
        && slots.time.is_none();
    if slots.name.is_none() && asked == Asked::ReadBack && correcting && nothing_else {
        slots.name = crate::extract::name_in(text, true);
    }
    slots.name = slots.name.filter(|n| !not_a_name(n));
    (slots, false)
}

/// Words the caller says that a name finder may mistake for a name.
fn not_a_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "misspoke",
        "sorry",
        "wait",
        "actually",
        "nothing",
        "else",
        "nope",
        "yes",
        "yeah",
        "okay",
        "ok",
        "sure",
        "thanks",
        "thank",
        "bye",
        "cell",
        "mobile",
        "home",
        "work",
        "the",
        "a",
        "it",
        "that",
        "this",
        "my",
        "our",
        "name",
        "wife's",
        "husband's",
    ];
    // Days, months and times of day ("change it to Wednesday") are no names.
    crate::booking_time::time_ask(name).is_some()
        || name
            .split_whitespace()
            .any(|w| WORDS.contains(&w.to_lowercase().trim_matches(|c: char| !c.is_alphabetic())))
}

/// Cues that put a name right after them, corrections included ("make the
/// name Luis Herrera", "the name should be Marcus Bell", "put it under
/// Sam Ortiz").
const NAME_CUES: &[&str] = &[
    "first name",
    "account should be",
    "account should be under",
    "account is under",
    "the account is",
    "name should be",
    "name should read",
    "make the name",
    "change the name to",
    "the name is",
    "name is actually",
    "my name is",
    "my name's",
    "name's",
    "name is",
    "put it under",
    "put that under",
    "under the name",
    "it's under",
];

/// A relative's name, said as "my wife's name, Mei Lin".
const RELATIVE_NAME_CUES: &[&str] = &[
    "wife's name",
    "husband's name",
    "partner's name",
    "mom's name",
    "mother's name",
    "dad's name",
    "father's name",
    "son's name",
    "daughter's name",
    "landlord's name",
    "tenant's name",
];

/// Cues that only name someone inside a correction ("sorry, use Luis
/// Herrera instead").
const WEAK_NAME_CUES: &[&str] = &["use", "go with", "change it to", "switch it to"];

/// The words after a name cue, up to the end of the clause.
fn named(text: &str, correcting: bool) -> Option<String> {
    let lower = text.to_lowercase();
    // Every cue has one of these words; most utterances have none.
    let cue_word = ["name", "under", "account"]
        .iter()
        .any(|w| lower.contains(w));
    let weak_cue = correcting && WEAK_NAME_CUES.iter().any(|c| lower.contains(c));
    if !(cue_word || weak_cue) {
        return None;
    }
    if lower.len() != text.len() {
        return None;
    }
    let weak: &[&str] = if correcting { WEAK_NAME_CUES } else { &[] };
    // "put it under my wife's name, Mei Lin": the relative's name wins.
    let (at, cue) = RELATIVE_NAME_CUES
        .iter()
        .find_map(|c| crate::keywords::find_word(&lower, c).map(|i| (i, *c)))
        .or_else(|| {
            NAME_CUES
                .iter()
                .chain(weak)
                .filter_map(|c| crate::keywords::find_word(&lower, c).map(|i| (i, *c)))
                .min_by_key(|(i, _)| *i)
        })?;
    let first = words_after(&text[at + cue.len()..]);
    // "first name Luis, last name Herrera"
    let whole = match crate::keywords::find_word(&lower, "last name") {
        Some(i) if cue == "first name" => format!("{first} {}", words_after(&text[i + 9..])),
        _ => first,
    };
    let name = crate::validate::validate_name(whole.trim());
    (!name.is_empty() && name.chars().next().is_some_and(char::is_alphabetic) && !not_a_name(&name))
        .then_some(name)
}

/// Up to three words after a cue, to the end of its clause.
fn words_after(rest: &str) -> String {
    let rest = rest.trim_start_matches([',', ' ', ':', '-', '—']);
    rest.split([',', '.', ';', '!', '?', '—', '-'])
        .next()
        .unwrap_or("")
        .split_whitespace()
        .take_while(|w| {
            !matches!(
                w.to_lowercase().as_str(),
                "not" | "and" | "but" | "please" | "instead"
            )
        })
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
