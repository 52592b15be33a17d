//! The street address: a house number (written or spoken) and the street
//! up to its last suffix ("1207 Oak Hollow Drive"), with an apartment or
//! unit; or a bare "<number> <name>" answer.

use super::*;

pub(super) const STREET_SUFFIXES: &[&str] = &[
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

pub(super) const ADDRESS_STOP: &[&str] = &[
    "on", "at", "in", "the", "my", "is", "it's", "its", "and", "or", "near", "by", "off", "of",
    "to", "from", "a", "an", "i", "we", "our", "your", "it", "that", "this", "unit", "units",
    "system", "ac", "furnace", "zip", "code", "is", "was", "has", "have", "about", "for", "with",
    "yes", "yeah", "no", "okay", "ok", "um", "uh", "so", "but", "be", "been", "am", "are", "days",
    "day", "weeks", "week", "hours", "years", "months", "minutes", "times", "dollars",
];

pub(super) fn unit_value(w: &str) -> Option<u64> {
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

pub(super) fn tens_value(w: &str) -> Option<u64> {
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
pub(super) struct Group {
    text: Option<String>,
    value: u64,
    /// 0 closed, 10 accepts a unit, 100 accepts anything below 100.
    open: u64,
    is_oh: bool,
}

impl Group {
    /// A number as written ("4329", "43-29"): kept as it is.
    fn written(text: String) -> Group {
        Group {
            text: Some(text),
            value: 0,
            open: 0,
            is_oh: false,
        }
    }

    fn render(&self) -> String {
        self.text.clone().unwrap_or_else(|| self.value.to_string())
    }
}

/// Feed one word into the number run; false if it is not part of a number.
pub(super) fn push_number_word(groups: &mut Vec<Group>, w: &str) -> bool {
    if !w.is_empty() && w.len() <= 6 && w.bytes().all(|b| b.is_ascii_digit()) {
        groups.push(Group::written(w.to_string()));
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
    // A number with thousands separators, as a recogniser writes "four
    // thousand three hundred twenty-nine": "4,329".
    if let Some((head, tail)) = w.split_once(',') {
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
        if (1..=3).contains(&head.len())
            && digits(head)
            && tail.split(',').all(|g| g.len() == 3 && digits(g))
        {
            groups.push(Group::written(w.replace(',', "")));
            return true;
        }
    }
    // A hyphenated house number as written: "43-29" (Queens style; a
    // recogniser also writes "forty-three twenty-nine" so). Kept as said.
    if let Some((a, b)) = w.split_once('-') {
        let digits = |p: &str| (1..=5).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit());
        if digits(a) && digits(b) {
            groups.push(Group::written(w.to_string()));
            return true;
        }
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
pub(super) fn address_at(toks: &[&Tok], i: usize) -> Result<(String, usize), usize> {
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
pub(super) const UNIT_WORDS: &[&str] = &[
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
pub(super) fn unit_at(toks: &[&Tok], i: usize) -> Option<(String, usize)> {
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
pub(super) fn push_probe(w: &str) -> bool {
    let mut g = Vec::new();
    push_number_word(&mut g, w)
}

pub(super) fn find_address(lines: &[Vec<Tok>]) -> String {
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

pub(super) const ADDRESS_LEAD_FILLER: &[&str] = &[
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
pub(super) const NOT_STREET: &[&str] = &[
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
pub(super) fn bare_address(line: &[Tok]) -> Option<String> {
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
