//! The words safety triage knows: hazards and their cues, equipment
//! phrases, negators and what ends a negation's reach, ways of saying no.

/// Ways of saying "no" to the safety question beyond the reference's
/// NO_SIGNALS (whole-word phrases).
pub(super) const NO_PHRASES: &[&str] = &[
    "don't think so",
    "dont think so",
    "do not think so",
    "don't believe so",
    "not that i know of",
    "not that i can tell",
    "not that i noticed",
    "not that i've noticed",
    "not that ive noticed",
    "not at all",
    "none at all",
    "nothing at all",
    "nothing unusual",
    "nothing weird",
    "nothing strange",
    "nothing like that",
    "none of that",
    "none of those",
    "none of the above",
    "negative",
    "naw",
    "all clear",
    "everything's fine",
    "everything is fine",
    "everything's okay",
    "everything's ok",
    "everything's normal",
    "everything is normal",
    "we're good",
    "we're safe",
    "we are fine",
    "we're okay",
    "we're ok",
    "not really",
    "absolutely not",
    "definitely not",
    "of course not",
    "certainly not",
];

/// Retractions beyond the reference's list (speech-to-text spellings
/// included).
pub(super) const MORE_RETRACTIONS: &[&str] = &[
    "im fine",
    "i am fine",
    "forget it",
    "false alarm",
    "my mistake",
];

/// A yes to an echoed question ("smoke? yes").
pub(super) const YES_WORDS: &[&str] = &[
    "yes", "yeah", "yep", "yup", "yea", "uh-huh", "mhm", "i do", "there is", "it is",
];

pub(super) const NEGATORS: &[&str] = &[
    "no", "not", "never", "nothing", "none", "without", "nor", "neither", "nobody", "dont",
    "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "havent", "hasnt", "hadnt", "cant",
    "cannot", "wont", "wouldnt", "couldnt", "aint", "nowhere",
];
/// A lone answer word before a pause: "No, smoke is coming out" answers the
/// question; it does not negate what follows.
pub(super) const ANSWER_PARTICLES: &[&str] = &["no", "nope", "nah", "naw"];
/// After a negator these make doubt, not negation ("I don't know", "not
/// sure", "can't tell", "no idea").
pub(super) const DOUBT_AFTER_NEGATOR: &[&str] = &[
    "know", "sure", "certain", "tell", "say", "idea", "remember", "recall",
];
/// Doubt on their own.
pub(super) const DOUBT_WORDS: &[&str] = &[
    "if",
    "whether",
    "wonder",
    "wondering",
    "unsure",
    "idk",
    "dunno",
];
/// After a negator these negate the clause they introduce ("I don't think
/// there's gas"), so the next subject does not close the scope.
pub(super) const NEG_RAISERS: &[&str] = &[
    "think", "believe", "suppose", "reckon", "feel", "guess", "seem", "seems", "looks", "appear",
];
/// Words that end a negation's reach and the sentence's negative context.
pub(super) const CONTRAST_WORDS: &[&str] = &[
    "but",
    "though",
    "although",
    "however",
    "except",
    "yet",
    "whereas",
    "actually",
    "instead",
    "only",
    "just",
    "besides",
    "well",
    "so",
    "because",
    "cause",
    "since",
    "then",
    "also",
    "plus",
    "anyway",
    "otherwise",
    "still",
    "now",
];
/// A new subject starts a new clause.
pub(super) const SUBJECTS: &[&str] = &[
    "i",
    "i'm",
    "im",
    "i've",
    "ive",
    "i'd",
    "i'll",
    "we",
    "we're",
    "we've",
    "weve",
    "it",
    "it's",
    "its",
    "there",
    "there's",
    "theres",
    "there're",
    "they",
    "they're",
    "theyre",
    "you",
    "you're",
    "he",
    "she",
    "he's",
    "she's",
    "that's",
    "thats",
    "this",
    "these",
    "those",
    "someone",
    "somebody",
    "everything",
];
/// Determiners that start a new clause after a covered hazard ("no gas the
/// vent is smoking"), unless a preposition precedes them ("no smoke from
/// the vent").
pub(super) const DETERMINERS: &[&str] =
    &["the", "my", "our", "his", "her", "their", "your", "that"];
pub(super) const PREPOSITIONS: &[&str] = &[
    "of", "in", "from", "on", "at", "near", "around", "by", "like", "inside", "outside", "under",
    "behind", "through", "out", "into", "coming", "anywhere",
];
/// "any smoke", "anything burning": only said under a negation (or a
/// question).
pub(super) const NPI_WORDS: &[&str] = &["any", "anything", "anybody", "anywhere", "either", "ever"];
/// Words that continue a negated list after "and" or a comma.
pub(super) const LIST_CONTINUERS: &[&str] =
    &["any", "anything", "nothing", "none", "no", "nor", "or"];
/// Extra words that continue a negated list after "or".
pub(super) const OR_CONTINUERS: &[&str] = &[
    "a",
    "an",
    "some",
    "something",
    "even",
    "like",
    "of",
    "smell",
    "smells",
    "smelling",
];
/// "is not", "was not": with these a bare "not" after a hazard negates it.
pub(super) const AUXILIARIES: &[&str] = &[
    "is", "was", "are", "were", "has", "have", "had", "does", "did", "do", "will", "can",
];
pub(super) const FILLERS: &[&str] = &[
    "uh", "um", "uhm", "umm", "uhh", "er", "erm", "ah", "ahh", "hmm", "hm",
];
pub(super) const FILLER_PAIRS: &[(&str, &str)] = &[
    ("you", "know"),
    ("i", "mean"),
    ("kind", "of"),
    ("sort", "of"),
];

