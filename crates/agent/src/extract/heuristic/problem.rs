//! The problem description: the clause that says what is wrong.

use super::*;

/// Words that belong to a problem, never to a street name ("1200 Oak
/// furnace" is no address). Each is checked against one word, so the
/// table holds single words only.
pub(super) const PROBLEM_CUES: &[&str] = &[
    "ac",
    "a/c",
    "air",
    "heat",
    "heater",
    "heating",
    "furnace",
    "cooling",
    "cool",
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
    "broken",
    "leak",
    "leaking",
    "leaks",
    "dripping",
    "noise",
    "noises",
    "noisy",
    "rattling",
    "buzzing",
    "humming",
    "clicking",
    "squealing",
    "grinding",
    "frozen",
    "freezing",
    "iced",
    "blowing",
    "tripping",
    "breaker",
    "filter",
    "tune-up",
    "maintenance",
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
    "the real problem is that",
    "the real problem is",
    "real problem is that",
    "real problem is",
    "what i meant is",
    "i meant",
    "also",
    "more accurately",
    "to be more accurate",
    "accurately",
    "correction",
    "i mean",
    "sorry",
    "wait",
    "the problem is",
    "the issue is",
    "my problem is",
    "i think",
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
    "my",
    "our",
    "the",
];

pub(super) const PROBLEM_TRAIL_FILLER: &[&str] = &["or something", "i guess", "i think", "please"];

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

pub(super) fn capitalize_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(f) => f.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

/// Symptoms that say something is wrong on their own.
const FAULT_STRONG: &[&str] = &[
    "not working",
    "stopped working",
    // "stop" for "stopped": how callers and recognisers often say it.
    "stop working",
    "stops working",
    "stop cooling",
    "stops cooling",
    "stop heating",
    "stops heating",
    "nothing turns on",
    "no flame",
    "no spark",
    "no ignition",
    "clogged",
    "backed up",
    "overflowing",
    "never stops",
    "runs nonstop",
    "running nonstop",
    "runs all day",
    "running all day",
    "nothing happens",
    "nothing comes on",
    "won't do anything",
    "doesn't do anything",
    "won't turn on",
    "won't turn off",
    "won't start",
    "won't come on",
    "won't kick on",
    "won't light",
    "won't cool",
    "won't heat",
    "won't blow",
    "won't stop",
    "wont turn on",
    "doesn't work",
    "doesn't turn on",
    "isn't working",
    "aren't working",
    "not turning off",
    "quit working",
    "not cooling",
    "not heating",
    "not blowing",
    "not turning on",
    "not coming on",
    "not kicking on",
    "no air",
    "no heat",
    "no cool",
    "no cold",
    "no ac",
    "no a/c",
    "no hot",
    "no airflow",
    "nothing coming out",
    "nothing's coming out",
    "nothing is coming out",
    "broken",
    "broke",
    "busted",
    "leak",
    "leaking",
    "leaks",
    "leaky",
    "dripping",
    "drips",
    "flooding",
    "flooded",
    "puddle",
    "noise",
    "noises",
    "noisy",
    "loud",
    "banging",
    "bangs",
    "rattling",
    "rattles",
    "buzzing",
    "humming",
    "clicking",
    "squealing",
    "screeching",
    "grinding",
    "whistling",
    "hissing",
    "squeaking",
    "frozen",
    "freezing",
    "froze",
    "iced",
    "icing",
    "ice",
    "blowing warm",
    "blowing hot",
    "blowing cold",
    "warm air",
    "hot air",
    "short cycling",
    "short-cycling",
    "cycling",
    "keeps turning",
    "keeps running",
    "keeps shutting",
    "running constantly",
    "runs constantly",
    "won't stop",
    "tripping",
    "tripped",
    "trips",
    "smell",
    "smells",
    "smelling",
    "smoke",
    "smoking",
    "burning",
    "sparks",
    "sparking",
    "carbon monoxide",
    "co detector",
    "co alarm",
    "flashing",
    "blinking",
    "acting up",
    "really hot",
    "so hot",
    "too hot",
    "hot in here",
    "hot in the house",
    "really cold",
    "so cold",
    "too cold",
    "cold in the house",
    "shut off",
    "shuts off",
    "turned off",
    "went out",
    "is out",
    "are out",
    "went off",
];

