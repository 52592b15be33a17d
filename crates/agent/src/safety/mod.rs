//! Safety triage (D-3): is the caller's answer to "any gas smell, smoke or
//! burning?" an emergency, a clear no, or unclear?
//!
//! The reference treated any hazard word as an emergency, so "no gas smell"
//! sent a family out of the house. Here every hazard the caller mentions is
//! read in its context, one sentence at a time:
//!
//! - **Hazards.** Danger on its own: smoke, sparks, fire, flames, burning,
//!   burnt, scorched, smouldering, rotten eggs, carbon monoxide, a CO or
//!   smoke alarm. Danger only with a smell or leak cue near it: gas, propane,
//!   sulfur, and "electrical"/"plastic"/"melting" next to a smell word.
//!   Equipment phrases that merely contain a hazard word are not danger:
//!   "gas furnace", "gas water heater", "it won't fire up", "the pilot
//!   flame", "the motor burned out", "we're burning up in here", "the smoke
//!   detector is chirping for a battery".
//! - **Negation scope.** A negator ("no", "not", "don't", "never", "nothing",
//!   "neither", "nor", "without", …) covers every hazard after it until the
//!   scope closes: at the end of the sentence, at a contrast word ("but",
//!   "though", "just", "actually", …), at a new subject ("I", "it's",
//!   "there's", …; except right after "don't think"/"don't believe", which
//!   negate the clause they introduce), at a hedge ("if", "whether", "not
//!   sure", "don't know" — doubt never negates), and at an "and" or a comma
//!   that does not continue the list. A list continues through "or", "nor",
//!   "and" and commas when the next word is another hazard, a negator or
//!   "any"/"anything": "I don't smell any gas or smoke", "neither gas nor
//!   smoke", "no gas, no smoke, nothing burning", "I don't smell gas or
//!   anything burning". "any smoke"/"anything burning" after a negator in
//!   the same sentence is negated even across a new subject ("I don't think
//!   there's any smoke").
//! - **Questions.** A hazard in a sentence that ends with "?" ("gas smell?")
//!   is the caller asking, not telling: it counts only together with a yes
//!   ("smoke? yes").
//! - **General no.** "I don't smell anything", "not smelling anything
//!   unusual", "nothing like that", "I don't think so" are a clear no.
//!
//! The answer: any asserted (unnegated, unquestioned) danger → `Emergency`,
//! unless the caller retracts it (SPEC's retraction phrases; then only a
//! plain "no" makes it a no, as in the reference). Otherwise a no — a NO
//! word, a general no, or negated hazards — → `ClearNo`. Everything else
//! (equipment mentions, doubt about nothing in particular, unrelated talk)
//! → `Unclear`: stay in `safety` and let the LLM ask. An unnegated danger
//! phrase is never read as safe; doubt about a hazard ("I don't know if
//! it's smoke") counts as the hazard.
//!
//! The labelled corpus in `crates/agent/tests/safety_corpus.txt` pins this
//! on a few hundred answers written the way callers talk.

mod hazard;
mod scan;
mod sentence;
mod words;

use crate::keywords::{lowercase, LowerText, NO_SIGNALS, SAFETY_RETRACTION_KEYWORDS};
use scan::Scan;
use sentence::sentences;
use words::{MORE_RETRACTIONS, NO_PHRASES, YES_WORDS};

/// The safety state's reading of a caller's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafetyAnswer {
    /// An explicit, unnegated, unretracted danger statement → `safety_exit`.
    Emergency,
    /// A clear "no" (a NO word, a general no, or only negated danger).
    ClearNo,
    /// Anything else (ambiguous equipment words, retractions without a no,
    /// unrelated talk): stay and ask.
    Unclear,
}

/// How one hazard mention was read in its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Stated as present ("I smell gas", "maybe a little smoke").
    Asserted,
    /// Inside a negation's scope ("no gas or smoke").
    Negated,
    /// In a question ("gas smell?").
    Questioned,
    /// An equipment phrase that contains a hazard word ("gas furnace").
    Equipment,
}

/// One hazard word of the utterance and how it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The hazard word as the caller said it (lower case).
    pub word: String,
    pub reading: Reading,
}

/// The whole judgement, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triage {
    pub answer: SafetyAnswer,
    pub mentions: Vec<Mention>,
    /// A general no ("I don't smell anything", "nothing like that").
    pub general_no: bool,
    /// A retraction phrase ("never mind", "I'm fine").
    pub retracted: bool,
}

