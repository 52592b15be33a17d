//! The street address: a house number (written or spoken) and the street
//! up to its last suffix ("1207 Oak Hollow Drive"), with an apartment or
//! unit; or a bare "<number> <name>" answer.

use super::*;

/// Street-type words and their abbreviations ("Drive", "Blvd").
pub(crate) const STREET_SUFFIXES: &[&str] = &[
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
    "crescent",
    "cres",
    "park",
    "walk",
    "heights",
    "hts",
    "vista",
    "glen",
    "pike",
    "turnpike",
    "tpke",
    "mews",
    "commons",
    "spur",
    "strasse",
    "bvd",
    "blv",
    "pky",
    "hwy",
    "trce",
    "trace",
    "crk",
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

/// Whether a word can start a house number (a cheap test before
/// [`push_number_word`]).
pub(super) fn number_start(w: &str) -> bool {
    let head = w.split('-').next().unwrap_or(w);
    head.bytes().next().is_some_and(|b| b.is_ascii_digit())
        || unit_value(head).is_some()
        || tens_value(head).is_some()
        || head == "oh"
        || head == "o"
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
    if w == "thousand" {
        if let Some(last) = groups.last_mut() {
            if last.text.is_none() && last.value > 0 && last.value < 100 && last.open != 100 {
                last.value *= 1000;
                last.open = 100;
                return true;
            }
        }
        return false;
    }
    // "12B": a house number with a letter.
    if (2..=6).contains(&w.len()) && w.is_ascii() && groups.is_empty() {
        let (digits, letter) = w.split_at(w.len() - 1);
        if digits.bytes().all(|b| b.is_ascii_digit())
            && letter.bytes().all(|b| b.is_ascii_lowercase())
        {
            groups.push(Group::written(w.to_uppercase()));
            return true;
        }
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

/// Read a spoken or written number starting at `i`: its groups and the
/// index after it. "a hundred and five" reads as 105. With `cross_commas`
/// a clause end inside the run is passed when a number word follows it
/// ("4, 3, 2, 9").
pub(super) fn read_number(toks: &[&Tok], i: usize, cross_commas: bool) -> (Vec<Group>, usize) {
    let mut groups: Vec<Group> = Vec::new();
    let mut j = i;
    while let Some(t) = toks.get(j) {
        let next_is = |w: &str| toks.get(j + 1).is_some_and(|n| n.lw() == w);
        if t.lw() == "a" && groups.is_empty() && (next_is("hundred") || next_is("thousand")) {
            groups.push(Group {
                text: None,
                value: 1,
                open: 0,
                is_oh: false,
            });
            j += 1;
            continue;
        }
        // "hundred and five": the "and" inside a number.
        if t.lw() == "and"
            && !t.ends_clause
            && groups.last().is_some_and(|g| g.open == 100)
            && toks.get(j + 1).is_some_and(|n| {
                unit_value(n.lw()).is_some_and(|v| v > 0) || tens_value(n.lw()).is_some()
            })
        {
            j += 1;
            continue;
        }
        if !push_number_word(&mut groups, t.lw()) {
            break;
        }
        j += 1;
        // "4, 3, 2, 9": single digits a recogniser wrote with commas run
        // on; "78744 — 5120 …" is two numbers.
        let single = |w: &str| w.len() == 1 || unit_value(w).is_some_and(|v| v < 10) || w == "oh";
        if t.ends_clause
            && !(cross_commas
                && single(t.lw())
                && toks
                    .get(j)
                    .is_some_and(|n| single(n.lw()) && push_probe(n.lw())))
        {
            break;
        }
        if groups.len() > 12 {
            break;
        }
    }
    (groups, j)
}

/// Try to read "<number> <name words> <suffix>" starting at `i`. Returns the
/// address and the index after it, or the index to resume scanning from.
pub(super) fn address_at(toks: &[&Tok], i: usize) -> Result<(String, usize), usize> {
    let a_hundred = toks.get(i).is_some_and(|t| t.lw() == "a")
        && toks
            .get(i + 1)
            .is_some_and(|t| matches!(t.lw(), "hundred" | "thousand"));
    if !(a_hundred || toks.get(i).is_some_and(|t| number_start(t.lw()))) {
        return Err(i + 1);
    }
    let (groups, j) = read_number(toks, i, true);
    if groups.len() > 12 {
        return Err(j);
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
        if words.len() >= 6
            || ADDRESS_STOP.contains(&t.lw())
            || !(wordy || ordinal)
            || matches!(t.lw(), "hundred" | "thousand")
        {
            break;
        }
        words.push(if ordinal {
            t.low.to_string()
        } else {
            capitalize(t.raw)
        });
        k += 1;
        let after_suffix = street_end.is_some_and(|(n, _)| n + 1 == words.len());
        if words.len() > 1 && STREET_SUFFIXES.contains(&t.lw())
            || after_suffix
                && matches!(
                    t.lw(),
                    "north"
                        | "south"
                        | "east"
                        | "west"
                        | "northwest"
                        | "northeast"
                        | "southwest"
                        | "southeast"
                        | "nw"
                        | "ne"
                        | "sw"
                        | "se"
                )
        {
            street_end = Some((words.len(), k));
        }
        // "N. Lamar": a direction's period ends nothing.
        let direction = matches!(
            t.lw(),
            "n" | "s" | "e" | "w" | "ne" | "nw" | "se" | "sw" | "mt" | "ft"
        );
        if t.ends_clause && !(direction && words.len() == 1) {
            break;
        }
    }
    // "4502 Avenue H", "12 Avenue B": the suffix first, then a letter.
    if street_end.is_none()
        && words.len() >= 2
        && matches!(words[0].to_lowercase().as_str(), "avenue" | "ave")
        && words[1].chars().count() == 1
    {
        street_end = Some((2, j + 2));
    }
    let Some((n, after)) = street_end else {
        return Err(resume);
    };
    let mut addr = number;
    for w in &words[..n] {
        addr.push(' ');
        addr.push_str(w);
    }
    // Up to two units: "building C, unit 210".
    let mut next = after;
    for _ in 0..2 {
        match unit_at(toks, next) {
            Some((unit, n)) => {
                addr.push_str(", ");
                addr.push_str(&unit);
                next = n;
            }
            None => break,
        }
    }
    Ok((addr, next))
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
    if !UNIT_WORDS.contains(&word.lw()) {
        return None;
    }
    // "unit number 12", "apartment no. 4".
    let i = if word.lw() != "number"
        && toks
            .get(i + 1)
            .is_some_and(|t| matches!(t.lw(), "number" | "no" | "num" | "#"))
        && toks.get(i + 2).is_some()
    {
        i + 1
    } else {
        i
    };
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
    Some((format!("{} {label}", capitalize(word.raw)), next))
}

/// Whether a word continues a spoken number.
pub(super) fn push_probe(w: &str) -> bool {
    let mut g = Vec::new();
    push_number_word(&mut g, w)
}

/// The address over the caller's lines: a full street address anywhere
/// (a spoken one may run over several lines; the last one wins), else the
/// last bare "<number> <name>" answer (`asked[i]`: the agent had asked for
/// the address before line `i`).
pub(super) fn find_address(lines: &[Vec<Tok>], asked: &[bool]) -> String {
    let toks: Vec<&Tok> = lines.iter().flatten().collect();
    let mut found = String::new();
    let mut i = 0;
    while i < toks.len() {
        match address_at(&toks, i) {
            Ok((addr, next)) => {
                let rejected = i > 0 && ADDRESS_REJECTIONS.contains(&toks[i - 1].lw());
                let v = validate_address(&addr);
                if !v.is_empty() && !rejected {
                    found = v;
                }
                i = next.max(i + 1);
            }
            Err(next) => i = next.max(i + 1),
        }
    }
    if found.is_empty() {
        if let Some(v) = lines.iter().zip(asked).rev().find_map(|(l, a)| {
            let refs: Vec<&Tok> = l.iter().collect();
            address_in_toks(&refs, *a)
        }) {
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

/// Words before a candidate address that reject it ("…, not 5210 Oak").
const ADDRESS_REJECTIONS: &[&str] = &["not", "isn't", "isnt", "wasn't", "wasnt"];

/// Cues after which a bare "<number> <name>" is an address even unasked
/// ("I'm at 4210 South Lamar", "my address is 12 Elm").
fn bare_cue_before(toks: &[&Tok], i: usize) -> bool {
    let w = |k: usize| i.checked_sub(k).and_then(|p| toks.get(p)).map(|t| t.lw());
    matches!(
        (w(2), w(1)),
        (_, Some("address" | "address's"))
            | (Some("address"), Some("is"))
            | (
                Some(
                    "i'm"
                        | "im"
                        | "we're"
                        | "live"
                        | "lives"
                        | "living"
                        | "located"
                        | "is"
                        | "are"
                        | "am"
                        | "it's"
                        | "house"
                        | "home"
                        | "place"
                ),
                Some("at")
            )
    )
}

/// "<number> <one to three name words>" at `i`, up to a clause end, the
/// line's end, a ZIP or a unit: an address without a street suffix.
fn bare_at(toks: &[&Tok], i: usize) -> Option<String> {
    let (groups, j) = read_number(toks, i, false);
    if j == i || groups.iter().all(|g| g.is_oh) || toks[j - 1].ends_clause {
        return None;
    }
    if i > 0
        && toks
            .get(i - 1)
            .is_some_and(|t| matches!(t.lw(), "zip" | "code" | "zipcode"))
    {
        return None;
    }
    let number: String = groups.iter().map(Group::render).collect();
    if number.len() > 6 {
        return None;
    }
    let mut k = j;
    let mut names: Vec<String> = Vec::new();
    while let Some(t) = toks.get(k) {
        let wordy = t
            .low
            .chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-');
        if !wordy || UNIT_WORDS.contains(&t.lw()) {
            break;
        }
        if names.len() == 3
            || ADDRESS_STOP.contains(&t.lw())
            || NOT_STREET.contains(&t.lw())
            || PROBLEM_CUES.contains(&t.lw())
            || BARE_NOT_STREET.contains(&t.lw())
        {
            return None;
        }
        names.push(capitalize(t.raw));
        k += 1;
        if t.ends_clause {
            break;
        }
    }
    if names.is_empty() || names.iter().all(|n| n.chars().count() < 2) {
        return None;
    }
    // After the name: the end, a new clause, a ZIP or a unit.
    let closed = k == toks.len()
        || toks[k - 1].ends_clause
        || toks.get(k).is_some_and(|t| {
            UNIT_WORDS.contains(&t.lw()) || t.low.bytes().all(|b| b.is_ascii_digit())
        });
    if !closed {
        return None;
    }
    let mut addr = number;
    for n in &names {
        addr.push(' ');
        addr.push_str(n);
    }
    if let Some((unit, _)) = unit_at(toks, k) {
        addr.push_str(", ");
        addr.push_str(&unit);
    }
    let v = validate_address(&addr);
    (!v.is_empty()).then_some(v)
}

/// Time and answer words never part of a bare street name.
const BARE_NOT_STREET: &[&str] = &[
    "today",
    "tomorrow",
    "tonight",
    "morning",
    "afternoon",
    "evening",
    "please",
    "thanks",
    "thank",
    "ish",
    "o'clock",
    "oclock",
    "sharp",
    "or",
    "maybe",
    "yes",
    "no",
    "right",
];

/// A street address in one utterance's tokens (see [`super::address_in`]):
/// the last "<number> <street> <suffix> [unit]" not rejected by "not"; else,
/// when asked or after "I'm at" / "my address is", a bare "<number> <name>".
pub(super) fn address_in_toks(toks: &[&Tok], asked: bool) -> Option<String> {
    let mut found = None;
    // "apartment 4, 200 Main St": the unit said first.
    let mut unit_first: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        if i > 0 && UNIT_WORDS.contains(&toks[i - 1].lw()) {
            if let Some((unit, next)) = unit_at(toks, i - 1) {
                unit_first = Some(unit);
                i = next.max(i + 1);
                continue;
            }
        }
        match address_at(toks, i) {
            Ok((mut addr, next)) => {
                let rejected = i > 0 && ADDRESS_REJECTIONS.contains(&toks[i - 1].lw());
                if !rejected {
                    if let (Some(unit), false) = (&unit_first, addr.contains(", ")) {
                        addr.push_str(", ");
                        addr.push_str(unit);
                    }
                    let v = validate_address(&addr);
                    if !v.is_empty() {
                        found = Some(v);
                    }
                }
                i = next.max(i + 1);
            }
            Err(next) => i = next.max(i + 1),
        }
    }
    if found.is_some() {
        return found;
    }
    let start = toks
        .iter()
        .position(|t| !ADDRESS_LEAD_FILLER.contains(&t.lw()));
    for k in 0..toks.len() {
        let first_word = Some(k) == start;
        if (asked && first_word) || bare_cue_before(toks, k) {
            if k > 0 && ADDRESS_REJECTIONS.contains(&toks[k - 1].lw()) {
                continue;
            }
            if let Some(v) = bare_at(toks, k) {
                return Some(v);
            }
        }
    }
    None
}

/// The house number a correction says, with the rest of `current_address`
/// (see [`super::house_number_correction`]).
pub(super) fn house_number_correction_toks(toks: &[&Tok], current_address: &str) -> Option<String> {
    let current = current_address.trim();
    let num_len = current
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'-')
        .count();
    let (cur_num, rest) = current.split_at(num_len);
    if cur_num.is_empty() || !rest.starts_with(' ') || rest.trim().is_empty() {
        return None;
    }
    // A whole address said again is an address, not a number correction.
    let mut i = 0;
    while i < toks.len() {
        match address_at(toks, i) {
            Ok(_) => return None,
            Err(next) => i = next.max(i + 1),
        }
    }
    let cued = toks.iter().any(|t| {
        matches!(
            t.lw(),
            "no" | "not"
                | "wait"
                | "actually"
                | "sorry"
                | "mean"
                | "meant"
                | "correction"
                | "wrong"
                | "it's"
                | "its"
                | "is"
                | "number"
                | "should"
                | "instead"
                | "oops"
                | "isn't"
                | "nope"
        )
    });
    let zip_at = toks
        .iter()
        .position(|t| matches!(t.lw(), "zip" | "zipcode" | "postal"));
    let mut best: Option<String> = None;
    let mut k = 0;
    while k < toks.len() {
        let (groups, j) = read_number(toks, k, false);
        if j == k || (k > 0 && UNIT_WORDS.contains(&toks[k - 1].lw())) {
            k = j.max(k + 1);
            continue;
        }
        let start = k;
        k = j;
        if groups.iter().all(|g| g.is_oh) || groups.len() > 8 {
            continue;
        }
        let number: String = groups.iter().map(Group::render).collect();
        if number.is_empty() || number.len() > 6 || number == cur_num {
            continue;
        }
        let before = start
            .checked_sub(1)
            .and_then(|p| toks.get(p))
            .map(|t| t.lw());
        if before.is_some_and(|b| ADDRESS_REJECTIONS.contains(&b) || b == "of" || b == "than") {
            continue;
        }
        if zip_at.is_some_and(|z| z < start) {
            continue;
        }
        let after = toks.get(j).map(|t| t.lw());
        if after.is_some_and(|a| NOT_STREET.contains(&a) || BARE_NOT_STREET.contains(&a)) {
            continue;
        }
        let same_len = number.len() == cur_num.len();
        let zip_like = number.len() == 5 && cur_num.len() != 5;
        if zip_like || !(cued || same_len) {
            continue;
        }
        best = Some(number);
    }
    best.map(|n| format!("{n}{rest}"))
}
