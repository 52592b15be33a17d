//! The caller's name: "my name is …", "this is …", a bare name answer.

use super::*;

pub(super) const NAME_STOP: &[&str] = &[
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
pub(super) const NOT_A_NAME: &[&str] = &[
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

/// More words that are never part of a person's name: fillers, HVAC words,
/// job titles and street words (checked with [`NAME_STOP`] / [`NOT_A_NAME`]).
pub(super) const NOT_A_NAME_MORE: &[&str] = &[
    "rush",
    "hurry",
    "worries",
    "problem",
    "ha",
    "haha",
    "heh",
    "correction",
    "close",
    "almost",
    "nearly",
    "change",
    "instead",
    "rather",
    "out",
    "up",
    "down",
    "off",
    "over",
    "go",
    "ahead",
    "now",
    "shoot",
    "gotta",
    "hang",
    "sec",
    "moment",
    "minute",
    "let",
    "grab",
    "check",
    "look",
    "see",
    "guess",
    "think",
    "know",
    "mean",
    "got",
    "get",
    "come",
    "say",
    "said",
    "tell",
    "ask",
    "sir",
    "ma'am",
    "dude",
    "man",
    "gosh",
    "darn",
    "dang",
    "damn",
    "crap",
    "jeez",
    "geez",
    "whoops",
    "yessir",
    "hiya",
    "howdy",
    "whirlpool",
    "york",
    "amana",
    "daikin",
    "mitsubishi",
    "bryant",
    "ruud",
    "payne",
    "heil",
    "nest",
    "honeywell",
    "ecobee",
    "fujitsu",
    "er",
    "erm",
    "anyway",
    "basically",
    "literally",
    "honestly",
    "back",
    "later",
    "under",
    "please",
    "pump",
    "compressor",
    "condenser",
    "vent",
    "vents",
    "duct",
    "ducts",
    "filter",
    "coil",
    "boiler",
    "hvac",
    "freon",
    "air",
    "conditioner",
    "conditioning",
    "manager",
    "supervisor",
    "technician",
    "tech",
    "office",
    "facilities",
    "facility",
    "property",
    "company",
    "management",
    "boulevard",
    "blvd",
    "parkway",
    "pkwy",
    "highway",
    "hwy",
    "ave",
    "rd",
    "ln",
    "st",
    "apartment",
    "apt",
    "suite",
    "insane",
    "unbelievable",
    "ridiculous",
    "nuts",
    "unacceptable",
    "taking",
    "frustrated",
    "worried",
    "scared",
    "calling",
    "not",
    "gonna",
    "busy",
    "available",
    "ready",
    "done",
    "back",
    "fixed",
    "leaking",
    "making",
    "blowing",
    "running",
    "working",
];

/// [`NOT_A_NAME`], [`NAME_STOP`] and [`NOT_A_NAME_MORE`] as one sorted
/// list (a binary search per word instead of ~450 comparisons).
fn not_a_name_set() -> &'static [&'static str] {
    static SET: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| sorted_set(&[NOT_A_NAME, NAME_STOP, NOT_A_NAME_MORE]))
}

pub(super) fn name_word_ok(t: &Tok) -> bool {
    let low = t.lw();
    !low.is_empty()
        && low.len() <= 120
        && t.raw.chars().count() <= 30
        && low.chars().next().is_some_and(char::is_alphabetic)
        && low
            .chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-' || c == '.')
        && !["'s", "n't", "'re", "'ve", "'ll", "'d", "'m"]
            .iter()
            .any(|c| low.ends_with(c))
        && not_a_name_set().binary_search(&low).is_err()
}

pub(super) fn low_seq_at(line: &[Tok], i: usize, seq: &[&str]) -> bool {
    seq.iter()
        .enumerate()
        .all(|(k, w)| line.get(i + k).is_some_and(|t| t.low == *w))
}

/// Words that may follow a name and end it ("Dev here", "Maria speaking",
/// "Tom from Acme", "Priya with Lakeline Pediatrics").
const AFTER_NAME: &[&str] = &[
    "speaking", "calling", "here", "from", "with", "at", "of", "over", "and",
];