/// Smell words: they make "gas" a danger, and under a negation with no
/// hazard they are a general no ("I don't smell anything").
pub(super) const SMELL_CUES: &[&str] = &[
    "smell", "smells", "smelled", "smelling", "smelt", "odor", "odour", "odors", "odours", "whiff",
    "stink", "stinks", "stinking", "stench", "scent",
];
/// Cues that make "gas" a danger even next to an equipment word.
pub(super) const LEAK_CUES: &[&str] = &[
    "leak", "leaks", "leaking", "leaked", "leakage", "fumes", "hissing", "hiss", "hisses",
];
/// Perception verbs for a general no ("haven't noticed anything").
pub(super) const PERCEPTION: &[&str] = &[
    "see", "seeing", "saw", "seen", "notice", "noticed", "noticing", "hear", "heard", "hearing",
    "detect", "detected",
];
pub(super) const GAS_WORDS: &[&str] = &["gas", "propane", "sulfur", "sulphur", "methane"];
/// Gas equipment: "gas furnace" names a furnace, not a smell.
pub(super) const GAS_EQUIPMENT: &[&str] = &[
    "furnace",
    "furnaces",
    "heater",
    "heaters",
    "heat",
    "water",
    "stove",
    "stoves",
    "range",
    "oven",
    "dryer",
    "fireplace",
    "line",
    "lines",
    "pipe",
    "pipes",
    "meter",
    "valve",
    "bill",
    "company",
    "station",
    "pack",
    "unit",
    "units",
    "system",
    "appliance",
    "appliances",
    "logs",
    "log",
    "tank",
    "grill",
    "burner",
    "burners",
    "pilot",
    "boiler",
    "insert",
    "powered",
    "fired",
    "bills",
    "service",
    "supply",
    "hookup",
    "can",
    "mower",
    "generator",
    "dryers",
];
/// Materials whose smell is a burning smell ("an electrical smell").
pub(super) const BURN_SMELL_WORDS: &[&str] = &[
    "electrical",
    "electric",
    "plastic",
    "melting",
    "wires",
    "wiring",
];
/// Danger on its own.
pub(super) const DANGER_WORDS: &[&str] = &[
    "smoke",
    "smoking",
    "smoky",
    "smokey",
    "sparks",
    "spark",
    "sparking",
    "sparked",
    "fire",
    "fires",
    "flame",
    "flames",
    "burning",
    "burnt",
    "burned",
    "burn",
    "scorched",
    "scorching",
    "scorch",
    "singed",
    "smoldering",
    "smouldering",
    "monoxide",
];
/// Devices whose alarm is danger ("CO detector", "smoke alarm").
pub(super) const ALARM_DEVICES: &[&str] = &[
    "detector",
    "detectors",
    "alarm",
    "alarms",
    "monitor",
    "sensor",
];
/// An alarm device said to be calm is only named ("the CO detector is
/// quiet").
pub(super) const CALM_WORDS: &[&str] = &["quiet", "silent", "fine", "ok", "okay", "normal", "good"];
/// A chirping smoke detector wants a battery.
pub(super) const BATTERY_WORDS: &[&str] = &["chirp", "chirps", "chirping", "battery", "batteries"];
/// Auxiliaries before "fire" make it a verb ("it won't fire").
pub(super) const FIRE_VERB_BEFORE: &[&str] = &[
    "to", "will", "wont", "won't", "doesnt", "doesn't", "didnt", "didn't", "cant", "can't",
    "couldnt", "couldn't", "wouldnt", "wouldn't", "does", "did", "keeps", "never",
];
/// Particles after "fire"/"burn" make them verbs ("fires up", "burned out",
/// "burning up in here").
pub(super) const VERB_PARTICLES: &[&str] = &[
    "up",
    "off",
    "on",
    "back",
    "right",
    "properly",
    "correctly",
    "again",
    "out",
    "hot",
];
/// Window (in words) for a smell or leak cue around a gas word.
pub(super) const CUE_WINDOW: usize = 4;

pub(super) fn in_list(list: &[&str], w: &str) -> bool {
    list.contains(&w)
}

pub(super) fn is_negator(w: &str) -> bool {
    let w = w.strip_suffix("'s").unwrap_or(w);
    in_list(NEGATORS, w) || w.ends_with("n't")
}

/// A negated auxiliary after a hazard negates it ("smoke isn't coming out",
/// "the CO alarm never went off"); a bare "not" does not ("gas not smoke").
pub(super) fn is_negated_aux(w: &[&str], i: usize) -> bool {
    let Some(&x) = w.get(i) else { return false };
    let contracted = x.ends_with("n't") || (x.ends_with("nt") && in_list(NEGATORS, x));
    let aux_not = x == "not" && i > 0 && in_list(AUXILIARIES, w[i - 1]);
    (x == "never" || x == "cannot" || contracted || aux_not)
        && !minimizes(w, i + 1)
        && !w
            .get(i + 1)
            .is_some_and(|n| in_list(DOUBT_AFTER_NEGATOR, n))
}

/// "much", "a lot", "very", "that many" after a negator: a smaller amount.
pub(super) fn minimizes(w: &[&str], i: usize) -> bool {
    match w.get(i).copied() {
        Some("much" | "many" | "very" | "too" | "so" | "that" | "super" | "real") => {
            // "not that I know of" is a no, "not that much smoke" is smoke.
            !(w[i] == "that" && w.get(i + 1).is_some_and(|n| in_list(SUBJECTS, n)))
        }
        Some("a") => w
            .get(i + 1)
            .is_some_and(|n| matches!(*n, "lot" | "ton" | "bunch" | "whole" | "little")),
        _ => false,
    }
}