/// Symptoms that need a piece of equipment (or the question) to be a fault.
const FAULT_WEAK: &[&str] = &[
    "bad",
    "nonstop",
    "non-stop",
    "constantly",
    "all day",
    "all night",
    "not",
    "won't",
    "wont",
    "doesn't",
    "does not",
    "isn't",
    "is not",
    "aren't",
    "can't",
    "stopped",
    "broke",
    "died",
    "dead",
    "quit",
    "failed",
    "loud",
    "ice",
    "error",
    "blank",
    "out",
    "off",
    "hot",
    "cold",
    "warm",
    "humid",
    "humidity",
    "water",
    "making",
    "sound",
    "sounds",
    "weird",
    "strange",
    "funny",
    "running",
    "stuck",
    "low",
    "high",
    "never",
    "temperature",
];

/// A clause that only names the trouble ("a problem with my AC").
const TOPIC: &[&str] = &["problem", "problems", "issue", "issues", "trouble"];

/// Service needs that are the reason for the visit when no fault is said.
const SERVICE_NEED: &[&str] = &[
    "tune-up",
    "tune up",
    "tuneup",
    "maintenance",
    "checkup",
    "check-up",
    "inspection",
    "quote",
    "estimate",
    "replace",
    "replacement",
    "install",
    "installed",
    "installation",
    "new system",
    "new unit",
    "new ac",
    "upgrade",
    "cleaning",
    "serviced",
    "servicing",
];

/// Hazard words: a fault when said, nothing when denied ("no gas smell").
const HAZARD: &[&str] = &[
    "smell",
    "smells",
    "smelling",
    "gas",
    "smoke",
    "smoking",
    "burning",
    "sparks",
    "sparking",
    "carbon monoxide",
    "co detector",
    "co alarm",
    "fire",
];

/// Equipment a pronoun can stand for ("my furnace, it's banging").
const DEVICES: &[&str] = &[
    "heat pump",
    "mini split",
    "mini-split",
    "water heater",
    "air conditioner",
    "air conditioning",
    "air handler",
    "a/c",
    "ac",
    "hvac",
    "furnace",
    "heater",
    "boiler",
    "thermostat",
    "compressor",
    "condenser",
    "blower",
    "fan",
    "vents",
    "ducts",
    "unit",
    "system",
    "capacitor",
    "contactor",
    "igniter",
    "ignitor",
    "flame sensor",
    "evaporator",
    "condensate line",
    "condensate",
    "drain line",
    "drain pan",
];

/// What a clause is about the system, besides the devices: air, heat, …
const SYSTEM_WORDS: &[&str] = &[
    "air",
    "heat",
    "heating",
    "cooling",
    "cool",
    "vent",
    "duct",
    "coil",
    "filter",
    "breaker",
    "airflow",
    "refrigerant",
    "freon",
    "pilot",
    "blow",
    "blows",
    "blowing",
    "flame",
    "drain",
];

/// A request for a visit ("can you send someone out for my AC"): no fault
/// in itself, though it may name the device.
const REQUEST: &[&str] = &[
    "send",
    "come out",
    "come look",
    "come take a look",
    "come by",
    "come over",
    "look at",
    "take a look",
    "check out",
    "check on",
    "someone",
    "somebody",
    "technician",
    "tech",
    "schedule",
    "appointment",
    "book",
    "need help",
    "get help",
];

fn is_hazard_cue(c: &str) -> bool {
    HAZARD.contains(&c) || matches!(c, "leak" | "leaking" | "leaks" | "hissing")
}

fn is_negation(w: &str) -> bool {
    matches!(
        w,
        "no" | "not" | "never" | "nothing" | "none" | "nope" | "nah" | "without"
    ) || w.ends_with("n't")
}

// Cue flags of the one table every clause is read with.
const F_STRONG: u32 = 1;
/// A strong cue that is a hazard word ("smell", "smoke", "leak").
const F_STRONG_HZ: u32 = 1 << 1;
const F_HAZARD: u32 = 1 << 2;
const F_WEAK: u32 = 1 << 3;
const F_TOPIC: u32 = 1 << 4;
const F_SERVICE: u32 = 1 << 5;
const F_DEVICE: u32 = 1 << 6;
const F_SYSTEM: u32 = 1 << 7;
const F_REQUEST: u32 = 1 << 8;
/// "my name", "zip code", "phone number": a clause of details.
const F_DETAIL: u32 = 1 << 9;
/// "hot", "cold", …: a fault when the agent asked what is going on.
const F_FEEL: u32 = 1 << 10;