/// A lower-case word after a weak cue that reads as a description, not a
/// name ("this is happening", "this is frustrating", "I'm exhausted").
fn descriptive(t: &Tok) -> bool {
    let w = t.lw();
    let n = w.chars().count();
    n > 4
        && (["ing", "ous", "ful", "ble", "ive", "ish", "less", "est"]
            .iter()
            .any(|s| w.ends_with(s))
            || (n >= 7 && w.ends_with("ed")))
}

/// A run of name words starting at `i`: at most three, stopping at a clause
/// end. Returns the words' index range end (exclusive).
fn name_run(line: &[Tok], i: usize) -> usize {
    let mut j = i;
    while j < line.len() && j - i < 3 {
        let Some(t) = line.get(j) else { break };
        if !name_word_ok(t) {
            break;
        }
        j += 1;
        if t.ends_clause {
            break;
        }
    }
    j
}

/// Whether the name run `i..j` is closed: a clause end, the end of the
/// line, or a word that follows names ("here", "from", "with", …).
fn run_closed(line: &[Tok], j: usize) -> bool {
    j == line.len()
        || line.get(j - 1).is_some_and(|t| t.ends_clause)
        || line
            .get(j)
            .is_some_and(|t| AFTER_NAME.contains(&t.lw()) || NAME_STOP.contains(&t.lw()))
}

fn render(line: &[Tok], i: usize, j: usize) -> Option<String> {
    let words = line.get(i..j)?;
    if words.is_empty() {
        return None;
    }
    // A single letter is an initial only beside another word.
    if words.len() == 1 && words[0].low.chars().count() < 2 {
        return None;
    }
    let name = words
        .iter()
        .map(|t| capitalize(t.raw.trim_end_matches('.')))
        .collect::<Vec<_>>()
        .join(" ");
    let v = validate_name(&name);
    (!v.is_empty()).then_some(v)
}

/// The name at `i` after a cue. `strong` cues ("my name is") take any name
/// words; weak ones ("this is", "I'm") need a capitalised word or a run the
/// clause closes ("this is maria.", "this is dev calling").
fn name_at(line: &[Tok], i: usize, strong: bool) -> Option<String> {
    // "this is Mrs. Henderson", "it's Dr. Patel": the name after the title.
    let i = if line.get(i).is_some_and(|t| {
        matches!(
            t.lw(),
            "mr" | "mrs" | "ms" | "miss" | "dr" | "mister" | "doctor"
        )
    }) && line.get(i + 1).is_some_and(name_word_ok)
    {
        i + 1
    } else {
        i
    };
    let first = line.get(i)?;
    if !name_word_ok(first) {
        return None;
    }
    let capital = starts_upper(first.raw) && !(i > 0 && line[i - 1].ends_clause);
    let mut j = name_run(line, i);
    // "it's Oak Street": a street, not a name.
    if line
        .get(j)
        .is_some_and(|t| STREET_SUFFIXES.contains(&t.lw()))
    {
        return None;
    }
    if capital {
        // A capitalised name ends at its first lower-case word.
        if let Some(k) = (i + 1..j).find(|&k| !starts_upper(line[k].raw)) {
            j = k;
        }
    } else if !run_closed(line, j) {
        if !strong {
            return None;
        }
        j = i + 1;
    }
    if !strong && !capital && descriptive(first) {
        return None;
    }
    let mut name = render(line, i, j)?;
    // "it's Raman, Dev Raman": a fuller restatement right after wins.
    if line.get(j - 1).is_some_and(|t| t.ends_clause) {
        let k = name_run(line, j);
        if k > j && run_closed(line, k) {
            if let Some(again) = render(line, j, k) {
                let shares = name
                    .split(' ')
                    .any(|w| again.split(' ').any(|a| a.eq_ignore_ascii_case(w)));
                if shares && again.len() > name.len() {
                    name = again;
                }
            }
        }
    }
    Some(name)
}

