//! The caller's acts: the phrase lists and the small readers that decide,
//! for one lower-cased utterance, whether the caller confirmed, denied,
//! corrected, asked, said goodbye, asked for a person, turned a callback
//! down, asked to hear something again, or talked about an appointment.
//!
//! Every list is matched as whole words ([`LowerText::matches_any`]), so
//! "bye" is not found in "bypass" and "yes" is not found in "eyes".

use super::lexicon::{words, Hits, Lexicon, List, Source};
use crate::keywords::is_word_char;
use crate::validate::ManageRequest;
use std::sync::OnceLock;

/// Ways of saying yes to a read-back or an offer, warm ones included
/// (besides the soft ones below).
const FIRM_YES: &[&str] = &[
    "yes",
    "yeah",
    "yea",
    "yep",
    "yup",
    "ya",
    "sure thing",
    "correct",
    "that's correct",
    "that's right",
    "thats right",
    "exactly",
    "perfect",
    "sounds good",
    "sounds great",
    "sounds right",
    "sounds perfect",
    "that works",
    "works for me",
    "that's fine",
    "absolutely",
    "definitely",
    "of course",
    "go ahead",
    "go for it",
    "please do",
    "do it",
    "let's do it",
    "book it",
    "lock it in",
    "that's it",
    "you got it",
    "uh-huh",
    "uh huh",
    "mhm",
    "mm-hmm",
    "affirmative",
];

/// Ways of saying no.
const NO: &[&str] = &[
    "no",
    "nope",
    "nah",
    "naw",
    "not quite",
    "not really",
    "not right",
    "that's wrong",
    "that's not right",
    "that isn't right",
    "wrong",
    "incorrect",
    "negative",
];

/// Words that mark what follows as a correction of something said before.
const CORRECTION: &[&str] = &[
    "actually",
    "no wait",
    "wait",
    "hold on",
    "hang on",
    "i mean",
    "i meant",
    "sorry",
    "make that",
    "make it",
    "change it to",
    "change that to",
    "correction",
    "scratch that",
    "let me correct",
    "rather",
    "instead",
    "not",
    "should be",
    "it's supposed to be",
    "i said",
    "the right",
    "the correct",
    "typo",
    "misspoke",
    "i misspoke",
    "my bad",
    "but",
    "to be exact",
    "to be precise",
    "more precisely",
    "more accurately",
    "more exactly",
    "strictly speaking",
    "the real problem",
    "the actual problem",
    "what i meant",
];

/// A goodbye that ends the call wherever it is said (stricter than the
/// confirm state's wrap-up, where "thanks" or "that's all" end it too).
const GOODBYE: &[&str] = &[
    "bye",
    "goodbye",
    "good bye",
    "bye-bye",
    "bye bye",
    "gotta go",
    "got to go",
    "gotta run",
    "got to run",
    "have to go",
    "have to run",
    "need to go",
    "need to run",
    "i'll let you go",
    "talk to you later",
    "talk later",
    "i'm hanging up",
    "hang up now",
    "forget it",
    "never mind, bye",
    "hop off",
    "gotta hop",
    "have to hop",
    "can't talk now",
    "cannot talk now",
    "can't talk right now",
    "i'll call back later",
];

/// Asking for a person: a verb of talking or transfer …
const TALK_TO: &[&str] = &[
    "talk to",
    "talk with",
    "speak to",
    "speak with",
    "put me through",
    "transfer me",
    "connect me",
    "get me",
    "let me talk",
    "let me speak",
    "i want",
    "i'd like",
    "can i get",
    "can i have",
    "is there",
];
/// … and whom.
const PERSON: &[&str] = &[
    "manager",
    "supervisor",
    "owner",
    "boss",
    "a person",
    "a human",
    "a real person",
    "real person",
    "someone real",
    "somebody real",
    "a live person",
    "live person",
    "an actual person",
    "human being",
    "someone in charge",
    "your manager",
    "the manager",
    "a live agent",
    "an agent",
    "operator",
    "representative",
    "a rep",
    "someone at the office",
    "somebody at the office",
    "someone in the office",
    "somebody in the office",
    "someone from the office",
    "the office",
    "a real human",
    "an actual human",
    "actual person",
];