const DETAIL: &[&str] = &[
    "my name",
    "name is",
    "name's",
    "zip",
    "zip code",
    "phone number",
];
const FEEL: &[&str] = &["hot", "cold", "warm", "humid", "stuffy", "freezing"];

/// One cue: the words after its first word, its flags, and for a device
/// how it is written.
struct Cue {
    rest: Vec<&'static str>,
    flags: u32,
    device: Option<&'static str>,
}

/// FNV-1a: a fast hash for the short words the cue table is keyed by.
#[derive(Default, Clone, Copy)]
struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type CueTable =
    std::collections::HashMap<&'static str, Vec<Cue>, std::hash::BuildHasherDefault<WordHasher>>;

/// Every cue list in one table keyed by the cue's first word, so a clause
/// is read in one pass over its words (no substring search per cue).
fn cue_table() -> &'static CueTable {
    static TABLE: std::sync::OnceLock<CueTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = CueTable::default();
        let mut add = |phrase: &'static str, flags: u32| {
            let mut words = phrase.split(' ');
            let Some(first) = words.next() else { return };
            let rest: Vec<&'static str> = words.collect();
            let device = (flags & F_DEVICE != 0).then_some(match phrase {
                "ac" | "a/c" => "AC",
                "hvac" => "HVAC",
                "mini-split" => "mini split",
                other => other,
            });
            let list = t.entry(first).or_default();
            match list.iter_mut().find(|c| c.rest == rest) {
                Some(c) => {
                    c.flags |= flags;
                    c.device = c.device.or(device);
                }
                None => list.push(Cue {
                    rest,
                    flags,
                    device,
                }),
            }
        };
        for c in FAULT_STRONG {
            add(
                c,
                if is_hazard_cue(c) {
                    F_STRONG_HZ
                } else {
                    F_STRONG
                },
            );
        }
        for (list, flag) in [
            (HAZARD, F_HAZARD),
            (FAULT_WEAK, F_WEAK),
            (TOPIC, F_TOPIC),
            (SERVICE_NEED, F_SERVICE),
            (DEVICES, F_DEVICE),
            (SYSTEM_WORDS, F_SYSTEM),
            (REQUEST, F_REQUEST),
            (DETAIL, F_DETAIL),
            (FEEL, F_FEEL),
        ] {
            for c in list {
                add(c, flag);
            }
        }
        // Longer cues first, so "heat pump" is the device before "heat".
        for list in t.values_mut() {
            list.sort_by_key(|c| std::cmp::Reverse(c.rest.len()));
        }
        t
    })
}

/// Whether a token stands for the cue word: the word itself, or it with a
/// contraction ("air's" for "air", "fan's" for "fan").
fn word_is(tok: &str, word: &str) -> bool {
    tok == word
        || tok
            .strip_prefix(word)
            .is_some_and(|r| matches!(r, "'s" | "'re" | "'ll" | "'d" | "'ve"))
}

/// What one clause says: its cue flags, its first device, negation.
#[derive(Default, Clone, Copy)]
struct Reading {
    flags: u32,
    device: Option<&'static str>,
    negated: bool,
}

fn read_clause(toks: &[Tok]) -> Reading {
    let table = cue_table();
    let mut r = Reading::default();
    for (i, t) in toks.iter().enumerate() {
        let low = t.lw();
        r.negated |= is_negation(low);
        // "air's" is read as "air"; "won't" and "nothing's" as themselves.
        let cues = match table.get(low) {
            Some(c) => c,
            None => match low.find('\'') {
                Some(at) if word_is(low, &low[..at]) => match table.get(&low[..at]) {
                    Some(c) => c,
                    None => continue,
                },
                _ => continue,
            },
        };
        for c in cues {
            let matched = c
                .rest
                .iter()
                .enumerate()
                .all(|(k, w)| toks.get(i + 1 + k).is_some_and(|n| word_is(&n.low, w)));
            if matched {
                r.flags |= c.flags;
                if r.device.is_none() {
                    r.device = c.device;
                }
            }
        }
    }
    r
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fault,
    Topic,
    Service,
    /// Names a device and says nothing wrong ("the AC runs").
    Context,
    Other,
}