/// Cues before a name: (words, strong).
const NAME_CUES: &[(&[&str], bool)] = &[
    (&["my", "name", "is"], true),
    (&["my", "name's"], true),
    (&["my", "full", "name", "is"], true),
    (&["the", "name", "is"], true),
    (&["the", "name's"], true),
    (&["name", "is"], true),
    (&["name's"], true),
    (&["first", "name", "is"], true),
    (&["use", "the", "name"], true),
    (&["account", "should", "be"], true),
    (&["name", "should", "be"], true),
    (&["should", "be", "under"], true),
    (&["account", "under"], true),
    (&["name", "to"], true),
    (&["change", "it", "to"], false),
    (&["make", "it"], false),
    (&["put"], false),
    (&["under", "my", "wife's", "name"], true),
    (&["under", "my", "husband's", "name"], true),
    (&["under", "my", "partner's", "name"], true),
    (&["under", "my", "mom's", "name"], true),
    (&["under", "my", "dad's", "name"], true),
    (&["under", "my", "son's", "name"], true),
    (&["under", "my", "daughter's", "name"], true),
    (&["under", "the", "name", "of"], true),
    (&["under", "the", "name"], true),
    (&["put", "it", "under"], true),
    (&["put", "that", "under"], true),
    (&["put", "me", "under"], true),
    (&["put", "it", "down", "under"], true),
    (&["book", "it", "under"], true),
    (&["booked", "under"], true),
    (&["it's", "under"], true),
    (&["it", "is", "under"], true),
    (&["account", "is", "under"], true),
    (&["account's", "under"], true),
    (&["call", "me"], false),
    (&["this", "is"], false),
    (&["i'm"], false),
    (&["i", "am"], false),
    (&["it's"], false),
    (&["it", "is"], false),
];

/// Fillers, greetings and cue words an answer may start with.
pub(super) const NAME_LEAD_FILLER: &[&str] = &[
    "correction",
    "actually",
    "wait",
    "no",
    "nope",
    "close",
    "rather",
    "instead",
    "mean",
    "me",
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "mister",
    "doctor",
    "thing",
    "yeah",
    "yes",
    "yep",
    "sure",
    "it's",
    "its",
    "it",
    "is",
    "this",
    "i'm",
    "um",
    "uh",
    "umm",
    "uhh",
    "er",
    "erm",
    "oh",
    "ok",
    "okay",
    "name",
    "my",
    "name's",
    "the",
    "so",
    "well",
    "ha",
    "haha",
    "hi",
    "hello",
    "hey",
    "alright",
    "right",
    "sorry",
    "yup",
    "and",
    "that's",
    "that",
    "am",
    "i",
    "hmm",
    "mm",
    "mhm",
    "of",
    "course",
    "absolutely",
    "certainly",
];

/// "first name Jordan, last name Miles" → "Jordan Miles".
fn first_and_last(line: &[Tok]) -> Option<String> {
    let after = |word: &str| {
        (0..line.len()).find_map(|i| {
            if !(line[i].lw() == word && line.get(i + 1).is_some_and(|t| t.lw() == "name")) {
                return None;
            }
            let at = if line.get(i + 2).is_some_and(|t| t.lw() == "is") {
                i + 3
            } else {
                i + 2
            };
            let t = line.get(at)?;
            name_word_ok(t).then(|| capitalize(t.raw.trim_end_matches('.')))
        })
    };
    let first = after("first")?;
    let last = after("last")?;
    let v = validate_name(&format!("{first} {last}"));
    (!v.is_empty()).then_some(v)
}

/// [`NAME_LEAD_FILLER`] sorted, for `binary_search`.
fn lead_filler_set() -> &'static [&'static str] {
    static SET: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| sorted_set(&[NAME_LEAD_FILLER]))
}