/// Turning a callback down ("I'll call you", "no need to call me back").
const DECLINE_CALLBACK: &[&str] = &[
    "don't need a callback",
    "don't need a call back",
    "dont need a callback",
    "no need to call",
    "no need for a callback",
    "no need for a call back",
    "don't call me",
    "do not call me",
    "don't bother calling",
    "no callback",
    "no call back",
    "i'll call you",
    "i will call you",
    "i'll call back",
    "i will call back",
    "i'll call again",
    "i'll just call back",
    "i'll call later",
    "i'll try again",
    "don't want a callback",
    "don't want a call back",
    "don't want anyone to call",
    "not interested in a callback",
    "no need for a call",
    "don't need a call",
    "i'll be in touch",
    "i will be in touch",
    "i'll reach out",
    "i'll get back to you",
    "i'll call you guys",
];

/// Asking to be called, in more words than the reference's callback
/// keywords ("could someone from the office give me a call?").
const CALL_ME: &[&str] = &[
    "give me a call",
    "give me a call back",
    "give me a ring",
    "call me",
    "someone call me",
    "somebody call me",
    "have someone call",
    "have somebody call",
    "can someone call",
    "could someone call",
    "have a person call",
    "reach out to me",
];

/// Asking to hear the last line again.
const REPEAT: &[&str] = &[
    "what was that",
    "sorry what",
    "come again",
    "say that again",
    "say again",
    "repeat that",
    "can you repeat",
    "could you repeat",
    "didn't catch that",
    "didn't hear",
    "did not hear",
    "pardon",
    "excuse me",
    "huh",
    "i missed that",
];

/// Moving an appointment, in more words than "reschedule".
const RESCHEDULE: &[&str] = &[
    "reschedule",
    "rescheduling",
    "rescheduled",
    "moved",
    "be moved",
    "pushed",
    "push",
    "push back",
    "push it",
    "bump",
    "move",
    "moving",
    "move it",
    "shift",
    "switch",
    "change the day",
    "change the date",
    "change the time",
    "change my appointment",
    "change the appointment",
    "different day",
    "different time",
    "another day",
    "another time",
    "later time",
    "earlier time",
    "come later",
    "come earlier",
    "can't make it",
    "cannot make it",
    "won't be home",
    "won't be there",
];
const CANCEL: &[&str] = &[
    "cancel",
    "cancelling",
    "canceling",
    "cancellation",
    "call it off",
    "call off",
    "don't need the visit",
    "don't need the appointment",
    "don't need anyone to come",
    "no longer need",
];
/// Asking when (or whether) the technician is coming.
const STATUS: &[&str] = &[
    "status",
    "still on",
    "still scheduled",
    "still coming",
    "still happening",
    "still booked",
    "is it still",
    "is someone still",
    "is somebody still",
    "is the tech still",
    "technician is coming",
    "tech is coming",
    "technician coming",
    "tech coming",
    "when the technician",
    "when the tech",
    "what time the",
    "what time my",
    "when someone is coming",
    "when somebody is coming",
    "when my appointment is",
    "when my visit is",
    "when the appointment is",
    "forgot when",
    "remind me when",
    "what day is my",
    "what day is the",
    "what date is",
    "which day is",
    "what time is my",
    "what time is the",
    "what time will",
    "what time are",
    "when is my",
    "when is the",
    "when's my",
    "when's the",
    "when will the",
    "when will my",
    "when are you",
    "when are they",
    "when is someone",
    "when is somebody",
    "eta",
    "on the way",
    "on their way",
    "on his way",
    "on her way",
    "running late",
    "check on",
    "checking on",
    "confirm my appointment",
    "confirm the appointment",
    "just checking",
    "make sure it's still",
];
/// Appointment words: a reschedule/status phrase counts for an appointment
/// only next to one of these (or when the call is about one already).
const APPOINTMENT: &[&str] = &[
    "appointment",
    "visit",
    "tech",
    "technician",
    "service call",
    "booking",
    "someone",
    "somebody",
    "guy",
    "they",
    "it",
    "monday's",
    "tuesday's",
    "wednesday's",
    "thursday's",
    "friday's",
    "saturday's",
    "sunday's",
    "tomorrow's",
    "today's",
    "coming out",
    "you guys",
];