struct Clause {
    /// Token range in the utterance.
    from: usize,
    to: usize,
    /// The word that joined it to the clause before ("and", "but"), if any.
    joiner: Option<&'static str>,
    kind: Kind,
    device: Option<&'static str>,
}

/// Clause ranges: split at punctuation and at "and" / "but" / "so" (kept
/// as the joiner of the clause after them, not in either clause).
fn clause_ranges(toks: &[Tok]) -> Vec<(usize, usize, Option<&'static str>)> {
    let mut out = Vec::new();
    let mut from = 0;
    let mut joiner = None;
    for (i, t) in toks.iter().enumerate() {
        // "so" joins clauses ("…, so my AC is out"), not "so hot".
        let so_joins = || {
            toks.get(i + 1).is_some_and(|n| {
                matches!(
                    n.lw(),
                    "i" | "i'm"
                        | "it"
                        | "it's"
                        | "my"
                        | "the"
                        | "we"
                        | "we're"
                        | "there's"
                        | "there"
                        | "now"
                        | "yeah"
                        | "um"
                        | "uh"
                        | "like"
                        | "then"
                        | "our"
                        | "can"
                )
            })
        };
        let j = match t.lw() {
            "and" => Some("and"),
            "but" => Some("but"),
            "so" if i == from || so_joins() => Some("so"),
            _ => None,
        };
        if j.is_some() {
            if i > from {
                out.push((from, i, joiner));
                joiner = j;
            } else if joiner.is_none() {
                joiner = j;
            }
            from = i + 1;
            if t.ends_clause {
                joiner = None;
            }
            continue;
        }
        if t.ends_clause {
            out.push((from, i + 1, joiner));
            from = i + 1;
            joiner = None;
        }
    }
    if from < toks.len() {
        out.push((from, toks.len(), joiner));
    }
    out
}

/// Whether the clause names the caller or says an address, a ZIP or a
/// phone number (never a problem, though "Cold Springs Road" says "cold").
fn is_detail_clause(toks: &[Tok], r: &Reading) -> bool {
    if r.flags & F_DETAIL != 0 {
        return true;
    }
    let digits: usize = toks
        .iter()
        .map(|t| t.low.bytes().filter(u8::is_ascii_digit).count())
        .sum();
    if digits >= 5 {
        return true;
    }
    let numbery = toks
        .iter()
        .any(|t| t.low.bytes().next().is_some_and(|b| b.is_ascii_digit()) || push_probe(&t.low));
    if numbery {
        let refs: Vec<&Tok> = toks.iter().collect();
        let mut i = 0;
        while i < refs.len() {
            match address_at(&refs, i) {
                Ok(_) => return true,
                Err(next) => i = next.max(i + 1),
            }
        }
    }
    let named = toks
        .iter()
        .skip(1)
        .any(|t| starts_upper(t.raw) && !matches!(t.lw(), "i" | "i'm" | "i've" | "i'd" | "i'll"));
    named && name_in_line(toks, false).is_some()
}

/// Words a clause about the appointment starts with ("Wednesday doesn't
/// work anymore", "that time isn't working for me").
const WHEN_WORDS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
    "tonight",
    "morning",
    "afternoon",
    "evening",
    "time",
    "day",
    "date",
    "slot",
    "appointment",
    "window",
    "week",
    "weekend",
];