/// Whether `text` has a word a hazard mention can start with (every
/// mention [`triage`] finds starts at one: a gas word, a burning-smell word,
/// a danger word, "rotten", "carbon", "co", "c"). Most utterances have none;
/// then no hazard was reported or denied, and the scan can be skipped.
pub fn may_mention_hazard(text: &str) -> bool {
    use crate::keywords::is_word_char;
    let lower = lowercase(text);
    let norm = lower.replace('\u{2019}', "'");
    let starts = |w: &str| {
        words::in_list(words::GAS_WORDS, w)
            || words::in_list(words::BURN_SMELL_WORDS, w)
            || words::in_list(words::DANGER_WORDS, w)
            || matches!(w, "rotten" | "carbon" | "co" | "c")
    };
    // The words as the sentence reader splits them (inner apostrophes kept).
    let mut rest = norm.as_str();
    while let Some(i) = rest.find(is_word_char) {
        rest = &rest[i..];
        let mut end = 0;
        let mut chars = rest.char_indices().peekable();
        while let Some((j, c)) = chars.next() {
            let inner_apostrophe = c == '\'' && chars.peek().is_some_and(|&(_, d)| is_word_char(d));
            if is_word_char(c) || (j > 0 && inner_apostrophe) {
                end = j + c.len_utf8();
            } else {
                break;
            }
        }
        if starts(&rest[..end]) {
            return true;
        }
        rest = &rest[end..];
    }
    false
}

/// D-3 safety judgement of a caller's answer (see the module docs).
pub fn safety_answer(text: &str) -> SafetyAnswer {
    triage(text).answer
}

/// True only for an unnegated, unretracted danger statement (D-3).
pub fn detect_safety_emergency(text: &str) -> bool {
    safety_answer(text) == SafetyAnswer::Emergency
}