/// The caller's name said in one tokenized utterance (see [`super::name_in`]).
pub(super) fn name_in_line(line: &[Tok], asked: bool) -> Option<String> {
    if let Some(n) = first_and_last(line) {
        return Some(n);
    }
    // "use my partner's name, Dana Fields", "under my wife's name Mei Lin".
    for i in 0..line.len() {
        if line[i].lw() == "my"
            && line.get(i + 1).is_some_and(|t| t.lw().ends_with("'s"))
            && line.get(i + 2).is_some_and(|t| t.lw() == "name")
        {
            let at = if line.get(i + 3).is_some_and(|t| t.lw() == "is") {
                i + 4
            } else {
                i + 3
            };
            if let Some(n) = name_at(line, at, true) {
                return Some(n);
            }
        }
    }
    for i in 0..line.len() {
        if !matches!(
            line[i].lw(),
            "my" | "the"
                | "use"
                | "should"
                | "change"
                | "make"
                | "name"
                | "name's"
                | "first"
                | "under"
                | "put"
                | "book"
                | "booked"
                | "it's"
                | "it"
                | "account"
                | "account's"
                | "call"
                | "this"
                | "i'm"
                | "i"
        ) {
            continue;
        }
        for (cue, strong) in NAME_CUES {
            if !low_seq_at(line, i, cue) {
                continue;
            }
            let at = i + cue.len();
            let is_its = cue.first() == Some(&"it's") || cue.first() == Some(&"it");
            let is_im = cue.first() == Some(&"i'm")
                || cue.first() == Some(&"i")
                || (!*strong && matches!(cue.first(), Some(&("put" | "make" | "change"))));
            if is_its && !cue.contains(&"under") {
                // "it's Dev speaking" always; a bare "it's dev" only as an
                // answer to "what's your name?".
                let j = name_run(line, at);
                let speaking = line
                    .get(j)
                    .is_some_and(|t| ["speaking", "calling", "here"].contains(&t.lw()));
                // "hi, it's Dana Fields over on …": a full name, written as
                // one, in a clause it closes.
                let full_name = j >= at + 2
                    && line[at..j].iter().all(|t| starts_upper(t.raw))
                    && run_closed(line, j);
                if !(speaking || asked || full_name) {
                    continue;
                }
                if let Some(n) = name_at(line, at, asked) {
                    return Some(n);
                }
                continue;
            }
            if is_im {
                // "I'm Sarah": a capitalised name only (never "i'm calling",
                // "I'm Hoping").
                let capital = line
                    .get(at)
                    .is_some_and(|t| starts_upper(t.raw) && name_word_ok(t) && !descriptive(t));
                if !(capital || asked) || line.get(at).is_some_and(descriptive) {
                    continue;
                }
            }
            if cue.first() == Some(&"call")
                && i > 0
                && !["can", "just", "you"].contains(&line[i - 1].lw())
            {
                continue;
            }
            if let Some(n) = name_at(line, at, *strong || asked) {
                return Some(n);
            }
        }
    }
    // "Dev Raman here", "Maria speaking", "Tom from Acme Property
    // Management" at the start of the utterance.
    let start = line
        .iter()
        .position(|t| lead_filler_set().binary_search(&t.lw()).is_err())?;
    let first = line.get(start)?;
    let j = name_run(line, start);
    if j > start {
        let next = line.get(j).map(|t| t.lw());
        let closed_by_clause = line[j - 1].ends_clause;
        let affiliation = !closed_by_clause
            && matches!(next, Some("from" | "with"))
            && line.get(j + 1).is_some_and(|t| starts_upper(t.raw))
            && starts_upper(first.raw);
        let here = !closed_by_clause && matches!(next, Some("here" | "speaking"));
        if affiliation || here {
            if let Some(n) = render(line, start, j) {
                return Some(n);
            }
        }
    }
    if asked {
        return bare_name(line, start);
    }
    None
}

/// An answer to "what's your name?": fillers, then the name, then nothing
/// but a clause end, an affiliation or a restatement.
fn bare_name(line: &[Tok], start: usize) -> Option<String> {
    let j = name_run(line, start);
    if j == start || !run_closed(line, j) {
        return None;
    }
    // After the name: the end, a new clause, or a word that follows names.
    let ok_after = j == line.len()
        || line[j - 1].ends_clause
        || line.get(j).is_some_and(|t| AFTER_NAME.contains(&t.lw()));
    if !ok_after {
        return None;
    }
    name_at(line, start, true)
}

/// The caller's name over the caller's lines: an explicit introduction
/// anywhere wins (the first); otherwise the last bare answer to a name
/// question (`asked[i]` for line `i`).
pub(super) fn find_name(lines: &[Vec<Tok>], asked: &[bool]) -> String {
    lines
        .iter()
        .find_map(|l| name_in_line(l, false))
        .or_else(|| {
            lines
                .iter()
                .zip(asked)
                .rev()
                .filter(|(_, a)| **a)
                .find_map(|(l, _)| name_in_line(l, true))
        })
        .unwrap_or_default()
}
