//! How the agent puts each of its questions: three wordings per question,
//! so a question is never put a second time in the same words (SPEC §5.9),
//! and the third time is a change of strategy (spell it, one digit at a
//! time, an example). The state machine never lets a question be put a
//! fourth time (see [`crate::machine`]); the safety question, which must
//! not be skipped, has gentler fourth and fifth lines that are not the
//! question again.

use crate::understand::Asked;

/// The safety question's first wording (also the greeting's follow-on).
pub const SAFETY_QUESTION: &str =
    "Quick safety check — any gas smell, burning smell or smoke right now?";
/// The read-back's closing question: the caller's yes books.
pub const READ_BACK_QUESTION: &str = "Shall I go ahead and book that?";

const SAFETY: [&str; 5] = [
    SAFETY_QUESTION,
    "Sorry, just to be sure — do you smell gas or something burning, or see any smoke in the \
house right now?",
    "Just a yes or a no: is there a gas smell, smoke or a carbon monoxide alarm going off?",
    "I want to be sure everyone's safe. If you ever smell gas or see smoke, leave the house and \
call 911 from outside. Shall we go on with the repair for now?",
    "No problem — someone from the team can call you back to go over it, or we can carry on. \
Which would you prefer?",
];
const ZIP: [&str; 3] = [
    "What's the ZIP code where you need service?",
    "Sorry, I didn't catch that — what's the five-digit ZIP code there?",
    "Could you say the ZIP code one digit at a time?",
];
const NAME: [&str; 3] = [
    "Can I get your name, please?",
    "Sorry, I didn't catch your name — who am I speaking with?",
    "Could you spell your first and last name for me?",
];
const PROBLEM: [&str; 3] = [
    "What's going on with your system?",
    "What's the system doing — not cooling, not heating, making a noise, something else?",
    "In a few words, what's wrong with the heating or cooling?",
];
const ADDRESS: [&str; 3] = [
    "What's the street address for the visit?",
    "Where should the technician go — what's the street address?",
    "Just the house number and the street name, please — for example, 2201 Barton Hills Drive.",
];
const TIME: [&str; 3] = [
    "How soon do you need someone — today, or is later this week okay?",
    "Just so I get it right — do you need someone today, or can it wait a few days?",
    "Would the first opening work, or is there a day that suits you better?",
];
const READ_BACK: [&str; 3] = [
    READ_BACK_QUESTION,
    "Should I book it just like that?",
    "Is that a yes to book it, or is there something to change?",
];
const APPOINTMENT: [&str; 3] = [
    "Would you like to cancel it, reschedule it, or just check on it?",
    "Should I move it, cancel it, or just confirm the time?",
    "Just say reschedule, cancel, or check, and I'll take care of it.",
];
const NEW_TIME: [&str; 3] = [
    "Sure — what day and time of day would work better for you?",
    "Which day would suit you better — and morning or afternoon?",
    "For example, you could say tomorrow afternoon or Friday morning.",
];

/// The pending question in its wording for the `times`-th time it is put
/// (1 = first). `None` for [`Asked::Nothing`].
pub fn ask(asked: Asked, times: u32) -> Option<&'static str> {
    let i = times.max(1) as usize - 1;
    let pick = |w: &'static [&'static str]| w[i.min(w.len() - 1)];
    Some(match asked {
        Asked::Nothing => return None,
        Asked::Safety => pick(&SAFETY),
        Asked::Zip => pick(&ZIP),
        Asked::Name => pick(&NAME),
        Asked::Problem => pick(&PROBLEM),
        Asked::Address => pick(&ADDRESS),
        Asked::Time => pick(&TIME),
        Asked::ReadBack => pick(&READ_BACK),
        Asked::Appointment => pick(&APPOINTMENT),
        Asked::NewTime => pick(&NEW_TIME),
    })
}

/// The one short clarifying question for time talk the agent cannot place
/// (D-25: never today by default).
pub const WHICH_DAY: &str =
    "Which day would you like us to come out — for example tomorrow, or a day next week?";

/// An answer to a question that is none of the profile's known ones.
pub fn answer_other(lower: &str) -> &'static str {
    let has = |w: &str| crate::keywords::contains_word(lower, w);
    if has("warranty") || has("covered") || has("guarantee") {
        "Good question — whether it's covered depends on the equipment and the repair; the \
technician checks the warranty on the visit before any work."
    } else if has("how long") || has("arrive") || has("get here") || has("come out") {
        "The technician calls about 30 minutes before arriving."
    } else if has("license") || has("licensed") || has("insured") {
        "Yes — our technicians are licensed and insured."
    } else {
        "Good question — the technician can go over that with you on the visit."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_question_is_put_twice_in_the_same_words() {
        for asked in [
            Asked::Zip,
            Asked::Name,
            Asked::Problem,
            Asked::Address,
            Asked::Time,
            Asked::ReadBack,
            Asked::Appointment,
            Asked::NewTime,
        ] {
            let w: Vec<_> = (1..=3).map(|n| ask(asked, n).unwrap()).collect();
            assert_ne!(w[0], w[1], "{asked:?}");
            assert_ne!(w[1], w[2], "{asked:?}");
            assert_ne!(w[0], w[2], "{asked:?}");
        }
        let s: Vec<_> = (1..=5).map(|n| ask(Asked::Safety, n).unwrap()).collect();
        for i in 0..5 {
            for j in i + 1..5 {
                assert_ne!(s[i], s[j]);
            }
        }
    }
}