/// A caller still waiting for a call back, in more words than the
/// reference's follow-up keywords.
const MISSED_CALLBACK: &[&str] = &[
    "never got that call",
    "never got a call",
    "never got the call",
    "never got a callback",
    "never got a call back",
    "never heard back",
    "never heard from",
    "haven't heard back",
    "haven't heard from",
    "didn't get a call",
    "didn't get the call",
    "didn't get a callback",
    "still waiting for a call",
    "still waiting on a call",
    "still waiting for someone to call",
    "still waiting to hear",
    "waiting for a callback",
    "waiting on a callback",
    "nobody called",
    "no one called",
    "nobody's called",
    "no one's called",
    "nobody got back",
    "no one got back",
    "no one ever called",
    "never called me back",
    "supposed to call me",
    "supposed to get a call",
    "promised a call",
    "promised me a call",
    "promised to call",
    "said someone would call",
    "was told someone would call",
    "following up",
    "follow up on",
    "calling back about",
];

/// Question words that start a question even without a question mark.
const QUESTION_START: &[&str] = &[
    "what", "what's", "whats", "when", "when's", "where", "why", "who", "which", "how", "how's",
    "can", "could", "will", "would", "is", "are", "am", "do", "does", "did", "should", "may",
];

/// Selling to the business, not buying from it.
const SALES: &[&str] = &[
    "marketing",
    "seo",
    "advertising",
    "advertise",
    "leads for your",
    "lead generation",
    "your website",
    "google listing",
    "business listing",
    "merchant services",
    "credit card processing",
    "business loan",
    "financing for your business",
    "we offer",
    "we help businesses",
    "we help contractors",
    "we work with contractors",
    "i'm calling from",
    "i am calling from",
    "partnership",
    "vendor",
    "supplier",
    "sell you",
    "selling",
    "special offer for business",
    "decision maker",
    "business owner",
    "supply house",
    "set up an account",
    "open an account",
    "wholesale",
    "distributor",
    "i represent",
];
/// A question about a bill, a charge or a warranty claim.
const BILLING: &[&str] = &[
    "billed",
    "bill",
    "billing",
    "invoice",
    "charged",
    "overcharged",
    "double charged",
    "refund",
    "payment",
    "receipt",
];
/// Looking for work.
const JOB: &[&str] = &[
    "hiring",
    "apply",
    "applying",
    "application",
    "job opening",
    "job openings",
    "looking for work",
    "looking for a job",
    "position",
    "positions",
    "any openings",
    "openings",
    "are you hiring",
    "employment",
    "resume",
    "work for you",
    "work for your company",
    "hvac tech job",
    "job posting",
    "job post",
    "job listing",
    "job ad",
    "the posting",
    "the opening",
    "apprentice",
    "apprenticeship",
];
/// Dialled the wrong number.
const WRONG_NUMBER: &[&str] = &[
    "wrong number",
    "dialed the wrong",
    "dialled the wrong",
    "called the wrong",
    "meant to call",
    "not who i meant",
];

/// Mentions an appointment the caller already has ("I have an appointment
/// with you guys").
const HAS_APPOINTMENT: &[&str] = &[
    "have an appointment",
    "had an appointment",
    "my appointment",
    "our appointment",
    "my visit",
    "our visit",
    "my service visit",
    "scheduled visit",
    "scheduled appointment",
    "booked appointment",
    "someone scheduled",
    "somebody scheduled",
    "tech scheduled",
    "technician scheduled",
    "coming out on",
];

/// Moving a visit said as "can we do Thursday instead of Wednesday": only
/// with a day or time in the same breath.
const MOVE_TO: &[&str] = &[
    "instead of",
    "instead",
    "can we do",
    "could we do",
    "can you do",
    "could you do",
    "move to",
    "push to",
    "switch to",
    "change to",
    "something came up",
];

/// What a caller who is not after service wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Errand {
    #[default]
    None,
    /// Selling something to the business.
    Sales,
    /// Looking for a job.
    Job,
    /// Dialled the wrong number.
    WrongNumber,
    /// A bill, a charge, a refund (a billing callback, D-6).
    Billing,
}

/// Yes words that are often only politeness ("ok, thanks, bye").
const SOFT_YES: &[&str] = &[
    "ok",
    "okay",
    "alright",
    "all right",
    "right",
    "fine",
    "good",
    "great",
    "please",
    "sure",
];

/// "No" said as part of something else ("no problem", "no rush").
const SOFTENERS: &[&str] = &[
    "no problem",
    "no worries",
    "no rush",
    "no hurry",
    "no need",
    "no big",
    "no biggie",
    "no real",
];

