//! The problem description: the clause that says what is wrong.

use super::*;

pub(super) const PROBLEM_CUES: &[&str] = &[
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
pub(super) const PROBLEM_LEAD_FILLER: &[&str] = &[
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

pub(super) const PROBLEM_TRAIL_FILLER: &[&str] = &["or something", "i guess", "i think", "please"];

/// Words that mark a clause as something other than a problem statement.
pub(super) const NOT_PROBLEM: &[&str] = &[
    "smell", "smoke", "burning", "zip", "fire", "sparks", "gas leak",
];

pub(super) fn split_clauses(text: &str) -> Vec<String> {
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

pub(super) fn strip_lead(words: &mut Vec<&str>, phrases: &[&str]) -> bool {
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

pub(super) fn strip_trail(words: &mut Vec<&str>, phrases: &[&str]) -> bool {
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

pub(super) fn clean_problem(clause: &str) -> String {
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

pub(super) fn capitalize_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(f) => f.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

pub(super) fn find_problem(lines: &[&str]) -> String {
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