fn kind_of(toks: &[Tok], r: &Reading, asked: bool, utterance_device: bool) -> Kind {
    let has = |f: u32| r.flags & f != 0;
    if toks.is_empty() {
        return Kind::Other;
    }
    // The subject is a day or a time: talk about the appointment.
    let subject = toks.iter().map(|t| t.lw()).find(|w| {
        !matches!(
            *w,
            "no" | "yes"
                | "yeah"
                | "well"
                | "so"
                | "um"
                | "uh"
                | "actually"
                | "the"
                | "that"
                | "this"
                | "sorry"
                | "oh"
                | "hmm"
                | "but"
                | "and"
        )
    });
    if subject.is_some_and(|w| WHEN_WORDS.contains(&w)) && r.device.is_none() {
        return Kind::Other;
    }
    // A denied hazard ("no gas smell", "I don't smell gas", "no smoke or
    // anything") is no fault, unless another symptom is said with it.
    let hazard = has(F_HAZARD);
    let strong = has(F_STRONG) || (has(F_STRONG_HZ) && !(hazard && r.negated));
    if hazard && r.negated && !strong {
        return Kind::Other;
    }
    if strong {
        return Kind::Fault;
    }
    if has(F_REQUEST) {
        return if has(F_SERVICE) {
            Kind::Service
        } else {
            Kind::Other
        };
    }
    let about_system = r.device.is_some() || has(F_SYSTEM);
    let pronoun = toks.iter().take(3).any(|t| {
        matches!(
            t.lw(),
            "it" | "it's" | "its" | "it'll" | "they're" | "they" | "there's"
        )
    });
    if has(F_WEAK) && (about_system || (pronoun && (utterance_device || asked))) {
        return Kind::Fault;
    }
    if asked && has(F_FEEL) {
        return Kind::Fault;
    }
    if r.device.is_some() && has(F_TOPIC) {
        return Kind::Topic;
    }
    if has(F_SERVICE) {
        return Kind::Service;
    }
    if r.device.is_some() && toks.len() <= 6 {
        return Kind::Context;
    }
    Kind::Other
}

/// Words an answer's "no" comes before ("no the heat won't …"), where it
/// is not the fault's "no" ("no air").
const AFTER_ANSWER_NO: &[&str] = &[
    "the", "my", "our", "it", "it's", "its", "i", "i'm", "we", "we're", "that", "there's", "so",
    "well", "um", "uh", "yeah", "actually", "just", "but", "sorry", "wait", "this", "they",
    "they're", "nothing", "not",
];

/// The clause's words without fillers; a leading "no" is kept when it is
/// the fault ("no air").
fn clean_clause(toks: &[Tok]) -> String {
    let lows: Vec<&str> = toks.iter().map(|t| t.lw()).collect();
    let mut from = 0;
    let mut to = lows.len();
    let mut guard = 0;
    while from < to && guard < 64 {
        guard += 1;
        let n = lead_len(&lows[from..to], PROBLEM_LEAD_FILLER);
        if n > 0 {
            from += n;
            continue;
        }
        // "no the heat won't …": an answer's "no", not the fault's "no air".
        if matches!(lows[from], "no" | "nope" | "nah")
            && lows
                .get(from + 1)
                .is_some_and(|s| from + 1 < to && AFTER_ANSWER_NO.contains(s))
        {
            from += 1;
            continue;
        }
        break;
    }
    while from < to && guard < 128 {
        guard += 1;
        let n = trail_len(&lows[from..to], PROBLEM_TRAIL_FILLER);
        if n == 0 {
            break;
        }
        to -= n;
    }
    let mut out = String::new();
    for t in &toks[from..to] {
        let word = match t.lw() {
            // Fillers inside the clause ("my ac its not uh cooling").
            "uh" | "um" | "umm" | "uhh" | "er" | "erm" | "uhm" => continue,
            "ac" | "a/c" => "AC",
            "hvac" => "HVAC",
            _ => t.raw,
        };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// How many leading words of `lows` the first matching phrase covers.
fn lead_len(lows: &[&str], phrases: &[&str]) -> usize {
    'phrases: for p in phrases {
        let mut n = 0;
        for w in p.split(' ') {
            if lows.get(n) != Some(&w) {
                continue 'phrases;
            }
            n += 1;
        }
        return n;
    }
    0
}

/// How many trailing words of `lows` the first matching phrase covers.
fn trail_len(lows: &[&str], phrases: &[&str]) -> usize {
    'phrases: for p in phrases {
        let n = p.split(' ').count();
        if n > lows.len() {
            continue;
        }
        for (k, w) in p.split(' ').enumerate() {
            if lows[lows.len() - n + k] != w {
                continue 'phrases;
            }
        }
        return n;
    }
    0
}

/// "it's making a banging noise" about "furnace" → "furnace is making a
/// banging noise"; other clauses get the device in front.
fn with_device(clause: &str, device: &str) -> String {
    let mut words = clause.splitn(2, ' ');
    let first = words.next().unwrap_or("");
    let rest = words.next().unwrap_or("");
    let join = |a: &str| {
        if rest.is_empty() {
            a.to_string()
        } else {
            format!("{a} {rest}")
        }
    };
    match normalize_lower(first).as_str() {
        "it's" | "its" => join(&format!("{device} is")),
        "it'll" => join(&format!("{device} will")),
        "it" => join(device),
        _ => format!("{device}: {clause}"),
    }
}