/// The people a question may ask for ("is your manager around?").
const BOSS: &[&str] = &["manager", "supervisor", "owner", "boss"];

const SOURCE: Source = &[
    (List::FirmYes, FIRM_YES),
    (List::Yes, SOFT_YES),
    (List::Softener, SOFTENERS),
    (List::No, NO),
    (List::Correction, CORRECTION),
    (List::Goodbye, GOODBYE),
    (List::TalkTo, TALK_TO),
    (List::Person, PERSON),
    (List::Boss, BOSS),
    (List::Decline, DECLINE_CALLBACK),
    (List::CallMe, CALL_ME),
    (List::Repeat, REPEAT),
    (List::Reschedule, RESCHEDULE),
    (List::Cancel, CANCEL),
    (List::Status, STATUS),
    (List::Appointment, APPOINTMENT),
    (List::MissedCallback, MISSED_CALLBACK),
    (List::Sales, SALES),
    (List::Billing, BILLING),
    (List::Job, JOB),
    (List::WrongNumber, WRONG_NUMBER),
    (List::HasAppointment, HAS_APPOINTMENT),
    (List::MoveTo, MOVE_TO),
];

/// One utterance as the act readers see it: lower-cased (typographic
/// apostrophes straightened), its words, and the phrase lists it matched.
pub(super) struct Said<'a> {
    pub(super) lower: &'a str,
    words: usize,
    hits: Hits,
}

impl<'a> Said<'a> {
    /// Read `lower` (already lower-cased and straightened).
    pub(super) fn new(lower: &'a str) -> Self {
        static LEXICON: OnceLock<Lexicon> = OnceLock::new();
        let w: Vec<&str> = words(lower).collect();
        let hits = Lexicon::get(&LEXICON, SOURCE).scan(&w);
        Said {
            lower,
            words: w.len(),
            hits,
        }
    }

    fn has(&self, list: List) -> bool {
        self.hits.has(list)
    }
}

pub(super) fn yes(t: &Said) -> bool {
    t.has(List::FirmYes) || t.has(List::Yes)
}

/// A yes that is more than politeness: one of the yes words other than
/// "ok", "great", "please" … ("yes", "book it", "sounds good").
pub(super) fn firm_yes(t: &Said) -> bool {
    t.has(List::FirmYes)
}

/// A no; "no problem", "no rush", "no worries" are not one.
pub(super) fn no(t: &Said) -> bool {
    let softened: Vec<usize> = t.hits.at(List::Softener).collect();
    t.hits.at(List::No).any(|i| !softened.contains(&i))
}

pub(super) fn correction_marker(t: &Said) -> bool {
    t.has(List::Correction)
}

pub(super) fn goodbye(t: &Said) -> bool {
    t.has(List::Goodbye)
}

pub(super) fn wants_person(t: &Said) -> bool {
    (t.has(List::TalkTo) && t.has(List::Person)) || (question(t) && t.has(List::Boss))
}

pub(super) fn declines_callback(t: &Said) -> bool {
    t.has(List::Decline)
}

pub(super) fn call_me(t: &Said) -> bool {
    t.has(List::CallMe)
}

pub(super) fn missed_callback(t: &Said) -> bool {
    t.has(List::MissedCallback)
}

pub(super) fn has_appointment(t: &Said) -> bool {
    t.has(List::HasAppointment)
}

/// Moving a visit said as "can we do Thursday instead of Wednesday": the
/// caller of this checks that a day or time was said in the same breath.
pub(super) fn move_to(t: &Said) -> bool {
    t.has(List::MoveTo)
}

/// A short request to hear the last line again ("sorry, what?"). Long
/// sentences that happen to contain "what" are questions, not this.
pub(super) fn repeat(t: &Said) -> bool {
    if t.words > 6 {
        return false;
    }
    let bare: Vec<&str> = words(t.lower).collect();
    if matches!(
        bare.as_slice(),
        ["what"] | ["sorry"] | ["huh"] | ["pardon"] | ["sorry", "what"] | ["um", "what"]
    ) {
        return true;
    }
    t.has(List::Repeat)
}

