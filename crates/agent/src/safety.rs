//! Safety triage (D-3): is the caller's answer to "any gas smell, smoke or
//! burning?" an emergency, a clear no, or unclear?

use crate::keywords::{LowerText, NO_SIGNALS, SAFETY_RETRACTION_KEYWORDS};
use crate::validate::tokenize;

/// The safety state's reading of a caller's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafetyAnswer {
    /// An explicit, unnegated, unretracted danger statement → `safety_exit`.
    Emergency,
    /// A clear "no" (a NO word, or only negated danger phrases).
    ClearNo,
    /// Anything else (ambiguous equipment words, retractions without a no,
    /// unrelated talk): stay and ask.
    Unclear,
}

/// Danger words that are dangerous on their own.
const DANGER_WORDS: &[&str] = &[
    "smoke", "smoking", "smoky", "smokey", "sparks", "spark", "sparking", "sparked", "fire",
    "fires", "flames", "burning", "burnt",
];
/// Words that turn "gas" (or "propane") into a danger statement.
const GAS_CUES: &[&str] = &[
    "smell", "smells", "smelled", "smelling", "smelt", "odor", "odour", "odors", "leak", "leaks",
    "leaking", "leaked", "fumes", "whiff", "stink", "stinks", "stinking", "hissing",
];
const GAS_WORDS: &[&str] = &["gas", "propane"];
/// How far (in words) a gas cue may be from the gas word.
const GAS_CUE_WINDOW: usize = 6;
const CO_DEVICES: &[&str] = &[
    "detector",
    "detectors",
    "alarm",
    "alarms",
    "monitor",
    "sensor",
];
/// Words that end a clause (negation does not reach across them).
const CLAUSE_WORDS: &[&str] = &[
    "but", "and", "so", "though", "although", "however", "because", "cause", "plus", "also",
    "then", "except", "yet", "while", "whereas", "anyway",
];
const NEGATORS: &[&str] = &[
    "no", "not", "never", "nothing", "none", "without", "nor", "neither", "nobody", "dont",
    "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "havent", "hasnt", "cant", "cannot",
    "wont", "aint",
];
/// Words that stop a negation from reaching a later danger word (a new
/// subject, or uncertainty: "no I smell gas", "I don't know if it's smoke").
const NEGATION_BLOCKERS: &[&str] = &[
    "i", "i'm", "im", "we", "we're", "it", "it's", "its", "there", "there's", "theres", "they",
    "they're", "you", "he", "she", "if", "whether", "know", "sure", "tell", "maybe", "might",
    "unless", "until", "when",
];
/// How many words may separate a negator from the danger word.
const NEGATION_WINDOW: usize = 4;

fn is_negator(w: &str) -> bool {
    NEGATORS.contains(&w) || w.ends_with("n't")
}

fn negated_at(clause: &[&str], pos: usize) -> bool {
    let lo = pos.saturating_sub(NEGATION_WINDOW);
    for k in (lo..pos).rev() {
        let w = clause[k];
        if is_negator(w) {
            return true;
        }
        if NEGATION_BLOCKERS.contains(&w) {
            return false;
        }
    }
    false
}

#[derive(Default)]
struct DangerScan {
    asserted: bool,
    negated: bool,
    ambiguous: bool,
}

impl DangerScan {
    fn record(&mut self, negated: bool) {
        if negated {
            self.negated = true;
        } else {
            self.asserted = true;
        }
    }
}

fn scan_clause(clause: &[&str], scan: &mut DangerScan) {
    for (i, &w) in clause.iter().enumerate() {
        let next = clause.get(i + 1).copied().unwrap_or("");
        if DANGER_WORDS.contains(&w)
            || (w == "carbon" && next == "monoxide")
            || (w == "co" && CO_DEVICES.contains(&next))
            || (w == "rotten" && next.starts_with("egg"))
        {
            scan.record(negated_at(clause, i));
        } else if GAS_WORDS.contains(&w) {
            let lo = i.saturating_sub(GAS_CUE_WINDOW);
            let hi = (i + GAS_CUE_WINDOW + 1).min(clause.len());
            let cue = (lo..hi)
                .filter(|&j| GAS_CUES.contains(&clause[j]))
                .min_by_key(|j| j.abs_diff(i));
            match cue {
                Some(j) => scan.record(
                    negated_at(clause, i.min(j)) || negated_at(clause, i) || negated_at(clause, j),
                ),
                None => scan.ambiguous = true,
            }
        }
    }
}

fn scan_danger(lower: &str) -> DangerScan {
    let norm = lower.replace('\u{2019}', "'");
    let toks = tokenize(&norm);
    let mut scan = DangerScan::default();
    let mut clause: Vec<&str> = Vec::new();
    for t in &toks {
        if t.clause_break && !clause.is_empty() {
            scan_clause(&clause, &mut scan);
            clause.clear();
        }
        if CLAUSE_WORDS.contains(&t.text) {
            if !clause.is_empty() {
                scan_clause(&clause, &mut scan);
                clause.clear();
            }
            continue;
        }
        clause.push(t.text);
    }
    scan_clause(&clause, &mut scan);
    scan
}

/// D-3 safety judgement. Explicit unnegated danger (smell gas, gas smell or
/// leak, rotten eggs, burning, smoke, sparks, fire, CO / carbon-monoxide
/// alarm or detector) without a retraction → `Emergency`; else a NO_SIGNALS
/// word or only negated danger phrases ("I don't smell gas", "nothing is
/// burning") → `ClearNo`; else (equipment words such as "gas furnace",
/// retractions without a no, anything unrelated) → `Unclear`.
pub fn safety_answer(text: &str) -> SafetyAnswer {
    let t = LowerText::new(text);
    let scan = scan_danger(t.as_str());
    if scan.asserted && !t.matches_any(SAFETY_RETRACTION_KEYWORDS) {
        return SafetyAnswer::Emergency;
    }
    if t.matches_any(NO_SIGNALS) || (scan.negated && !scan.asserted) {
        return SafetyAnswer::ClearNo;
    }
    SafetyAnswer::Unclear
}

/// True only for an unnegated, unretracted danger statement (D-3).
pub fn detect_safety_emergency(text: &str) -> bool {
    safety_answer(text) == SafetyAnswer::Emergency
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
}