/// The fault one utterance describes (see [`super::problem_in`]).
pub(super) fn problem_in_text(text: &str, asked: bool) -> Option<String> {
    let toks = tokenize(text);
    if toks.is_empty() {
        return None;
    }
    let ranges = clause_ranges(&toks);
    // The device named anywhere (a pronoun elsewhere may stand for it).
    let readings: Vec<Reading> = ranges
        .iter()
        .map(|&(a, b, _)| read_clause(&toks[a..b]))
        .collect();
    let utterance_device = readings.iter().any(|r| r.device.is_some());
    let clauses: Vec<Clause> = ranges
        .iter()
        .zip(&readings)
        .map(|(&(from, to, joiner), r)| {
            let part = &toks[from..to];
            let mut kind = kind_of(part, r, asked, utterance_device);
            if kind != Kind::Other && is_detail_clause(part, r) {
                kind = Kind::Other;
            }
            Clause {
                from,
                to,
                joiner,
                kind,
                device: r.device,
            }
        })
        .collect();
    let want = [Kind::Fault, Kind::Topic, Kind::Service]
        .into_iter()
        .find(|k| clauses.iter().any(|c| c.kind == *k))?;
    let mut out = String::new();
    // A fault clause that names the device itself ("…, the AC died"):
    // no pronoun elsewhere is replaced by it.
    let mut named_device = clauses.iter().any(|c| c.kind == want && c.device.is_some());
    let mut prev_kept: Option<usize> = None;
    for (idx, c) in clauses.iter().enumerate() {
        if c.kind != want {
            continue;
        }
        let words = &toks[c.from..c.to];
        let mut part = if want == Kind::Topic {
            let topic = words
                .iter()
                .find(|t| TOPIC.contains(&t.lw()))
                .map_or("problem", |t| t.lw());
            format!("{} {topic}", c.device.unwrap_or("system"))
        } else {
            clean_clause(words)
        };
        if part.is_empty() {
            continue;
        }
        let context_before = idx
            .checked_sub(1)
            .and_then(|p| clauses.get(p))
            .filter(|p| p.kind == Kind::Context && prev_kept != Some(idx - 1));
        let hazard = readings
            .get(idx)
            .is_some_and(|r| r.flags & (F_HAZARD | F_STRONG_HZ) != 0);
        let starts_with_it = words
            .first()
            .is_some_and(|t| matches!(t.lw(), "it" | "it's" | "its" | "it'll"));
        if c.device.is_some() {
            // The clause names its device.
        } else if let (Some(p), Some(j), false) = (context_before, c.joiner, named_device) {
            // "the AC runs but nothing's coming out": the device's clause
            // right before, joined by "and" / "but", comes along.
            part = format!("{} {j} {part}", clean_clause(&toks[p.from..p.to]));
            named_device = true;
        } else if !named_device && (starts_with_it || !hazard) {
            // The device said in another clause ("I need someone to look at
            // my furnace, it's making a banging noise"); a hazard is said as
            // it is ("I smell gas in my kitchen"), but for its "it".
            let other = clauses[..idx]
                .iter()
                .rev()
                .chain(clauses[idx + 1..].iter())
                .find_map(|o| o.device);
            if let Some(d) = other {
                part = with_device(&part, d);
                named_device = true;
            }
        }
        if !out.is_empty() {
            match (prev_kept, c.joiner) {
                (Some(p), Some(j)) if p + 1 == idx && j != "so" => {
                    out.push(' ');
                    out.push_str(j);
                    out.push(' ');
                }
                _ => out.push_str(", "),
            }
        }
        out.push_str(&part);
        prev_kept = Some(idx);
    }
    if out.is_empty() {
        return None;
    }
    let mut joined = capitalize_first(&out);
    if joined.chars().count() > 200 {
        joined = joined
            .chars()
            .take(200)
            .collect::<String>()
            .trim_end()
            .to_string();
    }
    Some(joined)
}

/// The problem over the caller's lines: the first line that describes one
/// (`asked[i]`: the agent had asked what is going on before line `i`).
pub(super) fn find_problem(lines: &[&str], asked: &[bool]) -> String {
    lines
        .iter()
        .zip(asked)
        .find_map(|(l, a)| problem_in_text(l, *a))
        .unwrap_or_default()
}