/// A question: a question mark, or a question word first (in any
/// sentence).
pub(super) fn question(t: &Said) -> bool {
    let s = t.lower;
    if s.contains('?') {
        return true;
    }
    s.split(['.', '!', ';', ','])
        .filter_map(|sentence| {
            sentence
                .split(|c: char| !is_word_char(c) && c != '\'')
                .find(|w| !w.is_empty())
        })
        .any(|first| QUESTION_START.contains(&first))
}

pub(super) fn manage(t: &Said, about_appointment: bool) -> Option<ManageRequest> {
    let appointment = about_appointment || t.has(List::Appointment);
    if !appointment {
        return None;
    }
    if t.has(List::Cancel) {
        // "Reschedule instead of cancel": the move wins.
        if t.has(List::Reschedule) || t.has(List::MoveTo) {
            return Some(ManageRequest::Reschedule);
        }
        return Some(ManageRequest::Cancel);
    }
    if t.has(List::Reschedule) {
        return Some(ManageRequest::Reschedule);
    }
    if t.has(List::Status) {
        return Some(ManageRequest::Status);
    }
    None
}

pub(super) fn errand(t: &Said) -> Errand {
    if t.has(List::WrongNumber) {
        Errand::WrongNumber
    } else if t.has(List::Job) {
        Errand::Job
    } else if t.has(List::Sales) {
        Errand::Sales
    } else if t.has(List::Billing) {
        Errand::Billing
    } else {
        Errand::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Said<'static> {
        Said::new(Box::leak(s.to_lowercase().into_boxed_str()))
    }

    #[test]
    fn warm_confirmations_are_yes() {
        for s in [
            "perfect",
            "that works",
            "sounds great",
            "absolutely",
            "yep that's it",
            "yes please go ahead",
            "Perfect, thank you!",
            "that works for me",
            "sure thing",
            "you got it",
            "mhm",
            "yeah book it",
            "great",
            "that's correct",
            "definitely",
            "lock it in",
        ] {
            assert!(yes(&t(s)), "{s}");
        }
    }

    #[test]
    fn softened_no_is_not_no() {
        assert!(!no(&t("no problem")));
        assert!(!no(&t("no rush at all")));
        assert!(no(&t("no, that's wrong")));
        assert!(no(&t("nope")));
        assert!(no(&t("no problem, but no, the number is wrong")));
    }

    #[test]
    fn goodbyes_and_people() {
        for s in [
            "I gotta run, bye",
            "okay I have to go",
            "talk to you later",
            "bye",
        ] {
            assert!(goodbye(&t(s)), "{s}");
        }
        assert!(!goodbye(&t("the bypass valve")));
        for s in [
            "let me talk to a manager",
            "can I speak to your supervisor",
            "I want a real person",
            "put me through to the owner",
        ] {
            assert!(wants_person(&t(s)), "{s}");
        }
        for s in [
            "I'm the facilities manager",
            "I'm the office manager here",
            "my landlord is the owner",
        ] {
            assert!(!wants_person(&t(s)), "{s}");
        }
    }

    #[test]
    fn appointment_talk_in_natural_words() {
        let r = |s: &str| manage(&t(s), false);
        assert_eq!(
            r("can we push Thursday's visit to Monday"),
            Some(ManageRequest::Reschedule)
        );
        assert_eq!(
            r("I need to move my tech to the afternoon"),
            Some(ManageRequest::Reschedule)
        );
        assert_eq!(
            r("what time is my tech coming?"),
            Some(ManageRequest::Status)
        );
        assert_eq!(
            r("is someone still coming today?"),
            Some(ManageRequest::Status)
        );
        assert_eq!(
            r("please cancel the appointment"),
            Some(ManageRequest::Cancel)
        );
        assert_eq!(r("my AC stopped cooling"), None);
    }

    #[test]
    fn repeat_and_question() {
        assert!(repeat(&t("sorry, what?")));
        assert!(repeat(&t("can you repeat that")));
        assert!(!repeat(&t("what time will the technician come tomorrow?")));
        assert!(question(&t("is that covered by the warranty?")));
        assert!(question(&t("ok. how long will it take")));
        assert!(!question(&t("yes that's right")));
    }

    #[test]
    fn declines() {
        for s in [
            "I don't need a callback, I'll call you",
            "no need to call me back",
            "don't call me, I'll call back later",
        ] {
            assert!(declines_callback(&t(s)), "{s}");
        }
        assert!(!declines_callback(&t("please call me back")));
    }
}