/// The judgement with the reading of every hazard mention.
pub fn triage(text: &str) -> Triage {
    let lower = lowercase(text);
    let norm = lower.replace('\u{2019}', "'");
    let t = LowerText::new(&norm);
    let mut scan = Scan::default();
    for sentence in sentences(&norm) {
        scan.sentence(&sentence);
    }
    let retracted = t.matches_any(SAFETY_RETRACTION_KEYWORDS) || t.matches_any(MORE_RETRACTIONS);
    // The reference's NO_SIGNALS; a single word ("no", "nope") counts only
    // where it answers (sentence start, before a pause, at the end): "the
    // fan runs but no cold air" says nothing about gas.
    let said_no = scan.answered_no || NO_SIGNALS.iter().any(|k| k.contains(' ') && t.matches(k));
    let reading = |r: Reading| scan.mentions.iter().any(|m| m.reading == r);
    let answer = if reading(Reading::Asserted) {
        match (retracted, said_no) {
            (false, _) => SafetyAnswer::Emergency,
            (true, true) => SafetyAnswer::ClearNo,
            (true, false) => SafetyAnswer::Unclear,
        }
    } else if reading(Reading::Questioned) && t.matches_any(YES_WORDS) && !said_no {
        SafetyAnswer::Emergency
    } else if said_no
        || (reading(Reading::Questioned) && scan.bare_negation)
        || scan.general_no
        || (t.matches_any(NO_PHRASES) && !t.matches("not really sure"))
        || matches!(norm.trim().trim_end_matches(['.', '!']), "nothing" | "none")
        || reading(Reading::Negated)
    {
        SafetyAnswer::ClearNo
    } else {
        SafetyAnswer::Unclear
    };
    Triage {
        answer,
        mentions: scan.mentions,
        general_no: scan.general_no,
        retracted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_detect_safety_emergency() {
        for (input, want) in [
            ("I smell gas", true),                        // val.safety.test_gas_smell
            ("something is burning", true),               // test_burning
            ("my AC isn't cooling", false),               // test_normal_issue
            ("gas heater but never mind", false),         // derived_1
            ("I smelled gas but I'm fine now", false),    // derived_2
            ("no gas smell", false),                      // derived_3
            ("there's smoke, not really sure", false),    // derived_4
            ("the fireplace is fine", false),             // derived_5
            ("we have a fire", true),                     // derived_6
            ("carbon monoxide alarm", true),              // derived_7
            ("I don't smell gas", false),                 // d3_dont_smell_gas
            ("the gas furnace is making noise", false),   // d3_gas_furnace_noise
            ("there's smoke coming from the vent", true), // d3_smoke_from_vent
            ("I don't smell gas but I see sparks", true), // d3_negated_gas_but_sparks
            ("nothing is burning", false),                // d3_nothing_is_burning
        ] {
            assert_eq!(detect_safety_emergency(input), want, "{input:?}");
        }
    }

    #[test]
    fn safety_answers_of_sm_cases() {
        use SafetyAnswer::*;
        for (input, want) in [
            ("yes I smell gas right now", Emergency), // sm.safety.emergency_to_exit
            ("no nothing like that", ClearNo),        // sm.safety.no_to_service_area
            ("what do you mean", Unclear),            // sm.safety.unclear_stays
            ("It's not it doesn't come on", Unclear), // sm.safety.not_is_not_no
            ("no", ClearNo),                          // sm.safety.explicit_no
            ("nope, nothing like that", ClearNo),     // sm.safety.nope
            ("gas heater but never mind", Unclear),   // sm.safety.retracted_emergency
            ("nope, no smoke", ClearNo),              // sm.safety.d3_nope_no_smoke
            ("no, I don't smell any gas", ClearNo),   // d3_no_i_dont_smell_any_gas
            ("the gas furnace is making noise", Unclear), // d3_gas_furnace_noise_is_ambiguous
            ("our gas water heater is pretty old", Unclear), // d3_gas_water_heater_is_ambiguous
            ("it's a gas heater and it won't turn on", Unclear), // d3_gas_heater_wont_turn_on
            ("I smell gas", Emergency),               // d3_smell_gas_exits
            ("there's smoke coming from the vent", Emergency), // d3_smoke_from_vent_exits
            ("the carbon monoxide alarm is going off", Emergency), // d3_co_alarm_going_off_exits
            ("no gas smell", ClearNo),                // proc.safety.no_gas_smell_is_no
            ("my gas furnace is just making a clicking noise", Unclear), // proc.d3.gas_furnace_…
            ("I don't smell gas", ClearNo),
            ("nothing is burning", ClearNo),
            ("it's not smoke, it's steam", ClearNo),
            ("no smoke or fire", ClearNo),
            ("no I smell gas", Emergency),
            ("it doesn't work I smell gas", Emergency),
            ("it's not cooling and I smell gas", Emergency),
            ("no smoke, just a burning smell", Emergency),
            ("I don't know if it's smoke", Emergency),
            ("smells like rotten eggs in here", Emergency),
            ("the CO detector is beeping", Emergency),
            ("there's a gas leak", Emergency),
            ("I smell something like gas", Emergency),
            ("I don’t smell gas", ClearNo),
            ("", Unclear),
            ("🔥🔥🔥", Unclear),
            ("\u{0}\u{7}\u{1b}[31m", Unclear),
        ] {
            assert_eq!(safety_answer(input), want, "{input:?}");
        }
    }

    /// The phrasings of issue 9, item 1.
    #[test]
    fn one_negation_covers_every_hazard_it_governs() {
        use SafetyAnswer::*;
        for (input, want) in [
            ("I don't smell any gas or smoke", ClearNo),
            ("no gas or smoke", ClearNo),
            ("neither gas nor smoke", ClearNo),
            ("don't smell gas or anything burning", ClearNo),
            ("no gas, no smoke, nothing burning", ClearNo),
            ("I don't smell anything", ClearNo),
            ("not smelling anything unusual", ClearNo),
            ("no gas but there is smoke", Emergency),
        ] {
            assert_eq!(safety_answer(input), want, "{input:?}: {:?}", triage(input));
        }
    }

    #[test]
    fn mentions_say_how_each_hazard_was_read() {
        let t = triage("no gas smell, but the vent is smoking");
        assert_eq!(
            t.mentions,
            vec![
                Mention {
                    word: "gas".into(),
                    reading: Reading::Negated
                },
                Mention {
                    word: "smoking".into(),
                    reading: Reading::Asserted
                },
            ]
        );
        assert_eq!(t.answer, SafetyAnswer::Emergency);
        let t = triage("our gas furnace, is that a problem?");
        assert_eq!(t.mentions[0].reading, Reading::Equipment);
        assert_eq!(t.answer, SafetyAnswer::Unclear);
    }

    #[test]
    fn sentences_split_and_drop_fillers() {
        let s = sentences("uh no, you know, smoke?? yes. i mean fire");
        let words: Vec<Vec<&str>> = s
            .iter()
            .map(|s| s.words.iter().map(|w| w.text).collect())
            .collect();
        assert_eq!(words, vec![vec!["no", "smoke"], vec!["yes"], vec!["fire"]]);
        assert!(s[0].question);
        assert!(!s[1].question);
        assert!(s[0].words[1].after_comma);
    }
}
